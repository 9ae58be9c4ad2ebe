"""An Ethos-U FVP's PMU trace (``ethosu.extra_args=--pmu-trace FILE``), timed per layer.

The FVP's Ethos-U plugin writes Chrome-trace JSON (gzip-compressed when upstream's
``run.sh --perf_overlay`` asks for ``pmu_trace.gz``): ``{"traceEvents": [...]}`` (a bare
list is Chrome's other form), each event with ``name``, ``ph``, ``ts`` and ``dur`` in NPU
cycles (numbers or digit strings), ``pid``/``tid`` naming the track (``"DMA"``,
``"axi_enabled_cycles"``...). Events on the ``qread`` track carry ``args.qread``: the
command-queue read pointer in 32-bit words (×4: the byte offset Vela's debug database
gives each command in its ``queue`` table). ExecuTorch joins the two in
``examples/arm/visualize.py`` (PRs 14401, 15411, 22675); etu's own rule, written here:

* The reads of one pass through a command stream climb; a pointer that moves back starts
  the next pass (the next delegate or inference).
* Each timed unit (a debug-database ``queue`` row, or each NPU operation when there is no
  database) ends when the pointer first reaches the next unit's command; the last ends at
  the pass's last read. A unit is charged from the previous boundary (the pass's first read
  for the first unit) to its own.

Everything here is pure: bytes in, typed records out; every failure a one-line ParseError.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import math
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from etu.parsers.errors import FormatError, TruncatedError, WrongKindError
from etu.parsers.ethosu_commands import NpuCommandStream
from etu.parsers.vela_debug_db import DebugDb

MAX_TRACE_BYTES = 1 << 30  # decompressed: a trace larger than this is refused, not read
MAX_EVENTS = 20_000_000
QREAD = "qread"
STANDIN_KEY = "etu_standin"  # otherData key the etu stand-in FVP sets: simulated figures


@dataclass(frozen=True, slots=True)
class QueueRead:
    """The NPU's command-queue read pointer at ``ts`` (cycles)."""

    ts: int
    word: int

    @property
    def offset(self) -> int:
        return self.word * 4


@dataclass(slots=True)
class PmuTrace:
    """The reads in trace order, each other track's summed ``dur`` and event count."""

    reads: list[QueueRead] = field(default_factory=list)
    tracks: dict[str, int] = field(default_factory=dict)  # tid → total dur (cycles)
    events: int = 0
    simulated: bool = False  # written by etu's stand-in FVP, not an Arm model
    warnings: list[str] = field(default_factory=list)
    source: str | None = None

    @property
    def span(self) -> int | None:
        """Cycles from the first read to the last."""
        return self.reads[-1].ts - self.reads[0].ts if self.reads else None


def _number(value: Any, what: str, index: int, source: str | None) -> int:
    """An event's number: an int, or a string of one (the FVP writes ``"ts":"1029"``); a
    fractional one (Chrome's ``ts`` may be) is truncated to whole cycles."""
    number: int | None = None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, float) and math.isfinite(value):
        number = int(value)
    elif isinstance(value, str) and len(value) <= 40:
        text = value.strip()
        with contextlib.suppress(ValueError, OverflowError):  # "nan", "inf"
            number = int(text) if text.lstrip("-").isdigit() else int(float(text))
    if number is None:
        shown = repr(value)[:40]
        raise FormatError(f"event {index}: {what} {shown} is not a number", source=source)
    if number < 0:
        raise FormatError(f"event {index}: {what} {number} is negative", source=source)
    return number


def _decompress(data: bytes, source: str | None) -> bytes:
    if data[:2] != b"\x1f\x8b":
        return data
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as handle:
            text = handle.read(MAX_TRACE_BYTES + 1)
    except (OSError, EOFError, zlib.error) as error:
        kind = TruncatedError if isinstance(error, EOFError) else FormatError
        raise kind(f"gzip: {str(error).splitlines()[0] or 'cut short'}", source=source) from None
    if len(text) > MAX_TRACE_BYTES:
        raise FormatError(f"more than {MAX_TRACE_BYTES:,} bytes decompressed", source=source)
    return text


