"""The console's small roughnesses a newcomer's trial tripped over (issue 24 §10), each
checked where it showed: the log's find status, the History tab's counts, hints, chart and
compare pane, the PMU pane's history bar, the Process pane, the Boards baud, path dialogs,
the Delegates tab's compile specs and the Memory tab's sections."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from textual.app import App, ComposeResult
from textual.widgets import DataTable, Input, Label, Sparkline, Static

from etu.parsers.runner_events import LogLine, PmuReport
from etu.runner.run_model import LogStore, RunRecord, split_events
from etu.tui.app import EtuApp
from etu.tui.screens.open_file import OpenFileScreen
from etu.tui.widgets.boards import BoardsPanel
from etu.tui.widgets.delegates import DelegatesView
from etu.tui.widgets.history import HistoryPanel
from etu.tui.widgets.log_box import LogBox
from etu.tui.widgets.pmu_pane import PmuPane
from etu.tui.widgets.run_panes import ProcessPane
from tests.console_helpers import HistoryHarness, screen_text, wait_until
from tests.helpers import DEMO
from tests.history_workspace import V1_SESSIONS

SIZES = [(80, 24), (120, 36)]


def store_of(*texts: str) -> LogStore:
    store = LogStore()
    lines = [LogLine(n, t.encode(), b"\n", t) for n, t in enumerate(texts, 1)]
    store.add(split_events(lines, 0.0)[0])
    return store


class Panes(App):
    """The log box, the PMU and Process panes on their own."""

    def compose(self) -> ComposeResult:
        yield LogBox(id="box")
        yield PmuPane(id="pmu")
        yield ProcessPane(id="process")


@pytest.mark.anyio
async def test_find_status_pmu_history_and_process_pane() -> None:
    app = Panes()
    async with app.run_test(size=(120, 36)):
        box = app.query_one(LogBox)
        box.show(store_of("boot", "Output 0", "idle", "Output 1"), 0.0)
        box.query_one("#run-find", Input).value = "output"
        box.find(True)
        status = box.query_one("#run-find-status", Static)
        assert "1 of 2 matches" in str(status.render())
        # a filter shows other lines: the count of the last find no longer holds
        box.query_one("#run-filter", Input).value = "1"
        box.apply_filter()
        assert "of 2" not in str(status.render())
        box.find(True)
        assert "1 of 1 match" in str(status.render())
        # another run's lines: the same
        box.show(store_of("Output 9"), 0.0)
        assert "of 1" not in str(status.render())

        pmu = app.query_one(PmuPane)
        spark = pmu.query_one("#pmu-history", Sparkline)
        label = pmu.query_one("#pmu-history-label", Label)
        pmu.show([], [54_916.0], None, False, "success")  # a run with no PMU report
        assert list(spark.data or []) == [] and str(label.render()) == "history"
        report = PmuReport(1, npu_inferences=1, npu_cycles=54_916)
        pmu.show([report], [54_916.0], None, False)  # one value: no full-width bar
        assert list(spark.data or []) == [] and str(label.render()) == "history (1)"
        pmu.show([report], [54_916.0, 55_000.0], None, False)
        assert list(spark.data or []) == [54_916.0, 55_000.0]

        process = app.query_one(ProcessPane)
        never = RunRecord("current run", live=True)
        never.failure = "FVP_Corstone_SSE-300_Ethos-U55 not found"
        process.show(never)
        text = str(process.render())
        assert "did not start" in text and "Ended before" not in text


@pytest.fixture
def qemu_workspace(tmp_path: Path) -> Path:
    """One session, recorded on QEMU (no PMU report: the emulated board counts no cycles)."""
    v1 = next(f for f in sorted(V1_SESSIONS.iterdir()) if f.is_dir())
    session = tmp_path / ".etu" / "sessions" / v1.name.replace("-fvp-", "-qemu-")
    shutil.copytree(v1, session)
    meta = json.loads((session / "meta.json").read_text())
    meta |= {"kind": "qemu", "target": "qemu-an547", "simulated": False}
    (session / "meta.json").write_text(json.dumps(meta))
    raw = (session / "raw.log").read_text().splitlines(keepends=True)
    (session / "raw.log").write_text("".join(line for line in raw if "pmu" not in line.lower()))
    return tmp_path


@pytest.mark.anyio
@pytest.mark.parametrize("size", SIZES)
async def test_history_counts_hints_chart_note_and_compare_pane(qemu_workspace, size) -> None:
    app = HistoryHarness(qemu_workspace)
    async with app.run_test(size=size) as pilot:
        panel = app.query_one(HistoryPanel)
        await wait_until(pilot, lambda: len(panel.rows) == 1, timeout=10, what="the listing")
        await pilot.pause()
        status = str(panel.query_one("#history-status", Static).render())
        assert status.startswith("1 session ·")
        chart = panel.query_one("#history-chart")
        assert "1 session" not in str(chart.border_title)  # no NPU cycles: 0 sessions
        assert panel.chart_points == []
        # the hints read as the other panes' do: "key word", lower case, in the subtitle
        compare = panel.query_one("#history-compare", DataTable)
        assert str(compare.border_subtitle) == "space mark · v compare"
        assert str(chart.border_subtitle) == "g next figure"
        assert ":" not in str(compare.border_title) + str(chart.border_title)
        # the compare pane is a pane before anything is compared, and says how
        assert compare.region.height >= 5
        text = screen_text(app)
        assert "Mark two sessions with space" in text
        # the empty chart says why
        assert "cycles: none on QEMU" in text and "QEMU counts no cycles" in text


@pytest.mark.anyio
async def test_boards_baud_shows_the_profile_and_dialogs_keep_the_folder(tmp_path) -> None:
    class Boards(App):
        def compose(self) -> ComposeResult:
            yield BoardsPanel(id="boards")

    app = Boards()
    async with app.run_test(size=(120, 36)) as pilot:
        panel = app.query_one(BoardsPanel)
        baud = panel.query_one("#boards-baud", Input)
        await wait_until(pilot, lambda: baud.value != "", timeout=5, what="the baud")
        profile = panel.profiles[str(panel.query_one("#boards-profile").value)]
        assert baud.value == str(profile.baud)

        folder = f"{tmp_path}/"
        app.push_screen(OpenFileScreen(folder))
        await pilot.pause()
        await pilot.press("x", "y")
        assert app.screen.query_one("#path", Input).value == f"{folder}xy"


@pytest.mark.anyio
@pytest.mark.parametrize("size", SIZES)
async def test_compile_specs_wrap_between_flags_and_sections_keep_names(size) -> None:
    flags = ("--accelerator-config=ethos-u55-128", "--system-config=Ethos_U55_High_End_Embedded")
    app = EtuApp(DEMO)
    async with app.run_test(size=size) as pilot:
        await pilot.press("d")
        await pilot.pause()
        # at 80×24 the card's specs end below the fold: the view scrolls to them
        app.query_one(DelegatesView).scroll_end(animate=False)
        await pilot.pause()
        text = screen_text(app)
        for flag in flags:
            assert flag in text, flag
        if size == (120, 36):  # 80 columns cannot hold a map's five columns
            await pilot.press("m")
            await pilot.pause()
            text = screen_text(app)
            for name in (".copy.table", ".zero.table", ".sram.data", ".ddr.rodata"):
                assert name in text, name


@pytest.mark.anyio
@pytest.mark.parametrize("size", SIZES)
async def test_compile_choices_stay_on_their_line(size) -> None:
    """The default system config's name is what the Compile tab shows, cut with an ellipsis
    where the row is narrow (it wrapped out of view: "System config default:")."""
    app = EtuApp(DEMO)
    async with app.run_test(size=size) as pilot:
        await wait_until(pilot, lambda: app.load_state == "ready", timeout=20, what="the demo")
        await pilot.press("k")
        await pilot.pause()
        text = screen_text(app)
        row = next(line for line in text.splitlines() if "System config" in line)
        assert "System config Ethos_U55_H" in row, row
        assert "Memory mode Shared_Sram" in row, row
