"""What the Run tab knows about one run, live or read back from its session folder.

Plain data, no Textual: the listener's batches (live) and a session re-read (past) both go
through :meth:`RunRecord.add`, so a reopened run shows exactly what the live one showed.
A live run's log is a bounded ring of parsed lines; once a recorded run outgrows it, the
record reads its session file instead (run_store.FileLogStore), so every line stays
reachable while the console's memory stays flat.
"""

from __future__ import annotations

import bisect
import os
import time
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

from etu.parsers.errors import ParseError
from etu.parsers.runner_events import (
    Event,
    HardFault,
    LogLine,
    MemoryReport,
    MissingKernel,
    NpuInvoke,
    OutputTensor,
    PmuReport,
    RunError,
)
from etu.parsers.runner_log import LogSummary, parse_log_bytes
from etu.parsers.version_skew import driver_line, npu_problem
from etu.runner.history import read_meta
from etu.runner.process import ProcessStats
from etu.runner.run import RunOutcome
from etu.runner.run_store import (  # the kept line's layout: run_store owns it
    END,
    LEVEL,
    NUMBER,
    PARTIAL,
    RAW,
    STREAM,
    TEXT,
    WHEN,
    Entry,
    FileLogStore,
)
from etu.runner.session import RAW as RAW_LOG
from etu.runner.session import list_sessions, read_session
from etu.runner.session_events import events_of_file

RING_LINES = 100_000  # lines kept on screen; the session's raw.log keeps every byte
LEVELS = ("D", "I", "E", "F", "other")
_NAMED_LEVELS = frozenset(LEVELS[:4])

# How a run ended → the banner's colour class.
REASON_CLASS = {
    "success": "-success",
    "runner_error": "-error",
    "hard_fault": "-error",
    "crash": "-error",
    "time_limit": "-warning",
    "killed": "-warning",
    "incomplete": "-warning",
    "no_model": "-warning",
}
_VERDICT_REASON = {
    "success": "success",
    "error": "runner_error",
    "hard_fault": "hard_fault",
    "timeout": "time_limit",
    "incomplete": "incomplete",
    "no_model": "no_model",
}

# One read of a run: its lines as entries, and the other events (reports, outputs, ...).
Chunk = tuple[list[Entry], list[Event]]


def _shown_text(line: LogLine) -> str:
    """The line's text; a run of empty lines (one event, see LogLine.lines) says so."""
    if line.lines > 1:
        return f"({line.lines:,} empty lines, {line.line_no:,}–{line.last_line_no:,})"
    return line.text


def split_events(events: Iterable[Event], when: float) -> Chunk:
    """Lines → entries stamped ``when`` (the host arrival time); the rest as they are.
    Called on the reader thread, so the UI only appends."""
    entries: list[Entry] = []
    others: list[Event] = []
    for event in events:
        if type(event) is LogLine:
            entries.append(
                (when, event.line_no, event.raw, event.end, _shown_text(event), event.level,
                 event.stream, event.partial)
            )  # fmt: skip
        else:
            others.append(event)
    return entries, others


def entry_level(entry: Entry) -> str:
    level = entry[LEVEL]
    return level if level in _NAMED_LEVELS else "other"