def _salvage(text: str) -> list[Any] | None:
    """The complete events before the cut of a truncated trace (None: none found)."""
    start = text.find('"traceEvents"')
    bracket = text.find("[", start if start >= 0 else 0)
    if bracket < 0 or (start < 0 and text[:bracket].strip()):
        return None
    decoder = json.JSONDecoder()
    events: list[Any] = []
    at = bracket + 1
    while at < len(text) and len(events) < MAX_EVENTS:
        while at < len(text) and text[at] in " \t\r\n,":
            at += 1
        try:
            event, at = decoder.raw_decode(text, at)
        except (ValueError, RecursionError):
            break
        events.append(event)
    return events or None


def parse_pmu_trace(data: bytes, source: str | None = None) -> PmuTrace:
    """Read a PMU trace (plain or gzip JSON). A trace cut short keeps its complete events,
    with a warning; one with no complete event is a TruncatedError."""
    if len(data) > MAX_TRACE_BYTES:
        raise FormatError(f"{len(data):,} bytes: larger than a PMU trace etu reads", source=source)
    raw = _decompress(data, source)
    if not raw.strip():
        raise TruncatedError("empty file, not a PMU trace", source=source)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise WrongKindError(
            f"not a PMU trace (not UTF-8 JSON at byte {error.start})", source=source
        ) from None
    if text.lstrip()[:1] not in ("{", "["):
        raise WrongKindError("not a PMU trace (not JSON)", source=source)
    trace = PmuTrace(source=source)
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        # the input ran out: at the error, or inside a string that never closes
        cut = not text[error.pos :].strip() or error.msg.startswith("Unterminated string")
        salvaged = _salvage(text) if cut else None
        if salvaged is None:
            kind = TruncatedError if cut else FormatError
            what = "JSON ends early" if cut else f"JSON: {error.msg}"
            raise kind(
                f"{what} (line {error.lineno} column {error.colno})", source=source
            ) from None
        trace.warnings.append(f"the trace is cut short: read its {len(salvaged)} complete events")
        document = {"traceEvents": salvaged}
    except RecursionError:
        raise FormatError("JSON nested too deeply", source=source) from None
    if isinstance(document, dict):
        events = document.get("traceEvents")
        other = document.get("otherData")
        trace.simulated = isinstance(other, dict) and other.get(STANDIN_KEY) is True
        if not isinstance(events, list):
            raise WrongKindError(
                "JSON without a traceEvents list: not a Chrome-format PMU trace", source=source
            )
    elif isinstance(document, list):
        events = document
    else:
        raise WrongKindError("JSON that is not a Chrome-format trace", source=source)
    if len(events) > MAX_EVENTS:
        raise FormatError(f"{len(events):,} events: more than etu reads", source=source)
    _read_events(trace, events, source)
    return trace


def _read_events(trace: PmuTrace, events: list[Any], source: str | None) -> None:
    skipped = 0
    for index, event in enumerate(events):
        if not isinstance(event, dict):
            skipped += 1
            continue
        trace.events += 1
        tid = event.get("tid")
        if tid == QREAD:
            args = event.get("args")
            if not isinstance(args, dict) or QREAD not in args:
                raise FormatError(f"event {index}: a qread event without args.qread", source=source)
            ts = _number(event.get("ts"), "ts", index, source)
            word = _number(args[QREAD], "args.qread", index, source)
            trace.reads.append(QueueRead(ts, word))
        elif isinstance(tid, (str, int)) and "dur" in event:
            try:  # another track's figure: a bad one is skipped, the per-layer timing stands
                duration = _number(event["dur"], "dur", index, source)
            except FormatError:
                skipped += 1
                continue
            name = str(tid)[:80]
            trace.tracks[name] = trace.tracks.get(name, 0) + duration
    if skipped:
        trace.warnings.append(f"{skipped} trace entries are not events or lack a number (skipped)")
    if not trace.reads:
        trace.warnings.append("the trace has no qread events: nothing can be timed per layer")


# -- joining the reads to the command stream and Vela's debug database ----------------------


@dataclass(frozen=True, slots=True)
class TimedUnit:
    """What the cycles are charged to: a debug-database queue row (with its scheduled
    operator and the source operator it came from) or, without a database, one NPU
    operation. ``offset``: the byte offset of the command that ends the unit."""

    offset: int
    operations: tuple[int, ...]  # indices of the stream's NPU operations it covers
    label: str  # the operation's summary, or Vela's operator and output name
    source_id: int | None = None
    source_operator: str | None = None
    scheduled_id: int | None = None


