"""The Run tab: start the firmware on a Corstone FVP (or the stand-in) or the emulated board,
watch it, see how it ended; watch a board the Boards tab flashed; reopen past runs.

The panel owns launching and the live run's state; the log box (:mod:`.log_box`), the
past-runs list (:mod:`.past_runs`) and the panes (:mod:`.run_panes`) own their keys, their
workers and what they show. Batches of a run's events come through a
:class:`~etu.tui.widgets.run_launch.RunBridge`; the panel's handlers own every record.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.widgets import Button, Input, Select

from etu.fvp.command import DEFAULT_TIMELIMIT
from etu.fvp.launch import LaunchError
from etu.fvp.targets import targets
from etu.runner.preflight import io_notes
from etu.runner.run import RunController
from etu.runner.run_model import RING_LINES, LaunchInfo, RunRecord
from etu.runner.session import file_sha256, sessions_root
from etu.runner.workspace import Workspace, file_label
from etu.tui.commands import PaletteCommand
from etu.tui.keys import bindings
from etu.tui.safe_text import printable
from etu.tui.widgets.firmware_panels import FirmwarePicked
from etu.tui.widgets.history import SessionRecorded
from etu.tui.widgets.log_box import LogBox
from etu.tui.widgets.past_runs import PastRunsList
from etu.tui.widgets.pmu_pane import PmuPane
from etu.tui.widgets.run_header import DEFAULT_TARGET, RunHeader
from etu.tui.widgets.run_launch import (
    HeapFreeze,
    InputsScreen,
    LaunchPlan,
    RunBridge,
    RunElfScreen,
    inputs_plan,
    launch_plan,
    next_run_hint,
)
from etu.tui.widgets.run_log import LogView
from etu.tui.widgets.run_messages import (
    RunBatch,
    RunEnded,
    RunFailed,
    RunPreparing,
    RunStarted,
    RunStats,
)
from etu.tui.widgets.run_panes import (
    AllocatorPane,
    OperatorsPane,
    OutputsPane,
    ProcessPane,
    RunBanner,
    pane_entries,
    session_name,
    zoom_pane,
)
from etu.tui.widgets.run_preflight import RunGate
from etu.tui.widgets.run_threads import RunThreads, StartRequest
from etu.tui.widgets.send_box import SendBox
from etu.tui.widgets.triage import missing_fix, missing_operator_lines

Prepare = Callable[[], LaunchPlan]


class RunPanel(RunGate, Vertical):
    """Controls, the simulator and command, the banner, the panes and the log of a run."""

    BINDINGS: ClassVar[list[BindingType]] = bindings("run")

    def __init__(self, *, id: str | None = None, capacity: int = RING_LINES) -> None:
        super().__init__(id=id)
        self.capacity = capacity  # log lines kept on screen per run
        self.workspace: Path | None = None
        self.opened: Workspace | None = None  # the App's workspace: firmware by its rule
        self.elf: Path | None = None
        self.elf_picked = False
        self.firmware = None  # the Memory tab's FirmwareResult: pre-flight verdicts
        self.program = None  # the open program (parsers.pte.Program), None when none
        self.pte: Path | None = None  # its file
        self._pte_digest: tuple[Path | None, str | None] = (None, None)  # (file, SHA-256)
        self.inputs: str | None = None  # the next run's inputs (None: the firmware's own)
        self.io_notes: list[str] = []  # the program's integer IO, one sentence each
        self._preparing = ""  # what the start worker is doing (a build stage)
        self._checking = False  # a worker checks the firmware of a run on chosen inputs
        self.layer_records: dict[tuple[str, str], dict] = {}  # (program, session) → layers record
        self.select_ops = ""  # its EXECUTORCH_SELECT_OPS_LIST value
        self.program_target: str | None = None
        self.target = DEFAULT_TARGET
        self.vela_cycles: float | None = None
        self.vela_calls: list[tuple[float | None, float | None]] = []  # (cycles, nn_macs)
        self.shapes: list[tuple[int, ...]] = []
        self._stable = False
        self.live: RunRecord | None = None  # this console's latest run
        self.shown: RunRecord | None = None  # what the panes show: live or a past run
        self.run_id = 0
        self._starting = False
        self._stopping = False
        self._controller: RunController | None = None
        self._threads = RunThreads(self)  # the processes and listeners of its runs
        self._heap = HeapFreeze()  # the collector's full passes skip the UI during a run
        self._board_in_header = False  # a board's session stays on top until a control moves

    # -- layout ------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield RunHeader(id="run-top")
        yield RunBanner(id="run-banner")
        with Horizontal(id="run-panes"):
            yield PmuPane(id="run-pmu")
            yield AllocatorPane(id="run-allocator")
            with Vertical(id="run-side"):
                yield OperatorsPane(id="run-operators")
                yield ProcessPane(id="run-process")
                yield PastRunsList(id="run-past", capacity=self.capacity)
        yield OutputsPane(id="run-outputs")  # full width: a verdict line is ~75 columns
        yield LogBox(id="run-log-box")
        yield SendBox(id="run-send")  # a line to the board: only in a live board session

    def on_mount(self) -> None:
        self._show_controls()
        self._show(None)

    def on_unmount(self) -> None:
        self.close()

    def close(self) -> None:
        """Kill every run this panel started (the console is closing)."""
        self._threads.close()
        for past in self.query(PastRunsList):  # a long session's reports being parsed
            past.close()
        self._heap.thaw()

    # -- state -------------------------------------------------------------------------

    @property
    def log(self) -> LogView:
        return self.query_one(LogView)

    @property
    def log_box(self) -> LogBox:
        return self.query_one(LogBox)

    @property
    def header(self) -> RunHeader:
        return self.query_one(RunHeader)

    @property
    def running(self) -> bool:
        """A run is starting or under way."""
        return self._starting or (self.live is not None and self.live.running)

    @property
    def busy(self) -> bool:
        """A preview, the past-runs list or a past session is being read (a run is not)."""
        return self.header.pending > 0 or self.query_one(PastRunsList).pending > 0

    @property
    def stable(self) -> bool:
        return self._stable

    @stable.setter
    def stable(self, value: bool) -> None:
        """Screenshots: mask what differs per run (durations, process samples, session
        folder names); the log's time column is chosen with its time mode."""
        self._stable = value
        self._show(self.shown)
        self._list_runs()

    def set_program(
        self,
        workspace: Workspace,
        *,
        target: str | None,
        vela_cycles: float | None,
        vela_calls: Sequence[tuple[float | None, float | None]] = (),
        shapes: Sequence[tuple[int, ...]] = (),
        program=None,
        select_ops: str = "",
        pte: Path | None = None,
    ) -> None:
        """A program opened in ``workspace`` (sessions go there; its firmware for the
        target is found by the workspace's rule unless one was picked)."""
        if workspace.root != self.workspace:
            self.workspace = workspace.root
            self.elf_picked = False
        self.opened = workspace
        self.program = program  # parsers.pte.Program, for the pre-flight fit checks
        if pte != self.pte:
            self.layer_records.clear()
        self.pte, self._pte_digest = pte, (None, None)
        self.io_notes = io_notes(program, pte)
        self.select_ops = select_ops
        self.program_target = target
        if target in targets():
            self.target = target
        self._find_elf()
        self.vela_cycles = vela_cycles
        self.vela_calls = list(vela_calls)  # per Ethos-U delegate, in order
        self.shapes = list(shapes)
        select = self.query_one("#run-target", Select)
        if select.value != self.target:
            select.value = self.target
        self._show_controls()
        self._preview()
        self._list_runs()
        if self.shown is not None:
            self._show_panes(self.shown)
        self._show_banner()

    def set_firmware(self, result) -> None:
        """The firmware the Memory and Fit tabs show (a FirmwareResult, or None): its fit
        verdicts are the pre-flight checks of the next run of the same ELF."""
        self.firmware = result

    def set_elf(self, elf: Path) -> None:
        self.elf, self.elf_picked = elf, True
        self._board_in_header = False
        self._show_controls()
        self._preview()
        self.post_message(FirmwarePicked(elf))  # the Boards tab flashes it too

    def _find_elf(self) -> None:
        """The firmware for the target's board by the workspace's rule, unless picked."""
        if self.opened is not None and not self.elf_picked:
            self.elf = self.opened.firmware_for_target(self.target)

    # -- preview -----------------------------------------------------------------------

    def _preview(self) -> None:
        if self.workspace is None:
            return
        try:
            limit = self.header.timelimit()
        except ValueError:
            limit = DEFAULT_TIMELIMIT
        self.header.preview_next(self.target, self.elf, limit, self._no_elf())

    def _no_elf(self) -> str:
        if self.opened is None:
            return "no workspace open; press e to pick a firmware ELF"
        return f"{self.opened.no_firmware(self.target)}; press e to pick one"

    # -- starting and stopping ---------------------------------------------------------

    def start_run(self) -> bool:
        """Start the firmware on the chosen target (an FVP or the emulated board); False
        when it cannot start now."""
        if self.running or self.workspace is None:
            return False
        try:
            limit = self.header.timelimit()
        except ValueError as error:
            self.notify(str(error), title="Run not started", severity="error", markup=False)
            return False
        target, elf, root = self.target, self.elf, sessions_root(self.workspace)
        inputs, pte, run_id = self.inputs, self.pte, self.run_id + 1  # _begin numbers it

        def say(text: str) -> None:
            self.post_message(RunPreparing(run_id, text))

        def prepare() -> LaunchPlan:
            if inputs is not None:  # as etu run --inputs: the runner built with them
                return inputs_plan(target, pte, inputs, limit, say)
            if elf is None:
                raise LaunchError(self._no_elf())
            return launch_plan(target, elf, limit)

        self._begin(prepare, root)
        return True

    def run_command(
        self,
        argv: Sequence[str],
        *,
        sessions: Path,
        kind: str = "command",
        meta: dict | None = None,
        env: dict[str, str] | None = None,
    ) -> int:
        """Run any command through the path an FVP run takes (process → parser → session →
        listener → panes); for benchmarks and boards. Returns the run's id."""
        command = [str(a) for a in argv]

        def prepare() -> LaunchPlan:
            return LaunchPlan(command, dict(meta or {}), LaunchInfo(command), None, kind)

        return self._begin(prepare, sessions, env)

    def attach(self, launch: LaunchInfo | None = None) -> RunBridge:
        """A new live run fed by the caller through the returned listener (no process):
        a board's UART reader, a test, a benchmark."""
        self._new_live(launch)
        return self._threads.bridge(self.run_id)

    def replay(self, folder: Path, timed: bool) -> bool:
        """Play a recorded session through the live panes (History's replay): at once, or
        at the pace its raw.index recorded. Not while a run is under way."""
        if self._busy_running():
            return False
        bridge = self.attach(LaunchInfo(["replay", folder.name]))
        self.query_one(PastRunsList).replay(folder, bridge, timed)
        return True

    def _new_live(self, launch: LaunchInfo | None = None) -> None:
        self._heap.freeze()
        self.run_id += 1
        self.live = RunRecord("current run", live=True, capacity=self.capacity)
        self.live.expected_npu = self.program_target  # the driver's NPU is checked against it
        self.live.launch = launch
        self._show(self.live)
        self._list_runs()
        self._show_controls()

    def monitor(self, source, meta: dict, launch: LaunchInfo) -> int:
        """A board's port (``source``: a runner.boards byte source, already open) through
        the path a run takes (parser → session → panes); the Boards tab hands it over
        after flashing. Stopped with the Run tab's stop key like any run."""
        if self.workspace is None:
            raise RuntimeError("no workspace to record the session in")
        launch.board = launch.board or str(meta.get("board") or "board")
        self._board_in_header = True

        def prepare() -> LaunchPlan:
            return LaunchPlan([], dict(meta), launch, None, "board")

        run_id = self._begin(prepare, sessions_root(self.workspace), source=source, launch=launch)
        if hasattr(source, "send"):
            self.query_one(SendBox).attach(source)
        return run_id

    def _begin(
        self,
        prepare: Prepare,
        root: Path,
        env: dict[str, str] | None = None,
        source=None,
        launch: LaunchInfo | None = None,
    ) -> int:
        self._new_live(launch)
        self._starting = True
        self._show_controls()
        self._show_banner()
        self.app.refresh_bindings()
        request = StartRequest(self.run_id, prepare, root, env, source)
        start = partial(self._threads.start, request)
        self.run_worker(start, thread=True, group="run-start", exit_on_error=False)
        return self.run_id

    def stop_run(self) -> bool:
        controller = self._controller
        if controller is None or not self.running or self._stopping:
            return False
        self._stopping = True
        self._show_banner()
        self.run_worker(controller.stop, thread=True, group="run-stop", exit_on_error=False)
        return True

    # -- run messages ------------------------------------------------------------------

    def on_run_preparing(self, message: RunPreparing) -> None:
        if message.run_id == self.run_id and self._starting:
            self._preparing = message.text
            self._show_banner()

    def on_run_started(self, message: RunStarted) -> None:
        if message.run_id != self.run_id or self.live is None:
            return
        self._starting = False
        self._preparing = ""
        controller = self._controller = message.controller
        self.live.begin(controller.folder, message.launch, controller.session.meta,
                        controller.argv)  # fmt: skip
        if self.shown is self.live:
            self.log.start = self.live.started
            self.log.refresh()
        self._show_top()
        self._show_banner()
        self._list_runs()
        self.app.refresh_bindings()

    def on_run_batch(self, message: RunBatch) -> None:
        try:
            if message.run_id == self.run_id and self.live is not None:
                self._take(self.live, message.chunks)
        finally:
            message.bridge.delivered()

    def on_run_stats(self, message: RunStats) -> None:
        if message.run_id != self.run_id or self.live is None:
            return
        self.live.stats = message.stats
        if self.shown is self.live:
            self.query_one(ProcessPane).show(self.live, self._stable)

    def on_run_ended(self, message: RunEnded) -> None:
        self._threads.ended(message.run_id)
        if message.run_id != self.run_id or self.live is None:
            return
        self._take(self.live, message.chunks)
        self.live.end(message.outcome)
        self._starting = self._stopping = False
        self._controller = None
        self._after_run()
        outcome = message.outcome
        if not self._on_screen():
            severity = "information" if outcome.reason == "success" else "warning"
            self.notify(
                printable(outcome.proof),
                title=f"Run ended: {outcome.reason}",
                severity=severity,
                markup=False,
            )

    def on_run_failed(self, message: RunFailed) -> None:
        if message.run_id != self.run_id or self.live is None:
            return
        self.live.failure = message.message
        self._starting = self._stopping = False
        self._preparing = ""
        self._after_run()

    def _after_run(self) -> None:
        self._heap.thaw()
        self.query_one(SendBox).detach()
        if self.live is not None:
            self._after_session(self.live)
            if self.live.folder is not None:  # the History tab lists it at once
                self.post_message(SessionRecorded(self.live.folder))
        if self.shown is self.live:
            self.query_one(ProcessPane).show(self.live, self._stable)
            self._show_pmu(self.live)  # a missing report now says why
            self.log_box.running = False
        self._show_controls()
        self._show_banner()
        self._list_runs()
        self.app.refresh_bindings()

    def _on_screen(self) -> bool:
        try:
            return self.is_on_screen and self.display
        except Exception:
            return False

    def _take(self, record: RunRecord, chunks) -> None:
        before = len(record.pmu)
        changed = record.take(chunks)
        if record is self.live:
            self.query_one(PmuPane).note_live(record.pmu[before:])
            if "skew" in changed:  # flagged live: the run is about to fail for it
                self.notify(printable(record.skew[-1]), title="Version skew", severity="error",
                            markup=False)  # fmt: skip
        if record is not self.shown:
            return
        if "store" in changed:  # the run outgrew the ring: its session file from now on
            self.log_box.show(record.store, record.started, self._where(record))
        elif "log" in changed:
            self.log_box.appended()
        if "pmu" in changed or "npu" in changed:
            self._show_pmu(record)
        if "memory" in changed:
            self.query_one(AllocatorPane).show(record.memory)
        if "outputs" in changed:
            self.query_one(OutputsPane).show_record(record, self.shapes)

    # -- past runs ---------------------------------------------------------------------

    def _list_runs(self) -> None:
        if self.workspace is None:
            return
        live = self.live.folder.name if self.live and self.live.folder else None
        if self.live is not None and live is None:
            live = ""  # a run still starting, or fed without a session
        self.query_one(PastRunsList).list_runs(sessions_root(self.workspace), live, self._stable)

    def open_past_run(self, folder: Path) -> None:
        """Re-read a recorded session into the panes (read-only)."""
        if self.live is not None and self.live.folder == folder:
            self._show(self.live)
            return
        self.query_one(PastRunsList).open(folder)

    @on(PastRunsList.ShowRecord)
    def _show_record(self, message: PastRunsList.ShowRecord) -> None:
        record = message.record
        if record is None:  # the list's "current run"
            if self.live is not None:
                self._show(self.live)
            return
        live = self.live
        if live is not None and record.folder is not None and live.folder == record.folder:
            record = live
        self._after_session(record)
        self._show(record)

    @on(PastRunsList.RecordUpdated)
    def _record_updated(self, message: PastRunsList.RecordUpdated) -> None:
        self._after_session(message.record)  # its outputs are known now: compare them
        if self.shown is message.record:
            self._show_panes(message.record)
            self._show_banner()

    def _after_session(self, record: RunRecord) -> None:
        """A finished run: compare its outputs with the host, read its ETDump (once each;
        the panes that show them run the workers)."""
        if record.running or record.folder is None:
            return
        self.query_one(OutputsPane).compare(record)
        self.query_one(OperatorsPane).read(record)

    # -- showing -----------------------------------------------------------------------

    def _where(self, record: RunRecord | None) -> str:
        """The log title's name for a past run ("" for the live run)."""
        if record is None or record.live:
            return ""
        return session_name(record.label, True) if self._stable else record.label

    def _show(self, record: RunRecord | None) -> None:
        self.shown = record
        box = self.log_box
        box.running = record is not None and record.running
        box.show(record.store if record else None, record.started if record else None,
                 self._where(record))  # fmt: skip
        self._show_panes(record)
        self._show_banner()
        self._show_top()

    def _show_panes(self, record: RunRecord | None) -> None:
        self._show_pmu(record)
        self.query_one(AllocatorPane).show(record.memory if record else None)
        self.query_one(OutputsPane).show_record(record, self.shapes)
        self.query_one(OperatorsPane).show_record(record)
        self.query_one(ProcessPane).show(record, self._stable)

    def _show_pmu(self, record: RunRecord | None) -> None:
        """Vela's estimates are the open program's: a run of another program gets none."""
        ran = record.launch.program_sha256 if record and record.launch else ""
        own = not ran or ran == self._program_sha256()
        cycles, calls = (self.vela_cycles, self.vela_calls) if own else (None, [])
        self.query_one(PmuPane).show_record(record, cycles, calls)

    def _program_sha256(self) -> str | None:
        if self.pte is not None and self._pte_digest[0] != self.pte:
            self._pte_digest = (self.pte, file_sha256(self.pte))
        return self._pte_digest[1]

    def _show_banner(self) -> None:
        record = self.shown
        hint = next_run_hint(self.target, self.inputs, self.elf, self.io_notes)
        banner = self.query_one(RunBanner)
        if record is not None and record is self.live and self._starting:
            doing = f" {self._preparing}" if self._preparing else ""
            banner.set_state("-running", Content.styled(f"● starting…{doing}", "bold"))
            return
        if record is not None and record.running and self._stopping:
            banner.set_state("-running", Content.styled("● stopping…", "bold"))
            return
        name = session_name(record.folder.name, self._stable) if record and record.folder else ""
        missing = []
        if record is not None and record.outcome is not None:
            fix = missing_fix(self.firmware, self.select_ops)
            missing = missing_operator_lines(record.missing, fix) + record.skew
        banner.show(record, hint, name, self._stable, missing, self.elf)

    def _show_controls(self) -> None:
        label = None if self.elf is None else file_label(self.elf, self.workspace)
        self.header.show_controls(label, self.running, self.workspace is not None)
        self._show_top()

    def _show_top(self) -> None:
        """The header: the live run while it runs, a board's session while it is shown
        (it is no FVP's next run), else the next run on the chosen target."""
        live = self.live
        launch = live.launch if live is not None else None
        board = launch is not None and launch.board and self._board_in_header
        shown = launch is not None and (live.running or (board and self.shown is live))
        self.header.show(launch if shown else None, self.target)

    # -- controls ----------------------------------------------------------------------

    def set_default_target(self, target: str) -> None:
        """The ``target`` setting: what runs when the program names no NPU of its own."""
        if target in targets() and self.program_target is None:
            self.target = target
            self._find_elf()
            select = self.query_one("#run-target", Select)
            if select.value != target:
                select.value = target

    @on(Select.Changed, "#run-target")
    def _target_changed(self, event: Select.Changed) -> None:
        if isinstance(event.value, str) and event.value != self.target:
            self.target = event.value
            self._board_in_header = False
            self._find_elf()
            self._show_controls()
            self._preview()
            self._show_banner()
            self._show_top()

    @on(Input.Changed, "#run-timelimit")
    def _timelimit_changed(self) -> None:
        self._preview()

    @on(Button.Pressed, "#run-start")
    def _start_pressed(self) -> None:
        self.request_run()

    @on(Button.Pressed, "#run-stop")
    def _stop_pressed(self) -> None:
        self.stop_run()

    # -- keys --------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "start_run":
            return (self.workspace is not None and not self.running) or None
        if action == "stop_run":
            return self.running or None
        if action in ("focus_send", "pulse_reset"):  # a live board session only
            return self.query_one(SendBox).attached
        if action == "show_layers":
            return self.pte is not None or None
        return True

    def action_start_run(self) -> None:
        self.request_run()

    def action_focus_send(self) -> None:
        self.query_one(SendBox).focus_input()

    def action_pulse_reset(self) -> None:
        self.query_one(SendBox).pulse()

    def action_stop_run(self) -> None:
        self.stop_run()

    def _busy_running(self) -> bool:
        """A run is under way (and the user is told to stop it first)."""
        if self.running:
            self.notify("A run is under way: stop it first.", severity="warning")
        return self.running

    def action_pick_run_elf(self) -> None:
        if not self._busy_running():  # cancelled (None): the firmware stays
            screen = RunElfScreen.at(self.elf, self.workspace, self.target)
            self.app.push_screen(screen, callback=lambda path: path and self.set_elf(path))

    def action_choose_inputs(self) -> None:
        def chosen(text: str | None) -> None:
            if text is not None:  # cancelled: the choice stays; "": the firmware's own
                self.choose_inputs(text or None)

        if not self._busy_running():
            self.app.push_screen(InputsScreen(self.inputs or ""), callback=chosen)

    def choose_inputs(self, inputs: str | None) -> None:
        """The next run's inputs: ``FILE.npy``, ``FILE.npz`` or ``random:SEED`` (the runner
        is built with them, as ``etu run --inputs`` does), None for the firmware's own."""
        self.inputs = inputs
        self._show_banner()

    def action_zoom_pane(self, name: str) -> None:
        zoom_pane(self, name, self.focus_main)  # the panes are hidden at 80×24

    def focus_main(self) -> None:
        self.log.focus()

    def palette_entries(self) -> list[PaletteCommand]:
        """The palette's entries beyond the key table: the log box's (its keys, each
        timestamp mode and each level filter), which the App runs on the box; the panes'."""
        return self.log_box.palette_entries() + pane_entries()


__all__ = ["DEFAULT_TARGET", "RunBridge", "RunElfScreen", "RunPanel"]
