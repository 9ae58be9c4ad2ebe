"""Integer IO in the pre-flight (issue 22 §5): a program that takes (or gives) integers
itself is said so, with the scale and zero point, in the Run tab (under the next run's
inputs, and in the pre-flight dialog) and in the Fit tab's headline: "this program takes
int8 input: scale 0.0078, zero point -1". A float input the program quantizes itself (the
demo's) needs nothing from the user: no sentence.

No integer-IO program ships with etu: the demo's quantization is replaced by an int8 one
(runner.io_quantization.io_quantization, which the notes read)."""

from __future__ import annotations

from pathlib import Path

import pytest

from etu.parsers.pte import open_program
from etu.runner.io_quantization import IoQuantization
from etu.tui.app import EtuApp
from etu.tui.screens.preflight import PreflightScreen
from etu.tui.widgets import RunBanner
from etu.tui.widgets.fit import FitHeadline
from etu.tui.widgets.run_launch import io_notes
from tests.console_helpers import open_run_tab, screen_text, wait_until
from tools.screenshots import settle

pytestmark = pytest.mark.anyio
DEMO = Path(__file__).resolve().parent.parent.parent / "etu_tui" / "demo" / "demo_cnn.pte"
SENTENCE = "this program takes int8 input: scale 0.0078, zero point -1"


def int8_io(plan, vela_folder=None) -> list[IoQuantization]:
    return [
        IoQuantization("input", 0, 0, "int8", [1, 3, 32, 32], "int8", 0.0078, -1,
                       -128, 127, "Vela's out_vela.npz (per_tensor)"),
        IoQuantization("output", 0, 9, "float32", [1, 10], "int8", 0.05, 3, -128, 127,
                       "dequantize_per_tensor on the CPU after delegate 0"),
    ]  # fmt: skip


def test_only_integer_io_is_a_note(monkeypatch: pytest.MonkeyPatch) -> None:
    with open_program(DEMO) as program:
        assert io_notes(program, DEMO) == []  # float in, float out: quantized by the program
        monkeypatch.setattr("etu.runner.io_quantization.io_quantization", int8_io)
        assert io_notes(program, DEMO) == [SENTENCE]
        unknown = IoQuantization("output", 0, 9, "int8", [1, 10], "int8", None, None)
        monkeypatch.setattr("etu.runner.io_quantization.io_quantization",
                            lambda plan, vela=None: [unknown])  # fmt: skip
        assert io_notes(program, DEMO) == ["output 0: int8, scale and zero point not known"]
    assert io_notes(None, None) == []


async def test_the_run_and_fit_tabs_say_the_program_takes_int8(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("etu.runner.io_quantization.io_quantization", int8_io)
    app = EtuApp(workspace / "demo_cnn.pte")
    async with app.run_test(size=(80, 24)) as pilot:
        panel = await open_run_tab(pilot)
        assert panel.io_notes == [SENTENCE]
        assert f"\n  {SENTENCE}" in app.query_one(RunBanner).text
        assert SENTENCE in screen_text(app)  # in view at 80×24
        # the pre-flight dialog (a target the program was not compiled for) says it too
        panel.target = "ethos-u85-256"
        problems = panel.preflight()
        assert problems
        assert panel.request_run() is False
        await wait_until(pilot, lambda: isinstance(app.screen, PreflightScreen), what="dialog")
        await pilot.pause()
        notes = str(app.screen.query_one("#preflight-notes").render())
        assert f"ℹ {SENTENCE}" in notes
        await pilot.press("escape")
        await pilot.press("f")
        await settle(pilot)
        await wait_until(pilot, lambda: SENTENCE in str(app.query_one(FitHeadline).render()),
                         what="the Fit headline's note")  # fmt: skip


async def test_a_float_program_has_no_note(workspace: Path) -> None:
    app = EtuApp(workspace / "demo_cnn.pte")
    async with app.run_test(size=(80, 24)) as pilot:
        panel = await open_run_tab(pilot)
        assert panel.io_notes == []
        assert "\n" not in app.query_one(RunBanner).text
        assert "this program takes" not in screen_text(app)
