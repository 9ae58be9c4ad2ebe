"""The Run tab: start the firmware on a Corstone FVP (or the stand-in), watch it, see how it
ended; reopen past runs of the workspace.

Threading (as everywhere in the console): ``RunController`` calls its listener on the
process's reader threads. :class:`RunBridge` only appends to a lock-protected buffer there;
a timer thread posts one :class:`RunBatch` per ~50 ms, and never a second one before the
panel has taken the first, so a flood coalesces into bigger batches instead of a queue.
The panel's handlers own every record and update the panes.
"""

from __future__ import annotations

import gc
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import ClassVar

from etu.fvp.command import DEFAULT_TIMELIMIT, FvpOptions, format_command
from etu.fvp.launch import LaunchError, prepare_fvp_launch
from etu.fvp.targets import targets
from etu.parsers.elf_map import read_elf
from etu.parsers.errors import describe_error
from etu.parsers.fit import FAIL, OK, check_fit
from etu.parsers.runner_events import Event
from etu.runner.isolated import ChildError
from etu.runner.process import ProcessStats
from etu.runner.run import RunController, RunListener, RunOutcome
from etu.runner.run_model import (
    LEVELS,
    RING_LINES,
    Chunk,
    LaunchInfo,
    RunRecord,
    list_past_runs,
    read_past_run,
    split_events,
)
from etu.runner.run_store import FileLogStore
from etu.runner.runtime_run import QEMU_BOARD
from etu.runner.session import RAW as RAW_LOG
from etu.runner.session import sessions_root
from etu.runner.session_events import EventsChild
from etu.runner.workspace import file_label, find_firmware
from etu.tui.keys import bindings
from etu.tui.safe_text import printable
from etu.tui.screens.open_file import OpenFileScreen
from etu.tui.screens.preflight import PreflightScreen
from etu.tui.widgets.formatting import plural, short_path
from etu.tui.widgets.run_log import TIME_MODES, HexView, LogView
from etu.tui.widgets.run_messages import (
    LaunchPreviewed,
    OperatorsRead,
    OutputsCompared,
    PastRunEvents,
    PastRunRead,
    PastRunsListed,
    RunBatch,
    RunEnded,
    RunFailed,
    RunStarted,
    RunStats,
)
from etu.tui.widgets.run_panes import (
    LIVE_OPTION,
    SIMULATED_OUTPUTS,
    AllocatorPane,
    OperatorsPane,
    OutputsPane,
    PastRunsList,
    PmuPane,
    ProcessPane,
    RunBanner,
    per_inference,
    session_name,
)
from etu.tui.widgets.triage import fault_lines, missing_operator_lines
from textual import on
from textual.actions import SkipAction
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.timer import Timer
from textual.widgets import Button, Checkbox, Input, Label, OptionList, Select, Static

BATCH_SECONDS = 0.05
DEFAULT_TARGET = "ethos-u55-128"  # what `etu run` uses when nothing says otherwise
HISTORY = 120  # PMU reports kept for the sparkline
FILTER_DELAY = 0.15  # seconds of typing before the filter is applied
HEX_DELAY = 0.3  # seconds between hex view redraws while following a run


class RunBridge(RunListener):
    """A RunListener that hands a run's events to a Textual widget in batches.

    Called on the process's threads; never touches a widget. Posts go out under the lock,
    so the last batch (with the end) can never overtake an earlier one.
    """

    def __init__(self, target, run_id: int, interval: float = BATCH_SECONDS) -> None:
        self._target = target  # anything with a thread-safe post_message (a widget)
        self.run_id = run_id
        self._interval = interval
        self._lock = threading.Lock()
        self._chunks: list[Chunk] = []
        self._in_flight = False
        self._closed = threading.Event()
        self.batches = 0  # RunBatch messages posted (for benchmarks)
        self._thread = threading.Thread(
            target=self._loop, name=f"etu-run-{run_id}-batches", daemon=True
        )
        self._thread.start()

    def on_events(self, events: list[Event]) -> None:
        chunk = split_events(events, time.time())  # here, off the UI thread
        with self._lock:
            self._chunks.append(chunk)

    def on_stats(self, stats: ProcessStats) -> None:
        if not self._closed.is_set():
            self._target.post_message(RunStats(self.run_id, stats))

    def on_end(self, outcome: RunOutcome) -> None:
        with self._lock:
            self._closed.set()
            chunks, self._chunks = self._chunks, []
            self._target.post_message(RunEnded(self.run_id, outcome, chunks))

    def _loop(self) -> None:
        while not self._closed.wait(self._interval):
            self.flush()

    def flush(self) -> None:
        with self._lock:
            if not self._chunks or self._in_flight or self._closed.is_set():
                return
            chunks, self._chunks = self._chunks, []
            self._in_flight = True
            self.batches += 1
            if not self._target.post_message(RunBatch(self.run_id, chunks, self)):
                self._closed.set()  # the widget is gone

    def delivered(self) -> None:
        """The widget took the last batch: the next may be posted."""
        with self._lock:
            self._in_flight = False

    def close(self) -> None:
        self._closed.set()


class RunElfScreen(OpenFileScreen):
    """The open-file modal, asking for the firmware ELF to run."""

    DIALOG_TITLE = "Firmware ELF to run"
    PLACEHOLDER = "path/to/arm_executor_runner.elf"
    HINT = "Enter use · Tab complete · Escape cancel · the FVP loads it with -a"


PREFLIGHT_CHECKS = ("target", "program_placement")