class LogStore:
    """The last ``capacity`` lines of a run with their host arrival times.

    Lines are numbered by ``seq`` from 0 in arrival order; ``first`` is the oldest kept.
    """

    file_backed = False  # run_store.FileLogStore: searched and filtered in its file

    def __init__(self, capacity: int = RING_LINES) -> None:
        self.capacity = max(int(capacity), 1)
        self._entries: deque[Entry] = deque(maxlen=self.capacity)
        self.total = 0  # lines ever added
        self.widest = 0  # the longest line's length in characters (for horizontal scroll)

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def first(self) -> int:
        return self.total - len(self._entries)

    def add(self, entries: Sequence[Entry]) -> None:
        self._entries.extend(entries)
        self.total += len(entries)
        widest = max((len(entry[TEXT]) for entry in entries), default=0)
        if widest > self.widest:
            self.widest = widest

    def entry(self, seq: int) -> Entry:
        return self._entries[seq - self.first]

    def line(self, seq: int) -> tuple[float, LogLine]:
        """Line ``seq`` as a LogLine (without the parsed fields) and its arrival time."""
        e = self._entries[seq - self.first]
        return e[WHEN], LogLine(e[NUMBER], e[RAW], e[END], e[TEXT], e[LEVEL],
                                partial=e[PARTIAL], stream=e[STREAM])  # fmt: skip

    def time_before(self, seq: int) -> float | None:
        """The arrival time of the line before ``seq``, if it is still kept."""
        return self._entries[seq - 1 - self.first][WHEN] if seq - 1 >= self.first else None

    def last(self, count: int) -> list[tuple[int, Entry]]:
        """The newest ``count`` kept lines as (seq, entry), oldest first."""
        count = min(count, len(self._entries))
        newest = list(islice(reversed(self._entries), count))
        newest.reverse()
        start = self.total - count
        return list(enumerate(newest, start))

    def iter_from(self, seq: int, backwards: bool = False) -> Iterator[tuple[int, Entry]]:
        """Kept lines from ``seq`` on (or down), as (seq, entry)."""
        first = self.first
        if backwards:
            index = min(seq, self.total - 1) - first
            if index < 0:
                return
            skip = len(self._entries) - 1 - index
            for offset, entry in enumerate(islice(reversed(self._entries), skip, None)):
                yield first + index - offset, entry
            return
        index = max(seq, first) - first
        yield from enumerate(islice(self._entries, index, None), first + index)


@dataclass(slots=True)
class LaunchInfo:
    """What the top of the tab says about a run's simulator and command."""

    command: list[str]
    simulator: str = ""  # the executable, as found
    found_via: str = ""
    simulated: bool = False
    target: str = ""
    emulated: bool = False  # the emulated board (QEMU): a real runner, no NPU, no cycles
    board: str = ""  # a board's profile when the Boards tab flashed it (its port is read)
    label: str = ""  # the session's label (runner.runtime_run: QEMU_LABEL, NPU_LABEL...)
    program_sha256: str = ""  # the program the run ran, when its session found it


NPU_DELEGATES_KEPT = 256  # delegates a record tells apart (a device prints the indices)


