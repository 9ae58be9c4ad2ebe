"""One run of the runner firmware: process → parser → session, and how it ended.

FVP output and a board's UART go through the same incremental parser: the controller reads
from a *byte source* (a child process by default; a serial port or an emulated board's pty
for ``etu monitor``/``etu flash --monitor``, see runner/boards/source.py). Every chunk is
recorded before it is parsed, events are recorded as they are emitted, and the listener
sees both. A source may also report its own events (a port's gap after an unplug).
The end is classified from what the runner printed, with the line that proves it: a
simulator's own exit status is not trusted on its own (run_fvp.sh's "No problems found!"
for an FVP that never started is the cautionary tale).
"""

from __future__ import annotations

import itertools
import os
import signal
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from etu.parsers.log_summary import LogSummary
from etu.parsers.runner_events import (
    AssertFailed,
    EtdumpBlock,
    Event,
    FvpStopped,
    HardFault,
    LogLine,
    MissingKernel,
    OutputTensor,
    RunError,
    RunSucceeded,
)
from etu.parsers.runner_log import RunnerLogParser
from etu.runner.history import figures, run_summary
from etu.runner.process import ProcessStats, StreamingProcess
from etu.runner.session import SessionWriter

# How a run ended → the exit status of `etu run`.
EXIT_STATUS = {
    "success": 0,
    "runner_error": 1,
    "hard_fault": 3,
    "time_limit": 4,
    "crash": 5,
    "killed": 6,
    "incomplete": 7,
    "no_model": 1,  # the firmware runs no model: nothing was checked
}
_VERDICT_REASON = {
    "no_model": "no_model",
    "success": "success",
    "error": "runner_error",
    "hard_fault": "hard_fault",
    "timeout": "time_limit",
}
NO_MODEL_PROOF = (
    "etu's stand-in runner firmware ran: it runs no model, so nothing was computed or "
    "checked (build the real runner: etu firmware build PROGRAM.pte --board BOARD)"
)
_CONCLUSIVE = ("success", "no_model", "runner_error", "hard_fault")
_DECISIVE = (RunSucceeded, RunError, AssertFailed, MissingKernel, HardFault, FvpStopped)
WATCHDOG_GRACE_S = 30.0  # a simulator this long past its own --timelimit is killed by etu
_ACTIVE: weakref.WeakSet[RunController] = weakref.WeakSet()
# In a run's argv, stands for its session folder (made when the run is set up): files the
# simulator writes, such as an FVP's PMU trace, land in the session.
SESSION_FOLDER = "<session>"
# A run may print for days: what is held in memory is bounded. The first entries (the cause)
# and the latest (the state now) are kept; the raw log on disk keeps everything.
MAX_HELD = 1024
_SUMMARY_LISTS = ("errors", "pmu", "bundleio", "etdump", "etdump_errors", "stops")


def bound_list(items: list, limit: int = MAX_HELD) -> None:
    """Drop the middle of ``items`` once it passes ``limit``: first and last halves stay."""
    if len(items) > limit:
        keep = limit // 2
        del items[keep : len(items) - keep]


def bound_summary(summary) -> None:
    """The lists a LogSummary grows during a run, bounded (see :func:`bound_list`)."""
    for name in _SUMMARY_LISTS:
        items = getattr(summary, name, None)
        if isinstance(items, list):
            bound_list(items)


@dataclass(frozen=True, slots=True)
class RunOutcome:
    reason: str  # a key of EXIT_STATUS
    returncode: int | None
    proof: str  # the line (or fact) that shows it
    proof_line: int | None
    summary: dict = field(default_factory=dict)

    @property
    def exit_status(self) -> int:
        return EXIT_STATUS[self.reason]

    def to_json(self) -> dict:
        return {
            "type": "RunEnded",
            "reason": self.reason,
            "returncode": self.returncode,
            "proof": self.proof,
            "proof_line": self.proof_line,
            "verdict": self.summary.get("verdict"),
        }


