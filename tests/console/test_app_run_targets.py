"""The Run tab names what it targets (issue 21 §1): an FVP, the emulated board, or a board
the Boards tab flashed; its header, title, ELF dialog and palette entries say which."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Select, Static, TabbedContent

from etu.runner.boards.source import SerialSource
from etu.tui.app import RUN_TAB, EtuApp
from etu.tui.keys import KEYS
from etu.tui.widgets.boards import BoardMonitorRequested
from etu.tui.widgets.run_launch import RunElfScreen
from tests.board_peers import Pty, runner_log
from tests.console_helpers import SIZE, wait_until
from tools.screenshots import settle

pytestmark = pytest.mark.anyio


def _plain(app: EtuApp, selector: str) -> str:
    return str(app.query_one(selector, Static).render())


async def test_the_emulated_board_as_target_is_named_so(
    workspace: Path,
    standin: Path,
) -> None:
    """Choosing the emulated board: the header's title and the pick-ELF dialog name it, not
    an FVP (both said "FVP" whatever the target)."""
    app = EtuApp(workspace)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("u")
        await settle(pilot)
        top = app.query_one("#run-top")
        assert "FVP" in str(top.border_title)
        app.query_one("#run-target", Select).value = "qemu-an547"
        await settle(pilot)
        title = str(top.border_title)
        assert "emulated board" in title and "FVP" not in title
        await pilot.press("e")
        await settle(pilot)
        assert isinstance(app.screen, RunElfScreen)
        assert "emulated board" in app.screen.DIALOG_TITLE
        assert "FVP" not in app.screen.HINT and "QEMU" in app.screen.HINT


def test_the_palette_names_every_run_target() -> None:
    """The Run tab's palette entries say what a run can target, not "the FVP" alone."""
    titles = {spec.id: spec.title for spec in KEYS}
    for key in ("run", "start_run"):
        assert "on the FVP" not in titles[key], titles[key]
        assert "emulated board" in titles[key], titles[key]
    assert "board" in titles["run"]


async def test_after_a_board_session_the_header_shows_that_session(
    workspace: Path,
    standin: Path,
) -> None:
    """The Boards tab hands a board's port to the Run tab: while it runs and after it ended,
    the header shows that board and its port (it showed the Arm FVP tag while running and
    the stand-in FVP's banner, the next run's, once it ended)."""
    pty = Pty()
    app = EtuApp(workspace)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            await wait_until(pilot, lambda: app.run_panel.header.preview is not None, timeout=30)
            source = SerialSource(pty.path, {"baudrate": 115200}, settle=0.3).open()
            meta = {"port": pty.path, "board": "wiseeye2", "label": "WiseEye2 on a pty"}
            app.post_message(BoardMonitorRequested(source, meta, "WiseEye2 on a pty"))
            await wait_until(pilot, lambda: app.run_panel.live is not None, timeout=10)
            pty.write(runner_log(8))
            run = app.run_panel
            await wait_until(pilot, lambda: run.live.outcome is not None, timeout=30,
                             what="the board's session did not end")  # fmt: skip
            await settle(pilot)
            assert app.query_one(TabbedContent).active == RUN_TAB
            simulator = _plain(app, "#run-simulator")
            assert "STAND-IN" not in simulator and "Arm FVP" not in simulator, simulator
            assert "BOARD wiseeye2" in simulator and "WiseEye2 on a pty" in simulator
            assert pty.path in _plain(app, "#run-command")
            assert "a board" in str(app.query_one("#run-top").border_title)
            # Another target chosen: the header shows the next run on it again.
            app.query_one("#run-target", Select).value = "ethos-u85-256"
            await wait_until(pilot, lambda: "STAND-IN" in _plain(app, "#run-simulator"))
    finally:
        pty.close()
