"""The etu console: open a ``.pte`` and see what runs on the Ethos-U NPU and what stays on CPU.

Threading rule (from harlequin): the loading worker decodes and posts one message; it never
touches a widget. Handlers on the App own the loaded program and update the views.
Nothing here imports torch or executorch: the console must start on a lab PC without them.
"""

from __future__ import annotations

import os
from contextlib import suppress
from pathlib import Path
from typing import ClassVar

from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.widgets import Footer, Header, Static, TabbedContent, TabPane
from textual.worker import Worker, WorkerState, get_current_worker

from etu_tui.commands import EtuCommands, PaletteCommand
from etu_tui.messages import (
    FirmwareLoaded,
    FirmwareResult,
    OpenCompiled,
    ProgramFacts,
    ProgramFailed,
    ProgramLoaded,
    VelaAdded,
    VelaResult,
    decode_facts,
    error_line,
    find_firmware,
    load_firmware,
    load_vela,
    output_shapes,
    program_target,
    resolve_target,
    vela_label,
    workspace_vela,
)
from etu_tui.screens.open_file import OpenFileScreen
from etu_tui.widgets import (
    AddReportScreen,
    CompareTable,
    CompilePanel,
    CpuOpsView,
    DelegatesView,
    ErrorPanel,
    FirmwareError,
    FitChecks,
    FitHeadline,
    InstructionsLegend,
    InstructionsTable,
    KernelsView,
    LayerTable,
    MemoryWarnings,
    PickElfScreen,
    PlanFacts,
    PoolGauges,
    ProgramSummary,
    RegionBars,
    RunPanel,
    SectionsTable,
    SymbolsTable,
    ValuesTable,
    VelaError,
    VelaMessages,
    VelaSummary,
)
from etu_tui.widgets.delegates import one_line
from etu_tui.widgets.fit import tab_label
from etu_tui.widgets.formatting import plural
from etu_tui.widgets.memory import pools_height
from etu_tui.widgets.run import RunElfScreen
from etu_tui.widgets.run_log import TIME_MODES, LogView
from etu_tui.widgets.run_model import LEVELS
from parsers.pte import ExecutionPlan, Tensor

DEMO_WORKSPACE = Path(__file__).resolve().parent / "demo"

# Tab ids.
PROGRAM_TAB, TENSORS_TAB, DELEGATES_TAB, NPU_TAB = "program", "tensors", "delegates", "npu"
MEMORY_TAB, FIT_TAB, RUN_TAB = "memory", "fit", "run"
COMPILE_TAB = "compile"
# Tabs that show one plan: the plan key is in the footer there only.
PLAN_TABS = (PROGRAM_TAB, TENSORS_TAB, DELEGATES_TAB)
# Keys that act on the NPU tab: shown in the footer there only; the palette opens the tab.
NPU_ACTIONS = ("sort_layers", "next_report", "drop_report")
# Keys of the Memory and Fit tabs: shown in the footer there only; the palette opens Memory.
FIRMWARE_ACTIONS = ("pick_elf",)
# Keys of the Run tab: shown in the footer there only (it has room for five of them once
# the program's own keys step aside); the palette opens the tab first.
RUN_ACTIONS = (
    "start_run",
    "stop_run",
    "pick_run_elf",
    "log_find",
    "log_follow",
    "log_hex",
    "log_time",
    "log_filter",
    "log_next",
    "log_prev",
    "past_runs",
)
# Keys of the Compile tab: shown in the footer there only; the palette opens the tab first.
COMPILE_ACTIONS = ("start_compile", "cancel_compile", "open_compiled", "start_sweep", "sort_sweep")
# The program's keys that the Run and Compile tabs hide from their footer (the palette
# still has them).
PROGRAM_ACTIONS = ("copy_select_ops", "add_vela_report")