@dataclass(slots=True)
class StreamUnits:
    """One delegate's timed units in stream order, and Vela's estimate per source."""

    delegate: int
    units: list[TimedUnit]
    estimates: dict[int, int] = field(default_factory=dict)  # source_id → Vela npu_cycles
    from_debug_db: bool = False
    stream_bytes: int = 0


def _source_names(db: DebugDb) -> dict[Any, str]:
    return {row.get("id"): str(row.get("operator")) for row in db.tables.get("source") or []}


def stream_units(
    delegate: int, stream: NpuCommandStream, db: DebugDb | None = None
) -> tuple[StreamUnits, str | None]:
    """The units of one stream: the debug database's queue rows when ``db`` describes this
    stream, else one per NPU operation. The second value says why a database was not used
    (a queue offset that is not one of this stream's commands: another stream's database)."""
    operations = stream.operations
    end = stream.commands[-1].byte_offset + 4 if stream.commands else 0
    per_operation = StreamUnits(
        delegate,
        [TimedUnit(op.word * 4, (op.index,), op.summary) for op in operations],
        stream_bytes=end,
    )
    if db is None:
        return per_operation, None
    queue = db.tables.get("queue") or []
    if not queue:
        return per_operation, "the debug database has no queue table"
    by_offset = {op.word * 4: op for op in operations}
    offsets = [row.get("offset") for row in queue]
    unknown = [o for o in offsets if not isinstance(o, int) or o not in by_offset]
    if unknown:
        return per_operation, (
            f"debug database queue offset {unknown[0]!r} is not an operation of delegate "
            f"{delegate}'s command stream (the database is another stream's)"
        )
    perf = {row.get("id"): row for row in db.tables.get("perf") or []}
    optimised = {row.get("id"): row for row in db.tables.get("optimised") or []}
    names = _source_names(db)
    sub_ops = {
        row.get("id")
        for row in db.tables.get("group") or []
        if row.get("id") != row.get("group_id")
    }
    units: list[TimedUnit] = []
    in_order = sorted(operations, key=lambda op: op.word)
    taken = 0  # operations up to a row's offset (and after the row before) are its own
    for row in sorted(queue, key=lambda r: r["offset"]):
        offset, scheduled = row["offset"], row.get("scheduled_id")
        first = taken
        while taken < len(in_order) and in_order[taken].word * 4 <= offset:
            taken += 1
        covered = tuple(op.index for op in in_order[first:taken])
        if units and scheduled in sub_ops:  # a chained sub-operation: part of the one before
            last = units[-1]
            units[-1] = TimedUnit(offset, last.operations + covered, last.label, last.source_id,
                                  last.source_operator, last.scheduled_id)  # fmt: skip
            continue
        made = perf.get(scheduled) or {}
        source_id = made.get("source_id")
        if not isinstance(source_id, int) or source_id < 0:
            source_id = (optimised.get(row.get("optimised_id")) or {}).get("source_id")
        operator = made.get("operator") or (optimised.get(row.get("optimised_id")) or {}).get(
            "operator"
        )
        label = " ".join(str(p) for p in (operator, made.get("name")) if p) or "?"
        units.append(
            TimedUnit(offset, covered, label, source_id if isinstance(source_id, int) else None,
                      names.get(source_id), scheduled if isinstance(scheduled, int) else None)
        )  # fmt: skip
    estimates: dict[int, int] = {}
    for row in perf.values():
        source_id, cycles = row.get("source_id"), row.get("npu_cycles")
        if isinstance(source_id, int) and isinstance(cycles, (int, float)):
            estimates[source_id] = estimates.get(source_id, 0) + int(cycles)
    return StreamUnits(delegate, units, estimates, True, end), None


@dataclass(slots=True)
class TraceTiming:
    """Cycles per unit of each stream, summed over the passes that ran it."""

    streams: list[StreamUnits]
    cycles: list[list[int]]  # [stream][unit]
    passes: int = 0
    warnings: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        return sum(sum(row) for row in self.cycles)


