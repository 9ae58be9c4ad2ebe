"""How the Run tab starts a run and hears from it, without widgets of its own.

:class:`LaunchPlan` is what a plan function gives the panel's start worker (the command,
the session's meta, what the header shows); :class:`RunBridge` hands a run's events to the
panel in batches (what would make a run fail is :mod:`etu.runner.preflight`'s).

Threading (as everywhere in the console): ``RunController`` calls its listener on the
process's reader threads. :class:`RunBridge` only appends to a lock-protected buffer there;
a timer thread posts one :class:`RunBatch` per ~50 ms, and never a second one before the
panel has taken the first, so a flood coalesces into bigger batches instead of a queue.
"""

from __future__ import annotations

import gc
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from etu.fvp.command import FvpOptions
from etu.fvp.launch import LaunchError, prepare_fvp_launch
from etu.parsers.errors import describe_error
from etu.parsers.runner_events import Event
from etu.runner.process import ProcessStats
from etu.runner.run import ByteSource, RunListener, RunOutcome
from etu.runner.run_model import Chunk, LaunchInfo, split_events
from etu.runner.runtime_run import QEMU_BOARD
from etu.tui.screens.open_file import OpenFileScreen
from etu.tui.widgets.formatting import short_path
from etu.tui.widgets.run_messages import RunBatch, RunEnded, RunStats

BATCH_SECONDS = 0.05


@dataclass(slots=True)
class LaunchPlan:
    """What a run starts: ``argv`` (empty for a board's port), the session's ``meta``,
    what the header shows (``info``), the NPU its PMU reports are read for, and the
    session's ``kind`` (fvp, qemu, board, command...)."""

    argv: list[str]
    meta: dict = field(default_factory=dict)
    info: LaunchInfo = field(default_factory=lambda: LaunchInfo([]))
    npu: str | None = None
    kind: str = "command"
    source: ByteSource | None = None  # what the run reads, when not argv's process


def target_kind(target: str) -> str:
    """What a Run target is, in words for titles and dialogs."""
    return "the emulated board" if target == QEMU_BOARD else "an FVP"


def qemu_launch(elf: Path) -> LaunchInfo:
    """The emulated board's command for ``elf`` (QEMU mps3-an547, UART0 on stdout), for
    the header's preview: nothing is started or allocated."""
    from etu.runner.runtime_run import QemuMissing, qemu_argv, qemu_label

    try:
        argv = qemu_argv(elf)
    except QemuMissing as error:
        raise LaunchError(str(error)) from None
    return LaunchInfo(argv, simulator=argv[0], found_via="PATH", target=QEMU_BOARD, emulated=True,
                      label=qemu_label(elf))  # fmt: skip


def qemu_plan(elf: Path) -> LaunchPlan:
    """The run of ``elf`` on the emulated board, with etu's NPU bridge when the runner was
    built with it (runner.runtime_run.prepare_qemu_run)."""
    from etu.runner.npu_bridge import BridgeError
    from etu.runner.runtime_run import QemuMissing, prepare_qemu_run

    try:
        run = prepare_qemu_run(elf)
    except (QemuMissing, BridgeError) as error:
        raise LaunchError(str(error)) from None
    info = LaunchInfo(run.argv, simulator=run.argv[0], found_via="PATH", target=QEMU_BOARD,
                      emulated=True, label=str(run.meta.get("label") or ""))  # fmt: skip
    return LaunchPlan(run.argv, run.meta, info, None, "qemu", run.source)


def launch_plan(target: str, elf: Path, limit: int | None) -> LaunchPlan:
    """The plan for running ``elf`` on ``target`` (an FVP's target or the emulated board).
    Blocking (it looks for the simulator); raises LaunchError with one line."""
    if target == QEMU_BOARD:
        return qemu_plan(elf)
    launch = prepare_fvp_launch(target, elf, FvpOptions(timelimit=limit))
    info = LaunchInfo(
        list(launch.argv),
        simulator=str(launch.executable),
        found_via=launch.found_via,
        simulated=launch.simulated,
        target=launch.target.target,
    )
    meta = launch.meta()
    recorded = firmware_inputs(elf)  # the session says which inputs the runner read
    if recorded is not None:
        meta["inputs"] = recorded
    return LaunchPlan(list(launch.argv), meta, info, launch.target.npu, "fvp")


def firmware_inputs(elf: Path | None) -> dict | None:
    """The inputs a firmware etu built runs on (its build record), None when not known."""
    from etu.runner.bundleio import firmware_inputs as recorded

    if elf is None:
        return None
    try:
        return recorded(Path(elf))
    except (OSError, ValueError):
        return None


def inputs_label(chosen: str | None, elf: Path | None) -> str:
    """The next run's inputs in words: the chosen ones, else the firmware's (all ones,
    the runner's fallback, when its build record names none)."""
    from etu.runner.compare import ONES_INPUTS

    if chosen is not None:
        return chosen
    return str((firmware_inputs(elf) or ONES_INPUTS).get("source"))


