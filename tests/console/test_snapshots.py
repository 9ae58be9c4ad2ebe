"""SVG snapshots of the Program, NPU, Memory, Fit, Run and Compile views on the demo
(pytest-textual-snapshot); every tab at 80×24 and 120×36, the Run tab also after a run.

Update after a reviewed UI change with ``pytest tests/console/test_snapshots.py --snapshot-update``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from textual.pilot import Pilot

from etu.tui.app import EtuApp
from tools.screenshots import (
    COMPARE_REPORT,
    compile_steps,
    fit_steps,
    memory_steps,
    npu_steps,
    run_steps,
    settle,
    small_scratch_firmware,
    standin_workspace,
)

DEMO = Path(__file__).resolve().parent.parent.parent / "etu_tui" / "demo" / "demo_cnn.pte"


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    """The demo workspace's package files, copied: the sessions and compile jobs a
    `make run` leaves in a checkout's etu_tui/demo/.etu never reach a snapshot."""
    folder = tmp_path / DEMO.parent.name
    shutil.copytree(DEMO.parent, folder, ignore=shutil.ignore_patterns(".etu", "__pycache__"))
    return folder / DEMO.name


def test_program_view(demo: Path, snap_compare) -> None:
    """Summary, instructions (1 NPU, 2 CPU rows), plan facts, CPU operators, delegates."""

    async def loaded(pilot: Pilot) -> None:
        await settle(pilot)

    assert snap_compare(EtuApp(demo), terminal_size=(140, 45), run_before=loaded)


def test_npu_view(demo: Path, snap_compare) -> None:
    """Vela summary with the estimate badge, layers by cycles, compare with a U85 run."""
    assert COMPARE_REPORT.is_dir()
    assert snap_compare(EtuApp(demo), terminal_size=(140, 45), run_before=npu_steps)


def test_memory_view(demo: Path, snap_compare) -> None:
    """Regions of the demo firmware from its ld map, runner pools, kernels, sections."""
    assert snap_compare(EtuApp(demo), terminal_size=(140, 45), run_before=memory_steps)


def test_fit_view(demo: Path, snap_compare, tmp_path_factory: pytest.TempPathFactory) -> None:
    """A picked firmware whose temp pool is too small: ethosu_scratch fails first, with
    the flag that fixes it; the tab says ✗."""
    elf = small_scratch_firmware(tmp_path_factory.mktemp("fit_view"))

    async def picked(pilot: Pilot) -> None:
        await fit_steps(pilot, elf)

    assert snap_compare(EtuApp(demo), terminal_size=(140, 45), run_before=picked)


def test_compile_view(demo: Path, snap_compare) -> None:
    """The Compile tab's form before compiling: the built-in cnn for the demo's target, the
    defaults the target resolves to, every stage pending, an empty sweep table."""
    assert snap_compare(EtuApp(demo), terminal_size=(140, 45), run_before=compile_steps)


# --------------------------------------------------------- laptop and SSH sizes


async def _tab(pilot: Pilot, key: str) -> None:
    await settle(pilot)
    await pilot.press(key)
    await settle(pilot)


SMALL_VIEWS = {
    "program": "i",
    "tensors": "t",
    "delegates": "d",
    "memory": "m",
    "fit": "f",
    "run": "u",
    "compile": "k",
    "history": "j",
    "boards": "B",
}


@pytest.mark.parametrize("size", [(80, 24), (120, 36)], ids=["80x24", "120x36"])
@pytest.mark.parametrize("view", [*SMALL_VIEWS, "npu"])
def test_view_at_small_sizes(
    demo: Path, snap_compare, view: str, size: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each tab at a laptop terminal (80×24) and at 120×36: its main content in view,
    nothing past the right edge, Quit in the footer. The Run tab before any run (the FVP
    is not installed in the test environment, which the tab says); the Boards tab with no
    serial port attached (the machine's own would change the picture)."""
    monkeypatch.setattr("serial.tools.list_ports.comports", lambda: [])
    if view == "npu":
        steps = npu_steps
    elif view == "compile":
        steps = compile_steps
    else:

        async def steps(pilot: Pilot) -> None:
            await _tab(pilot, SMALL_VIEWS[view])

    assert snap_compare(EtuApp(demo), terminal_size=size, run_before=steps)


@pytest.mark.parametrize("size", [(80, 24), (120, 36)], ids=["80x24", "120x36"])
def test_run_view_after_a_run_at_small_sizes(
    snap_compare, size: tuple[int, int], tmp_path: Path
) -> None:
    """The Run tab after a stand-in run, its outputs compared with the host (#24 §1): the
    ending on one line, the figures line (NPU cycles, the method pool's use), the outputs'
    verdict line; at 120×36 the panes share the height and the log keeps 10 lines. The
    scratch workspace and the stand-in are named by relative paths (tools/screenshots)."""
    with standin_workspace(tmp_path) as workspace:
        assert snap_compare(EtuApp(workspace), terminal_size=size, run_before=run_steps)


def test_layers_view_at_80x24(demo: Path, snap_compare, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Run tab's Layers view (L) of the demo at a laptop terminal: every layer in graph
    order with its module, unit and figures, the first below the threshold and the largest
    drop marked. A made-up record (the real one is computed in test_app_layers): the
    picture does not depend on torch's numerics."""
    from tests.console.test_app_layers import fake_record
    from tests.console_helpers import wait_until

    monkeypatch.setattr("etu.runner.layers.layers_in_child", lambda pte, session: fake_record())

    async def layers(pilot: Pilot) -> None:
        await _tab(pilot, "u")
        await pilot.press("L")
        screen = pilot.app.screen
        await wait_until(pilot, lambda: not screen.computing, what="the layers")
        await settle(pilot)

    assert snap_compare(EtuApp(demo), terminal_size=(80, 24), run_before=layers)
