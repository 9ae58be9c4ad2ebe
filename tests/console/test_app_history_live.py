"""History is live (issue 24 §2): a session that ends in the console (a Run tab run, one
stopped with ``s``, a Boards tab flash + monitor) is in the History tab and the Run tab's
past runs at once, without ctrl+r; sessions recorded elsewhere are listed when the History
tab is shown, which never says "No recorded session yet" while the folder holds sessions.
At 80×24 and 120×36."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from textual.widgets import DataTable, Static, TabbedContent

from etu.runner.session import sessions_root
from etu.tui.app import EtuApp
from etu.tui.widgets.history import HistoryPanel
from etu.tui.widgets.past_runs import PastRunsList
from tests.console_helpers import open_run_tab, screen_text, wait_run, wait_run_end, wait_until
from tests.history_workspace import V1_SESSIONS
from tools.screenshots import settle

pytestmark = pytest.mark.anyio
SIZES = [(80, 24), (120, 36)]


def _status(app: EtuApp) -> str:
    return str(app.query_one("#history-status", Static).render())


async def _empty_history(pilot, app: EtuApp) -> HistoryPanel:
    """The History panel once it has said the workspace has no session yet."""
    await settle(pilot)
    await wait_until(pilot, lambda: "No recorded session yet" in _status(app),
                     what="the empty History")  # fmt: skip
    return app.query_one(HistoryPanel)


@pytest.mark.parametrize("size", SIZES, ids=["80x24", "120x36"])
async def test_a_finished_and_a_stopped_run_are_in_history_at_once(
    workspace: Path, standin: Path, monkeypatch: pytest.MonkeyPatch, size
) -> None:
    app = EtuApp(workspace)
    async with app.run_test(size=size) as pilot:
        history = await _empty_history(pilot, app)
        panel = await open_run_tab(pilot)
        await pilot.press("r")
        await wait_run_end(pilot, panel)
        first = panel.live.folder
        # no ctrl+r, no visit to the tab: the History lists it
        await wait_until(pilot, lambda: [Path(r.folder) for r in history.rows] == [first],
                         timeout=10, what="the finished run in History")  # fmt: skip
        assert "No recorded session yet" not in _status(app)

        # a run stopped with s
        monkeypatch.setenv("ETU_STANDIN_FAULT", "hang")
        await pilot.press("r")
        await wait_run(pilot, lambda: panel.running and panel.live.folder not in (None, first),
                       what="the second run to start")  # fmt: skip
        second = panel.live.folder
        await pilot.press("s")
        await wait_run_end(pilot, panel)
        assert panel.live.outcome.reason == "killed"
        await wait_until(pilot, lambda: {Path(r.folder) for r in history.rows} == {first, second},
                         timeout=10, what="the stopped run in History")  # fmt: skip
        past = app.query_one(PastRunsList)
        await wait_until(pilot, lambda: {Path(r.folder) for r in past.runs} == {first, second},
                         timeout=10, what="both runs in Past runs")  # fmt: skip
        await pilot.press("j")
        await settle(pilot)
        assert app.query_one(TabbedContent).active == "history"
        assert "2 sessions" in _status(app)
        assert history.query_one("#history-table", DataTable).row_count == 2


@pytest.mark.parametrize("size", SIZES, ids=["80x24", "120x36"])
async def test_sessions_recorded_elsewhere_are_listed_when_history_is_shown(
    workspace: Path, size
) -> None:
    app = EtuApp(workspace)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await wait_until(pilot, lambda: "No recorded session yet" in _status(app),
                         what="the empty History")  # fmt: skip
        root = sessions_root(workspace)
        root.mkdir(parents=True, exist_ok=True)
        for folder in sorted(V1_SESSIONS.iterdir()):  # as an `etu run` in a terminal would
            if folder.is_dir():
                shutil.copytree(folder, root / folder.name)
        await pilot.press("j")
        history = app.query_one(HistoryPanel)
        await wait_until(pilot, lambda: len(history.rows) == 2, timeout=10,
                         what="the sessions recorded elsewhere")  # fmt: skip
        await settle(pilot)
        assert "No recorded session yet" not in screen_text(app)
        assert "2 sessions" in _status(app)


@pytest.mark.parametrize("size", SIZES, ids=["80x24", "120x36"])
async def test_a_boards_tab_session_is_in_history_at_once(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, size
) -> None:
    """A flash + monitor from the Boards tab (the emulated board, QEMU for real): its
    session is in History and Past runs when it ends, without ctrl+r."""
    from etu.tui.screens.preflight import PreflightScreen

    monkeypatch.setattr("serial.tools.list_ports.comports", lambda: [])
    app = EtuApp(workspace)
    async with app.run_test(size=size) as pilot:
        history = await _empty_history(pilot, app)
        await pilot.press("B")
        await settle(pilot)
        assert app.query_one(TabbedContent).active == "boards"
        await pilot.press("r")
        # the delegated demo on a firmware without an NPU driver layer: flash anyway
        await wait_until(pilot, lambda: isinstance(app.screen, PreflightScreen),
                         what="the pre-flight")  # fmt: skip
        await pilot.press("r")
        run = app.run_panel
        await wait_run(pilot, lambda: run.live is not None and run.live.outcome is not None,
                       what="the board session to end")  # fmt: skip
        board = run.live.folder
        assert board is not None and (board / "meta.json").is_file()
        await wait_until(pilot, lambda: [Path(r.folder) for r in history.rows] == [board],
                         timeout=10, what="the board session in History")  # fmt: skip
        past = app.query_one(PastRunsList)
        await wait_until(pilot, lambda: [Path(r.folder) for r in past.runs] == [board],
                         timeout=10, what="the board session in Past runs")  # fmt: skip
        await pilot.press("j")
        await settle(pilot)
        assert "1 session" in _status(app) and "No recorded session yet" not in _status(app)