class RunRecord:
    """One run as the panes show it: its log ring, reports, outputs, stats and end."""

    def __init__(self, label: str, *, live: bool, capacity: int = RING_LINES) -> None:
        self.label = label  # "current run" or the session folder's name
        self.live = live
        self.store = LogStore(capacity)
        self.pmu: list[PmuReport] = []
        # The emulated board's NPU, per delegate (None: an invoke that named none): the
        # last answered invoke (a failed one stays), and how many invokes there were.
        self.npu: dict[int | None, NpuInvoke] = {}
        self.npu_invokes: dict[int | None, int] = {}
        self.memory: MemoryReport | None = None
        self.outputs: dict[int, OutputTensor] = {}
        self.errors = 0  # E and F lines
        self.stats: ProcessStats | None = None
        self.outcome: RunOutcome | None = None
        self.failure: str | None = None  # could not start: one line
        self.folder: Path | None = None
        self.launch: LaunchInfo | None = None
        self.started: float | None = time.time() if live else None
        self.ended: float | None = None
        self.warnings: list[str] = []
        self.faults: list[HardFault] = []  # hard faults the platform reported
        self.missing: list[str] = []  # operators the runner build has no kernel for
        # what the Ethos-U driver or a kernel said of a program/runner mismatch (issue 25 §5)
        self.skew: list[str] = []
        self.npu_found: str | None = None  # the NPU the driver said it found (a target name)
        self.expected_npu: str | None = None  # the target the program was compiled for
        # The outputs against the host runtime (the `etu compare --json` record), or why not.
        self.comparison: dict | None = None
        self.comparison_note: str | None = None
        # The ETDump's per-operator table ({"rows", "time_note"}), or why there is none.
        self.operators: dict | None = None
        self.operators_note: str | None = None
        # The banner's lines for the last fault: (the ELF they are symbolised against, the
        # lines, or None while they are being decoded).
        self.fault_triage: tuple[Path | None, list[str] | None] | None = None

    @property
    def running(self) -> bool:
        return self.live and self.outcome is None and self.failure is None

    def begin(
        self, folder: Path | None, launch: LaunchInfo | None, meta: dict, argv: Sequence[str]
    ) -> None:
        """The run's session exists: its folder, the launch as it ran (the program its
        session found, the command with ``<session>`` filled in) and its start time."""
        self.folder, self.launch = folder, launch
        ran = meta.get("program_sha256")
        if launch is not None:
            launch.program_sha256 = ran if isinstance(ran, str) else launch.program_sha256
            launch.command = list(argv) or launch.command
        # Relative times count from the session's start, which precedes every line it
        # stamps (a board's port may have bytes before the UI hears the run started).
        started = meta.get("started")
        self.started = started if isinstance(started, float) else time.time()

    def end(self, outcome: RunOutcome) -> None:
        self.outcome, self.ended = outcome, time.time()

    def take(self, chunks: Iterable[Chunk]) -> set[str]:
        """Add the listener's batches; returns which parts changed (log, pmu, ...)."""
        entries: list[Entry] = []
        others: list[Event] = []
        for chunk_entries, chunk_others in chunks:
            entries += chunk_entries
            others += chunk_others
        return self.add(entries, others)

    def add(self, entries: Sequence[Entry], others: Iterable[Event]) -> set[str]:
        changed: set[str] = set()
        if entries:
            store = self.store
            if store.file_backed:
                store.grow()
            elif self._outgrows(store, len(entries)):
                self.store = self._session_store()
                changed.add("store")
            else:
                store.add(entries)
            self.errors += sum(1 for entry in entries if entry[LEVEL] in ("E", "F"))
            changed.add("log")
            if self.npu_found is None:
                for entry in entries:  # the driver's "Ethos-U config." line, at each NPU call
                    if "Ethos-U config." in entry[TEXT]:
                        says = driver_line(entry[TEXT])
                        if says is not None and says.kind == "npu_config":
                            self.npu_found = says.target
                            problem = npu_problem(says, self.expected_npu)
                            if problem and problem not in self.skew:
                                self.skew.append(problem)
                                changed.add("skew")
                            break
        for event in others:
            kind = type(event)
            if kind is PmuReport:
                self.pmu.append(event)
                changed.add("pmu")
            elif kind is MemoryReport:
                self.memory = event
                changed.add("memory")
            elif kind is NpuInvoke:
                key = event.delegate
                if key in self.npu or len(self.npu) < NPU_DELEGATES_KEPT:
                    shown = self.npu.get(key)
                    if shown is None or shown.ok:
                        self.npu[key] = event
                    self.npu_invokes[key] = self.npu_invokes.get(key, 0) + 1
                    changed.add("npu")
            elif kind is OutputTensor:
                self.outputs[event.index] = event
                changed.add("outputs")
            elif kind is HardFault:
                self.faults.append(event)
                changed.add("triage")
            elif kind is MissingKernel:
                self.missing.append(event.operator)
                changed.add("triage")
            elif kind is RunError and self._note_skew(event):
                changed.add("skew")
        return changed

    def _note_skew(self, error: RunError) -> bool:
        """A driver's mismatch line or a kernel's argument count, in words
        (parsers.version_skew.driver_line); True when it is new."""
        says = driver_line(error.text)
        if says is None or says.kind != "mismatch" or says.text in self.skew:
            return False
        self.skew.append(says.text)
        return True

    def _outgrows(self, store: LogStore, adding: int) -> bool:
        """A recorded live run whose ring would drop lines: read its session file now."""
        if not self.live or self.folder is None or store.total + adding <= store.capacity:
            return False
        return (self.folder / RAW_LOG).is_file()

    def _session_store(self):
        """The run's own session file as its log (the bytes are recorded before they are
        parsed, so the file already holds every line the ring was given)."""
        assert self.folder is not None
        return FileLogStore(self.folder, self.started)


# --------------------------------------------------------------------- past sessions


def _outcome_from(meta: dict, events: list[Event]) -> RunOutcome:
    reason = meta.get("exit_reason")
    if reason in REASON_CLASS:
        return RunOutcome(
            reason, meta.get("returncode"), str(meta.get("proof") or reason),
            meta.get("proof_line"),
        )  # fmt: skip
    verdict = LogSummary.from_events(events).verdict
    return RunOutcome(
        _VERDICT_REASON.get(verdict, "incomplete"),
        meta.get("returncode"),
        "no end recorded (the console or the run was killed); verdict from the log",
        None,
    )