def inputs_plan(target: str, pte: Path | None, inputs: str, limit: int | None, say) -> LaunchPlan:
    """The run of ``pte`` on ``inputs`` (``FILE.npy``, ``FILE.npz`` or ``random:SEED``) as
    ``etu run --board … PROGRAM --inputs`` does it: the runner built with them bundled
    (BundleIO) in ``PROGRAM.<board>/``, once per request, then run on ``target``. Blocking
    (a build takes minutes); raises LaunchError with one line."""
    from etu.runner.build_plan import RuntimeBuildError
    from etu.runner.bundleio import BundleError
    from etu.runner.run_inputs import firmware_for_inputs
    from etu.runner.runtime_source import SourceError
    from etu.runner.workspace import board_for_target

    if pte is None:
        raise LaunchError(f"inputs {inputs}: open the program first (its runner is built "
                          "with the inputs bundled)")  # fmt: skip
    board = board_for_target(target)
    if board is None:
        raise LaunchError(f"inputs {inputs}: no firmware board for {target}")
    try:
        elf, _built = firmware_for_inputs(Path(pte), board, inputs, progress=say)
    except (BundleError, RuntimeBuildError, SourceError) as error:
        raise LaunchError(f"inputs {inputs}: {error}") from None
    return launch_plan(target, elf, limit)


def next_run_hint(target: str, inputs: str | None, elf: Path | None, notes: list[str]) -> str:
    """The banner before a run: the key, the target, the inputs and what they mean to the
    program (``notes``: its integer IO, one sentence each)."""
    hint = f"Press r to run on {target} · inputs {inputs_label(inputs, elf)} (I"
    hint += "; its runner is built with them)" if inputs is not None else ")"
    hint += " · L layers"
    return hint + "".join(f"\n  {note}" for note in notes)


def start_failure(error: Exception, root: Path) -> str:
    """One line for a run that could not start (``root``: its sessions folder)."""
    if isinstance(error, LaunchError):
        return str(error)
    if isinstance(error, OSError):
        return f"{root}: {error.strerror or error}"
    return describe_error(error)


class HeapFreeze:
    """For the length of a run, what the console already holds (widgets, caches, the
    decoded program) is moved out of the garbage collector's full passes: a flood of lines
    allocates enough to trigger them every few seconds, and walking the whole UI took
    50-90 ms each time, on whichever thread ran it. Thawed when the run ends."""

    def __init__(self) -> None:
        self.frozen = False

    def freeze(self) -> None:
        if not self.frozen:
            gc.freeze()
            self.frozen = True

    def thaw(self) -> None:
        if self.frozen:
            gc.unfreeze()  # back into the oldest generation: collected as usual again
            self.frozen = False


class RunElfScreen(OpenFileScreen):
    """The open-file modal, asking for the firmware ELF to run on the chosen target."""

    DIALOG_TITLE = "Firmware ELF to run"
    PLACEHOLDER = "path/to/arm_executor_runner.elf"
    HINT = "Enter use · Tab complete · Escape cancel · the FVP loads it with -a"
    QEMU_HINT = "Enter use · Tab complete · Escape cancel · QEMU loads it with -kernel"

    def __init__(self, start: str = "", target: str = "") -> None:
        super().__init__(start)
        if target == QEMU_BOARD:
            self.HINT = self.QEMU_HINT
        self.DIALOG_TITLE = f"Firmware ELF to run on {target_kind(target)}"

    @classmethod
    def at(cls, elf: Path | None, workspace: Path | None, target: str) -> RunElfScreen:
        """The dialog prefilled with the current ELF, else the workspace folder."""
        if elf is not None:
            return cls(short_path(elf), target)
        return cls(f"{short_path(workspace)}{os.sep}" if workspace else "", target)


class InputsScreen(OpenFileScreen):
    """The next run's inputs: a .npy/.npz file (Tab completes it), ``random:SEED``, or
    nothing for the firmware's own (all ones, the fallback). Dismisses with the text ("":
    the fallback) or None (cancelled); a choice ``etu run --inputs`` would refuse is said
    under the field and not taken."""

    DIALOG_TITLE = "Inputs of the next run"
    PLACEHOLDER = "empty: all ones (fallback) · FILE.npy · FILE.npz · random:SEED"
    HINT = "Enter use · Tab complete · Escape cancel · bundled into the runner (BundleIO)"

    def on_input_submitted(self, event) -> None:
        from etu.runner.bundleio import BundleError, parse_inputs_option

        event.prevent_default()  # OpenFileScreen's handler would dismiss with a Path
        event.stop()
        text = event.value.strip()
        if text:
            try:
                parse_inputs_option(text)
            except BundleError as error:
                from textual.widgets import Static

                from etu.tui.safe_text import printable

                self.query_one("#matches", Static).update(printable(str(error)))
                return
        self.dismiss(text)


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