def classify(
    summary: dict,
    decisive: list[tuple[Event, str]],
    returncode: int | None,
    stopped: bool,
    last_stderr: str | None = None,
    time_limit: str | None = None,
    timed_out: float | None = None,
    stop_reason: str = "stopped by the user",
) -> RunOutcome:
    """The run's end from the runner's own words first, the process second.

    The proof of an error is the first error (the cause; later asserts are consequences);
    of a time limit, the simulator's stop reason (or ``time_limit``, the source's own words
    when it enforced the limit); of success, the runner's last word."""
    verdict = summary.get("verdict", "incomplete")
    reason = _VERDICT_REASON.get(verdict)
    if timed_out is not None and reason not in _CONCLUSIVE:
        proof = f"no runner verdict within etu's time limit of {timed_out:g} s; stopped"
        return RunOutcome("time_limit", returncode, proof, None, summary)
    if stopped and reason not in _CONCLUSIVE:
        return RunOutcome("killed", returncode, stop_reason, None, summary)
    if time_limit and reason not in _CONCLUSIVE:
        return RunOutcome("time_limit", returncode, time_limit, None, summary)
    if reason == "no_model":
        line = summary.get("no_model_line")
        return RunOutcome(
            reason, returncode, NO_MODEL_PROOF, line if isinstance(line, int) else None, summary
        )
    if reason is not None:
        wanted = {
            "success": (RunSucceeded,),
            "runner_error": (RunError, AssertFailed, MissingKernel),
            "hard_fault": (HardFault,),
            "time_limit": (FvpStopped,),
        }[reason]
        candidates = [(e, t) for e, t in decisive if isinstance(e, wanted)]
        if reason == "time_limit":
            candidates = [(e, t) for e, t in candidates if e.kind == "time_limit"] or candidates
        if candidates:
            event, text = candidates[0] if reason != "success" else candidates[-1]
            return RunOutcome(reason, returncode, text, event.line_no, summary)
        return RunOutcome(reason, returncode, verdict, None, summary)
    if returncode is not None and returncode != 0:
        how = f"signal {-returncode}" if returncode < 0 else f"status {returncode}"
        proof = f"the simulator exited with {how} before the runner finished"
        if last_stderr:
            proof += f": {last_stderr}"
        return RunOutcome("crash", returncode, proof, None, summary)
    return RunOutcome(
        "incomplete", returncode, "the output ended without a runner verdict", None, summary
    )


class ByteSource(Protocol):
    """Where a run's bytes come from. ``bind`` hands it the controller's callbacks, which it
    calls from its own threads: output chunks (with a stream name), its own events, its
    statistics, and once, at the very end, its exit (a return code or None)."""

    stopped_by_user: bool
    time_limit_hit: str | None  # the source's words when it ended the run at a time limit

    def bind(
        self,
        on_output: Callable[[bytes, str], None],
        on_exit: Callable[[int | None], None],
        on_stats: Callable[[ProcessStats], None],
        on_notice: Callable[[list], None],
    ) -> None: ...
    def start(self) -> object: ...
    def stop(self) -> None: ...
    def kill(self) -> None: ...
    def verdict_reached(self) -> None: ...


class ProcessSource:
    """A child process (the FVP) as a byte source: its stdout and stderr."""

    time_limit_hit = None

    def __init__(
        self, argv: Sequence[str], env: dict[str, str] | None = None, pass_fds: Sequence[int] = ()
    ) -> None:
        self.argv = list(argv)
        self._env = env
        self._pass_fds = tuple(pass_fds)
        self._process: StreamingProcess | None = None

    @property
    def stopped_by_user(self) -> bool:
        return bool(self._process and self._process.stopped_by_user)

    def bind(self, on_output, on_exit, on_stats, on_notice) -> None:
        self._process = StreamingProcess(
            self.argv, on_output=on_output, on_exit=on_exit, on_stats=on_stats, env=self._env,
            pass_fds=self._pass_fds,
        )  # fmt: skip

    def start(self) -> ProcessSource:
        assert self._process is not None
        self._process.start()
        return self

    def stop(self) -> None:
        if self._process is not None:
            self._process.stop()

    def kill(self) -> None:
        if self._process is not None:
            self._process.kill()

    def verdict_reached(self) -> None:
        """A simulator ends itself (or hits its --timelimit)."""