def _qemu_launch(elf: Path) -> LaunchInfo:
    """The emulated board's command for ``elf`` (QEMU mps3-an547, UART0 on stdout)."""
    from etu.runner.runtime_run import QemuMissing, qemu_argv

    try:
        argv = qemu_argv(elf)
    except QemuMissing as error:
        raise LaunchError(str(error)) from None
    return LaunchInfo(argv, simulator=argv[0], found_via="PATH", target=QEMU_BOARD, emulated=True)


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return a == b


Prepare = Callable[[], tuple[list[str], dict, LaunchInfo, str | None, str]]


class RunPanel(Vertical):
    """Controls, the simulator and command, the banner, the panes and the log of a run."""

    DEFAULT_CSS = """
    RunPanel {
        #run-top {
            border: round $primary;
            border-title-style: bold;
            border-subtitle-color: $text-muted;
        }
        .run-label { color: $text-muted; }
        #run-elf { text-style: bold; }
        #run-command { color: $text-muted; }
        #run-log-box {
            border: round $primary;
            border-title-style: bold;
            border-subtitle-color: $text-muted;
            &:focus-within { border: round $accent; }
        }
        #run-find-status { color: $text-muted; }
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        *bindings("run"),
        Binding("escape", "leave_input", "Back to the log", show=False, id="leave_input"),
    ]

    def __init__(self, *, id: str | None = None, capacity: int = RING_LINES) -> None:
        super().__init__(id=id)
        self.capacity = capacity  # log lines kept on screen per run
        self.workspace: Path | None = None
        self.elf: Path | None = None
        self.elf_picked = False
        self.firmware = None  # the Memory tab's FirmwareResult: pre-flight verdicts
        self.program = None  # the open program (parsers.pte.Program), None when none
        self.select_ops = ""  # its EXECUTORCH_SELECT_OPS_LIST value
        self.program_target: str | None = None
        self.target = DEFAULT_TARGET
        self.vela_cycles: float | None = None
        self.shapes: list[tuple[int, ...]] = []
        self._stable = False
        self.live: RunRecord | None = None  # this console's latest run
        self.shown: RunRecord | None = None  # what the panes show: live or a past run
        self.run_id = 0
        self.history: deque[float] = deque(maxlen=HISTORY)
        self.preview: LaunchInfo | None = None
        self.preview_error: str | None = None
        self.pending = 0  # previews, lists and session reads in flight
        self._requests = {"preview": 0, "list": 0, "read": 0}
        self._starting = False
        self._stopping = False
        self._controller: RunController | None = None
        self._controllers: dict[int, RunController] = {}
        self._bridges: dict[int, RunBridge] = {}
        self._lock = threading.Lock()
        self._closing = False
        self._children: set[EventsChild] = set()
        self._filter_timer: Timer | None = None
        self._frozen = False
        self._hex_timer: Timer | None = None

    # -- layout ------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        with Vertical(id="run-top"):
            with Horizontal(id="run-controls"):
                yield Label("Target ", classes="run-label")
                yield Select(
                    [(name, name) for name in targets()]
                    + [(f"{QEMU_BOARD} (emulated board)", QEMU_BOARD)],
                    value=DEFAULT_TARGET,
                    allow_blank=False,
                    compact=True,
                    id="run-target",
                )
                yield Label("   ELF ", classes="run-label")
                yield Static(id="run-elf")
                yield Label(" (e picks)", classes="run-label -wide-only")
                yield Label("   Time limit ", classes="run-label")
                yield Input(
                    str(DEFAULT_TIMELIMIT),
                    type="integer",
                    compact=True,
                    max_length=7,
                    id="run-timelimit",
                )
                yield Label(" seconds   ", classes="run-label -wide-only")
                yield Button("▶ Run (r)", id="run-start", compact=True, variant="success")
                yield Label(" ")
                yield Button("■ Stop (s)", id="run-stop", compact=True, variant="error")
            yield Static(id="run-simulator")
            yield Static(id="run-command")
        yield RunBanner(id="run-banner")
        with Horizontal(id="run-panes"):
            yield PmuPane(id="run-pmu")
            yield AllocatorPane(id="run-allocator")
            with Vertical(id="run-side"):
                yield OutputsPane(id="run-outputs")
                yield OperatorsPane(id="run-operators")
                yield ProcessPane(id="run-process")
                yield PastRunsList(id="run-past")
        with Vertical(id="run-log-box"):
            with Horizontal(id="run-log-bar"):
                yield Label("Filter ", classes="run-label")
                yield Input(placeholder="text (^f)", compact=True, id="run-filter")
                yield Label("  Levels ", classes="run-label")
                for level in LEVELS:
                    yield Checkbox(level, True, compact=True, id=f"run-level-{level}")
                yield Label("  Find ", classes="run-label")
                yield Input(placeholder="text (/)", compact=True, id="run-find")
                yield Static(id="run-find-status")
            yield LogView(id="run-log")
            yield HexView(id="run-hex")

    def on_mount(self) -> None:
        self.query_one("#run-top").border_title = "Run on a Corstone FVP"
        self._show_controls()
        self._show(None)

    def on_unmount(self) -> None:
        self.close()

    def close(self) -> None:
        """Kill every run this panel started (the console is closing)."""
        with self._lock:
            self._closing = True
            controllers = list(self._controllers.values())
            bridges = list(self._bridges.values())
            children = list(self._children)
        for child in children:  # a long session's reports being parsed
            child.kill()
        for controller in controllers:
            controller.kill()
        for bridge in bridges:
            bridge.close()
        self._thaw_heap()

    # -- program -----------------------------------------------------------------------

    @property
    def log(self) -> LogView:
        return self.query_one(LogView)

    @property
    def running(self) -> bool:
        """A run is starting or under way."""
        return self._starting or (self.live is not None and self.live.running)

    @property
    def busy(self) -> bool:
        """A preview, the past-runs list or a past session is being read (a run is not)."""
        return self.pending > 0

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
        workspace: Path,
        *,
        target: str | None,
        vela_cycles: float | None,
        shapes: Sequence[tuple[int, ...]] = (),
        program=None,
        select_ops: str = "",
    ) -> None:
        """A program opened: its folder is the workspace (firmware, sessions)."""
        if workspace != self.workspace:
            self.workspace = workspace
            self.elf_picked = False
            self.elf = find_firmware(workspace)
        self.program = program  # parsers.pte.Program, for the pre-flight fit checks
        self.select_ops = select_ops
        self.program_target = target
        if target in targets():
            self.target = target
        self.vela_cycles = vela_cycles
        self.shapes = list(shapes)
        select = self.query_one("#run-target", Select)
        if select.value != self.target:
            select.value = self.target
        self._show_controls()
        self._preview()
        self._list_runs()
        if self.shown is not None:
            self._show_panes(self.shown)

    def set_firmware(self, result) -> None:
        """The firmware the Memory and Fit tabs show (a FirmwareResult, or None): its fit
        verdicts are the pre-flight checks of the next run of the same ELF."""
        self.firmware = result

    def set_elf(self, elf: Path) -> None:
        self.elf, self.elf_picked = elf, True
        self._show_controls()
        self._preview()

    def _timelimit(self) -> int | None:
        text = self.query_one("#run-timelimit", Input).value.strip()
        if not text:
            return None
        value = int(text)
        if value <= 0:
            raise ValueError("the time limit is a positive number of seconds")
        return value

    # -- preview -----------------------------------------------------------------------

    def _preview(self) -> None:
        if self.workspace is None:
            return
        try:
            limit = self._timelimit()
        except ValueError:
            limit = DEFAULT_TIMELIMIT
        self._requests["preview"] += 1
        self.pending += 1
        request = self._requests["preview"]
        self.run_worker(
            partial(self._preview_in_thread, request, self.target, self.elf, limit),
            thread=True,
            group="run-preview",
            exit_on_error=False,
        )

    def _preview_in_thread(
        self, request: int, target: str, elf: Path | None, limit: int | None
    ) -> None:
        launch, error = None, None
        try:
            if elf is None:
                raise LaunchError(self._no_elf())
            if target == QEMU_BOARD:
                launch = _qemu_launch(elf)
            else:
                launch = prepare_fvp_launch(target, elf, FvpOptions(timelimit=limit))
        except LaunchError as failure:
            error = str(failure)
        except Exception as failure:  # a preview must never take the console down
            error = describe_error(failure)
        self.post_message(LaunchPreviewed(request, launch, error))

    def on_launch_previewed(self, message: LaunchPreviewed) -> None:
        self.pending = max(self.pending - 1, 0)
        if message.request != self._requests["preview"]:
            return
        launch = message.launch
        self.preview_error = message.error
        self.preview = (
            launch
            if launch is None or isinstance(launch, LaunchInfo)
            else LaunchInfo(
                list(launch.argv),
                simulator=str(launch.executable),
                found_via=launch.found_via,
                simulated=launch.simulated,
                target=launch.target.target,
            )
        )
        self._show_top()

    def _no_elf(self) -> str:
        where = self.workspace.name if self.workspace else "the workspace"
        return (
            f"no firmware ELF in {where} (looked for firmware/*.elf and *.elf); press e to pick one"
        )

    # -- starting and stopping ---------------------------------------------------------

    def start_run(self) -> bool:
        """Start the firmware on the chosen target's FVP; False when it cannot start now."""
        if self.running or self.workspace is None:
            return False
        try:
            limit = self._timelimit()
        except ValueError as error:
            self.notify(str(error), title="Run not started", severity="error", markup=False)
            return False
        target, elf, root = self.target, self.elf, sessions_root(self.workspace)

        def prepare() -> tuple[list[str], dict, LaunchInfo, str | None, str]:
            if elf is None:
                raise LaunchError(self._no_elf())
            if target == QEMU_BOARD:
                from etu.runner.runtime_run import qemu_meta

                info = _qemu_launch(elf)
                return info.command, qemu_meta(elf), info, None, "qemu"
            launch = prepare_fvp_launch(target, elf, FvpOptions(timelimit=limit))
            info = LaunchInfo(
                list(launch.argv),
                simulator=str(launch.executable),
                found_via=launch.found_via,
                simulated=launch.simulated,
                target=launch.target.target,
            )
            return launch.argv, launch.meta(), info, launch.target.npu, "fvp"

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

        def prepare() -> tuple[list[str], dict, LaunchInfo, str | None, str]:
            return command, dict(meta or {}), LaunchInfo(command), None, kind

        return self._begin(prepare, sessions, env)

    def attach(self, launch: LaunchInfo | None = None) -> RunBridge:
        """A new live run fed by the caller through the returned listener (no process):
        a board's UART reader, a test, a benchmark."""
        self._new_live()
        assert self.live is not None
        self.live.launch = launch
        bridge = RunBridge(self, self.run_id)
        with self._lock:
            self._bridges[self.run_id] = bridge
        return bridge

    def replay(self, folder: Path, timed: bool) -> bool:
        """Play a recorded session through the live panes (History's replay): at once, or
        at the pace its raw.index recorded. Not while a run is under way."""
        if self.running:
            self.notify("A run is under way: stop it first.", severity="warning")
            return False
        bridge = self.attach(LaunchInfo(["replay", folder.name]))
        self.run_worker(
            partial(self._replay_in_thread, folder, bridge, timed),
            thread=True,
            group="run-replay",
            exit_on_error=False,
        )
        return True

    def _replay_in_thread(self, folder: Path, bridge: RunBridge, timed: bool) -> None:
        from etu.runner.replay import replay_session

        try:
            replay_session(folder, bridge, timed=timed)
        except Exception as error:  # a bad session must become a message, never a crash
            bridge.on_end(RunOutcome("incomplete", None, f"replay failed: {error}", None))

    def _new_live(self) -> None:
        self._freeze_heap()
        self.run_id += 1
        self.live = RunRecord("current run", live=True, capacity=self.capacity)
        self._show(self.live)
        self._list_runs()
        self._show_controls()

    def monitor(self, source, meta: dict, launch: LaunchInfo) -> int:
        """A board's port (``source``: a runner.boards byte source, already open) through
        the path a run takes (parser → session → panes); the Boards tab hands it over
        after flashing. Stopped with the Run tab's stop key like any run."""
        if self.workspace is None:
            raise RuntimeError("no workspace to record the session in")

        def prepare() -> tuple[list[str], dict, LaunchInfo, str | None, str]:
            return [], dict(meta), launch, None, "board"

        return self._begin(prepare, sessions_root(self.workspace), source=source)

    def _begin(
        self, prepare: Prepare, root: Path, env: dict[str, str] | None = None, source=None
    ) -> int:
        self._new_live()
        self._starting = True
        self._show_controls()
        self._show_banner()
        self.app.refresh_bindings()
        self.run_worker(
            partial(self._start_in_thread, self.run_id, prepare, root, env, source),
            thread=True,
            group="run-start",
            exit_on_error=False,
        )
        return self.run_id

    def _start_in_thread(
        self, run_id: int, prepare: Prepare, root: Path, env: dict[str, str] | None, source=None
    ) -> None:
        try:
            argv, meta, info, npu, kind = prepare()
            bridge = RunBridge(self, run_id)
            try:
                controller = RunController(
                    argv or None, sessions=root, kind=kind, meta=meta, listener=bridge, env=env,
                    npu=npu, source=source,
                )  # fmt: skip
            except BaseException:
                bridge.close()
                raise
        except LaunchError as error:
            self.post_message(RunFailed(run_id, str(error)))
            return
        except OSError as error:
            self.post_message(RunFailed(run_id, f"{root}: {error.strerror or error}"))
            return
        except Exception as error:
            text = describe_error(error)
            self.post_message(RunFailed(run_id, text))
            return
        with self._lock:
            if self._closing:
                bridge.close()
                controller.session.finish(
                    exit_reason="killed", proof="the console closed before the run started"
                )
                return
            self._controllers[run_id] = controller
            self._bridges[run_id] = bridge
        self.post_message(RunStarted(run_id, controller, info))
        controller.start()

    def stop_run(self) -> bool:
        controller = self._controller
        if controller is None or not self.running or self._stopping:
            return False
        self._stopping = True
        self._show_banner()
        self.run_worker(controller.stop, thread=True, group="run-stop", exit_on_error=False)
        return True

    # -- run messages ------------------------------------------------------------------

    def on_run_started(self, message: RunStarted) -> None:
        if message.run_id != self.run_id or self.live is None:
            return
        self._starting = False
        self._controller = message.controller
        self.live.folder = message.controller.folder
        self.live.launch = message.launch
        # Relative times count from the session's start, which precedes every line it
        # stamps (a board's port may have bytes before this message is handled).
        started = message.controller.session.meta.get("started")
        self.live.started = started if isinstance(started, float) else time.time()
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
        with self._lock:
            self._controllers.pop(message.run_id, None)
            self._bridges.pop(message.run_id, None)
        if message.run_id != self.run_id or self.live is None:
            return
        self._take(self.live, message.chunks)
        self.live.outcome = message.outcome
        self.live.ended = time.time()
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
        self._after_run()

    def _freeze_heap(self) -> None:
        """For the length of a run, move what the console already holds (widgets, caches,
        the decoded program) out of the garbage collector's full passes: a flood of lines
        allocates enough to trigger them every few seconds, and walking the whole UI took
        50-90 ms each time, on whichever thread ran it. Undone when the run ends."""
        if not self._frozen:
            gc.freeze()
            self._frozen = True

    def _thaw_heap(self) -> None:
        if self._frozen:
            gc.unfreeze()  # back into the oldest generation: collected as usual again
            self._frozen = False

    def _after_run(self) -> None:
        self._thaw_heap()
        if self.live is not None:
            self._after_session(self.live)
        if self.shown is self.live:
            self.query_one(ProcessPane).show(self.live, self._stable)
            self._show_pmu(self.live)  # a missing report now says why
        self._show_controls()
        self._show_top()
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
            for report in record.pmu[before:]:
                cycles = per_inference(report)
                if cycles is not None:
                    self.history.append(cycles)
        if record is not self.shown:
            return
        if "store" in changed:  # the run outgrew the ring: its session file from now on
            self.log.show(record.store, record.started)
            self._title_log()
        elif "log" in changed:
            self.log.appended()
            self._title_log()
        if "pmu" in changed:
            self._show_pmu(record)
        if "memory" in changed:
            self.query_one(AllocatorPane).show(record.memory)
        if "outputs" in changed:
            self._show_outputs(record)

    # -- past runs ---------------------------------------------------------------------

    def _list_runs(self) -> None:
        if self.workspace is None:
            return
        self._requests["list"] += 1
        self.pending += 1
        self.run_worker(
            partial(self._list_in_thread, self._requests["list"], sessions_root(self.workspace)),
            thread=True,
            group="run-list",
            exit_on_error=False,
        )

    def _list_in_thread(self, request: int, root: Path) -> None:
        try:
            runs = list_past_runs(root)
        except Exception:  # an unreadable sessions folder lists nothing
            runs = []
        self.post_message(PastRunsListed(request, runs))

    def on_past_runs_listed(self, message: PastRunsListed) -> None:
        self.pending = max(self.pending - 1, 0)
        if message.request != self._requests["list"]:
            return
        live = self.live.folder.name if self.live and self.live.folder else None
        if self.live is not None and live is None:
            live = ""  # a run still starting, or fed without a session
        self.query_one(PastRunsList).show_runs(message.runs, live, self._stable)

    @on(OptionList.OptionSelected, "#run-past")
    def _past_selected(self, event: OptionList.OptionSelected) -> None:
        option = event.option.id
        if option == LIVE_OPTION:
            if self.live is not None:
                self._show(self.live)
            return
        run = self.query_one(PastRunsList).folder(option)
        if run is not None:
            self.open_past_run(run.folder)

    def open_past_run(self, folder: Path) -> None:
        """Re-read a recorded session into the panes (read-only)."""
        if self.live is not None and self.live.folder == folder:
            self._show(self.live)
            return
        self._requests["read"] += 1
        self.pending += 1
        self.run_worker(
            partial(self._read_in_thread, self._requests["read"], folder, self.capacity),
            thread=True,
            group="run-read",
            exit_on_error=False,
        )

    def _read_in_thread(self, request: int, folder: Path, capacity: int) -> None:
        try:
            record = read_past_run(folder, capacity, events=False)
        except Exception as error:  # a torn session must never take the console down
            record = RunRecord(folder.name, live=False)
            record.folder = folder
            record.failure = describe_error(error)
        self.post_message(PastRunRead(request, record))
        if record.failure is None and isinstance(record.store, FileLogStore):
            # The lines are on screen; the reports (PMU, outputs, faults) follow.
            npu = (record.launch.target if record.launch else "").rpartition("-")[0] or None
            try:
                child = EventsChild(folder / RAW_LOG, npu)
            except OSError as error:
                self.post_message(PastRunEvents(request, record, [], 0, describe_error(error)))
                return
            with self._lock:
                if self._closing:
                    child.kill()
                self._children.add(child)
            try:
                others, errors = child.result()
            except ChildError as error:
                if not child.killed:
                    self.post_message(PastRunEvents(request, record, [], 0, str(error)))
                return
            finally:
                with self._lock:
                    self._children.discard(child)
            self.post_message(PastRunEvents(request, record, others, errors))

    def on_past_run_events(self, message: PastRunEvents) -> None:
        record = message.record
        if message.failure is not None:
            record.warnings.append(message.failure)
            self.notify(message.failure, title=record.label, severity="warning", markup=False)
        record.errors += message.errors
        record.add([], message.others)
        self._after_session(record)  # its outputs are known now: compare them with the host
        if message.request == self._requests["read"] and self.shown is record:
            self._show_panes(record)
            self._show_banner()

    def on_past_run_read(self, message: PastRunRead) -> None:
        self.pending = max(self.pending - 1, 0)
        if message.request == self._requests["read"]:
            self._after_session(message.record)
            self._show(message.record)
            for warning in message.record.warnings:
                self.notify(warning, title=message.record.label, severity="warning", markup=False)

    # -- outputs against the host ------------------------------------------------------

    def _after_session(self, record: RunRecord) -> None:
        """A finished run: compare its outputs with the host, read its ETDump (once each)."""
        if record.running or record.folder is None:
            return
        self._compare_outputs(record)
        unread = record.operators is None and record.operators_note is None
        if unread and any(record.folder.glob("etdump-*.bin")):
            record.operators_note = "reading the ETDump with ExecuTorch's Inspector…"
            self.run_worker(
                partial(self._operators_in_thread, record.folder),
                thread=True,
                group="run-etdump",
                exit_on_error=False,
            )

    def _operators_in_thread(self, folder: Path) -> None:
        from etu.runner.etdump import operators_in_child

        try:
            self.post_message(OperatorsRead(folder, operators_in_child(folder), None))
        except Exception as error:  # a device-sent ETDump must never take the console down
            self.post_message(OperatorsRead(folder, None, f"ETDump not read: {error}"))

    def _records_of(self, folder: Path) -> list[RunRecord]:
        """The live and shown records of the session in ``folder`` (once each)."""
        records = {id(r): r for r in (self.live, self.shown) if r is not None}.values()
        return [record for record in records if record.folder == folder]

    def on_operators_read(self, message: OperatorsRead) -> None:
        for record in self._records_of(message.folder):
            record.operators = message.table
            record.operators_note = message.note
        if self.shown is not None and self.shown.folder == message.folder:
            self.query_one(OperatorsPane).show(self.shown.operators, self.shown.operators_note)

    def _compare_outputs(self, record: RunRecord) -> None:
        """Start the host comparison of a finished run's outputs (once per record)."""
        if not record.outputs:
            return
        if record.comparison is not None or record.comparison_note is not None:
            return
        if record.launch is not None and record.launch.simulated:
            record.comparison_note = SIMULATED_OUTPUTS
            if self.shown is record:
                self._show_outputs(record)
            return
        record.comparison_note = "comparing with the host reference…"
        self.run_worker(
            partial(self._compare_in_thread, record.folder),
            thread=True,
            group="run-compare",
            exit_on_error=False,
        )

    def _compare_in_thread(self, folder: Path) -> None:
        from etu.runner.compare import CompareError, compare_in_child

        try:
            self.post_message(OutputsCompared(folder, compare_in_child(folder), None))
        except CompareError as error:
            self.post_message(OutputsCompared(folder, None, f"not compared: {error}"))
        except Exception as error:  # a broken reference must never take the console down
            self.post_message(OutputsCompared(folder, None, describe_error(error)))

    def on_outputs_compared(self, message: OutputsCompared) -> None:
        for record in self._records_of(message.folder):
            record.comparison = message.record
            record.comparison_note = message.note
        if self.shown is not None and self.shown.folder == message.folder:
            self._show_outputs(self.shown)

    def _show_outputs(self, record: RunRecord | None) -> None:
        pane = self.query_one(OutputsPane)
        if record is None:
            pane.show({}, self.shapes)
            return
        simulated = record.launch is not None and record.launch.simulated
        pane.show(record.outputs, self.shapes, record.comparison, record.comparison_note,
                  simulated=simulated)  # fmt: skip

    # -- showing -----------------------------------------------------------------------

    def _show(self, record: RunRecord | None) -> None:
        self.shown = record
        self.log.show(record.store if record else None, record.started if record else None)
        self._show_panes(record)
        self._show_banner()
        self._title_log()
        self._show_hex()

    def _show_panes(self, record: RunRecord | None) -> None:
        self._show_pmu(record)
        self.query_one(AllocatorPane).show(record.memory if record else None)
        self._show_outputs(record)
        operators = self.query_one(OperatorsPane)
        if record is None:
            operators.show(None, None)
        else:
            operators.show(record.operators, record.operators_note)
        self.query_one(ProcessPane).show(record, self._stable)

    def _show_pmu(self, record: RunRecord | None) -> None:
        if record is None:
            self.query_one(PmuPane).show([], list(self.history), self.vela_cycles, False)
            return
        history = (
            list(self.history)
            if record.live
            else [c for c in map(per_inference, record.pmu) if c is not None]
        )
        simulated = record.launch.simulated if record.launch else False
        ended = record.outcome.reason if record.outcome is not None else None
        self.query_one(PmuPane).show(record.pmu, history, self.vela_cycles, simulated, ended)

    def _show_banner(self) -> None:
        record = self.shown
        hint = "Press r to run"
        if self.elf is not None and self.workspace is not None:
            hint += f" {file_label(self.elf, self.workspace)} on {self.target}"
        hint += " · runs are recorded in .etu/sessions of the workspace"
        banner = self.query_one(RunBanner)
        if record is not None and record is self.live and self._starting:
            banner.set_state("-running", Content.styled("● starting…", "bold"))
            return
        if record is not None and record.running and self._stopping:
            banner.set_state("-running", Content.styled("● stopping…", "bold"))
            return
        name = session_name(record.folder.name, self._stable) if record and record.folder else ""
        triage = self._triage(record) if record is not None and record.outcome else []
        banner.show(record, hint, name, self._stable, triage)

    def _triage(self, record: RunRecord) -> list[str]:
        """A fault's registers with PC/LR symbolised against the firmware ELF; a missing
        operator with the Fit tab's fix (the exact EXECUTORCH_SELECT_OPS_LIST)."""
        lines: list[str] = []
        if record.faults:
            elf_path = self.elf
            fw = self.firmware
            image = None
            shown = fw is not None and fw.memory_map is not None and fw.path is not None
            if shown and elf_path is not None and _same_file(fw.path, elf_path):
                image = fw.memory_map.elf
            if image is None and elf_path is not None:
                try:
                    image = read_elf(elf_path)
                except Exception:  # symbolising is a help; the registers still show
                    image = None
            lines += fault_lines(record.faults[-1], image, elf_path)
        if record.missing:
            fix = None
            verdicts = self.firmware.verdicts if self.firmware is not None else None
            for verdict in verdicts or []:
                if verdict.check == "cpu_kernels" and verdict.fix:
                    fix = verdict.fix
            if fix is None and self.select_ops:
                fix = f"rebuild with -DEXECUTORCH_SELECT_OPS_LIST={self.select_ops}"
            lines += missing_operator_lines(record.missing, fix)
        return lines

    def _show_controls(self) -> None:
        running = self.running
        elf = self.query_one("#run-elf", Static)
        if self.elf is None:
            elf.update(Content.styled("none found", "$text-error"))
        else:
            elf.update(printable(file_label(self.elf, self.workspace)))
        self.query_one("#run-target", Select).disabled = running
        self.query_one("#run-timelimit", Input).disabled = running
        self.query_one("#run-start", Button).disabled = running or self.workspace is None
        self.query_one("#run-stop", Button).disabled = not running
        self._show_top()

    def _show_top(self) -> None:
        """The simulator and the exact command: the running one, else the next one."""
        live = self.live
        info = live.launch if live is not None and live.running and live.launch else self.preview
        simulator = self.query_one("#run-simulator", Static)
        command = self.query_one("#run-command", Static)
        if info is None:
            error = self.preview_error
            if error:
                simulator.update(
                    Content.assemble(("✗ ", "$text-error bold"), (printable(error), "$text-error"))
                )
            else:
                simulator.update(Content.styled("Looking for the simulator…", "dim"))
            command.update("")
            return
        if info.simulated:
            tag = (" STAND-IN FVP — numbers are simulated ", "bold $background on $warning")
        elif info.emulated:
            tag = (" EMULATED BOARD (QEMU, no NPU) — timings are not cycles ",
                   "bold $background on $warning")  # fmt: skip
        else:
            tag = (" Arm FVP ", "bold $background on $success")
        via = f" (found via {info.found_via})" if info.found_via else ""
        simulator.update(
            Content.assemble(tag, "  ", (printable(info.simulator), "bold"), (via, "dim"))
            if info.simulator
            else Content.styled("a command, not a simulator", "dim")
        )
        command.update(Content("$ " + printable(format_command(info.command))))

    def _title_log(self) -> None:
        box = self.query_one("#run-log-box")
        log = self.log
        store = log.store
        if store is None:
            box.border_title = "Log"
        else:
            kept = len(store)
            count = f"{kept:,} lines"
            if store.first:
                count = f"last {kept:,} of {store.total:,} lines (all in the session)"
            shown = f" · {log.row_count:,} shown" if log.filtering else ""
            if log.filter_pending:
                shown = " · filtering the session file…"
            elif log.filtering and not log.row_count and kept:
                shown = (
                    f" · no lines match {printable(log.filter_text)!r}"
                    if log.filter_text
                    else " · no lines at the chosen levels"
                )
            mode = "following" if log.follow else "paused · end follows"
            where = "" if self.shown is None or self.shown.live else f" · {self.shown.label}"
            if where and self._stable:
                where = f" · {session_name(self.shown.label, True)}"
            box.border_title = f"Log · {count}{shown} · {mode}{where}"
        box.border_subtitle = (
            f"time {log.time_mode} · w time · ^f filter · / find · [ ] match · h hex"
        )

    def _show_hex(self) -> None:
        hex_view = self.query_one(HexView)
        if not hex_view.has_class("-shown"):
            return
        entry = self.log.line(self.log.cursor)
        hex_view.show_line(self.log.cursor, entry[1] if entry else None)

    # -- controls ----------------------------------------------------------------------

    def set_default_target(self, target: str) -> None:
        """The ``target`` setting: what runs when the program names no NPU of its own."""
        if target in targets() and self.program_target is None:
            self.target = target
            select = self.query_one("#run-target", Select)
            if select.value != target:
                select.value = target

    @on(Select.Changed, "#run-target")
    def _target_changed(self, event: Select.Changed) -> None:
        if isinstance(event.value, str) and event.value != self.target:
            self.target = event.value
            self._preview()
            self._show_banner()

    @on(Input.Changed, "#run-timelimit")
    def _timelimit_changed(self) -> None:
        self._preview()

    @on(Button.Pressed, "#run-start")
    def _start_pressed(self) -> None:
        self.request_run()

    @on(Button.Pressed, "#run-stop")
    def _stop_pressed(self) -> None:
        self.stop_run()

    @on(Input.Changed, "#run-filter")
    def _filter_typed(self) -> None:
        if self._filter_timer is not None:
            self._filter_timer.stop()
        self._filter_timer = self.set_timer(FILTER_DELAY, self.apply_filter)

    @on(Input.Submitted, "#run-filter")
    def _filter_submitted(self) -> None:
        self.apply_filter()
        self.log.focus()

    @on(Checkbox.Changed)
    def _level_changed(self, event: Checkbox.Changed) -> None:
        if event.checkbox.id and event.checkbox.id.startswith("run-level-"):
            self.apply_filter()

    def apply_filter(self) -> None:
        if self._filter_timer is not None:
            self._filter_timer.stop()
            self._filter_timer = None
        text = self.query_one("#run-filter", Input).value
        levels = [lv for lv in LEVELS if self.query_one(f"#run-level-{lv}", Checkbox).value]
        self.log.set_filter(text, levels)
        self._title_log()
        self._show_hex()

    @on(Input.Changed, "#run-find")
    def _find_typed(self, event: Input.Changed) -> None:
        self.log.search = event.value
        self.log.refresh()
        self.query_one("#run-find-status", Static).update("")

    @on(Input.Submitted, "#run-find")
    def _find_submitted(self) -> None:
        self.find(True)

    def find(self, forward: bool = True) -> int | None:
        term = self.query_one("#run-find", Input).value
        status = self.query_one("#run-find-status", Static)
        if not term:
            self.query_one("#run-find", Input).focus()
            status.update("type a text to find")
            return None
        seq = self.log.find(term, forward)
        if seq is None and self.log.search_pending:
            status.update(Content.styled(" searching the session file…", "dim"))
        elif seq is None:
            status.update(Content.styled(" no match", "$text-error"))
        else:
            _, line = self.log.store.line(seq)  # type: ignore[union-attr]
            total, rank = self.log.match_count(term, seq)
            place = (
                f"{rank:,} of {plural(total, 'match', 'matches')}"
                if rank
                else plural(total, "match", "matches")
            )
            status.update(f" {place} · line {line.line_no:,}")
        return seq

    @on(LogView.SearchReady)
    def _search_ready(self, message: LogView.SearchReady) -> None:
        """A big session file has been searched: the find that waited goes on."""
        if message.failure is not None:
            status = Content.styled(f" {printable(message.failure)}", "$text-error")
            self.query_one("#run-find-status", Static).update(status)
        elif self.query_one("#run-find", Input).value.lower() == message.term:
            self.find(message.forward)

    @on(LogView.FilterApplied)
    def _filter_applied(self) -> None:
        self._title_log()
        self._show_hex()

    @on(LogView.CursorMoved)
    def _cursor_moved(self) -> None:
        if not self.query_one(HexView).has_class("-shown"):
            return
        if self.log.follow and self.shown is not None and self.shown.running:
            # Following a run, the cursor moves every batch: redraw the bytes a few times a
            # second, not 20 (a resize of the hex view is a layout).
            if self._hex_timer is None:
                self._hex_timer = self.set_timer(HEX_DELAY, self._hex_later)
            return
        self._show_hex()

    def _hex_later(self) -> None:
        self._hex_timer = None
        self._show_hex()

    @on(LogView.FollowChanged)
    def _follow_changed(self) -> None:
        self._title_log()

    # -- actions (the App's keys and palette call these) ----------------------------------

    def toggle_follow(self) -> None:
        self.log.follow = not self.log.follow
        self.log.refresh()
        self._title_log()

    def cycle_time(self) -> str:
        modes = TIME_MODES
        self.set_time_mode(modes[(modes.index(self.log.time_mode) + 1) % len(modes)])
        return self.log.time_mode

    def set_time_mode(self, mode: str) -> None:
        self.log.time_mode = mode
        self._title_log()

    def toggle_hex(self) -> bool:
        hex_view = self.query_one(HexView)
        hex_view.toggle_class("-shown")
        self._show_hex()
        return hex_view.has_class("-shown")

    def toggle_level(self, level: str) -> None:
        box = self.query_one(f"#run-level-{level}", Checkbox)
        box.value = not box.value  # Checkbox.Changed applies the filter

    def focus_find(self) -> None:
        self.query_one("#run-find", Input).focus()

    def focus_filter(self) -> None:
        self.query_one("#run-filter", Input).focus()

    def focus_past_runs(self) -> None:
        self.query_one(PastRunsList).focus()

    # -- keys --------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "start_run":
            return (self.workspace is not None and not self.running) or None
        if action == "stop_run":
            return self.running or None
        return True

    def action_start_run(self) -> None:
        self.request_run()

    def preflight(self) -> list[str]:
        """What would make the next run fail, checked before launching it: the program's
        NPU target against the run's, and the fit checks of the program against the
        firmware to be run (its baked-in program, its NPU platform)."""
        problems: list[str] = []
        if self.target == QEMU_BOARD:
            if self.program_target:  # an Ethos-U command stream: nothing there runs it
                problems.append(
                    f"the program is compiled for the Ethos-U ({self.program_target}); the "
                    "emulated board has no NPU: run its CPU twin (etu compile --no-delegate)"
                )
            return problems
        fw, elf = self.firmware, self.elf
        same = (
            fw is not None
            and fw.memory_map is not None
            and fw.path is not None
            and elf is not None
            and _same_file(fw.path, elf)
        )
        if same and self.program is not None:
            try:
                verdicts = check_fit(self.program, fw.memory_map, None, target=self.target)
            except Exception:  # the Fit tab reports a check that cannot run
                verdicts = []
            for verdict in verdicts:
                bad = verdict.status == FAIL or (
                    verdict.check == "program_placement" and verdict.status != OK
                )
                if verdict.check in PREFLIGHT_CHECKS and bad:
                    problems.append(verdict.message)
        elif self.program_target and self.program_target != self.target:
            problems.append(
                f"the program was compiled for {self.program_target}, the run targets "
                f"{self.target}: the driver rejects a command stream for another NPU config"
            )
        return list(dict.fromkeys(problems))

    def request_run(self) -> bool:
        """Start a run after the pre-flight checks; a problem asks first (run anyway?)."""
        if self.running or self.workspace is None:
            return False
        problems = self.preflight()
        if not problems:
            if self.start_run():
                self.app.refresh_bindings()
                return True
            return False

        def chosen(run_anyway: bool | None) -> None:
            if run_anyway and self.start_run():
                self.app.refresh_bindings()

        self.app.push_screen(PreflightScreen(problems), callback=chosen)
        return False

    def action_stop_run(self) -> None:
        self.stop_run()

    def action_pick_run_elf(self) -> None:
        if self.running:
            self.notify("A run is under way: stop it first.", severity="warning")
            return
        if self.elf is not None:
            start = short_path(self.elf)
        else:
            start = f"{short_path(self.workspace)}{os.sep}" if self.workspace else ""
        self.app.push_screen(RunElfScreen(start), callback=self._elf_chosen)

    def _elf_chosen(self, path: Path | None) -> None:
        if path is not None:
            self.set_elf(path)

    def action_maximize_log(self) -> None:
        screen = self.screen
        if screen.maximized is not None:
            screen.minimize()
        else:
            screen.maximize(self.query_one(LogView), container=False)

    def action_log_find(self) -> None:
        self.focus_find()

    def action_log_next(self) -> None:
        self.find(True)

    def action_log_prev(self) -> None:
        self.find(False)

    def action_log_filter(self) -> None:
        self.focus_filter()

    def action_log_follow(self) -> None:
        self.toggle_follow()

    def action_log_time(self) -> None:
        self.cycle_time()

    def action_log_time_mode(self, mode: str) -> None:
        self.set_time_mode(mode)

    def action_log_hex(self) -> None:
        self.toggle_hex()

    def action_log_level(self, level: str) -> None:
        self.toggle_level(level)

    def action_past_runs(self) -> None:
        self.focus_past_runs()

    def focus_main(self) -> None:
        self.query_one(LogView).focus()

    def action_leave_input(self) -> None:
        focused = self.screen.focused
        if isinstance(focused, Input) and focused.id in ("run-filter", "run-find"):
            self.log.focus()
            return
        raise SkipAction()
