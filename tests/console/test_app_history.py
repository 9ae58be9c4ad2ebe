"""The History tab in the console (Pilot, real stand-in runs): sessions of the open
workspace listed, two compared, and a session replayed in the Run tab's live panes, at
once and at the recorded pace; a session from before this change replays too."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.notifications import Notify
from textual.widgets import DataTable, TabbedContent

from etu.tui.app import RUN_TAB, EtuApp
from etu.tui.widgets.history import FIGURES, HistoryPanel
from tests.console_helpers import wait_until
from tests.history_workspace import add_v1_sessions, make_workspace, record_run
from tools.screenshots import history_steps, settle

pytestmark = pytest.mark.anyio
SIZE = (140, 45)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    ws = make_workspace(tmp_path_factory.mktemp("app-history") / "ws")
    add_v1_sessions(ws)
    record_run(ws)
    record_run(ws, ETU_STANDIN_DRIFT="3")
    return ws


async def wait(pilot, condition, timeout: float = 30.0) -> None:
    await wait_until(pilot, condition, timeout=timeout)


async def test_history_tab_compares_and_replays(workspace: Path) -> None:
    app = EtuApp(workspace)
    async with app.run_test(size=SIZE) as pilot:
        await history_steps(pilot)
        panel = app.query_one(HistoryPanel)
        assert app.query_one(TabbedContent).active == "history"
        assert len(panel.rows) == 4 and panel.workspace == workspace
        changed = [c["name"] for c in panel.diff["counters"] if not c["equal"]]
        assert changed == ["ETHOSU_PMU_AXI1_RD_DATA_BEAT_RECEIVED"]

        # the newest session (the drifted run), replayed at once in the Run tab
        table = panel.query_one("#history-table", DataTable)
        table.move_cursor(row=0)
        await pilot.press("r")
        await wait(pilot, lambda: app.query_one(TabbedContent).active == RUN_TAB)
        run = app.run_panel
        await wait(pilot, lambda: run.live is not None and run.live.outcome is not None)
        await settle(pilot)
        assert run.live.outcome.reason == "success" and run.live.outcome.proof_line == 56
        assert (
            run.live.pmu
            and run.live.pmu[-1].counters["ETHOSU_PMU_AXI1_RD_DATA_BEAT_RECEIVED"] == 31383
        )

        # the committed session from before this change, at the recorded pace
        await pilot.press("j")
        await settle(pilot)
        old = next(i for i, r in enumerate(panel.sorted_rows()) if r.format == 1
                   and r.ending["reason"] == "runner_error")  # fmt: skip
        table.move_cursor(row=old)
        await pilot.pause()
        await pilot.press("y")
        await wait(pilot, lambda: app.query_one(TabbedContent).active == RUN_TAB)
        await wait(pilot, lambda: run.live is not None and run.live.outcome is not None
                   and run.live.outcome.reason == "runner_error")  # fmt: skip
        assert "not found" in run.live.outcome.proof


async def test_workspace_settings_reach_the_console(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "ws")
    (ws / "etu.toml").write_text('theme = "nord"\n[keymap]\nhistory = "f9"\n')
    app = EtuApp(ws)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.theme == "nord"
        await pilot.press("f9")
        await wait(pilot, lambda: app.query_one(TabbedContent).active == "history")
    (ws / "etu.toml").write_text("theme = \n")
    app = EtuApp(ws)
    seen: list = []  # every notification posted (a shown one expires after a few seconds)
    async with app.run_test(size=SIZE, notifications=True, message_hook=seen.append) as pilot:
        await settle(pilot)

        def warned() -> bool:
            return any(
                "etu.toml:1: not valid TOML" in m.notification.message
                for m in seen
                if isinstance(m, Notify)
            )

        await wait(pilot, warned)
        assert app.theme == "textual-dark"


@pytest.mark.parametrize("size", [(120, 36), (80, 24)], ids=["120x36", "80x24"])
async def test_the_compare_shows_every_column_and_the_chart_is_one_key_away(
    workspace: Path, size: tuple[int, int]
) -> None:
    """Both sessions' figures, the change and the percent are in view at 120×36 (beside the
    chart) and at 80×24 (the chart hidden there: g shows it full screen, Escape restores)."""
    app = EtuApp(workspace)
    async with app.run_test(size=size) as pilot:
        await history_steps(pilot)
        compare = app.query_one("#history-compare", DataTable)
        inside = compare.content_region.width
        widths = [column.get_render_width(compare) for column in compare.columns.values()]
        assert len(widths) == 5 and sum(widths) <= inside, (widths, inside)
        chart = app.query_one("#history-chart")
        assert bool(chart.region.area) == (size == (120, 36))
        figure = app.query_one(HistoryPanel).figure
        await pilot.press("g")
        await pilot.pause()
        if size == (80, 24):
            assert app.screen.maximized is chart and chart.region.height > 10
            assert app.query_one(HistoryPanel).figure == figure  # first g: the chart shown
            await pilot.press("g")
            await pilot.pause()
            await pilot.press("escape")
            await pilot.pause()
            assert app.screen.maximized is None and not chart.region.area
            assert app.screen.focused is app.query_one("#history-table")
        assert app.query_one(HistoryPanel).figure == (figure + 1) % len(FIGURES)