class RunListener:
    """What a caller hears during a run; called on the process's threads."""

    def on_events(self, events: list[Event]) -> None: ...
    def on_stats(self, stats: ProcessStats) -> None: ...
    def on_end(self, outcome: RunOutcome) -> None: ...


class RunController:
    """Start ``argv`` (or read ``source``), record and parse everything, report the end."""

    def __init__(
        self,
        argv: Sequence[str] | None = None,
        *,
        sessions: Path,
        kind: str,
        meta: dict,
        listener: RunListener | None = None,
        env: dict[str, str] | None = None,
        npu: str | None = None,
        source: ByteSource | None = None,
        time_limit: float | None = None,
        watchdog_limit: float | None = None,
        grace: float = WATCHDOG_GRACE_S,
    ) -> None:
        """``time_limit``: stop the source after that many seconds (for emulators that,
        unlike the FVP, have no --timelimit of their own). ``watchdog_limit`` (default: the
        ``--timelimit`` in ``argv``) + ``grace``: the source is killed if it is still running
        then, whatever it does with its own limit.

        A run is one of this process's runs (:func:`stop_all_runs`) from here on: a stop
        signal that comes before :meth:`start` is kept, and the run is stopped as it starts
        (its session still ends, ``killed``)."""
        self._started = False
        self._stop_requested = False
        self._stop_reason = "stopped by the user"
        _ACTIVE.add(self)
        if source is None:
            if argv is None:
                raise ValueError("RunController needs argv or a source")
            source = ProcessSource(argv, env)
        self.argv = list(argv or [])
        self.time_limit = time_limit
        self._timer: threading.Timer | None = None
        self._timed_out = False
        self.watchdog_limit = (
            watchdog_limit if watchdog_limit is not None else _argv_time_limit(self.argv)
        )
        self.grace = grace
        self._watchdog_fired = False
        self._record_stopped = False
        self.listener = listener or RunListener()
        self._lock = threading.Lock()
        self._parsers = {
            name: RunnerLogParser(stream=name, npu=npu) for name in ("stdout", "stderr")
        }
        self._summary = LogSummary()
        self._decisive: list[tuple[Event, str]] = []
        self._recent: dict[tuple[str, int], str] = {}
        self._last_stderr: str | None = None
        self._etdumps = 0
        self._outputs: list[OutputTensor] = []
        self.session = SessionWriter(sessions, kind, {"command": self.argv, **meta})
        from etu.runner.runner_facts import runner_facts

        # the runner's CPU and ExecuTorch explain a CPU-cycles figure of 0 (summary.json)
        runner_facts(self.session.meta).apply(self._summary)
        if any(SESSION_FOLDER in arg for arg in self.argv):
            folder = str(self.session.folder.resolve())
            if any(c.isspace() for c in folder):  # an FVP plugin splits extra_args at spaces
                folder = os.path.relpath(folder)
            self.argv = [arg.replace(SESSION_FOLDER, folder) for arg in self.argv]
            self.session.update_meta(command=self.argv)
            if isinstance(source, ProcessSource):
                source.argv = list(self.argv)
        self.outcome: RunOutcome | None = None
        self._done = threading.Event()
        self._peak_rss = 0
        self._told_verdict = False
        self._source = source
        source.bind(self._on_output, self._on_exit, self._on_stats, self._on_notice)

    @property
    def folder(self) -> Path:
        return self.session.folder

    @property
    def pid(self) -> int | None:
        """The child's process id when the source is a process (else None)."""
        process = getattr(self._source, "_process", None)
        return process.pid if process is not None else None

    def start(self) -> RunController:
        self._started = True  # from here, a stop reaches the source
        try:
            self._source.start()
        except OSError as error:
            what = self.argv[0] if self.argv else "source"
            text = f"{what}: could not start: {error.strerror or error}"
            self.outcome = RunOutcome("crash", None, text, None, self._summary.to_json())
            self.session.finish(exit_reason="crash", proof=text, returncode=None)
            _ACTIVE.discard(self)
            self._done.set()
            self.listener.on_end(self.outcome)
            return self
        if self.time_limit is not None:
            self._timer = threading.Timer(self.time_limit, self._time_up)
            self._timer.daemon = True
            self._timer.start()
        if self.watchdog_limit is not None:
            threading.Thread(target=self._watchdog, name="etu-watchdog", daemon=True).start()
        if self._stop_requested:  # a stop signal came while it was being set up
            self.stop_soon(self._stop_reason)
        return self

    def _watchdog(self) -> None:
        assert self.watchdog_limit is not None
        if self._done.wait(self.watchdog_limit + self.grace):
            return
        self._watchdog_fired = True
        self._stop_reason = (
            f"the simulator outlived its time limit ({self.watchdog_limit:g} s) by "
            f"{self.grace:g} s: killed by etu's watchdog"
        )
        self._source.kill()

    def _time_up(self) -> None:
        if not self._done.is_set():
            self._timed_out = True
            self._source.stop()

    def stop(self, reason: str | None = None) -> None:
        """Stop the source (a simulator's process group: SIGTERM, then SIGKILL). Before
        :meth:`start`, the stop is kept: the run is stopped as soon as it starts."""
        self._request_stop(reason)
        if self._started:
            self._source.stop()

    def stop_soon(self, reason: str) -> None:
        """:meth:`stop` from a thread of its own: safe in a signal handler or a reader."""
        self._request_stop(reason)
        if self._started:
            threading.Thread(target=self._source.stop, name="etu-stop", daemon=True).start()

    def _request_stop(self, reason: str | None) -> None:
        if reason:
            self._stop_reason = reason
        self._stop_requested = True

    def kill(self) -> None:
        self._source.kill()

    def wait(self, timeout: float | None = None) -> RunOutcome | None:
        self._done.wait(timeout)
        return self.outcome

    def _on_output(self, chunk: bytes, stream: str) -> None:
        with self._lock:
            self.session.write_output(chunk, stream=stream)  # recorded before anything else
            events = self._parsers[stream].feed(chunk)
            self._take(events, stream)
            decided = not self._told_verdict and self._summary.verdict in (
                "success", "error", "hard_fault"
            )  # fmt: skip
            self._told_verdict |= decided
            failed = self.session.failure is not None and not self._record_stopped
            if failed:
                self._record_stopped = True
                self._stop_reason = f"could not record the session: {self.session.failure}"
        if failed:
            self.stop_soon(self._stop_reason)  # the readers keep draining: no child blocks
        if events:
            self.listener.on_events(events)
        if decided:
            self._source.verdict_reached()

    def _on_notice(self, events: list) -> None:
        """The source's own events (a port lost and back): recorded between the chunks."""
        with self._lock:
            self.session.write_events(events)
        self.listener.on_events(events)

    def _take(self, events: list[Event], stream: str) -> None:
        for event in events:
            if isinstance(event, LogLine):
                self._recent[(stream, event.line_no)] = event.text
                if stream == "stderr" and event.text.strip():
                    self._last_stderr = event.text.strip()
                if len(self._recent) > 512:
                    self._recent.pop(next(iter(self._recent)))
            elif isinstance(event, EtdumpBlock):
                self._save_etdump(event)
            elif isinstance(event, OutputTensor):
                self._outputs.append(event)
            elif isinstance(event, _DECISIVE):
                text = self._recent.get((stream, event.line_no), type(event).__name__)
                self._decisive.append((event, text))
            self._summary.add(event)
        if events:
            bound_summary(self._summary)
            bound_list(self._decisive)
            bound_list(self._outputs, 1 << 16)
        self.session.write_events(events)

    def _save_etdump(self, block: EtdumpBlock) -> None:
        """Decoded base64 files go into the session under names etu chooses: the device
        only says what kind of file it is (``etdump`` or ``debug_buffer``)."""
        kind = "debug_buffer" if "debug" in block.file_name else "etdump"
        self._etdumps += 1
        self.session.write_file(f"{kind}-{self._etdumps:03d}.bin", block.data)

    def _on_stats(self, stats: ProcessStats) -> None:
        self._peak_rss = max(self._peak_rss, stats.rss_bytes)
        self.listener.on_stats(stats)

    def _on_exit(self, returncode: int | None) -> None:
        with self._lock:
            tail: list[Event] = []
            for stream, parser in self._parsers.items():
                events = parser.close()
                self._take(events, stream)
                tail += events
            summary = self._summary.to_json()
            self.outcome = classify(
                summary,
                self._decisive,
                returncode,
                self._source.stopped_by_user and not self._timed_out,
                self._last_stderr,
                self._source.time_limit_hit,
                self.time_limit if self._timed_out else None,
                self._stop_reason,
            )
            if self._record_stopped and self.outcome.reason != "success":
                self.outcome = RunOutcome(
                    "incomplete", returncode, self._stop_reason, None, summary
                )
            elif self._watchdog_fired and self.outcome.reason in ("killed", "crash"):
                self.outcome = RunOutcome(
                    "time_limit", returncode, self._stop_reason, None, summary
                )
            if self._timer is not None:
                self._timer.cancel()
            self.session.write_events([self.outcome])
            self.session.write_summary(run_summary(summary, self._outputs))
            self.session.finish(
                summary=figures(summary),
                exit_reason=self.outcome.reason,
                proof=self.outcome.proof,
                proof_line=self.outcome.proof_line,
                returncode=returncode,
                verdict=summary.get("verdict"),
                peak_rss_bytes=self._peak_rss,
            )
        _ACTIVE.discard(self)
        if tail:
            self.listener.on_events(tail)
        self._done.set()
        self.listener.on_end(self.outcome)