def _passes(reads: Sequence[QueueRead]) -> list[list[QueueRead]]:
    passes: list[list[QueueRead]] = []
    for read in reads:
        if not passes or read.offset < passes[-1][-1].offset:
            passes.append([])
        passes[-1].append(read)
    return passes


def time_units(trace: PmuTrace, streams: Sequence[StreamUnits]) -> TraceTiming:
    """Charge the trace's cycles to ``streams``' units; pass *k* runs stream *k mod n*
    (the delegates in the order the method calls them, inference after inference)."""
    result = TraceTiming(list(streams), [[0] * len(s.units) for s in streams])
    if not streams:
        result.warnings.append("the program has no decoded NPU command stream to time")
        return result
    beyond = 0
    for number, reads in enumerate(_passes(trace.reads)):
        stream = streams[number % len(streams)]
        cycles = result.cycles[number % len(streams)]
        units = stream.units
        if not units:
            continue
        result.passes += 1
        start, at = reads[0].ts, 0
        for read in reads:
            if stream.stream_bytes and read.offset > stream.stream_bytes:
                beyond += 1
            while at + 1 < len(units) and read.offset >= units[at + 1].offset:
                cycles[at] += max(read.ts - start, 0)
                start, at = read.ts, at + 1
        last = reads[-1]
        if at + 1 < len(units) or last.offset <= units[at].offset:
            result.warnings.append(
                f"pass {number + 1} ended at byte {last.offset} of delegate {stream.delegate}'s "
                "stream, before its last operation had run"
            )
        cycles[at] += max(last.ts - start, 0)
    if beyond:
        result.warnings.append(
            f"{beyond} read pointer(s) lie past the end of the command stream they were "
            "charged to (another program's trace?)"
        )
    if result.passes and result.passes % len(streams):
        result.warnings.append(
            f"{result.passes} passes for {len(streams)} delegate stream(s): the last "
            "inference is incomplete"
        )
    return result


@dataclass(frozen=True, slots=True)
class NpuLayer:
    """One source operator (or, without a debug database, one NPU operation): measured
    cycles beside Vela's estimate."""

    delegate: int
    name: str
    operator: str | None
    measured_cycles: int
    estimated_cycles: int | None
    operations: tuple[int, ...]
    source_id: int | None = None

    @property
    def ratio(self) -> float | None:
        """Measured over estimated (None without an estimate)."""
        if not self.estimated_cycles:
            return None
        return self.measured_cycles / self.estimated_cycles

    def to_json(self) -> dict:
        ratio = self.ratio
        return {
            "delegate": self.delegate,
            "name": self.name,
            "operator": self.operator,
            "source_id": self.source_id,
            "measured_cycles": self.measured_cycles,
            "estimated_cycles": self.estimated_cycles,
            "ratio": None if ratio is None else round(ratio, 4),
            "operations": list(self.operations),
        }


def npu_layers(timing: TraceTiming, inferences: int = 1) -> list[NpuLayer]:
    """Per source operator (stream order of first appearance), cycles per inference when
    ``inferences`` > 1 (the estimate is for one inference)."""
    per = max(inferences, 1)
    layers: list[NpuLayer] = []
    for stream, cycles in zip(timing.streams, timing.cycles, strict=True):
        if not stream.from_debug_db:
            layers += [
                NpuLayer(stream.delegate, unit.label, None, cycles[i] // per, None, unit.operations)
                for i, unit in enumerate(stream.units)
            ]
            continue
        grouped: dict[Any, list[int]] = {}
        for i, unit in enumerate(stream.units):
            grouped.setdefault(
                unit.source_id if unit.source_id is not None else ("u", i), []
            ).append(i)
        for key, members in grouped.items():
            first = stream.units[members[0]]
            source_id = key if isinstance(key, int) else None
            name = first.label if source_id is None else f"{first.label} (source #{source_id})"
            layers.append(
                NpuLayer(
                    stream.delegate, name, first.source_operator,
                    sum(cycles[i] for i in members) // per,
                    stream.estimates.get(source_id) if source_id is not None else None,
                    tuple(op for i in members for op in stream.units[i].operations), source_id,
                )
            )  # fmt: skip
    return layers