class EtuApp(App[int]):
    """One program at a time; ``target`` is a ``.pte`` or a workspace folder."""

    CSS_PATH = "app.tcss"
    TITLE = "etu"
    COMMANDS: ClassVar = App.COMMANDS | {EtuCommands}

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("o", "open_file", "Open", id="open", tooltip="Open a .pte file or workspace"),
        # Labels are short: the footer holds every key of the NPU tab at 140 columns.
        Binding(
            "c",
            "copy_select_ops",
            "Copy ops",
            id="copy_select_ops",
            tooltip="Copy EXECUTORCH_SELECT_OPS_LIST",
        ),
        Binding("i", f"show_tab('{PROGRAM_TAB}')", "Program", id="instructions"),
        Binding("t", f"show_tab('{TENSORS_TAB}')", "Tensors", id="tensors"),
        Binding("d", f"show_tab('{DELEGATES_TAB}')", "Delegates", id="delegates"),
        Binding("n", f"show_tab('{NPU_TAB}')", "NPU", id="npu"),
        Binding("m", f"show_tab('{MEMORY_TAB}')", "Memory", id="memory"),
        Binding("f", f"show_tab('{FIT_TAB}')", "Fit", id="fit"),
        Binding("u", f"show_tab('{RUN_TAB}')", "Run", id="run"),
        # No room for a seventh tab key in the NPU tab's footer: the tab bar and the
        # palette open Compile too.
        Binding("k", f"show_tab('{COMPILE_TAB}')", "Compile", id="compile", show=False),
        Binding("p", "next_plan", "Plan", id="next_plan", tooltip="Next plan"),
        Binding(
            "a",
            "add_vela_report",
            "Compare",
            id="add_vela_report",
            tooltip="Add a Vela report to compare side by side",
        ),
        # The Run tab's keys share letters with other tabs' keys: each is only enabled on
        # its own tab (check_action), so one key does one thing wherever you are.
        Binding("r", "start_run", "Start", id="start_run", tooltip="Run the firmware"),
        Binding("s", "stop_run", "Stop", id="stop_run", tooltip="Stop the run"),
        Binding("s", "sort_layers", "Sort", id="sort_layers", tooltip="By cycles / Vela's order"),
        Binding("r", "next_report", "Next report", id="next_report"),
        # No room in the footer at 140 columns: the compare table's title names the key.
        Binding("x", "drop_report", "Drop report", id="drop_report", show=False),
        Binding(
            "e",
            "pick_elf",
            "Pick ELF",
            id="pick_elf",
            tooltip="Read another firmware ELF and check the program against it",
        ),
        Binding("slash", "log_find", "Find", id="log_find", tooltip="Find in the log"),
        Binding("l", "log_follow", "Follow", id="log_follow", tooltip="Follow the log's end"),
        Binding("h", "log_hex", "Hex", id="log_hex", tooltip="The cursor line's bytes"),
        # No room in the footer: the log's border names these keys.
        Binding("e", "pick_run_elf", "ELF", id="pick_run_elf", show=False),
        Binding("w", "log_time", "Time", id="log_time", show=False),
        Binding("ctrl+f", "log_filter", "Filter", id="log_filter", show=False),
        Binding("right_square_bracket", "log_next", "Next match", id="log_next", show=False),
        Binding("left_square_bracket", "log_prev", "Previous match", id="log_prev", show=False),
        # The Compile tab's keys (enabled there only, like the Run tab's).
        Binding("r", "start_compile", "Compile", id="start_compile", tooltip="Compile the form"),
        Binding("x", "cancel_compile", "Cancel", id="cancel_compile"),
        # No room in the footer: the Compile tab's stage list names it.
        Binding("g", "open_compiled", "Open result", id="open_compiled", show=False),
        Binding("w", "start_sweep", "Sweep", id="start_sweep", tooltip="Sweep the targets"),
        Binding("s", "sort_sweep", "Sort", id="sort_sweep", tooltip="Sweep by cycles / order"),
        Binding("q", "quit", "Quit", id="quit"),
        Binding("escape", "dismiss_error", "Dismiss error", show=False),
    ]

    # What each palette entry says, keyed by action; titles read "group: action".
    PALETTE_TEXT: ClassVar[dict[str, tuple[str, str]]] = {
        "open_file": ("File: open .pte or workspace…", "Decode another program"),
        "copy_select_ops": (
            "Program: copy EXECUTORCH_SELECT_OPS_LIST",
            "The selective-build value for the CPU operators",
        ),
        f"show_tab('{PROGRAM_TAB}')": ("View: instructions", "Summary, instructions, CPU ops"),
        f"show_tab('{TENSORS_TAB}')": ("View: tensors and values", "Every value of the plan"),
        f"show_tab('{DELEGATES_TAB}')": ("View: delegates", "Ethos-U payloads, compile specs"),
        f"show_tab('{NPU_TAB}')": ("View: NPU (Vela estimate)", "Cycles, memory, per-layer"),
        f"show_tab('{MEMORY_TAB}')": (
            "View: firmware memory map",
            "Regions, runner pools, sections, symbols of the ELF",
        ),
        f"show_tab('{FIT_TAB}')": (
            "View: fit of the program on the firmware",
            "Checks failing first, with the build flag that fixes each",
        ),
        "next_plan": ("Plan: next plan", "Cycle through the execution plans"),
        "add_vela_report": (
            "NPU: add a Vela report to compare…",
            "Another Vela output folder, side by side",
        ),
        "sort_layers": (
            "NPU: sort layers by cycles / original order",
            "Toggle the per-layer table's order",
        ),
        "next_report": ("NPU: show the next compared report", "Cycle the shown Vela report"),
        "drop_report": (
            "NPU: drop the shown report from the comparison",
            "A report added with a (the program's own stays)",
        ),
        "pick_elf": (
            "Firmware: pick another ELF…",
            "Read its memory map and check the program against it",
        ),
        f"show_tab('{RUN_TAB}')": (
            "View: run on the FVP",
            "Run the firmware, watch its log, PMU, allocators and outputs",
        ),
        "start_run": ("Run: start the firmware on the FVP", "Recorded as a session"),
        "stop_run": ("Run: stop the run", "Stops the simulator's whole process group"),
        "pick_run_elf": ("Run: pick the firmware ELF to run…", "Instead of the workspace's"),
        "log_find": ("Log: find…", "Type a text; Enter finds the next line with it"),
        "log_next": ("Log: next match", "The next line with the find text"),
        "log_prev": ("Log: previous match", "The line before with the find text"),
        "log_filter": ("Log: filter…", "Show only the lines with a text"),
        "log_follow": ("Log: follow on / off", "Keep the newest line in view"),
        "log_time": (
            "Log: timestamps relative / delta / absolute / off",
            "Host arrival time of each line",
        ),
        "log_hex": ("Log: hex view of the line", "The cursor line's bytes as received"),
        "past_runs": ("Run: past runs of this workspace", "Reopen a recorded session"),
        f"show_tab('{COMPILE_TAB}')": (
            "View: compile a model",
            "Compile for an Ethos-U target, sweep targets and memory modes",
        ),
        "start_compile": ("Compile: compile the form's model", "Stages, log; opens the result"),
        "cancel_compile": ("Compile: cancel the compile", "Stops the compile worker"),
        "open_compiled": ("Compile: open the result", "The compiled .pte and its Vela report"),
        "start_sweep": (
            "Compile: sweep targets / memory modes",
            "One compile per configuration, compared in a table",
        ),
        "sort_sweep": ("Compile: sort the sweep by cycles / order", "Toggle the table's order"),
    }

    def __init__(self, target: Path | None = None) -> None:
        super().__init__()
        self.target = DEMO_WORKSPACE if target is None else Path(target)
        self.facts: ProgramFacts | None = None
        self.plan_index = 0
        self._request = 0  # increases per open; stale worker results are dropped
        self.load_state: str = "loading"  # loading / ready / failed: for tests and scripts
        self.vela: VelaResult | None = None  # the workspace's Vela report (or why it is not)
        self._added: list[tuple[int, VelaResult]] = []  # (order asked, report) to compare
        self._adds = 0  # add requests so far: reports keep the order they were asked for
        self.vela_add_error: str | None = None
        self.vela_shown = 0  # index into compared_reports
        self.vela_pending = 0  # add-report workers still reading
        self.firmware: FirmwareResult | None = None  # the shown firmware (or why it is not)
        self.firmware_pick: Path | None = None  # an ELF picked with e; else the workspace's
        self.firmware_error: str | None = None  # a picked ELF that failed; the last one stays
        self.firmware_pending = False  # a firmware worker is reading
        self._fw_request = 0  # increases per firmware read; stale results are dropped

    # -- layout ------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Header()
        yield ErrorPanel(id="error")
        yield Static(id="status")
        with TabbedContent(id="body", initial=PROGRAM_TAB):
            with TabPane("Program", id=PROGRAM_TAB):
                yield ProgramSummary(id="summary")
                with Vertical(id="instructions-box"):
                    yield InstructionsTable(id="instructions")
                    yield InstructionsLegend()
                with Horizontal(id="details"):
                    with Vertical(id="plan-side"):
                        yield PlanFacts(id="plan")
                        yield Static(id="delegates-brief")
                    yield CpuOpsView(id="cpu")
            with TabPane("Tensors", id=TENSORS_TAB):
                yield ValuesTable(id="values")
            with TabPane("Delegates", id=DELEGATES_TAB):
                yield DelegatesView(id="delegates-view")
            with TabPane("NPU", id=NPU_TAB):
                yield VelaError(id="vela-error")
                yield VelaSummary(id="vela-summary")
                with Vertical(id="layers-box"):
                    yield LayerTable(id="layers")
                with Horizontal(id="npu-details"):
                    yield CompareTable(id="compare")
                    yield VelaMessages(id="vela-messages")
            with TabPane("Memory", id=MEMORY_TAB):
                yield FirmwareError(id="memory-error")
                yield RegionBars(id="regions")
                with Horizontal(id="memory-pools"):
                    yield PoolGauges(id="pools")
                    yield KernelsView(id="kernels")
                with Horizontal(id="memory-tables"):
                    yield SectionsTable(id="sections")
                    yield SymbolsTable(id="symbols")
                yield MemoryWarnings(id="memory-warnings")
            with TabPane(tab_label(None), id=FIT_TAB):
                yield FirmwareError(id="fit-error")
                yield FitHeadline(id="fit-headline")
                yield FitChecks(id="fit-checks")
            with TabPane("Run", id=RUN_TAB):
                yield RunPanel(id="run-panel")
            with TabPane("Compile", id=COMPILE_TAB):
                yield CompilePanel(id="compile-panel")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#body").display = False
        self.open_target(self.target)

    def on_unmount(self) -> None:
        with suppress(Exception):
            self.query_one(RunPanel).close()  # no simulator outlives the console
        if self.facts is not None:
            _close(self.facts)

    # -- loading -----------------------------------------------------------------------

    @property
    def busy(self) -> bool:
        """A program, a Vela report, a firmware or (Run tab) a preview or past session is
        still being read. A run under way is not: it may never end by itself."""
        if self.load_state == "loading" or self.vela_pending > 0 or self.firmware_pending:
            return True
        try:
            return self.query_one(RunPanel).busy
        except Exception:  # not mounted yet
            return False

    @property
    def compile_panel(self) -> CompilePanel:
        return self.query_one(CompilePanel)

    def open_target(self, target: Path) -> None:
        """Decode ``target`` in a thread; the result arrives as a message."""
        self._request += 1
        self.load_state = "loading"
        self.query_one("#status", Static).update(f"Opening {target.name}…")
        self.query_one("#status").display = True
        self._load(target, self._request)

    @work(thread=True, exclusive=True, group="load", exit_on_error=False)
    def _load(self, target: Path, request: int) -> None:
        path = target
        try:
            path = resolve_target(target)
            facts = decode_facts(path)
        except Exception as error:  # any bad file must become a message, never a crash
            self.post_message(ProgramFailed(path, error_line(error, path), request))
            return
        try:
            vela = workspace_vela(path)  # its own errors stay in the NPU tab
        except Exception as error:
            text = f"unexpected {type(error).__name__}: {error}".splitlines()[0]
            vela = VelaResult("Vela output", error=text)
        if get_current_worker().is_cancelled:
            _close(facts)
            return
        self.post_message(ProgramLoaded(facts, request, vela))

    @on(ProgramLoaded)
    async def _program_loaded(self, message: ProgramLoaded) -> None:
        if message.request != self._request:
            _close(message.facts)
            return
        previous, self.facts = self.facts, message.facts
        if previous is not None:
            _close(previous)
        self.plan_index = 0
        self.sub_title = message.facts.name
        self.query_one("#status").display = False
        self.query_one(ErrorPanel).clear()
        self.query_one("#body").display = True
        self.query_one(ProgramSummary).show(message.facts)
        self.query_one(CpuOpsView).show(message.facts.cpu_ops, message.facts.select_ops)
        await self._show_plan()
        if message.vela is not None:
            self.vela, self.vela_shown = message.vela, 0
            if message.vela.error:
                self.notify(
                    message.vela.error,
                    title="Vela report not read",
                    severity="warning",
                    markup=False,
                )
            self._show_vela()
        self.read_firmware(self.firmware_pick)
        own = self.vela.report if self.vela is not None else None
        self.query_one(RunPanel).set_program(
            message.facts.path.parent,
            target=program_target(message.facts),
            vela_cycles=own.cycles if own is not None else None,
            shapes=output_shapes(message.facts),
        )
        self.compile_panel.set_program(message.facts.path, program_target(message.facts))
        self.action_show_tab(self.query_one(TabbedContent).active or PROGRAM_TAB)
        self.refresh_bindings()
        self.load_state = "ready"

    @on(ProgramFailed)
    def _program_failed(self, message: ProgramFailed) -> None:
        if message.request != self._request:
            return
        self.query_one("#status").display = False
        still = self.facts.name if self.facts is not None else None
        self.query_one(ErrorPanel).show_error(message.message, still)
        self.notify(message.message, title="Could not open", severity="error", markup=False)
        self.load_state = "failed"

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """Last line of defence: a worker that still raised is reported, not fatal."""
        error = event.worker.error
        if event.state == WorkerState.ERROR and error is not None:
            text = f"unexpected {type(error).__name__}: {error}".splitlines()[0]
            if event.worker.group == "load":
                self.post_message(ProgramFailed(self.target, text, self._request))
            elif event.worker.group == "vela-add":
                self.post_message(VelaAdded(VelaResult("Vela report", error=text)))
            elif event.worker.group == "firmware":
                result = FirmwareResult("firmware", error=text, request=self._fw_request)
                self.post_message(FirmwareLoaded(result))
            else:
                self.notify(text, severity="error", markup=False)

    # -- Vela reports ------------------------------------------------------------------

    @property
    def compared_reports(self) -> list[VelaResult]:
        """The workspace's report (when it read) first, then the added ones."""
        own = [self.vela] if self.vela is not None and self.vela.report is not None else []
        return own + self.vela_added

    @property
    def shown_report(self) -> VelaResult | None:
        reports = self.compared_reports
        return reports[self.vela_shown] if 0 <= self.vela_shown < len(reports) else None

    @property
    def vela_added(self) -> list[VelaResult]:
        """The reports added to compare, in the order they were asked for."""
        return [result for _, result in self._added]

    def add_vela_report(self, path: Path) -> None:
        """Read ``path`` (a Vela output folder or file) in a thread and add it to the compare."""
        self.vela_pending += 1
        self._adds += 1
        self._add_vela(path, self._adds)

    @work(thread=True, group="vela-add", exit_on_error=False)
    def _add_vela(self, path: Path, order: int) -> None:
        self.post_message(VelaAdded(load_vela(path, vela_label(path)), order))

    @on(VelaAdded)
    def _vela_added(self, message: VelaAdded) -> None:
        self.vela_pending = max(self.vela_pending - 1, 0)
        result = message.result
        if result.report is None:
            self.vela_add_error = result.error or "not read"
            self.notify(
                self.vela_add_error, title="Vela report not added", severity="error", markup=False
            )
        else:
            self.vela_add_error = None
            self._added.append((message.order, result))
            self._added.sort(key=lambda item: item[0])  # workers may finish out of order
            self.notify(f"Added {result.label} to the comparison.", markup=False)
        self._show_vela()
        self.refresh_bindings()

    def _is_added(self, result: VelaResult | None) -> bool:
        return any(r is result for r in self.vela_added)

    def _show_vela(self) -> None:
        reports = self.compared_reports
        self.vela_shown = max(0, min(self.vela_shown, len(reports) - 1))
        shown = self.shown_report
        errors = [e for e in (self.vela.error if self.vela else None, self.vela_add_error) if e]
        self.query_one(VelaError).show_errors(errors)
        position = f"{self.vela_shown + 1} of {len(reports)} · r next" if len(reports) > 1 else ""
        workspace = self.facts.name if self.facts is not None else ""
        unreadable = self.vela is not None and self.vela.error is not None
        self.query_one(VelaSummary).show(shown, position, workspace, unreadable)
        layers = self.query_one(LayerTable)
        layers.show_report(shown.report if shown else None)
        self._title_layers()
        compare = self.query_one(CompareTable)
        compare.show(reports, self.vela_shown)
        compare.border_title = f"Compare ({len(reports)})"
        compare.border_subtitle = "a add · x drop shown" if self.vela_added else "a add"
        self.query_one(VelaMessages).show(shown)

    def _title_layers(self) -> None:
        layers = self.query_one(LayerTable)
        shown = self.shown_report
        order = "by op cycles ↓" if layers.by_cycles else "in Vela's order"
        box = self.query_one("#layers-box")
        if shown is None or shown.report is None:
            box.border_title = "Per-layer"
            box.border_subtitle = ""
            return
        if not layers.row_count:
            box.border_title = (
                "Per-layer · none: Vela failed"
                if shown.report.failed
                else "Per-layer · none: Vela writes it with --verbose-performance"
            )
            box.border_subtitle = ""
            return
        source = {"stdout": " (from Vela's stdout)"}.get(shown.report.per_layer_from or "", "")
        box.border_title = f"Per-layer · {layers.row_count} rows{source} · {order}"
        box.border_subtitle = "◆ NPU  ○ CPU · s sort"

    # -- firmware ----------------------------------------------------------------------

    def read_firmware(self, elf: Path | None = None) -> None:
        """Read ``elf`` (else the workspace's firmware) in a thread and check the open
        program against it; the result arrives as a FirmwareLoaded message."""
        facts = self.facts
        if facts is None:
            return
        self._fw_request += 1
        self.firmware_pending = True
        vela = self.vela if self.vela is not None and self.vela.report is not None else None
        self._read_firmware(facts, elf, vela, self._fw_request)

    @work(thread=True, exclusive=True, group="firmware", exit_on_error=False)
    def _read_firmware(
        self, facts: ProgramFacts, elf: Path | None, vela: VelaResult | None, request: int
    ) -> None:
        workspace = facts.path.parent
        result = load_firmware(
            elf if elf is not None else find_firmware(workspace),
            facts.program,
            vela.report if vela is not None else None,
            workspace=workspace,
            program_name=facts.name,
            vela_name=vela.label if vela is not None else None,
            picked=elf is not None,
            request=request,
        )
        self.post_message(FirmwareLoaded(result))

    @on(FirmwareLoaded)
    async def _firmware_loaded(self, message: FirmwareLoaded) -> None:
        result = message.result
        if result.request != self._fw_request:
            return  # a newer read (another program, another ELF) is under way
        self.firmware_pending = False
        kept = self.firmware
        if result.error and result.picked and kept is not None and kept.memory_map is not None:
            # A bad pick: say so above the firmware still shown, and forget the pick.
            self.firmware_error = result.error
            self.firmware_pick = kept.path if kept.picked else None
        else:
            self.firmware, self.firmware_error = result, None
        if result.error and result.picked:
            self.notify(result.error, title="Firmware not read", severity="error", markup=False)
        await self._show_firmware()
        self.refresh_bindings()

    async def _show_firmware(self) -> None:
        result = self.firmware
        workspace = self.facts.name if self.facts is not None else ""
        own = result.error if result is not None else None
        kept = result.label if result is not None and self.firmware_error else None
        hint = f"Still showing {kept}. Press e to pick another ELF." if kept else ""
        line = self.firmware_error or own
        self.query_one("#memory-error", FirmwareError).show_error("Firmware not read", line, hint)
        fit_line = line or (result.fit_error if result is not None else None)
        title = "Firmware not read" if line else "Fit not checked"
        self.query_one("#fit-error", FirmwareError).show_error(title, fit_line, hint)
        self.query_one(RegionBars).show(result, workspace)
        self.query_one(PoolGauges).show(result)
        self.query_one(KernelsView).show(result)
        self.query_one("#memory-pools").styles.height = pools_height(result)
        sections = self.query_one(SectionsTable)
        sections.show(result)
        sections.border_title = f"Sections ({sections.row_count})"
        symbols = self.query_one(SymbolsTable)
        symbols.show(result)
        symbols.border_title = f"Largest symbols ({symbols.row_count})"
        self.query_one(MemoryWarnings).show(result)
        self.query_one(FitHeadline).show(result, workspace)
        await self.query_one(FitChecks).show(result)
        self.query_one(TabbedContent).get_tab(FIT_TAB).label = tab_label(result)

    # -- plans -------------------------------------------------------------------------

    @property
    def plan(self) -> ExecutionPlan | None:
        if self.facts is None or not self.facts.program.plans:
            return None
        return self.facts.program.plans[self.plan_index]

    async def _show_plan(self) -> None:
        facts, plan = self.facts, self.plan
        if facts is None:
            return
        n_plans = len(facts.program.plans)
        where = f"plan {plan.name!r} ({self.plan_index + 1} of {n_plans})" if plan else "no plans"
        if n_plans > 1:
            where += " · p next"
        self.query_one(PlanFacts).show(plan)
        instructions = self.query_one(InstructionsTable)
        instructions.show_plan(plan)
        box = self.query_one("#instructions-box")
        box.border_title = f"Instructions · {where} · {instructions.row_count}"
        values = self.query_one(ValuesTable)
        values.show_plan(plan)
        tensors = sum(isinstance(v, Tensor) for v in plan.values) if plan else 0
        values.border_title = (
            f"Tensors and values · {where} · {plural(values.row_count, 'value')}, "
            f"{plural(tensors, 'tensor')}"
        )
        infos = [info for info in facts.delegates if info.plan is plan]
        brief = self.query_one("#delegates-brief", Static)
        brief.border_title = f"Delegates ({len(infos)})"
        brief.border_subtitle = "d details"
        if infos:
            brief.update(Content("\n").join(one_line(facts.program, info) for info in infos))
        else:
            brief.update("none: this plan runs on the CPU only")
        await self.query_one(DelegatesView).show(facts.program, infos)

    # -- actions -----------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        active = self.query_one(TabbedContent).active
        if action == "next_plan":
            if active not in PLAN_TABS:
                return False  # the palette opens the Program tab first
            return (self.facts is not None and len(self.facts.program.plans) > 1) or None
        if action in PROGRAM_ACTIONS and active in (RUN_TAB, COMPILE_TAB):
            return False
        if action in COMPILE_ACTIONS:
            if active != COMPILE_TAB:
                return False
            panel = self.compile_panel
            if action == "start_compile" or action == "start_sweep":
                return (panel.workspace is not None and not panel.busy) or None
            if action == "cancel_compile":
                return panel.running or None
            if action == "open_compiled":
                result = panel.result
                return (result is not None and result.status == "ok") or None
            return bool(panel.sweep_rows) or None
        if action == "copy_select_ops":
            return self.facts is not None or None
        if action in RUN_ACTIONS:
            if active != RUN_TAB:
                return False
            panel = self.query_one(RunPanel)
            if action == "start_run":
                return (panel.workspace is not None and not panel.running) or None
            if action == "stop_run":
                return panel.running or None
            return True
        if action in FIRMWARE_ACTIONS:
            return self.query_one(TabbedContent).active in (MEMORY_TAB, FIT_TAB)
        if action in NPU_ACTIONS:
            if self.query_one(TabbedContent).active != NPU_TAB:
                return False  # the footer shows them on the NPU tab; the palette opens it
            shown = self.shown_report
            if action == "sort_layers":
                return (shown is not None and bool(shown.report and shown.report.per_layer)) or None
            if action == "next_report":
                return len(self.compared_reports) > 1 or None
            return self._is_added(shown) or None
        return True

    @on(TabbedContent.TabActivated)
    def _tab_activated(self) -> None:
        self.refresh_bindings()

    async def action_dismiss_error(self) -> None:
        self.query_one(ErrorPanel).clear()
        if self.vela_add_error:
            self.vela_add_error = None
            self._show_vela()
        if self.firmware_error:
            self.firmware_error = None
            await self._show_firmware()

    def action_open_file(self) -> None:
        start = f"{_short(self.facts.path.parent)}{os.sep}" if self.facts else ""
        self.push_screen(OpenFileScreen(start), callback=self._open_chosen)

    def _open_chosen(self, path: Path | None) -> None:
        if path is not None:
            self.open_target(path)

    def action_add_vela_report(self) -> None:
        start = f"{_short(self.facts.path.parent)}{os.sep}" if self.facts else ""
        self.push_screen(AddReportScreen(start), callback=self._add_chosen)

    def _add_chosen(self, path: Path | None) -> None:
        if path is not None:
            self.action_show_tab(NPU_TAB)
            self.add_vela_report(path)

    def action_pick_elf(self) -> None:
        shown = self.firmware.path if self.firmware is not None else None
        if shown is not None:
            start = _short(shown)
        else:
            start = f"{_short(self.facts.path.parent)}{os.sep}" if self.facts else ""
        self.push_screen(PickElfScreen(start), callback=self._elf_chosen)

    def _elf_chosen(self, path: Path | None) -> None:
        if path is None:
            return
        if self.query_one(TabbedContent).active not in (MEMORY_TAB, FIT_TAB):
            self.action_show_tab(MEMORY_TAB)
        self.firmware_pick = path
        self.read_firmware(path)

    async def action_on_firmware(self, action: str) -> None:
        """Open the Memory tab (unless Fit is shown), then run ``action`` there."""
        if self.query_one(TabbedContent).active not in (MEMORY_TAB, FIT_TAB):
            self.action_show_tab(MEMORY_TAB)
        await self.run_action(action)

    def action_sort_layers(self) -> None:
        layers = self.query_one(LayerTable)
        layers.set_sort(not layers.by_cycles)
        self._title_layers()

    def action_next_report(self) -> None:
        reports = self.compared_reports
        if reports:
            self.vela_shown = (self.vela_shown + 1) % len(reports)
            self._show_vela()
            self.refresh_bindings()

    def action_drop_report(self) -> None:
        shown = self.shown_report
        if shown is not None and self._is_added(shown):
            self._added = [item for item in self._added if item[1] is not shown]
            self._show_vela()
            self.refresh_bindings()
            self.notify(f"Dropped {shown.label} from the comparison.", markup=False)

    async def action_on_npu(self, action: str) -> None:
        """Open the NPU tab, then run ``action`` there (the palette's way to NPU keys)."""
        self.action_show_tab(NPU_TAB)
        await self.run_action(action)

    def action_copy_select_ops(self) -> None:
        if self.facts is None:
            return
        value = self.facts.select_ops
        if not value:
            self.notify(
                "No CPU operators: EXECUTORCH_SELECT_OPS_LIST would be empty.", severity="warning"
            )
            return
        self.copy_to_clipboard(value)
        ops = plural(value.count(",") + 1, "operator")
        self.notify(f"Copied EXECUTORCH_SELECT_OPS_LIST ({ops}).", markup=False)

    def action_show_tab(self, tab: str) -> None:
        self.query_one(TabbedContent).active = tab
        focus = {
            PROGRAM_TAB: InstructionsTable,
            TENSORS_TAB: ValuesTable,
            NPU_TAB: LayerTable,
            MEMORY_TAB: SectionsTable,
            FIT_TAB: FitChecks,
            RUN_TAB: LogView,
        }.get(tab)
        if focus is not None:
            self.query_one(focus).focus()
        elif tab == COMPILE_TAB:
            self.compile_panel.focus_start()
        elif tab == DELEGATES_TAB:
            self.query_one(DelegatesView).focus()

    async def action_on_program(self, action: str) -> None:
        """Run a key of the program's from the palette: on a tab that hides it, the
        Program tab opens first."""
        if self.check_action(action, ()) is False:
            self.action_show_tab(PROGRAM_TAB)
        await self.run_action(action)

    # -- the Run tab -------------------------------------------------------------------

    async def action_on_run(self, action: str) -> None:
        """Open the Run tab, then run ``action`` there (the palette's way to Run keys)."""
        self.action_show_tab(RUN_TAB)
        await self.run_action(action)

    @property
    def run_panel(self) -> RunPanel:
        return self.query_one(RunPanel)

    def action_start_run(self) -> None:
        if self.run_panel.start_run():
            self.refresh_bindings()

    def action_stop_run(self) -> None:
        self.run_panel.stop_run()

    def action_pick_run_elf(self) -> None:
        panel = self.run_panel
        if panel.running:
            self.notify("A run is under way: stop it first.", severity="warning")
            return
        if panel.elf is not None:
            start = _short(panel.elf)
        else:
            start = f"{_short(panel.workspace)}{os.sep}" if panel.workspace else ""
        self.push_screen(RunElfScreen(start), callback=self._run_elf_chosen)

    def _run_elf_chosen(self, path: Path | None) -> None:
        if path is not None:
            self.run_panel.set_elf(path)

    def action_log_find(self) -> None:
        self.run_panel.focus_find()

    def action_log_next(self) -> None:
        self.run_panel.find(True)

    def action_log_prev(self) -> None:
        self.run_panel.find(False)

    def action_log_filter(self) -> None:
        self.run_panel.focus_filter()

    def action_log_follow(self) -> None:
        self.run_panel.toggle_follow()

    def action_log_time(self) -> None:
        self.run_panel.cycle_time()

    def action_log_time_mode(self, mode: str) -> None:
        self.run_panel.set_time_mode(mode)

    def action_log_hex(self) -> None:
        self.run_panel.toggle_hex()

    def action_log_level(self, level: str) -> None:
        self.run_panel.toggle_level(level)

    def action_past_runs(self) -> None:
        self.run_panel.focus_past_runs()

    # -- the Compile tab ---------------------------------------------------------------

    async def action_on_compile(self, action: str) -> None:
        """Open the Compile tab, then run ``action`` there (the palette's way to its keys)."""
        self.action_show_tab(COMPILE_TAB)
        await self.run_action(action)

    def action_start_compile(self) -> None:
        self.compile_panel.start_compile()
        self.refresh_bindings()

    def action_cancel_compile(self) -> None:
        self.compile_panel.cancel_compile()

    def action_open_compiled(self) -> None:
        self.compile_panel.open_result()

    def action_start_sweep(self) -> None:
        self.compile_panel.start_sweep()
        self.refresh_bindings()

    def action_sort_sweep(self) -> None:
        self.compile_panel.toggle_sort()

    @on(OpenCompiled)
    def _open_compiled(self, message: OpenCompiled) -> None:
        self.open_target(message.path)

    async def action_next_plan(self) -> None:
        if self.facts is not None and self.facts.program.plans:
            await self.action_show_plan((self.plan_index + 1) % len(self.facts.program.plans))

    async def action_show_plan(self, index: int) -> None:
        if self.facts is not None and 0 <= index < len(self.facts.program.plans):
            self.plan_index = index
            await self._show_plan()

    def palette_commands(self) -> list[PaletteCommand]:
        """The key table plus one entry per plan, for the command palette."""
        commands = []
        for binding in self.BINDINGS:
            assert isinstance(binding, Binding)
            if binding.action in self.PALETTE_TEXT:
                title, text = self.PALETTE_TEXT[binding.action]
                action = binding.action
                if action in NPU_ACTIONS:
                    action = f"on_npu({action!r})"
                elif action in FIRMWARE_ACTIONS:
                    action = f"on_firmware({action!r})"
                elif action in RUN_ACTIONS:
                    action = f"on_run({action!r})"
                elif action in COMPILE_ACTIONS:
                    action = f"on_compile({action!r})"
                elif action in (*PROGRAM_ACTIONS, "next_plan"):
                    action = f"on_program({action!r})"
                key = self.get_key_display(binding)
                commands.append(PaletteCommand(title, f"{text} (key {key})", action))
        for action in ("past_runs",):
            title, text = self.PALETTE_TEXT[action]
            commands.append(PaletteCommand(title, text, f"on_run({action!r})"))
        for mode in TIME_MODES:
            commands.append(
                PaletteCommand(
                    f"Log: timestamps {mode}",
                    "Host arrival time of each line",
                    f'on_run("log_time_mode({mode!r})")',
                )
            )
        for level in LEVELS:
            commands.append(
                PaletteCommand(
                    f"Log: show / hide level {level} lines",
                    "Filter the log by level",
                    f'on_run("log_level({level!r})")',
                )
            )
        if self.facts is not None:
            for index, plan in enumerate(self.facts.program.plans):
                commands.append(
                    PaletteCommand(
                        f"Plan: show {plan.name!r}", f"plan {index + 1}", f"show_plan({index})"
                    )
                )
        return commands


def _short(path: Path) -> str:
    """``path`` relative to the working folder when it is inside it, else absolute."""
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _close(facts: ProgramFacts) -> None:
    # A view into the mapping may still be alive (a widget, a traceback frame); then the
    # garbage collector unmaps it later, and that is fine for a viewer.
    with suppress(BufferError):
        facts.program.close()


def run_app(target: Path | None) -> int:
    """Run the console until the user quits; returns the exit code."""
    app = EtuApp(target)
    app.run()
    return app.return_code or 0