def read_past_run(folder: Path, capacity: int = RING_LINES, *, events: bool = True) -> RunRecord:
    """A recorded session re-read into a record. Blocking; never raises: an unreadable
    session becomes a record with a failure line. The log stays on disk: the record's
    store maps ``raw.log`` (run_store.FileLogStore), so a session of any length is
    scrollable and searchable whole while the console holds only the lines on screen.
    ``events=False`` skips parsing a file-backed log (the console shows the lines first and
    adds the reports from :func:`events_of_file` after)."""
    record = RunRecord(folder.name, live=False, capacity=capacity)
    record.folder = folder
    try:
        return _read_past(record, folder, events)
    except ParseError as error:  # a session file that cannot be read (a FIFO, a device...)
        record.failure = str(error).replace(str(folder), folder.name)
        return record
    except OSError as error:
        record.failure = f"{folder.name}: {error.strerror or error}"
        return record


def _read_past(record: RunRecord, folder: Path, events: bool) -> RunRecord:
    session = read_session(folder, with_log=False)
    meta = session.meta
    target = str(meta.get("target") or "")
    npu = target.rpartition("-")[0] or None
    started = meta.get("started")
    record.started = float(started) if isinstance(started, int | float) else None
    if os.path.lexists(folder / RAW_LOG):  # its reader refuses a FIFO, a device, a link
        record.store = FileLogStore(folder, record.started)
        others, errors = events_of_file(folder / RAW_LOG, npu) if events else ([], 0)
        record.errors += errors
        record.outcome = _outcome_from(meta, others)
        record.add([], others)
        _finish_past(record, folder, meta, target, session.warnings)
        return record
    return _read_past_in_memory(record, folder, meta, target, npu)


def _read_past_in_memory(
    record: RunRecord, folder: Path, meta: dict, target: str, npu: str | None
) -> RunRecord:
    """A session without a raw.log (its events only): read the old way, into the ring."""
    session = read_session(folder)
    events = parse_log_bytes(session.raw, npu=npu)
    starts = [offset for offset, _ in session.line_times]
    stamps = [when for _, when in session.line_times]
    started = meta.get("started")
    record.started = float(started) if isinstance(started, int | float) else None
    fallback = record.started or 0.0
    entries: list[Entry] = []
    others: list[Event] = []
    offset = 0
    for event in events:
        if type(event) is LogLine:
            at = bisect.bisect_right(starts, offset) - 1
            entries.append(
                (stamps[at] if at >= 0 else fallback, event.line_no, event.raw, event.end,
                 _shown_text(event), event.level, event.stream, event.partial)
            )  # fmt: skip
            offset += len(event.raw) + len(event.end)
        else:
            others.append(event)
    record.outcome = _outcome_from(meta, events)
    del events  # the LogLine objects: only their entries are kept
    record.add(entries, others)
    _finish_past(record, folder, meta, target, session.warnings)
    return record


def _finish_past(
    record: RunRecord, folder: Path, meta: dict, target: str, warnings: list[str]
) -> None:
    ended = meta.get("ended")
    record.ended = float(ended) if isinstance(ended, int | float) else None
    command = meta.get("command")
    record.launch = LaunchInfo(
        [str(a) for a in command] if isinstance(command, list) else [],
        simulator=str(meta.get("simulator") or ""),
        found_via=str(meta.get("simulator_found_via") or ""),
        simulated=bool(meta.get("simulated")),
        target=target,
        emulated=bool(meta.get("emulated")),
        board=str(meta.get("board") or ""),
        label=str(meta.get("label") or ""),
        program_sha256=str(meta.get("program_sha256") or ""),
    )
    record.warnings = [w.replace(str(folder), folder.name) for w in warnings]


@dataclass(frozen=True, slots=True)
class PastRun:
    """One entry of the past-runs list."""

    folder: Path
    reason: str | None  # how it ended, from meta.json; None when no end is recorded
    target: str


def list_past_runs(root: Path, limit: int = 50) -> list[PastRun]:
    """The newest recorded sessions under ``root`` with how each ended. Blocking."""
    runs = []
    for folder in list_sessions(root)[:limit]:
        meta = read_meta(folder)  # {} when it cannot be read; its fields type-checked
        reason = meta.get("exit_reason")
        target = meta.get("target") or ""
        runs.append(PastRun(folder, reason if isinstance(reason, str) else None, str(target)))
    return runs
