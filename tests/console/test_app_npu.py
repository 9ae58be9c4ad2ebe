"""Pilot tests of the NPU tab on real Vela output: the demo's and the sample runs'.

Nothing is mocked: the app finds ``vela/`` beside the program and reads it through its worker,
and the expected numbers come from :func:`etu.parsers.vela.load_vela_report` on the same files.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from textual.message import Message
from textual.notifications import Notify
from textual.pilot import Pilot
from textual.widgets import Input, TabbedContent

from etu.parsers.errors import ParseError
from etu.parsers.vela import load_vela_report
from etu.tui.app import NPU_TAB, PROGRAM_TAB, EtuApp
from etu.tui.screens.open_file import OpenFileScreen
from etu.tui.widgets import (
    AddReportScreen,
    CompareTable,
    InstructionsTable,
    LayerTable,
    VelaError,
    VelaSummary,
)
from tests.console_helpers import SIZE, palette_search, screen_text
from tools.screenshots import settle

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parent.parent.parent
DEMO = ROOT / "etu_tui" / "demo" / "demo_cnn.pte"
DEMO_VELA = DEMO.parent / "vela"
SAMPLES = ROOT / "tests" / "data" / "vela"
U85 = SAMPLES / "30_u85_256_et_default_perf"
U65 = SAMPLES / "20_u65_256_et_default_perf"


async def _npu(pilot: Pilot) -> None:
    await settle(pilot)
    await pilot.press("n")
    await pilot.pause()


async def _add_through_dialog(pilot: Pilot, path: Path) -> None:
    await pilot.press("a")
    await pilot.pause()
    app = pilot.app
    assert isinstance(app.screen, AddReportScreen)
    app.screen.query_one("#path", Input).value = str(path)
    await pilot.press("enter")
    await settle(pilot)


def _workspace(tmp: Path) -> Path:
    """A copy of the demo program alone in a folder."""
    shutil.copyfile(DEMO, tmp / DEMO.name)
    return tmp


# ------------------------------------------------------------------------ the demo


async def test_npu_tab_shows_the_demo_cycles_and_the_version_badge() -> None:
    report = load_vela_report(DEMO_VELA)
    assert report.cycles and report.vela_version  # the demo keeps Vela's stdout
    app = EtuApp(DEMO)
    async with app.run_test(size=SIZE) as pilot:
        await _npu(pilot)
        assert app.query_one(TabbedContent).active == NPU_TAB
        assert app.focused is app.query_one(LayerTable)
        text = screen_text(app)
        assert f"cycles {report.cycles:,}" in text
        assert f"estimate, Vela {report.vela_version}" in text
        assert report.accelerator and report.accelerator in text
        assert report.system_config and report.system_config in text
        assert f"◆ {report.npu_operators} NPU · ○ {report.cpu_operators} CPU" in text
        assert str(ROOT) not in text, "views show relative names, not machine paths"
        assert app.query_one(LayerTable).row_count == len(report.per_layer)
        # Labelled by the folder above vela/ and the configuration.
        config = f"{report.accelerator} {report.memory_mode}"
        assert app.query_one(VelaSummary).border_title == f"Vela · demo/vela · {config}"


async def test_layer_rows_tell_npu_from_cpu() -> None:
    """A TFLite run with one op left on the CPU: marker and colour differ from NPU rows."""
    report = load_vela_report(SAMPLES / "40_tflite_u55_128_regor_all")
    targets = [row.target for row in report.per_layer]
    assert "CPU" in targets and "NPU" in targets
    app = EtuApp(DEMO)
    async with app.run_test(size=SIZE) as pilot:
        await _npu(pilot)
        app.npu_panel.add_report(SAMPLES / "40_tflite_u55_128_regor_all")
        await settle(pilot)
        await pilot.press("r")  # show the added report
        await pilot.pause()
        table = app.query_one(LayerTable)
        assert table.row_count == len(targets)
        assert table.cursor_row == 0  # rows away from the cursor keep their own colour
        npu_y = 1 + targets.index("NPU", 1)
        cpu_y = 1 + targets.index("CPU", 1)
        npu_line, cpu_line = table.render_line(npu_y), table.render_line(cpu_y)
        assert "◆ NPU" in npu_line.text and "○ CPU" in cpu_line.text
        npu_style = next(iter(npu_line)).style
        cpu_style = next(iter(cpu_line)).style
        assert npu_style is not None and cpu_style is not None
        assert npu_style.color != cpu_style.color


async def test_sort_key_puts_the_largest_cycle_layer_first_and_back() -> None:
    report = load_vela_report(DEMO_VELA)
    largest = max(report.per_layer, key=lambda row: row.cycles or 0)
    assert report.per_layer[0] is not largest  # else sorting would prove nothing
    app = EtuApp(DEMO)
    async with app.run_test(size=SIZE) as pilot:
        await _npu(pilot)
        table = app.query_one(LayerTable)
        assert table.layer(0) is report.per_layer[0] or table.layer(0) == report.per_layer[0]
        await pilot.press("s")
        await pilot.pause()
        assert table.by_cycles
        assert table.layer(0) == largest
        first = table.render_line(1).text
        assert largest.name and largest.name in first and f"{largest.cycles:,}" in first
        cycles = [table.layer(i).cycles or 0 for i in range(table.row_count)]
        assert cycles == sorted(cycles, reverse=True)
        assert "by op cycles" in str(app.query_one("#layers-box").border_title)
        await pilot.press("s")
        await pilot.pause()
        assert [table.layer(i) for i in range(table.row_count)] == report.per_layer


async def test_palette_sorts_from_another_tab() -> None:
    report = load_vela_report(DEMO_VELA)
    largest = max(report.per_layer, key=lambda row: row.cycles or 0)
    app = EtuApp(DEMO)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.query_one(TabbedContent).active == PROGRAM_TAB
        await palette_search(pilot, "sort layers", "NPU: sort layers by cycles / original order")
        await pilot.press("enter")
        await pilot.pause()
        assert app.query_one(TabbedContent).active == NPU_TAB
        assert app.query_one(LayerTable).layer(0) == largest


# ------------------------------------------------------------------------ compare


async def test_added_report_is_compared_side_by_side() -> None:
    mine, theirs = load_vela_report(DEMO_VELA), load_vela_report(U85)
    assert mine.system_config != theirs.system_config
    app = EtuApp(DEMO)
    async with app.run_test(size=SIZE) as pilot:
        await _npu(pilot)
        await _add_through_dialog(pilot, U85)
        compare = app.query_one(CompareTable)
        assert [label.strip("▸ ") for label in compare.labels] == [
            f"demo/vela · {mine.accelerator} {mine.memory_mode}",
            f"{U85.name} · {theirs.accelerator} {theirs.memory_mode}",
        ]
        assert mine.system_config in compare.column_texts(0)
        assert theirs.system_config in compare.column_texts(1)
        text = screen_text(app)
        assert mine.system_config in text and theirs.system_config in text
        assert f"{theirs.cycles:,}" in text
        change = round((theirs.cycles - mine.cycles) / mine.cycles * 100)
        assert f"{theirs.cycles:,} ({change:+d}%)" in compare.column_texts(1)
        assert str(ROOT) not in text
        # The summary still shows the program's own report until r picks another.
        assert f"cycles {mine.cycles:,}" in text
        await pilot.press("r")
        await pilot.pause()
        text = screen_text(app)
        assert f"cycles {theirs.cycles:,}" in text
        assert "estimate, Vela version unknown" in text  # no stdout saved in that folder
        assert app.query_one(LayerTable).row_count == len(theirs.per_layer)


async def test_third_report_and_drop() -> None:
    app = EtuApp(DEMO)
    async with app.run_test(size=SIZE) as pilot:
        await _npu(pilot)
        app.npu_panel.add_report(U85)
        app.npu_panel.add_report(U65)
        await settle(pilot)
        compare = app.query_one(CompareTable)
        assert len(compare.labels) == 3
        await pilot.press("x")  # the program's own report is not droppable
        await pilot.pause()
        assert len(app.npu_panel.compared_reports) == 3
        await pilot.press("r")
        await pilot.pause()
        assert app.npu_panel.shown_report is app.npu_panel.added[0]
        await pilot.press("x")
        await pilot.pause()
        assert [r.label for r in app.npu_panel.compared_reports] == ["vela/", f"{U65.name}/"]
        assert load_vela_report(U65).system_config in screen_text(app)


async def test_adding_a_folder_without_vela_output_says_so(tmp_path: Path) -> None:
    notes: list[str] = []

    def hook(message: Message) -> None:
        if isinstance(message, Notify):
            notes.append(message.notification.message)

    app = EtuApp(DEMO)
    async with app.run_test(size=SIZE, message_hook=hook) as pilot:
        await _npu(pilot)
        await _add_through_dialog(pilot, tmp_path)
        assert app.is_running
        assert len(app.npu_panel.compared_reports) == 1
        error = app.query_one(VelaError)
        assert error.has_class("-shown")
        text = screen_text(app)
        assert f"{tmp_path.name}/: no Vela output here" in text
        assert any("no Vela output here" in note for note in notes)
        await pilot.press("escape")
        await pilot.pause()
        assert not error.has_class("-shown")


# ------------------------------------------------------------------------ discovery


async def test_corrupt_vela_folder_shows_the_error_and_the_program_still_opens(
    tmp_path: Path,
) -> None:
    workspace = _workspace(tmp_path)
    vela = workspace / "vela"
    vela.mkdir()
    garbage = vela / "out_summary_Ethos_U55_High_End_Embedded.csv"
    garbage.write_text("this is not,a Vela summary\n1,2\n")
    with pytest.raises(ParseError) as raised:
        load_vela_report(vela)
    expected = f"vela/{garbage.name}: {raised.value.detail}"
    app = EtuApp(workspace)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.load_state == "ready"  # the program is unaffected
        assert app.query_one(InstructionsTable).row_count == 3
        assert app.npu_panel.vela is not None and app.npu_panel.vela.error == expected
        await pilot.press("n")
        await pilot.pause()
        assert app.query_one(VelaError).has_class("-shown")
        text = screen_text(app)
        assert expected in text
        assert "Traceback" not in text and str(tmp_path) not in text
        assert "\n" not in expected
        assert app.query_one(LayerTable).row_count == 0
        await pilot.press("o")  # still responsive
        await pilot.pause()
        assert isinstance(app.screen, OpenFileScreen)
        assert app.is_running


async def test_workspace_without_vela_output(tmp_path: Path) -> None:
    app = EtuApp(_workspace(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await _npu(pilot)
        assert app.load_state == "ready"
        text = screen_text(app)
        assert f"No Vela output beside {DEMO.name}" in text
        assert not app.query_one(VelaError).has_class("-shown")
        assert app.query_one(CompareTable).row_count == 0


async def test_summary_csv_beside_the_program_is_found(tmp_path: Path) -> None:
    workspace = _workspace(tmp_path)
    for csv in U85.glob("*.csv"):
        shutil.copyfile(csv, workspace / csv.name)
    expected = load_vela_report(workspace)
    assert expected.system_config == "Ethos_U85_SYS_DRAM_Mid"
    app = EtuApp(workspace / DEMO.name)
    async with app.run_test(size=SIZE) as pilot:
        await _npu(pilot)
        text = screen_text(app)
        assert f"cycles {expected.cycles:,}" in text and expected.system_config in text
        config = f"{expected.accelerator} {expected.memory_mode}"
        assert app.query_one(VelaSummary).border_title == f"Vela · {workspace.name} · {config}"


async def test_opening_another_program_replaces_its_vela_report(tmp_path: Path) -> None:
    app = EtuApp(DEMO)
    async with app.run_test(size=SIZE) as pilot:
        await _npu(pilot)
        app.npu_panel.add_report(U85)
        await settle(pilot)
        assert len(app.npu_panel.compared_reports) == 2
        app.open_target(_workspace(tmp_path))
        await settle(pilot)
        # The new program has no Vela output; the added report stays for comparison.
        assert app.npu_panel.vela is not None and app.npu_panel.vela.label is None
        assert [r.label for r in app.npu_panel.compared_reports] == [f"{U85.name}/"]
        assert f"cycles {load_vela_report(U85).cycles:,}" in screen_text(app)


async def test_two_vela_folders_get_distinct_labels(tmp_path: Path) -> None:
    """Every compile job writes a vela/ folder: compared, they are named by their job
    folder and configuration, never two identical ``vela/`` labels."""
    jobs = []
    for name, sample in (("job_u85", U85), ("job_u65", U65)):
        folder = tmp_path / name / "vela"
        shutil.copytree(sample, folder)
        jobs.append(folder)
    app = EtuApp(DEMO)
    async with app.run_test(size=SIZE) as pilot:
        await _npu(pilot)
        for folder in jobs:
            app.npu_panel.add_report(folder)
            await settle(pilot)
        labels = [label.strip("▸ ") for label in app.query_one(CompareTable).labels]
        assert len(labels) == 3 and len(set(labels)) == 3
        assert labels[1].startswith("job_u85/vela · ") and labels[2].startswith("job_u65/vela · ")
        u65 = load_vela_report(U65)
        assert labels[2] == f"job_u65/vela · {u65.accelerator} {u65.memory_mode}"


async def test_two_delegates_show_the_total_and_each_share() -> None:
    """A real program with two Ethos-U delegates: the NPU tab totals both Vela calls and
    shows each delegate's cycles and share."""
    from tests.two_delegates import build

    job = build()
    report = load_vela_report(job / "vela")
    first, second = report.calls
    total = report.total()
    app = EtuApp(job / "TwoDelegates.pte")
    async with app.run_test(size=SIZE) as pilot:
        await _npu(pilot)
        text = screen_text(app)
        assert "all 2 delegates" in text
        assert f"cycles {total['cycles']:,}" in text
        assert f"delegate 0 {first.cycles:,} ({report.share(first):.1f}%)" in text
        assert f"delegate 1 {second.cycles:,} ({report.share(second):.1f}%)" in text
        assert "last call" in text
        title = str(app.query_one("#layers-box").border_title)
        assert "delegate 1 of 0-1: the last Vela call" in title, title
