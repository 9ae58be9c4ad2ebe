"""The Run tab's inputs (issue 22 §3): ``I`` chooses them (a .npy/.npz file or
``random:SEED``; nothing: the firmware's own, all ones as the fallback), the banner names
them, and a run on them goes the way ``etu run --inputs`` goes: the runner built with them
bundled in ``PROGRAM.<board>/`` (``runner.run_inputs.firmware_for_inputs``), then run, the
session recording which inputs it read.

The build itself (cmake, minutes) is the process tests' (test_real_inputs); here it is
replaced by one that puts the demo firmware where the build would, with the record a build
writes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from textual.widgets import Input

from etu.tui.app import EtuApp
from etu.tui.widgets import RunBanner
from etu.tui.widgets.run_launch import InputsScreen
from tests.console_helpers import open_run_tab, wait_run_end, wait_until

pytestmark = pytest.mark.anyio
SIZE = (120, 36)
DEMO_OPS = [
    "quantized_decomposed::quantize_per_tensor.out",
    "quantized_decomposed::dequantize_per_tensor.out",
]


async def type_inputs(pilot, text: str) -> None:
    await pilot.press("I")
    await wait_until(pilot, lambda: isinstance(pilot.app.screen, InputsScreen), what="dialog")
    field = pilot.app.screen.query_one("#path", Input)
    field.value = text
    await pilot.press("enter")
    await pilot.pause()


async def test_the_inputs_are_chosen_and_named(workspace: Path) -> None:
    app = EtuApp(workspace / "demo_cnn.pte")
    async with app.run_test(size=SIZE) as pilot:
        panel = await open_run_tab(pilot)
        banner = app.query_one(RunBanner)
        assert (
            banner.text
            == "Press r to run on ethos-u55-128 · inputs all ones (fallback) (I) · L layers"
        )
        # what etu run --inputs refuses is said in the dialog, and not taken
        await type_inputs(pilot, "random:x")
        screen = app.screen
        assert isinstance(screen, InputsScreen)
        assert "the seed must be a whole number" in str(screen.query_one("#matches").render())
        await pilot.press("escape")
        await pilot.pause()
        assert panel.inputs is None
        await type_inputs(pilot, "random:7")
        assert not isinstance(app.screen, InputsScreen)
        assert panel.inputs == "random:7"
        assert "on ethos-u55-128 · inputs random:7 (I; its runner is built with them)" in (
            banner.text
        )
        # an empty field: back to the firmware's own inputs
        await type_inputs(pilot, "")
        assert panel.inputs is None and "inputs all ones (fallback)" in banner.text


async def test_a_run_on_chosen_inputs_runs_the_runner_built_with_them(
    workspace: Path, standin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pte = workspace / "demo_cnn.pte"
    asked = []

    def build(program: Path, board: str, inputs: str, *, progress=None):
        """What a build leaves: the runner in PROGRAM.<board>/ and its record."""
        asked.append((program, board, inputs))
        progress("configuring the runtime (cmake)")
        folder = program.with_name(f"{program.stem}.{board}")
        folder.mkdir(exist_ok=True)
        elf = folder / "arm_executor_runner.elf"
        shutil.copyfile(workspace / "firmware" / "arm_executor_runner.elf", elf)
        chosen = {"kind": "random", "source": inputs, "seed": 7,
                  "file": str(folder / "inputs.npz")}  # fmt: skip
        (folder / "etu_firmware.json").write_text(
            json.dumps({"elf": str(elf), "options": {"bundleio": True, "inputs": chosen}})
        )
        return elf, True

    monkeypatch.setattr("etu.runner.run_inputs.firmware_for_inputs", build)
    app = EtuApp(pte)
    async with app.run_test(size=SIZE) as pilot:
        panel = await open_run_tab(pilot)
        await type_inputs(pilot, "random:7")
        await pilot.press("r")
        await wait_run_end(pilot, panel)
        live = panel.live
        assert live.failure is None and live.outcome.reason == "success", live.outcome
        assert asked == [(pte, "corstone-300", "random:7")]
        meta = json.loads((live.folder / "meta.json").read_text())
        assert meta["elf"] == str(workspace / "demo_cnn.corstone-300" / "arm_executor_runner.elf")
        assert meta["inputs"]["kind"] == "random" and meta["inputs"]["source"] == "random:7"
        # the firmware's own (no choice) is recorded too: all ones, named as the fallback
        await type_inputs(pilot, "")
        await pilot.press("r")
        await wait_until(pilot, lambda: panel.live is not live, what="a second run")
        await wait_run_end(pilot, panel)
        second = json.loads((panel.live.folder / "meta.json").read_text())
        assert second["elf"].endswith("firmware/arm_executor_runner.elf")
        assert second.get("inputs", {"kind": "ones"})["kind"] == "ones"
        assert len(asked) == 1


async def test_a_build_that_fails_is_one_line_in_the_banner(
    workspace: Path, standin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from etu.runner.build_plan import RuntimeBuildError

    def fails(program, board, inputs, *, progress=None):
        raise RuntimeBuildError("cmake: no arm-none-eabi-gcc on PATH")

    monkeypatch.setattr("etu.runner.run_inputs.firmware_for_inputs", fails)
    app = EtuApp(workspace / "demo_cnn.pte")
    async with app.run_test(size=SIZE) as pilot:
        panel = await open_run_tab(pilot)
        await type_inputs(pilot, "random:3")
        await pilot.press("r")
        await wait_run_end(pilot, panel)
        assert panel.live.failure == "inputs random:3: cmake: no arm-none-eabi-gcc on PATH"
        assert "✗ could not start: inputs random:3: cmake" in app.query_one(RunBanner).text


async def test_the_preflight_of_a_run_on_chosen_inputs_judges_the_runner_built_with_them(
    workspace: Path, standin: Path
) -> None:
    """The Run tab's firmware has another program baked in; a run on chosen inputs does
    not run it: the runner built with them does. Not built yet: only what needs no
    firmware is checked, and the run says it builds it first; built: that runner is
    judged, not the one the tab shows (the check reads it in a worker)."""
    from etu.runner.firmware import build_stub_firmware
    from etu.runner.run_inputs import build_request
    from etu.tui.screens.preflight import PreflightScreen

    if shutil.which("arm-none-eabi-gcc") is None:
        pytest.skip("no arm-none-eabi-gcc to link a runner")
    pte = workspace / "demo_cnn.pte"
    pte.write_bytes(pte.read_bytes() + bytes(4096))  # the tab's firmware: another program
    linked = build_stub_firmware(pte, workspace.parent / "linked", ops=DEMO_OPS,
                                 memory_mode="Shared_Sram", preset="corstone-300").elf  # fmt: skip
    folder = workspace / "demo_cnn.corstone-300"  # where the run builds its runner

    def built(elf: Path) -> None:
        record = {"elf": str(elf), "request": build_request(pte, "random:7")}
        (folder / "etu_firmware.json").write_text(json.dumps(record))

    app = EtuApp(pte)
    async with app.run_test(size=SIZE) as pilot:
        panel = await open_run_tab(pilot)
        assert any("model_pte" in p for p in panel.preflight())  # the tab's own firmware
        await type_inputs(pilot, "random:7")
        assert panel.preflight() == []  # not built yet: nothing to judge
        (note,) = panel._preflight_check()()[1]
        assert "builds the runner with them first" in note
        folder.mkdir()
        fresh = folder / "arm_executor_runner.elf"
        shutil.copyfile(linked, fresh)
        built(fresh)  # built for this very program
        assert panel.preflight() == []
        assert str(fresh) in panel._preflight_check()()[1][0]
        stale = folder / "stale.elf"
        shutil.copyfile(workspace / "firmware" / "arm_executor_runner.elf", stale)
        built(stale)  # built, but with the program as it was
        assert any("model_pte" in p for p in panel.preflight())
        await pilot.press("r")
        await wait_until(pilot, lambda: isinstance(app.screen, PreflightScreen),
                         what="the pre-flight of the runner built with the inputs")  # fmt: skip
        assert str(stale) in str(app.screen.query_one("#preflight-notes").render())
        await pilot.press("escape")
        await pilot.pause()
        assert panel.live is None, "cancel starts nothing"