def _argv_time_limit(argv: Sequence[str]) -> float | None:
    """The ``--timelimit N`` an FVP command line carries, if any."""
    for flag, value in itertools.pairwise(argv):
        if flag == "--timelimit":
            try:
                return float(value)
            except ValueError:
                return None
    return None


# ------------------------------------------------------------------ hard stops (signals)


def active_runs() -> list[RunController]:
    return list(_ACTIVE)


def stop_all_runs(reason: str) -> list[RunController]:
    """Stop every run of this process (each simulator's process group; their sessions are
    finished as they end). Returns at once: safe in a signal handler."""
    runs = active_runs()
    for controller in runs:
        controller.stop_soon(reason)
    return runs


def wait_all_runs(timeout: float = 10.0) -> bool:
    """Wait until every started run has ended and recorded its end; False on timeout."""
    deadline = time.monotonic() + timeout
    for controller in active_runs():
        if not controller._started:
            continue
        if controller.wait(max(0.0, deadline - time.monotonic())) is None:
            return False
    return True


STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
INTERRUPTED = "stopped by SIGINT (Ctrl+C)"


def signal_reason(signum: int) -> str:
    """A stop signal as a run's ending proof: ``stopped by SIGTERM``."""
    return INTERRUPTED if signum == signal.SIGINT else f"stopped by {signal.Signals(signum).name}"


