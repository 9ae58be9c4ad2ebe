"""The console at a laptop terminal or SSH window (80×24) and at 120×36: every tab shows
its main content, nothing runs past the right edge, the footer keeps Quit; the log can be
maximised. Real demo files and a real stand-in run."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import TabbedContent

from etu.tui.app import EtuApp
from etu.tui.widgets import InstructionsTable, LayerTable, LogView
from etu.tui.widgets.run_panes import OutputsPane, RunBanner
from tests.console_helpers import palette_search, screen_text, wait_until
from tools.screenshots import DEMO_PROGRAM, DEMO_WORKSPACE, pending_workers, settle

pytestmark = pytest.mark.anyio

SMALL = (80, 24)
TAB_KEYS = ("i", "t", "d", "n", "m", "f", "u", "k")


def _rows_shown(table) -> int:
    """Data rows the table has on screen (its height less the header and scrollbar)."""
    return min(table.row_count, table.scrollable_content_region.height - 1)


@pytest.mark.parametrize("size", [SMALL, (120, 36)])
async def test_every_tab_fits_the_terminal(size: tuple[int, int]) -> None:
    app = EtuApp(DEMO_PROGRAM)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        for key in TAB_KEYS:
            await pilot.press(key)
            await settle(pilot)
            lines = screen_text(app).splitlines()
            assert len(lines) == size[1]
            assert all(len(line) <= size[0] for line in lines), key
            assert "q Quit" in lines[-1], key
            # Box borders close on the right edge, not past it: the right column is a
            # border, a scrollbar or blank on every line of the body.
            assert app.query_one(TabbedContent).active


async def test_program_tab_shows_5_instruction_rows_at_80x24() -> None:
    app = EtuApp(DEMO_PROGRAM)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        table = app.query_one(InstructionsTable)
        assert table.scrollable_content_region.height - 1 >= 5
        assert _rows_shown(table) == table.row_count == 3  # the demo has 3


async def test_npu_tab_shows_5_layers_at_80x24() -> None:
    app = EtuApp(DEMO_PROGRAM)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        await pilot.press("n")
        await settle(pilot)
        layers = app.query_one(LayerTable)
        assert layers.row_count >= 5
        assert _rows_shown(layers) >= 5


async def _finish_run(pilot: Pilot) -> None:
    app = pilot.app
    assert isinstance(app, EtuApp)
    await pilot.press("u")
    await settle(pilot)
    await pilot.press("r")
    await wait_until(
        pilot,
        lambda: not app.run_panel.running and app.run_panel.live is not None,
        timeout=60,
        what="the stand-in run did not end",
    )
    await settle(pilot)


async def test_run_tab_shows_7_log_lines_and_the_outputs_verdict_at_80x24_and_z_maximises(
    workspace: Path, standin: Path
) -> None:
    """At 80x24, after a run with outputs: the log keeps 7 lines (8 before the Outputs pane's
    verdict row took its place under the panes, #22) and z maximises it."""
    app = EtuApp(workspace)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        await _finish_run(pilot)
        log = app.query_one(LogView)
        assert log.size.height >= 7
        assert log.row_count >= 7
        lines = screen_text(app).splitlines()
        assert all(len(line) <= SMALL[0] for line in lines)
        before = log.size.height
        await pilot.press("z")
        await pilot.pause()
        assert app.screen.maximized is log
        assert log.size.height > before
        await pilot.press("z")
        await pilot.pause()
        assert app.screen.maximized is None


async def _finish_and_compare(pilot: Pilot) -> None:
    """A finished run whose outputs the host has compared (the pane's verdict is in)."""
    await _finish_run(pilot)
    app = pilot.app
    assert isinstance(app, EtuApp)
    await wait_until(pilot, lambda: not pending_workers(app.run_panel.shown), timeout=60,
                     what="the outputs were not compared")  # fmt: skip
    await settle(pilot)


@pytest.mark.parametrize("size", [SMALL, (120, 36)], ids=["80x24", "120x36"])
async def test_the_ending_the_verdict_and_the_allocator_headline_are_in_view(
    workspace: Path, standin: Path, size: tuple[int, int]
) -> None:
    """#24 §1: at the sizes people use, after a run, the ending (one line), the output's
    verdict line (✓/✗ with its worst error) and the allocator's headline are on screen
    without resizing; the log keeps 10 lines at 120×36 (it kept 3: the banner wrapped, the
    panes were 14 rows high) and 7 at 80×24."""
    from etu.tui.widgets.npu_invoke_lines import compact

    app = EtuApp(workspace)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await _finish_and_compare(pilot)
        record = app.run_panel.shown
        assert record.comparison is not None
        text = screen_text(app)
        lines = text.splitlines()
        assert all(len(line) <= size[0] for line in lines)
        assert any(line.startswith(" ✓ success · line ") for line in lines), text
        verdict = app.query_one(OutputsPane).lines[1].strip()
        assert verdict.startswith(("✓", "✗")) and ("max" in verdict or "exact" in verdict)
        assert verdict in text
        used = record.memory.pools["method_allocator"].used
        assert f"method pool {compact(used, 'B')} of" in text
        log = app.query_one(LogView)
        assert log.size.height >= (10 if size == (120, 36) else 7)
        assert app.query_one(RunBanner).size.height == 2  # the ending, then the figures


async def test_every_hidden_pane_is_one_key_or_palette_entry_away_at_80x24(
    workspace: Path, standin: Path
) -> None:
    """#24 §1: the panes row is hidden at 80×24; p, A, O and v show the PMU, allocator,
    outputs and past-runs panes full screen (the same key or Escape restores, the log has
    the focus back); the palette finds them by "pmu", "allocator", "output", "process"."""
    from etu.tui.widgets import PastRunsList
    from etu.tui.widgets.pmu_pane import PmuPane
    from etu.tui.widgets.run_panes import AllocatorPane, ProcessPane

    app = EtuApp(workspace)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        await _finish_run(pilot)
        assert not app.query_one(PmuPane).region.area  # hidden
        panes = {"p": PmuPane, "A": AllocatorPane, "O": OutputsPane, "v": PastRunsList}
        for key, kind in panes.items():
            pane = app.query_one(kind)
            await pilot.press(key)
            await pilot.pause()
            assert app.screen.maximized is pane and pane.region.height > 10, key
            await pilot.press(key if key != "v" else "escape")
            await pilot.pause()
            assert app.screen.maximized is None, key
            assert isinstance(app.screen.focused, LogView), key
        found = {"pmu": PmuPane, "allocator": AllocatorPane, "output": OutputsPane,
                 "process": ProcessPane}  # fmt: skip
        for query, kind in found.items():
            title = f"Run: {query.upper() if query == 'pmu' else query}"
            await palette_search(pilot, query, title)
            await pilot.press("enter")
            pane = app.query_one(kind)
            await wait_until(pilot, lambda p=pane: app.screen.maximized is p, what=query)
            await pilot.press("escape")
            await pilot.pause()
            assert app.screen.maximized is None


async def test_pmu_pane_names_utilisation_and_the_runners_ratio(
    workspace: Path, standin: Path
) -> None:
    """NPU utilisation is (cycle counter − NPU_IDLE) / cycles; the runner's own ratio is
    shown under its own name."""
    app = EtuApp(workspace)
    async with app.run_test(size=(140, 45)) as pilot:
        await settle(pilot)
        await _finish_run(pilot)
        from etu.tui.widgets.pmu_pane import PmuPane

        report = app.run_panel.shown.pmu[-1]
        idle = next(v for k, v in report.counters.items() if k.endswith("NPU_IDLE"))
        expected = 100.0 * (report.npu_cycles - idle) / report.npu_cycles
        lines = app.query_one(PmuPane).lines
        assert any(
            line.startswith("NPU utilisation") and f"{expected:.1f}%" in line for line in lines
        ), lines
        if report.npu_ratio is not None:
            assert f"runner's NPU ratio {report.npu_ratio:.1f}%" in lines


async def test_pmu_pane_says_why_there_is_no_report_after_a_fault(
    workspace: Path, standin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ETU_STANDIN_FAULT", "hard-fault")
    app = EtuApp(workspace)
    async with app.run_test(size=(140, 45)) as pilot:
        await settle(pilot)
        await _finish_run(pilot)
        assert app.run_panel.shown.outcome.reason == "hard_fault"
        assert "No PMU report: the core faulted" in screen_text(app)


async def test_hard_fault_banner_symbolises_pc_and_lr_against_the_elf(
    workspace: Path, standin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from etu.parsers.fault import ElfSymbols
    from etu.tui.widgets.run_panes import RunBanner
    from etu.tui.widgets.triage import function_text

    monkeypatch.setenv("ETU_STANDIN_FAULT", "hard-fault")
    app = EtuApp(workspace)
    async with app.run_test(size=(140, 45)) as pilot:
        await settle(pilot)
        await _finish_run(pilot)
        record = app.run_panel.shown
        assert record.faults, "the parser saw the platform's fault report"
        regs = record.faults[-1].registers
        symbols = ElfSymbols.load(workspace / "firmware" / "arm_executor_runner.elf")
        banner = app.query_one(RunBanner)
        # Decoded in a worker (it reads the ELF): the banner says so, then shows it.
        await wait_until(pilot, lambda: "decoding" not in banner.text, timeout=30)
        text = banner.text
        assert "hard fault: PC " in text and "CFSR 0x" in text
        pc, lr = (function_text(symbols.locate(regs[r]), regs[r]) for r in ("pc", "lr"))
        assert f"PC {pc} ({regs['pc']:#010x})" in text
        assert f"LR {lr}" in text


async def test_missing_operator_banner_gives_the_fit_fix(
    workspace: Path, standin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from etu.tui.widgets.run_panes import RunBanner

    monkeypatch.setenv("ETU_STANDIN_FAULT", "missing-operator")
    app = EtuApp(workspace)
    async with app.run_test(size=(140, 45)) as pilot:
        await settle(pilot)
        await _finish_run(pilot)
        assert app.run_panel.shown.missing
        text = app.query_one(RunBanner).text
        assert "missing operator: " in text
        assert f"EXECUTORCH_SELECT_OPS_LIST={app.facts.select_ops}" in text


def test_the_banner_names_the_function_and_offset_in_the_demo_firmware() -> None:
    """PC and LR through parsers.fault's symbols (the console has no symboliser of its own)."""
    from etu.parsers.elf_map import read_elf
    from etu.parsers.fault import ElfSymbols
    from etu.tui.widgets.triage import function_text

    elf = DEMO_WORKSPACE / "firmware" / "arm_executor_runner.elf"
    image = read_elf(elf)
    main = next(s for s in image.symbols if s.name == "main" and s.type == "FUNC")
    symbols = ElfSymbols.load(elf)
    assert function_text(symbols.locate(main.address), main.address) == "main"
    thumb = main.address + 0x10 | 1  # Thumb bit ignored
    assert function_text(symbols.locate(thumb), thumb) == "main+0x10"
    assert function_text(symbols.locate(0xFFFFFFF0), 0xFFFFFFF0) == "0xfffffff0"
