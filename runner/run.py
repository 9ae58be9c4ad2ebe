"""One run of the runner firmware: process → parser → session, and how it ended.

FVP output (and, later, a board's UART) goes through the same incremental parser; every
chunk is recorded before it is parsed, events are recorded as they are emitted, and the
listener sees both. The end is classified from what the runner printed, with the line that
proves it: a simulator's own exit status is not trusted on its own (run_fvp.sh's
"No problems found!" for an FVP that never started is the cautionary tale).
"""

from __future__ import annotations

import itertools
import signal
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from parsers.runner_events import (
    AssertFailed,
    EtdumpBlock,
    Event,
    FvpStopped,
    HardFault,
    LogLine,
    MissingKernel,
    RunError,
    RunSucceeded,
)
from parsers.runner_log import LogSummary, RunnerLogParser
from runner.process import ProcessStats, StreamingProcess
from runner.session import SessionWriter

# How a run ended → the exit status of `etu run`.
EXIT_STATUS = {
    "success": 0,
    "runner_error": 1,
    "hard_fault": 3,
    "time_limit": 4,
    "crash": 5,
    "killed": 6,
    "incomplete": 7,
}
_VERDICT_REASON = {
    "success": "success",
    "error": "runner_error",
    "hard_fault": "hard_fault",
    "timeout": "time_limit",
}
_DECISIVE = (RunSucceeded, RunError, AssertFailed, MissingKernel, HardFault, FvpStopped)
WATCHDOG_GRACE_S = 30.0  # a simulator this long past its own --timelimit is killed by etu
_ACTIVE: weakref.WeakSet[RunController] = weakref.WeakSet()


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
    stop_reason: str = "stopped by the user",
) -> RunOutcome:
    """The run's end from the runner's own words first, the process second.

    The proof of an error is the first error (the cause; later asserts are consequences);
    of a time limit, the simulator's stop reason; of success, the runner's last word."""
    verdict = summary.get("verdict", "incomplete")
    reason = _VERDICT_REASON.get(verdict)
    if stopped and reason not in ("success", "runner_error", "hard_fault"):
        return RunOutcome("killed", returncode, stop_reason, None, summary)
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


class RunListener:
    """What a caller hears during a run; called on the process's threads."""

    def on_events(self, events: list[Event]) -> None: ...
    def on_stats(self, stats: ProcessStats) -> None: ...
    def on_end(self, outcome: RunOutcome) -> None: ...


class RunController:
    """Start ``argv``, record and parse everything it prints, report how it ended."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        sessions: Path,
        kind: str,
        meta: dict,
        listener: RunListener | None = None,
        env: dict[str, str] | None = None,
        npu: str | None = None,
        time_limit: float | None = None,
        grace: float = WATCHDOG_GRACE_S,
    ) -> None:
        self.argv = list(argv)
        # the watchdog: the simulator's own limit (its --timelimit when not given) + grace
        self.time_limit = time_limit if time_limit is not None else _argv_time_limit(self.argv)
        self.grace = grace
        self._watchdog_fired = False
        self._stop_reason = "stopped by the user"
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
        self.session = SessionWriter(sessions, kind, {"command": self.argv, **meta})
        self.outcome: RunOutcome | None = None
        self._done = threading.Event()
        self._peak_rss = 0
        self._process = StreamingProcess(
            self.argv,
            on_output=self._on_output,
            on_exit=self._on_exit,
            on_stats=self._on_stats,
            env=env,
        )

    @property
    def folder(self) -> Path:
        return self.session.folder

    def start(self) -> RunController:
        try:
            self._process.start()
        except OSError as error:
            text = f"{self.argv[0]}: could not start: {error.strerror or error}"
            self.outcome = RunOutcome("crash", None, text, None, self._summary.to_json())
            self.session.finish(exit_reason="crash", proof=text, returncode=None)
            self._done.set()
            self.listener.on_end(self.outcome)
            return self
        _ACTIVE.add(self)
        if self.time_limit is not None:
            threading.Thread(target=self._watchdog, name="etu-watchdog", daemon=True).start()
        return self

    def stop(self, reason: str | None = None) -> None:
        """Stop the simulator's process group (SIGTERM, then SIGKILL); blocks up to 3 s."""
        if reason:
            self._stop_reason = reason
        self._process.stop()

    def stop_soon(self, reason: str) -> None:
        """:meth:`stop` from a thread of its own: safe in a signal handler or a reader."""
        threading.Thread(target=self.stop, args=(reason,), name="etu-stop", daemon=True).start()

    def kill(self) -> None:
        self._process.kill()

    def _watchdog(self) -> None:
        assert self.time_limit is not None
        if self._done.wait(self.time_limit + self.grace):
            return
        self._watchdog_fired = True
        self._stop_reason = (
            f"the simulator outlived its time limit ({self.time_limit:g} s) by "
            f"{self.grace:g} s: killed by etu's watchdog"
        )
        self._process.kill()

    def wait(self, timeout: float | None = None) -> RunOutcome | None:
        self._done.wait(timeout)
        return self.outcome

    def _on_output(self, chunk: bytes, stream: str) -> None:
        with self._lock:
            self.session.write_output(chunk, stream=stream)  # recorded before anything else
            events = self._parsers[stream].feed(chunk)
            self._take(events, stream)
            failed = self.session.failure is not None and not self._record_stopped
            if failed:
                self._record_stopped = True
                self._stop_reason = f"could not record the session: {self.session.failure}"
        if failed:
            self.stop_soon(self._stop_reason)  # the readers keep draining: no child blocks
        if events:
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
            elif isinstance(event, _DECISIVE):
                text = self._recent.get((stream, event.line_no), type(event).__name__)
                self._decisive.append((event, text))
            self._summary.add(event)
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

    def _on_exit(self, returncode: int) -> None:
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
                self._process.stopped_by_user,
                self._last_stderr,
                self._stop_reason,
            )
            if self._record_stopped and self.outcome.reason != "success":
                self.outcome = RunOutcome(
                    "incomplete", returncode, self._stop_reason, None, summary
                )
            elif self._watchdog_fired and self.outcome.reason == "killed":
                self.outcome = RunOutcome(
                    "time_limit", returncode, self._stop_reason, None, summary
                )
            self.session.write_events([self.outcome])
            self.session.finish(
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
    """Wait until every run has ended and recorded its end; False on timeout."""
    deadline = time.monotonic() + timeout
    for controller in active_runs():
        if controller.wait(max(0.0, deadline - time.monotonic())) is None:
            return False
    return True


STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


def install_stop_signals(after: Callable[[int], None] | None = None) -> None:
    """SIGTERM and SIGHUP end runs as SIGINT does: every run is stopped (process group
    signalled, session finished with the signal's name as the reason), then ``after(signum)``
    runs (the console uses it to exit). Main thread only, as Python requires."""

    def handler(signum: int, _frame) -> None:
        stop_all_runs(f"stopped by {signal.Signals(signum).name}")
        if after is not None:
            after(signum)

    for sig in STOP_SIGNALS:
        signal.signal(sig, handler)