class StopSignal(KeyboardInterrupt):
    """SIGTERM or SIGHUP while no run was going (etu was building firmware, flashing a
    board, opening a port): raised in the main thread as SIGINT raises KeyboardInterrupt (it
    is one), so the same clean-up runs on the way out. :func:`stop_reason` names either."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def stop_reason(interrupt: KeyboardInterrupt) -> str:
    """``stopped by SIGTERM`` for a :class:`StopSignal`, Ctrl+C's words for SIGINT."""
    return signal_reason(getattr(interrupt, "signum", signal.SIGINT))


def install_stop_signals(after: Callable[[int], None] | None = None) -> None:
    """SIGTERM and SIGHUP end runs as SIGINT does: every run is stopped (process group
    signalled, session finished with the signal's name as the reason), then ``after(signum)``
    runs (the console uses it to exit). Without ``after``, a signal that finds no run going
    is raised in the main thread as :class:`StopSignal`. Main thread only, as Python
    requires. An ignored SIGTERM or SIGHUP (``nohup``) stays ignored."""

    def handler(signum: int, _frame) -> None:
        runs = stop_all_runs(signal_reason(signum))
        if after is not None:
            after(signum)
        elif not runs:
            raise StopSignal(signum)

    for sig in STOP_SIGNALS:
        if signal.getsignal(sig) != signal.SIG_IGN:
            signal.signal(sig, handler)
