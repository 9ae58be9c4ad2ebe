"""Integer IO in the pre-flight (issue 22 §5): a program that takes (or gives) integers
itself is said so, with the scale and zero point, in the Run tab (under the next run's
inputs, and in the pre-flight dialog) and in the Fit tab's headline: "this program takes
int8 input: scale 0.003919, zero point -128". A float input the program quantizes itself
(the demo's) needs nothing from the user: no sentence. The integer-IO program is a real
one (`etu compile --int8-io`'s lowering, tests/int8_programs.py); its figures are its
config methods."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from etu.parsers.pte import open_program
from etu.runner.io_quantization import IoQuantization, program_io_quantization
from etu.runner.preflight import io_notes
from etu.tui.app import FIT_TAB, EtuApp
from etu.tui.screens.preflight import PreflightScreen
from etu.tui.widgets import RunBanner
from etu.tui.widgets.fit import FitHeadline
from tests.console_helpers import open_run_tab, screen_text, show_tab, wait_until

pytestmark = pytest.mark.anyio
DEMO = Path(__file__).resolve().parent.parent.parent / "etu_tui" / "demo" / "demo_cnn.pte"


@pytest.fixture(scope="module")
def int8_program() -> Path:
    from tests.int8_programs import build

    return build()


def sentences(program: Path) -> list[str]:
    """What the notes must say, from the program's figures as the parser reads them."""
    with open_program(program) as opened:
        found = program_io_quantization(opened.plans[0], opened.plans)
    said = []
    for q in found:
        verb = "takes" if q.kind == "input" else "gives"
        said.append(f"this program {verb} int8 {q.kind}: scale {q.scale:.4g}, zero point "
                    f"{q.zero_point}")  # fmt: skip
    return said


def test_only_integer_io_is_a_note(int8_program: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with open_program(DEMO) as program:
        assert io_notes(program, DEMO) == []  # float in, float out: quantized by the program
    with open_program(int8_program) as program:
        notes = io_notes(program, int8_program)
    assert notes == sentences(int8_program) and len(notes) == 2
    assert "scale 0.003919, zero point -128" in notes[0]  # inputs in [0, 1): 1/255 from -128
    with open_program(DEMO) as program:
        unknown = IoQuantization("output", 0, 9, "int8", [1, 10], "int8", None, None)
        monkeypatch.setattr("etu.runner.io_quantization.io_quantization",
                            lambda plan, vela=None, config=(): [unknown])  # fmt: skip
        assert io_notes(program, DEMO) == ["output 0: int8, scale and zero point not known"]
    assert io_notes(None, None) == []


async def test_the_run_and_fit_tabs_say_the_program_takes_int8(
    workspace: Path, int8_program: Path
) -> None:
    shutil.copyfile(int8_program, workspace / "int8_cnn.pte")
    shutil.copytree(int8_program.parent / "vela", workspace / "vela", dirs_exist_ok=True)
    first = sentences(int8_program)[0]
    app = EtuApp(workspace / "int8_cnn.pte")
    async with app.run_test(size=(80, 24)) as pilot:
        panel = await open_run_tab(pilot)
        assert panel.io_notes == sentences(int8_program)
        assert f"\n  {first}" in app.query_one(RunBanner).text
        assert first in screen_text(app)  # in view at 80×24
        # the pre-flight dialog (a target the program was not compiled for) says it too
        panel.target = "ethos-u85-256"
        problems = panel.preflight()
        assert problems
        assert panel.request_run() is False
        await wait_until(pilot, lambda: isinstance(app.screen, PreflightScreen), what="dialog")
        await pilot.pause()
        notes = str(app.screen.query_one("#preflight-notes").render())
        assert f"ℹ {first}" in notes
        await pilot.press("escape")
        await show_tab(pilot, "f", FIT_TAB)
        await wait_until(pilot, lambda: first in str(app.query_one(FitHeadline).render()),
                         what="the Fit headline's note")  # fmt: skip


async def test_a_float_program_has_no_note(workspace: Path) -> None:
    app = EtuApp(workspace / "demo_cnn.pte")
    async with app.run_test(size=(80, 24)) as pilot:
        panel = await open_run_tab(pilot)
        assert panel.io_notes == []
        assert "\n" not in app.query_one(RunBanner).text
        assert "this program takes" not in screen_text(app)
