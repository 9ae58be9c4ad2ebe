"""The History panel on its own (Pilot): sessions listed and sorted, two marked sessions
compared side by side, a figure charted over one program's sessions, replay requested."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.app import App, ComposeResult
from textual.widgets import DataTable

from etu.tui.widgets.history import FIGURES, HistoryPanel, ReplayRequested, replay_schedule
from tests.console_helpers import wait_until
from tests.history_workspace import add_v1_sessions, make_workspace, record_run


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    ws = make_workspace(tmp_path_factory.mktemp("view") / "ws")
    add_v1_sessions(ws)
    record_run(ws)
    record_run(ws, ETU_STANDIN_DRIFT="3")
    return ws


class Harness(App):
    def __init__(self, workspace: Path) -> None:
        super().__init__()
        self.workspace = workspace
        self.replays: list[ReplayRequested] = []

    def compose(self) -> ComposeResult:
        yield HistoryPanel(id="history")

    def on_mount(self) -> None:
        panel = self.query_one(HistoryPanel)
        panel.set_workspace(self.workspace)
        panel.query_one("#history-table").focus()

    def on_replay_requested(self, message: ReplayRequested) -> None:
        self.replays.append(message)


async def wait_for(pilot, condition) -> None:
    await wait_until(pilot, condition, timeout=10, what="the history panel's worker")


@pytest.mark.anyio
async def test_history_lists_sorts_compares_charts_and_replays(workspace: Path) -> None:
    app = Harness(workspace)
    async with app.run_test(size=(160, 45)) as pilot:
        panel = app.query_one(HistoryPanel)
        await wait_for(pilot, lambda: len(panel.rows) == 4)
        table = panel.query_one("#history-table", DataTable)
        assert table.row_count == 4
        first = [str(c) for c in table.get_row_at(0)]
        assert "success" in first[5] and "demo_cnn.pte" in first[3]
        assert [r.format for r in panel.sorted_rows()] == [2, 2, 1, 1]  # newest first

        await pilot.press("s")  # by kind
        await pilot.press("s", "s", "s", "s", "s")  # → NPU cycles, biggest first
        assert panel.sort.column == 6 and panel.sort.reverse
        ordered = [r.npu_cycles for r in panel.sorted_rows()]
        assert ordered[:3] == sorted(ordered[:3], reverse=True) and ordered[-1] is None
        while panel.sort.column != 0:
            await pilot.press("s")
        assert not panel.sort.reverse  # oldest first now
        seen = []
        for _ in range(11):
            await pilot.press("s")
            seen.append(panel.sort.column)
        assert seen == [*range(1, 11), 0] and panel.sort.reverse

        # mark the two newest (the drifted run and the one before it): compared at once
        table.move_cursor(row=0)
        await pilot.press("space")
        await pilot.press("down", "space")
        await wait_for(pilot, lambda: panel.diff is not None)
        compare = panel.query_one("#history-compare", DataTable)
        cells = [[str(c) for c in compare.get_row_at(i)] for i in range(compare.row_count)]
        changed = [row for row in cells if row[0].startswith("≠")]
        names = [row[0] for row in changed]
        assert "≠ AXI1_RD_DATA_BEAT_RECEIVED" in names  # ETHOSU_PMU_ left out
        assert "≠ output 0 (max |Δ|, cos)" in names
        assert any(n.startswith("≠ log line") for n in names)
        counter = next(r for r in changed if "AXI1" in r[0])
        assert counter[3] == "+3"  # A is the older run, B the newer (drifted) one
        assert "different" in str(compare.border_title)

        # the chart follows the highlighted session's program over time
        assert panel.chart_program == "demo_cnn.pte"
        assert len(panel.chart_points) == 3  # the old error run printed no PMU report
        assert [v for _, v in panel.chart_points] == [54916.0] * 3
        await pilot.press("g")
        assert FIGURES[panel.figure][0] == "cpu_cycles"
        assert "CPU cycles" in str(panel.query_one("#history-chart").border_title)

        await pilot.press("r")
        await pilot.press("y")
        await pilot.pause()
        assert [m.timed for m in app.replays] == [False, True]
        assert app.replays[0].folder.name == panel.current_row().id


def test_replay_schedule_follows_the_recorded_times() -> None:
    times = [(0, 100.0), (10, 100.5), (20, 102.0)]
    assert replay_schedule(times) == [0.0, 0.5, 2.0]
    assert replay_schedule(times, speed=2.0) == [0.0, 0.25, 1.0]
    assert replay_schedule([]) == []
