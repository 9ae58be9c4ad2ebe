"""Incremental parser for the console output of ExecuTorch's bare-metal ``arm_executor_runner``.

The bytes come from a UART: an FVP's stdout or a board's serial port, in chunks cut anywhere.
:class:`RunnerLogParser` turns them into :mod:`etu.parsers.runner_events`: a ``LogLine`` for every
physical line (the exact bytes, never one dropped), then what the line means when it is
recognised: program and method loading, planned buffers, the PMU report, the memory summary,
output tensors, BundleIO results, ETDump blocks, errors with their ``error.h`` names, faults
and FVP start/stop lines. Formats of ExecuTorch 0.1 to 1.5 are read (with or without the
function name, ``%zu`` printed literally as ``zu``); lines it does not know stay plain.
Messages are recognised by what they say whatever is in front: ExecuTorch's prefix after a
timestamp or trace tag, a platform's own prefix (Zephyr's ``[time] <inf> module:``), or no
prefix at all (a plain printf PAL: then a message is an error only when it says so).

Design notes:
* Lines end at LF, CRLF or a lone CR. A CR at the very end of a chunk is held until the next
  byte says whether an LF follows, so chunking never changes the result.
* A line longer than ``max_line`` bytes is emitted in pieces flagged ``partial`` (cut on a
  UTF-8 boundary), so a device that never sends a newline holds at most ``max_line`` bytes.
  Pieces are not parsed, except the base64 inside an ETDump block (capped separately).
* Reports spread over several lines (planned buffers, PMU, memory, output dumps, a fault's
  register lines) are emitted when the first line that does not belong to them arrives, or
  at :meth:`RunnerLogParser.close`. Every event carries the line where it starts.
* Speed (≥300k lines/s is the goal; ``benchmarks/bench_runner_log.py``): the ExecuTorch
  prefix is parsed once per call site (a cache keyed on the text up to the first ``]``),
  then one dict lookup on the message's first word picks the handler, which runs one small
  regex at most; other lines go through first-character checks. No per-line regex cascade.
* ETDump base64 is decoded, never run.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass, field
from typing import Any

from etu.parsers.log_summary import VERDICTS, LogSummary, summarize
from etu.parsers.runner_events import (
    AssertFailed,
    BundleIOResult,
    EtdumpBlock,
    EtdumpError,
    Event,
    FvpBanner,
    FvpStopped,
    HardFault,
    InferenceFinished,
    InferenceStarted,
    InputsPrepared,
    LogLine,
    MemoryReport,
    MethodAllocatorSetUp,
    MethodLoaded,
    MethodSelected,
    MissingKernel,
    OutputTensor,
    PlannedBuffers,
    PmuReport,
    PoolUsage,
    ProgramLoaded,
    PteLoaded,
    RunError,
    RunSucceeded,
    new_log_line,
)
from etu.parsers.status_codes import status_name

__all__ = [
    "MAX_LINE",
    "VERDICTS",
    "LogSummary",
    "RunnerLogParser",
    "line_level",
    "line_text",
    "parse_log_bytes",
    "summarize",
]

MAX_LINE = 64 * 1024
MAX_ETDUMP_TEXT = 64 * 1024 * 1024
MAX_OUTPUT_VALUES = 1 << 20

# Ethos-U PMU event lists the runner configures (arm_perf_monitor.cpp), for a report whose
# "Ethos-U PMU Events:[...]" line is missing (cut transcript, older runner).
U55_EVENTS = (
    "ETHOSU_PMU_AXI0_RD_DATA_BEAT_RECEIVED",
    "ETHOSU_PMU_AXI1_RD_DATA_BEAT_RECEIVED",
    "ETHOSU_PMU_AXI0_WR_DATA_BEAT_WRITTEN",
    "ETHOSU_PMU_NPU_IDLE",
)
U85_EVENTS_5 = (
    "ETHOSU_PMU_SRAM_RD_DATA_BEAT_RECEIVED",
    "ETHOSU_PMU_SRAM_WR_DATA_BEAT_WRITTEN",
    "ETHOSU_PMU_EXT_RD_DATA_BEAT_RECEIVED",
    "ETHOSU_PMU_EXT_WR_DATA_BEAT_WRITTEN",
    "ETHOSU_PMU_NPU_IDLE",
)
U85_EVENTS_7 = (*U85_EVENTS_5, "ETHOSU_PMU_MAC_ACTIVE", "ETHOSU_PMU_WD_ACTIVE")

_SPLIT = re.compile(rb"(\r\n|\r|\n)")
# A line's terminator and the empty lines right after it (their terminators, maybe none).
_SPLIT_RUNS = re.compile(rb"(\r\n|\r|\n)([\r\n]*)")
# Runs of this many empty lines or more become one LogLine (``lines``): a CR/LF flood costs
# one event, not one per byte; shorter runs stay a line each, as logs usually have them.
BLANK_RUN = 16
_BLANK_FLOODS = (b"\n" * BLANK_RUN, b"\r" * BLANK_RUN, b"\r\n" * BLANK_RUN)
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
# All runtime prefixes: "I [executorch:f.cpp:12 fn()] m" (≥0.7), "I [executorch:f.cpp:12] m"
# (0.4-0.6), "I executorch:f.cpp:12] m" (≤0.3), "I [executorch:main.cpp] m" (Zephyr sample),
# "I 00:00:00.000000 executorch:f.cpp:zu] m" (POSIX PAL, newlib-nano).
# Groups: level, file, line (digits; None for "zu"), function, message. The parts before the
# closing "]" cannot contain "]", so the text up to the first "]" decides the match (which
# the parser's prefix cache relies on).
_RUNTIME = re.compile(
    r"([DIEF?]) (?:\d+:\d\d:\d\d\.\d+ )?\[?executorch:([^:\]\s]*)(?::(?:(\d+)|\w+))?"
    r"(?: ([^\](]*)\(\))?\] ?(.*)\Z",
    re.S,
)
_PREFIX_CACHE_SIZE = 4096
# Bounds on what one report may collect, so a looping device cannot grow the parser.
_MAX_COUNTERS = 64
_MAX_PLANNED = 4096
_MAX_REGISTERS = 64
_PREFIX_MAX = 160
_FALLBACK_FIRST = frozenset("e0123456789o[")
# First characters of the non-runtime lines _classify_other knows (see there).
_OTHER_FIRST = frozenset(" ItHAE#FRa>*[WD")
_INT = re.compile(r"\s*(-?\d+)")
_STATUS = re.compile(r"(?:^|[\s:(])0x([0-9A-Fa-f]{1,4})\)?\.?\s*\Z")
_OUTPUT = re.compile(r"Output\[(\d{1,9})\]\[(\d{1,15})\]: (?:\((\w+)\) *)?(\S*)")
_OUTPUT_NOT_TENSOR = re.compile(r"Output\[(\d{1,9})\]: Not Tensor")
_ZEPHYR_OUTPUT = re.compile(
    r"output\[(\d{1,9})\]: (\w+)(?: scalar_type=(\w+))?(?: numel=(\d{1,15}))?"
)
_ZEPHYR_VALUE = re.compile(r"\[(\d{1,15})\] = (\S+)")
_ADDRESS = re.compile(r"(?:@|in|at) (?:0x)?([0-9A-Fa-f]+)")
_SIZE = re.compile(r"Size: (\w+)")
_IDENT = re.compile(r"\[----(.{4})\]")
_PLANNED = re.compile(r"planned buffer (?:with mem_id=)?(\w+), size (\w+)")
# Searched patterns start only where a word starts ((?<!\w)): a match inside a run of word
# characters would end where one from the run's start ends, so it is never the leftmost, and
# trying it from every position of a long run is quadratic (issue 20).
_POOL = re.compile(r"(?<!\w)(\w++) / (\w+)\s+free: (\w+) \( used: (\w+) %")
_KERNEL = re.compile(r"kernel '([^']*)' not found")
_MISSING_OP = re.compile(r"Missing operator: \[(\w+)\] ?(\S+)?")
# A register is named from the first ASCII letter of a run of word characters: the match
# starts at the run (its leading digits, "_" or other letters skipped), never inside it.
_REGISTER = re.compile(
    r"(?<!\w)[^\WA-Za-z]*+([A-Za-z]\w*+(?:/\w++)?+)[=:]\s*+(-?0x[0-9A-Fa-f]+|-?\d+)\b"
)
_ECHO = re.compile(r'echo "([^"]*)" *\| *base64 +-d *>\s*(\S+)')
_HEREDOC_END = re.compile(r'" *>\s*(\S+)')
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]")
_FLOAT = re.compile(r"\s*(-?[0-9.]+(?:[eE][-+]?\d+)?|-?nan|-?inf)")
# A platform's or a trace tool's prefix before the message (or before ExecuTorch's own
# prefix): Zephyr's "[00:00:00.123,000] <inf> module: ", timestamps, "[TAG 12] ", "<6>".
_FOREIGN = re.compile(
    r"(?:(?:\[[^\]]{0,48}\]|\(\d[\d:.,]*\)|\d+(?:[:.,]\d+)+)[ \t]*)*"
    r"(?:<(?P<lvl>[a-z]{3}|\d{1,3})>[ \t]*(?:[\w.-]{1,32}: ?)?)?"
)
_FOREIGN_FIRST = frozenset("[<(0123456789")
_FOREIGN_LEVELS = {"inf": "I", "err": "E", "wrn": "W", "dbg": "D", "crt": "F"}
_ET_MARK = "executorch:"
_SIM_TIME = re.compile(r"\[(\d+(?:\.\d+)? ?[munp]?s)\]")


def _int(text: str | None) -> int | None:
    """The leading decimal of ``text``; None for ``zu``/``?`` (unsupported printf)."""
    if not text:
        return None
    if len(text) < 20 and text.isascii() and text.isdigit():  # the usual case: a bare count
        return int(text)
    m = _INT.match(text)
    if m is None:
        return None
    try:
        return int(m.group(1))
    except ValueError:  # more digits than int() converts (4300): not a real count
        return None


def _float(text: str | None) -> float | None:
    if not text:
        return None
    m = _FLOAT.match(text)
    if not m:
        return None
    try:
        return float(m.group(1))
    except ValueError:
        return None


def _after(text: str, sep: str) -> str:
    i = text.find(sep)
    return text[i + len(sep) :] if i >= 0 else ""


def _status_of(message: str) -> int | None:
    m = _STATUS.search(message)
    return int(m.group(1), 16) if m else None


_ASSERT_HEAD = "In function "
_ASSERT_MARK = "(), assert failed"


def _assert_parts(body: str) -> tuple[str, str | None, str | None, str | None] | None:
    """(function, condition, message, bare) of ``In function F(), assert failed (C): M`` or
    ``In function F(), assert failed: M``, split where the lazy regex this replaces split it
    (the first "assert failed" that either form follows), in one pass: that regex rescanned the
    rest of the line for ``): `` at every "assert failed" (quadratic; issue 20)."""
    if not body.startswith(_ASSERT_HEAD):
        return None
    start = len(_ASSERT_HEAD)
    last_close = body.rfind("): ")
    at = body.find(_ASSERT_MARK, start)
    while at != -1:
        after = at + len(_ASSERT_MARK)
        if body.startswith(" (", after) and last_close >= after + 2:
            close = body.find("): ", after + 2)
            return body[start:at], body[after + 2 : close], body[close + 3 :], None
        if body.startswith(": ", after):
            return body[start:at], None, None, body[after + 2 :]
        at = body.find(_ASSERT_MARK, at + 1)
    return None


def _utf8_cut(data: bytes | bytearray, limit: int) -> int:
    """A cut position ≤ limit that does not split a UTF-8 sequence (data is longer)."""
    cut = limit
    while cut > limit - 3 and cut > 0 and (data[cut] & 0xC0) == 0x80:
        cut -= 1
    return cut if cut > 0 and (data[cut] & 0xC0) != 0x80 else limit


def _safe_file_name(name: str, index: int) -> str:
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    base = _SAFE_NAME.sub("_", base).lstrip(".") or "etdump.bin"
    if index:
        stem, dot, ext = base.rpartition(".")
        base = f"{stem}-{index}.{ext}" if dot and stem else f"{base}-{index}"
    return base


def _decode_base64(text: str) -> bytes:
    compact = "".join(text.split())
    if len(compact) % 4 == 1:
        raise ValueError(f"{len(compact)} base64 characters cannot be a whole encoding")
    try:
        return base64.b64decode(compact + "=" * (-len(compact) % 4), validate=True)
    except binascii.Error as error:
        raise ValueError(f"corrupt base64: {error}") from None


def _output_value(dtype: str | None, token: str) -> int | float | bool | None:
    try:
        if dtype is None:
            return int(token) if token.lstrip("-").isdigit() else float(token)
        if dtype in ("int", "char", "Int", "Char", "Long", "Short", "Byte"):
            return int(token)
        if dtype in ("bool", "Bool"):
            return token.startswith(("true", "1"))
        return float(token)
    except ValueError:
        return None


def _npu_generation(npu: str | None) -> str | None:
    if not npu:
        return None
    low = npu.lower()
    if "85" in low:
        return "u85"
    if "55" in low or "65" in low:
        return "u55"
    return None


# --------------------------------------------------------------------------- groups


@dataclass(slots=True)
class _Group:
    """A report spread over several lines, emitted when its last line has been seen."""

    kind: str
    line_no: int
    data: dict[str, Any] = field(default_factory=dict)
    items: list[Any] = field(default_factory=list)


@dataclass(slots=True)
class _EtdumpState:
    line_no: int
    closer: str  # "#[END]" or "#---"
    index: int  # 0 for the log's first block
    heredoc_line: int | None = None
    heredoc: list[str] = field(default_factory=list)
    heredoc_size: int = 0


# --------------------------------------------------------------------------- the parser


class RunnerLogParser:
    """Incremental: ``feed(chunk)`` as bytes arrive, ``close()`` at the end of the stream.

    ``stream`` is copied onto every LogLine (which pipe or port the bytes came from); ``npu``
    (``"ethos-u55-128"``, ``"U85"``…) names PMU counters when the log omits the event list.
    Never raises on input bytes; never blocks; holds at most ``max_line`` bytes of an
    unfinished line (plus a capped ETDump block being decoded).
    """

    def __init__(
        self,
        *,
        stream: str | None = None,
        npu: str | None = None,
        max_line: int = MAX_LINE,
        max_etdump_text: int = MAX_ETDUMP_TEXT,
        max_output_values: int = MAX_OUTPUT_VALUES,
    ) -> None:
        if max_line < 8:
            raise ValueError("max_line must be at least 8 bytes")
        self._stream = stream
        self._npu = _npu_generation(npu)
        self._max = max_line
        self._max_etdump = max_etdump_text
        self._max_values = max_output_values
        self._buf = bytearray()
        self._next = 1  # number of the line being assembled
        self._long = False  # the line being assembled was already cut into pieces
        self._closed = False
        # Parse state.
        self._group: _Group | None = None
        self._prefix_cache: dict[str, Any] = {}
        self._pte_address: int | None = None
        self._pte_identifier: str | None = None
        self._method: str | None = None
        self._load_status: int | None = None
        self._load_failed = False
        self._bundle: dict[str, float | None] = {}
        self._etdump: _EtdumpState | None = None
        self._etdump_blocks = 0
        self._piece_text: bytearray | None = None  # long ETDump line being collected
        self._piece_overflow = False
        self._runtime_handlers = {
            "PTE": self._h_pte,
            "Model": self._h_model,
            "Running": self._h_running,
            "Setup": self._h_setup,
            "Setting": self._h_planned,
            "Method": self._h_method,
            "Loading": self._h_loading,
            "Input": self._h_input,
            "Starting": self._h_starting,
            "Program": self._h_program,
            "SUCCESS:": self._h_program,
            "In": self._h_assert,
            "kernel": self._h_kernel,
            "Missing": self._h_kernel,
            "There": self._h_there,
            "TEST:": self._h_bundle_result,
            "===": self._h_bundle_stats,
            "mean_absolute_error:": self._h_bundle_stats,
            "max_absolute_error:": self._h_bundle_stats,
            "mean_relative_error:": self._h_bundle_stats,
            "max_relative_error:": self._h_bundle_stats,
            "NPU": self._h_pmu,
            "Profiler": self._h_pmu,
            "ethos-u": self._h_pmu,
            "Operator(s)": self._h_pmu,
            "Inference": self._h_pmu,
            "NOTE:": self._h_pmu,
            "cpu_wait_for_npu_cntr": self._h_pmu,
            "Ethos-U": self._h_pmu,
            "ethosu_pmu_cycle_cntr": self._h_pmu,
        }
        for key in _MEMORY_KEYS:
            self._runtime_handlers[key] = self._h_memory

    # ----------------------------------------------------------------- byte level

    @property
    def line_no(self) -> int:
        """Number of complete lines read so far."""
        return self._next - 1

    @property
    def pending_text(self) -> str:
        """The unfinished last line as text (for a console's live prompt); not an event."""
        return bytes(self._buf).rstrip(b"\r").decode("utf-8", "replace")

    def feed(self, chunk: bytes | bytearray | memoryview) -> list[Event]:
        """Parse the next bytes; returns the events they completed (maybe none)."""
        if self._closed:
            raise ValueError("feed() after close()")
        out: list[Event] = []
        if not chunk:
            return out
        buf = self._buf
        if buf:
            if b"\n" not in chunk and b"\r" not in chunk and buf[-1] != 13:
                buf += chunk
                if len(buf) > self._max:
                    self._cut_pieces(out)
                return out
            data = bytes(buf) + bytes(chunk)
            buf.clear()
        else:
            data = bytes(chunk)
        self._split(data, out)
        return out

    def close(self) -> list[Event]:
        """End of stream: the unterminated last line, then every report still open."""
        out: list[Event] = []
        if self._closed:
            return out
        self._closed = True
        if self._buf:
            data = bytes(self._buf)
            self._buf.clear()
            if data.endswith(b"\r"):
                self._line(data[:-1], b"\r", out)
            else:
                self._line(data, b"", out)
        if self._group is not None:
            self._settle(None, out)
        if self._etdump is not None:
            state = self._etdump
            self._etdump = None
            what = "base64 heredoc" if state.heredoc_line is not None else "block"
            out.append(EtdumpError(state.line_no, f"ETDump {what} not closed: log ended"))
        return out

    def _split(self, data: bytes, out: list[Event]) -> None:
        # Fast paths for the usual LF-only and CRLF-only chunks: one C-level split, then the
        # per-line work only (the length limit is checked once for the whole chunk).
        ncr = data.count(b"\r")
        if any(flood in data for flood in _BLANK_FLOODS):
            self._split_runs(data, out)
            return
        if not ncr or (ncr == data.count(b"\r\n") and data[-1] != 13):
            parts = data.split(b"\n")
            rest = parts.pop()
            if parts:
                if self._long or max(map(len, parts)) > self._max:
                    line = self._line
                    for raw in parts:
                        if ncr and raw[-1:] == b"\r":
                            line(raw[:-1], b"\r\n", out)
                        else:
                            line(raw, b"\n", out)
                else:
                    # Control bytes and "♦" need the general path; most chunks have none.
                    special = b"\x04" in data or b"\x1b" in data or b"\xe2\x99\xa6" in data
                    self._complete_many(parts, bool(ncr), special, out)
        else:
            parts = _SPLIT.split(data)
            rest = parts.pop()
            if not rest and parts and parts[-1] == b"\r":
                # A CR ending the data may be the first half of CRLF: wait for the next byte.
                parts.pop()
                rest = parts.pop() + b"\r"
            line = self._line
            it = iter(parts)
            for raw, end in zip(it, it, strict=True):
                line(raw, end, out)
        if rest:
            self._buf += rest
            if len(rest) > self._max:
                self._cut_pieces(out)

    def _split_runs(self, data: bytes, out: list[Event]) -> None:
        """The general split, with runs of empty lines kept together (see BLANK_RUN)."""
        parts = _SPLIT_RUNS.split(data)
        rest = parts.pop()
        if not rest and parts and (parts[-1] or parts[-2]).endswith(b"\r"):
            # A CR ending the data may be the first half of CRLF: wait for the next byte.
            if parts[-1]:
                parts[-1] = parts[-1][:-1]
                rest = b"\r"
            else:
                parts.pop()
                parts.pop()
                rest = parts.pop() + b"\r"
        line = self._line
        for i in range(0, len(parts), 3):
            raw, end, run = parts[i : i + 3]
            if run and not raw:  # an empty line, then more: one run
                self._blank_run(end + run, out)
                continue
            line(raw, end, out)
            if run:
                self._blank_run(run, out)
        if rest:
            self._buf += rest
            if len(rest) > self._max:
                self._cut_pieces(out)

    def _blank_run(self, run: bytes, out: list[Event]) -> None:
        """Empty lines, ``run`` holding their terminators: one event for a long run."""
        count = run.count(b"\n") + run.count(b"\r") - run.count(b"\r\n")
        if count < BLANK_RUN or self._etdump is not None or self._long:
            ends = _SPLIT.split(run)
            for end in ends[1::2]:
                self._line(b"", end, out)
            return
        n = self._next
        self._next = n + count
        out.append(new_log_line(n, b"", run, "", None, None, None, None, None, None, False,
                                self._stream, count))  # fmt: skip
        if self._group is not None:
            self._settle(None, out)

    def _cut_pieces(self, out: list[Event]) -> None:
        """Emit the held bytes in ``max_line`` pieces until what is left fits."""
        buf = self._buf
        limit = self._max
        held_cr = 1 if buf.endswith(b"\r") else 0
        while len(buf) - held_cr > limit:
            cut = _utf8_cut(buf, limit)
            piece = bytes(buf[:cut])
            del buf[:cut]
            self._piece(piece, out)

    def _line(self, raw: bytes, end: bytes, out: list[Event]) -> None:
        if len(raw) > self._max:
            limit = self._max
            while len(raw) > limit:
                cut = _utf8_cut(raw, limit)
                self._piece(raw[:cut], out)
                raw = raw[cut:]
        if self._long:
            self._long = False
            self._last_piece(raw, end, out)
        else:
            self._complete(raw, end, out)

    def _piece(self, raw: bytes, out: list[Event]) -> None:
        """A non-final piece of an over-long line: shown, not parsed (ETDump base64 kept)."""
        self._long = True
        in_etdump = self._etdump is not None
        if in_etdump:
            if self._piece_text is None:
                self._piece_text = bytearray()
                self._piece_overflow = False
            if len(self._piece_text) + len(raw) <= self._max_etdump:
                self._piece_text += raw
            else:
                self._piece_overflow = True
        text = raw.decode("utf-8", "replace").replace("\x04", "")
        out.append(
            LogLine(
                self._next, raw, b"", text,
                origin="etdump" if in_etdump else None, partial=True, stream=self._stream,
            )
        )  # fmt: skip

    def _last_piece(self, raw: bytes, end: bytes, out: list[Event]) -> None:
        n = self._next
        self._next = n + 1
        in_etdump = self._etdump is not None
        text = raw.decode("utf-8", "replace").replace("\x04", "")
        out.append(
            LogLine(
                n, raw, end, text,
                origin="etdump" if in_etdump else None, partial=True, stream=self._stream,
            )
        )  # fmt: skip
        collected = self._piece_text
        overflow = self._piece_overflow
        self._piece_text = None
        self._piece_overflow = False
        if not in_etdump or collected is None:
            if self._group is not None:
                self._settle(None, out)
            return
        if overflow or len(collected) + len(raw) > self._max_etdump:
            out.append(
                EtdumpError(n, f"ETDump line longer than {self._max_etdump} bytes: not decoded")
            )
            return
        collected += raw
        self._etdump_line(n, collected.decode("utf-8", "replace"), out)

    # ----------------------------------------------------------------- one line

    def _complete_many(
        self, parts: list[bytes], crlf: bool, special: bool, out: list[Event]
    ) -> None:
        """The hot loop: the complete, short lines of one chunk (LF or CRLF ends).

        Same result as ``_complete`` line by line, with the common case (a clean runtime
        line, outside an ETDump block) inlined; anything else goes through ``_complete``.
        """
        cache = self._prefix_cache
        make = new_log_line
        append = out.append
        handlers = self._runtime_handlers
        rest = self._runtime_rest
        stream = self._stream
        lf, crlf_end = b"\n", b"\r\n"
        prefix_max = _PREFIX_MAX
        n = self._next  # kept local in the loop; self._next is synced around slow paths
        # Only the slow paths (_complete, _other) can open an ETDump block: re-read after them.
        in_etdump = self._etdump is not None
        for raw in parts:
            end = lf
            if crlf and raw[-1:] == b"\r":
                raw = raw[:-1]
                end = crlf_end
            text = raw.decode("utf-8", "replace")
            if in_etdump or (special and ("\x04" in text or "\x1b" in text or "♦" in text)):
                self._next = n
                self._complete(raw, end, out)
                n = self._next
                in_etdump = self._etdump is not None
                continue
            # The prefix up to the first "]" decides whether (and how) the line is a runtime
            # line; a log repeats a few hundred call sites, so the regex runs once per site.
            close = text.find("]", 0, prefix_max)
            info = cache.get(text[:close]) if close > 0 else None
            if info is None:
                info = self._prefix(text, close)
            if info is False:
                self._next = n + 1
                self._other(n, raw, end, text, out)
                n += 1
                in_etdump = self._etdump is not None
                continue
            level, file, line_no, function = info
            message = text[close + 2 :] if text[close + 1 : close + 2] == " " else text[close + 1 :]
            append(
                make(
                    n, raw, end, text, level, file, line_no, function, message, "runtime", False,
                    stream,
                )
            )  # fmt: skip
            body = message.lstrip(" ") if message[:1] == " " else message
            sp = body.find(" ")
            key = body if sp < 0 else body[:sp]
            handler = handlers.get(key)
            if handler is None or not handler(n, level, message, out):
                rest(n, level, message, key, handler is not None, out)
            n += 1
        self._next = n

    def _prefix(self, text: str, close: int) -> tuple[str, str, int | None, str | None] | bool:
        """Level, file, line and function of a runtime line's prefix, or False (cached)."""
        m = _RUNTIME.match(text) if close > 0 else None
        info = False if m is None else (m[1], m[2], int(m[3]) if m[3] else None, m[4])
        if close > 0:
            cache = self._prefix_cache
            if len(cache) >= _PREFIX_CACHE_SIZE:
                cache.clear()
            cache[text[:close]] = info
        return info

    def _complete(self, raw: bytes, end: bytes, out: list[Event]) -> None:
        n = self._next
        self._next = n + 1
        if not raw and self._etdump is None:  # an empty line (a CR/LF flood): nothing to read
            out.append(new_log_line(n, raw, end, "", None, None, None, None, None, None, False,
                                    self._stream))  # fmt: skip
            if self._group is not None:
                self._settle(None, out)
            return
        text = raw.decode("utf-8", "replace")
        eot = "\x04" in text
        text = line_text(text)
        if self._etdump is not None and self._etdump_claims(text):
            out.append(
                new_log_line(n, raw, end, text, None, None, None, None, None, "etdump", False,
                            self._stream)
            )  # fmt: skip
            self._etdump_line(n, text, out)
            return
        close = text.find("]", 0, _PREFIX_MAX)
        info = self._prefix_cache.get(text[:close]) if close > 0 else None
        if info is None:
            info = self._prefix(text, close)
        if info is not False:
            level, file, line_no, function = info
            message = text[close + 2 :] if text[close + 1 : close + 2] == " " else text[close + 1 :]
            out.append(
                new_log_line(
                    n, raw, end, text, level, file, line_no, function, message, "runtime", False,
                    self._stream,
                )
            )  # fmt: skip
            body = message.lstrip(" ") if message[:1] == " " else message
            sp = body.find(" ")
            key = body if sp < 0 else body[:sp]
            handler = self._runtime_handlers.get(key)
            if handler is None or not handler(n, level, message, out):
                self._runtime_rest(n, level, message, key, handler is not None, out)
            if eot or message == "♦":
                # "♦" is how terminals and published transcripts show the EOT byte.
                out.append(FvpStopped(n, "eot", "the runner wrote EOT (0x04)"))
            return
        self._other(n, raw, end, text, out)
        if eot:
            out.append(FvpStopped(n, "eot", "the target wrote EOT (0x04)"))

    def _settle(self, kind: str | None, out: list[Event]) -> _Group | None:
        """Close the open report unless this line continues it; return the open one."""
        group = self._group
        if group is not None and group.kind != kind:
            self._group = None
            finish = _FINISHERS[group.kind]
            finish(self, group, out)
            return None
        return group

    # ----------------------------------------------------------------- runtime (ET_LOG)

    def _runtime_rest(
        self, n: int, level: str, body: str, key: str, tried: bool, out: list[Event]
    ) -> None:
        """A runtime line whose first word has no handler (or whose handler declined it)."""
        if not tried:
            handler = None
            c = key[:1]
            if c in _FALLBACK_FIRST:
                if key.startswith("ethosu_pmu_cntr"):
                    handler = self._h_pmu
                elif c.isdigit():
                    handler = self._h_counted
                elif key.startswith("output["):
                    handler = self._h_zephyr_output
                elif c == "[" and self._group is not None and self._group.kind == "output":
                    handler = self._h_zephyr_value
            if handler is not None:
                if handler(n, level, body, out):
                    return
            else:
                if self._group is not None:
                    self._settle(None, out)
                if body.endswith("Demo Complete"):
                    out.append(RunSucceeded(n, body))
                    return
        if level in "EF":
            status = _status_of(body)
            out.append(RunError(n, status, status_name(status), body, "runtime"))
        elif "ail" in body and ("fail" in body or "Fail" in body):
            status = _status_of(body)
            if status is not None:
                out.append(RunError(n, status, status_name(status), body, "runtime"))

    # Each handler returns True when it recognised the line (no generic error then).

    def _h_pte(self, n: int, level: str, body: str, out: list[Event]) -> bool:
        if self._group is not None:
            self._settle(None, out)
        if body.startswith(("PTE @", "PTE in", "PTE at")):
            m = _ADDRESS.search(body)
            self._pte_address = int(m.group(1), 16) if m else None
            ident = _IDENT.search(body)
            self._pte_identifier = ident.group(1) if ident else None
            return True
        if body.startswith("PTE Model data loaded"):
            self._emit_pte(n, body, out)
            return True
        return False

    def _emit_pte(self, n: int, body: str, out: list[Event]) -> None:
        m = _SIZE.search(body)
        size = _int(m.group(1)) if m else None
        out.append(PteLoaded(n, self._pte_address, self._pte_identifier, size))
        self._pte_address = self._pte_identifier = None

    def _h_model(self, n: int, level: str, body: str, out: list[Event]) -> bool:
        if self._group is not None:
            self._settle(None, out)
        if body.startswith("Model in "):  # 0.4-0.5: "Model in 0x70000000 $"
            m = _ADDRESS.search(body)
            self._pte_address = int(m.group(1), 16) if m else None
            self._pte_identifier = None
            return True
        if body.startswith("Model PTE file loaded"):
            self._emit_pte(n, body, out)
            return True
        if body.startswith("Model PTE at "):  # Zephyr mv2 sample: address and size at once
            m = _ADDRESS.search(body)
            s = _SIZE.search(body)
            out.append(
                PteLoaded(
                    n, int(m.group(1), 16) if m else None, None, _int(s.group(1)) if s else None
                )
            )
            return True
        if body.startswith(("Model buffer loaded", "Model loaded, has")):
            out.append(ProgramLoaded(n, _int(_after(body, "has "))))
            return True
        if body.startswith("Model executed successfully"):
            out.append(InferenceFinished(n, None, True))
            return True
        if body.startswith("Model run:"):
            if _int(_after(body, ":")) == 0:
                out.append(RunError(n, None, None, body, "runtime"))
            return True
        if body.startswith("Model output match expected"):
            return True
        if body.startswith("Model output don't match"):
            self._bundle["rtol"] = _float(_after(body, "rtol="))
            self._bundle["atol"] = _float(_after(body, "atol="))
            return True
        return False

    def _h_running(self, n: int, level: str, body: str, out: list[Event]) -> bool:
        if self._group is not None:
            self._settle(None, out)
        if body.startswith("Running method"):
            name = body[len("Running method") :].lstrip(": ").strip()
            if name:
                self._method = name
                self._load_status = None
                self._load_failed = False
                out.append(MethodSelected(n, name))
            return True
        if body.startswith("Running inference number"):
            out.append(InferenceStarted(n, None, _int(_after(body, "number"))))
            return True
        return False

    def _h_setup(self, n: int, level: str, body: str, out: list[Event]) -> bool:
        if self._group is not None:
            self._settle(None, out)
        if body.startswith("Setup Method allocator pool"):
            m = _SIZE.search(body)
            out.append(MethodAllocatorSetUp(n, _int(m.group(1)) if m else None, "method"))
            return True
        if body.startswith("Setup planned FAST_MEMORY_REGION pool"):
            m = _SIZE.search(body)
            out.append(MethodAllocatorSetUp(n, _int(m.group(1)) if m else None, "planned_fast"))
            return True
        return False

    def _h_method(self, n: int, level: str, body: str, out: list[Event]) -> bool:
        if self._group is not None:
            self._settle(None, out)
        if body.startswith("Method allocator pool size:"):  # Zephyr mv2 sample
            out.append(MethodAllocatorSetUp(n, _int(_after(body, ":")), "method"))
            return True
        if body.startswith("Method loaded") or (body.startswith("Method '") and " loaded" in body):
            name = body.split("'")[1] if body.startswith("Method '") else self._method
            failed = self._load_failed
            out.append(MethodLoaded(n, name, not failed, self._load_status))
            self._load_failed = False
            self._load_status = None
            return True
        return False

    def _h_loading(self, n: int, level: str, body: str, out: list[Event]) -> bool:
        if self._group is not None:
            self._settle(None, out)
        if body.startswith("Loading of method") and "failed" in body:
            status = _status_of(body)
            self._load_failed = True
            self._load_status = status
            out.append(RunError(n, status, status_name(status), body, "runtime"))
            return True
        return False

    def _h_input(self, n: int, level: str, body: str, out: list[Event]) -> bool:
        if self._group is not None:
            self._settle(None, out)
        if body.startswith("Input prepared"):
            out.append(InputsPrepared(n))
            return True
        return False

    def _h_starting(self, n: int, level: str, body: str, out: list[Event]) -> bool:
        if self._group is not None:
            self._settle(None, out)
        if body.startswith("Starting running"):
            out.append(InferenceStarted(n, _int(_after(body, "running")), None))
            return True
        if body.startswith("Starting the model execution"):
            out.append(InferenceStarted(n, None, None))
            return True
        return False

    def _h_counted(self, n: int, level: str, body: str, out: list[Event]) -> bool:
        if self._group is not None:
            self._settle(None, out)
        if body.endswith("inferences finished"):
            out.append(InferenceFinished(n, _int(body), True))
            return True
        return False

    def _h_program(self, n: int, level: str, body: str, out: list[Event]) -> bool:
        if self._group is not None:
            self._settle(None, out)
        if "Program complete" in body:
            out.append(RunSucceeded(n, body))
            return True
        return False

    def _h_assert(self, n: int, level: str, body: str, out: list[Event]) -> bool:
        if self._group is not None:
            self._settle(None, out)
        parts = _assert_parts(body)
        if parts is None:
            return False
        function, condition, message, bare = parts
        if bare is not None:
            condition, message = bare, None
        status = _status_of(message) if message else None
        out.append(AssertFailed(n, function, condition, message, status, status_name(status), body))
        return True

    def _h_kernel(self, n: int, level: str, body: str, out: list[Event]) -> bool:
        if self._group is not None:
            self._settle(None, out)
        m = _KERNEL.match(body)
        if m is not None:
            out.append(MissingKernel(n, m.group(1), None))
            return True
        m = _MISSING_OP.match(body)
        if m is not None:
            if m.group(2) is None:
                # A newlib without C99 formats prints "[%zd] %s" as "[zd] " and drops the
                # name; the registry's "kernel '...' not found." line before it named it.
                return True
            out.append(MissingKernel(n, m.group(2), _int(m.group(1))))
            return True
        return False

    def _h_there(self, n: int, level: str, body: str, out: list[Event]) -> bool:
        if self._group is not None:
            self._settle(None, out)
        if "corresponding operator registered" in body:
            out.append(RunError(n, 0x14, status_name(0x14), body, "runtime"))
            return True
        return False

    def _h_bundle_stats(self, n: int, level: str, body: str, out: list[Event]) -> bool:
        if self._group is not None:
            self._settle(None, out)
        if body.startswith("=== Error stats for testset"):
            self._bundle = {}
            return True
        if body.startswith("===") or ":" not in body:
            return False
        name, _, value = body.partition(":")
        self._bundle[name.strip()] = _float(value)
        return True

    def _h_bundle_result(self, n: int, level: str, body: str, out: list[Event]) -> bool:
        if self._group is not None:
            self._settle(None, out)
        if "Test_result:" not in body:
            return False
        passed = "PASS" in _after(body, "Test_result:")
        stats = self._bundle
        self._bundle = {}
        out.append(
            BundleIOResult(
                n,
                _int(_after(body, "index[")),
                passed,
                stats.get("mean_absolute_error"),
                stats.get("max_absolute_error"),
                stats.get("mean_relative_error"),
                stats.get("max_relative_error"),
                stats.get("rtol"),
                stats.get("atol"),
            )
        )
        return True

    # PMU report (arm_perf_monitor.cpp): many lines, one event.

    def _h_pmu(self, n: int, level: str, body: str, out: list[Event]) -> bool:
        if body.startswith("Inference completed in"):  # Zephyr mv2 sample
            if self._group is not None:
                self._settle(None, out)
            ms = _int(_after(body, " in "))
            out.append(InferenceFinished(n, None, True, ms))
            return True
        if body.startswith("NPU Inferences"):
            if self._group is not None:  # a new report closes any earlier one
                self._settle(None, out)
            group = self._group = _Group("pmu", n)
            group.data["npu_inferences"] = _int(_after(body, ":"))
            return True
        group = self._settle("pmu", out)
        if group is None:
            if not body.startswith(("ethosu_pmu_", "Ethos-U PMU", "Inference runtime")):
                return False
            group = self._group = _Group("pmu", n)  # a report whose first line is cut
        data = group.data
        if body.startswith("ethosu_pmu_cntr"):
            if len(group.items) < _MAX_COUNTERS:
                group.items.append(_int(_after(body, ":")))
        elif body.startswith("ethosu_pmu_cycle_cntr"):
            data["npu_cycles"] = _int(_after(body, ":"))
        elif body.startswith("NPU delegations"):
            data["delegations"] = _int(_after(body, ":"))
        elif body.startswith("Inference runtime"):
            data["cpu_cycles"] = _int(_after(body, ":"))
        elif body.startswith("Inference CPU ratio"):
            data["cpu_ratio"] = _float(_after(body, ":"))
        elif body.startswith("Inference NPU ratio"):
            data["npu_ratio"] = _float(_after(body, ":"))
        elif body.startswith("cpu_wait_for_npu_cntr"):
            data["cpu_wait"] = _int(_after(body, ":"))
        elif body.startswith("Operator(s) total"):
            data["operators_total"] = _int(_after(body, ":"))
        elif " : cycle_cnt :" in body:
            name, _, rest = body.partition(" : cycle_cnt :")
            data.setdefault("operators", {})[name.strip()] = _int(rest)
        elif body.startswith("Ethos-U PMU Events:"):
            listed = _after(body, "[")
            closed = listed.endswith("]")
            names = [s.strip() for s in listed.rstrip("]").split(",") if s.strip()]
            data["event_names"] = names
            data["events_cut"] = not closed
            self._group = None
            self._finish_pmu(group, out)
        return True

    def _finish_pmu(self, group: _Group, out: list[Event]) -> None:
        data = group.data
        values = tuple(group.items)
        count = len(values)
        names: list[str] = list(data.get("event_names") or ())
        names_from = "log" if names else "index"
        if names and data.get("events_cut"):
            # An event list cut by the 255-byte log limit: complete the last name if a known
            # list has exactly one name that starts with the fragment.
            known = {e for e in (*U55_EVENTS, *U85_EVENTS_7) if e.startswith(names[-1])}
            if len(known) == 1:
                names[-1] = known.pop()
        if not names and count:
            default: tuple[str, ...] = ()
            if self._npu == "u85" or (self._npu is None and count in (5, 7)):
                default = U85_EVENTS_5 if count <= 5 else U85_EVENTS_7
            elif self._npu == "u55" or (self._npu is None and count == 4):
                default = U55_EVENTS
            if count <= len(default):
                names = list(default[:count])
                names_from = "default"
        counters: dict[str, int | None] = {}
        for i, value in enumerate(values):
            name = names[i] if i < len(names) else f"ethosu_pmu_cntr{i}"
            counters[name] = value
        out.append(
            PmuReport(
                group.line_no,
                npu_inferences=data.get("npu_inferences"),
                delegations=data.get("delegations"),
                npu_cycles=data.get("npu_cycles"),
                counters=counters,
                counter_values=values,
                event_names=tuple(names),
                names_from=names_from,
                cpu_cycles=data.get("cpu_cycles"),
                operator_cycles=data.get("operators", {}),
                operators_total=data.get("operators_total"),
                cpu_wait_for_npu_cycles=data.get("cpu_wait"),
                cpu_ratio=data.get("cpu_ratio"),
                npu_ratio=data.get("npu_ratio"),
            )
        )

    # Memory summary (log_mem_status): many lines, one event.

    def _h_memory(self, n: int, level: str, body: str, out: list[Event]) -> bool:
        group = self._settle("memory", out)
        if group is None:
            group = self._group = _Group("memory", n)
        key, _, rest = body.partition(":")
        target = _MEMORY_KEYS.get(key + ":")
        if target is None:
            return False
        kind, name = target
        if kind == "pool":
            m = _POOL.search(rest)
            if m is not None:
                used, size, free, percent = (_int(g) for g in m.groups())
                group.data.setdefault("pools", {})[name] = PoolUsage(used, size, free, percent)
            else:
                group.data.setdefault("pools", {})[name] = PoolUsage(_int(rest), None)
        else:
            group.data[name] = _int(rest)
        return True

    def _finish_memory(self, group: _Group, out: list[Event]) -> None:
        data = group.data
        out.append(
            MemoryReport(
                group.line_no,
                pools=data.get("pools", {}),
                program_size=data.get("program_size"),
                loaded_size=data.get("loaded_size"),
                planned=data.get("planned"),
                loaded=data.get("loaded"),
                input=data.get("input"),
                executor=data.get("executor"),
                temp_allocator_size=data.get("temp_allocator_size"),
                planned_fast_used=data.get("planned_fast_used"),
            )
        )

    # Planned buffers: one line each, one event.

    def _h_planned(self, n: int, level: str, body: str, out: list[Event]) -> bool:
        m = _PLANNED.search(body)
        if m is None:
            if self._group is not None:
                self._settle(None, out)
            return False
        group = self._settle("planned", out)
        if group is None:
            group = self._group = _Group("planned", n)
        ident = _int(m.group(1))
        if "mem_id=" not in body and ident is not None:
            ident += 1  # ≤1.4: 0-based buffer index; mem_id = index + 1
        if len(group.items) < _MAX_PLANNED:
            group.items.append((ident, _int(m.group(2))))
        return True

    def _finish_planned(self, group: _Group, out: list[Event]) -> None:
        ids = tuple(i for i, _ in group.items)
        sizes = tuple(s for _, s in group.items)
        out.append(PlannedBuffers(group.line_no, len(group.items), sizes, ids))

    # Output dumps: printf "Output[i][j]: (float) v" or the Zephyr sample's ET_LOG lines.

    def _output_line(self, n: int, text: str, out: list[Event]) -> None:
        m = _OUTPUT.match(text)
        if m is None:
            if self._group is not None:
                self._settle(None, out)
            m2 = _OUTPUT_NOT_TENSOR.match(text)
            if m2 is not None:
                out.append(OutputTensor(n, int(m2.group(1)), None, None, (), 0, 0, False))
            return
        index_s, elem_s, dtype, token = m.groups()
        index = int(index_s)
        group = self._settle("output", out)
        if group is not None and group.data["index"] != index:
            self._settle(None, out)  # the next output starts
            group = None
        if group is None:
            group = self._group = _Group(
                "output", n, {"index": index, "dtype": dtype, "numel": 0, "dropped": 0}
            )
        data = group.data
        elem = int(elem_s)
        if elem >= data["numel"]:
            data["numel"] = elem + 1
        if len(group.items) < self._max_values:
            group.items.append(_output_value(dtype, token))
        else:
            data["dropped"] += 1  # counted, not kept

    def _h_zephyr_output(self, n: int, level: str, body: str, out: list[Event]) -> bool:
        if self._group is not None:
            self._settle(None, out)
        m = _ZEPHYR_OUTPUT.match(body.lstrip())
        if m is None:
            return False
        index_s, kind, dtype, numel = m.groups()
        group = self._group = _Group(
            "output",
            n,
            {"index": int(index_s), "dtype": dtype, "numel": _int(numel) or 0, "dropped": 0},
        )
        group.data["is_tensor"] = kind == "tensor"
        return True

    def _h_zephyr_value(self, n: int, level: str, body: str, out: list[Event]) -> bool:
        group = self._settle("output", out)
        m = _ZEPHYR_VALUE.match(body.lstrip())
        if group is None or m is None:
            return False
        elem = int(m.group(1))
        if elem >= group.data["numel"]:
            group.data["numel"] = elem + 1
        if len(group.items) < self._max_values:
            group.items.append(_output_value(group.data["dtype"], m.group(2)))
        else:
            group.data["dropped"] += 1
        return True

    def _finish_output(self, group: _Group, out: list[Event]) -> None:
        data = group.data
        values = tuple(group.items)
        out.append(
            OutputTensor(
                group.line_no,
                data["index"],
                data["dtype"],
                None,
                values,
                data["numel"],
                len(values) + data["dropped"],
                data.get("is_tensor", True),
            )
        )

    # Hard faults: the platform's line plus its register line(s).

    def _start_fault(self, n: int, text: str, out: list[Event]) -> None:
        if self._group is not None:
            self._settle(None, out)
        group = self._group = _Group("fault", n, {"text": text})
        self._fault_registers(group, text)

    @staticmethod
    def _fault_registers(group: _Group, text: str) -> None:
        registers = group.data.setdefault("registers", {})
        for name, value in _REGISTER.findall(text):
            if len(registers) >= _MAX_REGISTERS:
                return
            if "/" in name:  # Zephyr's "r0/a1", "r14/lr": keep the usual name
                parts = name.split("/")
                name = next((p for p in parts if p in ("pc", "lr", "sp", "ip")), parts[0])
            try:
                registers[name] = int(value, 16) if "x" in value else int(value)
            except ValueError:
                continue

    def _finish_fault(self, group: _Group, out: list[Event]) -> None:
        out.append(HardFault(group.line_no, group.data.get("registers", {}), group.data["text"]))

    # ----------------------------------------------------------------- other lines

    def _other(self, n: int, raw: bytes, end: bytes, text: str, out: list[Event]) -> None:
        """Lines without the ExecuTorch prefix: tensor dumps, driver, platform, FVP, scripts."""
        stream = self._stream
        c = text[:1]
        if c == "O" and text.startswith("Output["):
            out.append(
                new_log_line(n, raw, end, text, None, None, None, None, None, "output", False,
                            stream)
            )  # fmt: skip
            self._output_line(n, text, out)
            return
        if c not in _OTHER_FIRST:
            # Most plain lines: no prefix worth a look (one check for an FVP launch failure).
            origin = handler = None
            if text.endswith(_LAUNCH_FAILURES):
                origin, handler = "script", _P._o_launch
            elif self._unprefixed(n, raw, end, text, out):
                return
        elif text[1:3] == ": " and c in "EWID":
            # Ethos-U driver (also Zephyr's minimal log): "E: msg", "I: msg".
            message = text[3:]
            out.append(
                new_log_line(n, raw, end, text, c, None, None, None, message, "driver", False,
                            stream)
            )  # fmt: skip
            self._driver(n, c, message, out)
            return
        elif c == "[" and text[2:4] == "] " and text[1] in "DIEWF":
            # A custom PAL's "[I] message" (e.g. a board runner over RTT).
            message = text[4:]
            if self._message(n, raw, end, text, text[1], message, out):
                return
            out.append(LogLine(n, raw, end, text, text[1], message=message, stream=stream))
            if self._group is not None:
                self._settle(None, out)
            if text[1] in "EF":
                out.append(RunError(n, _status_of(message), None, message, None))
            return
        else:
            origin, handler = _classify_other(text)
            if handler is None and self._unprefixed(n, raw, end, text, out):
                return
        out.append(
            new_log_line(n, raw, end, text, None, None, None, None, None, origin, False, stream)
        )
        if handler is None:
            if self._group is not None and not text.startswith("..."):
                self._settle(None, out)  # "...(Skipped)" inside a dump keeps it open
            return
        handler(self, n, text, out)

    def _unprefixed(self, n: int, raw: bytes, end: bytes, text: str, out: list[Event]) -> bool:
        """A line the known formats did not claim, read by what it says whatever is in
        front: ExecuTorch's prefix after a foreign one (a timestamp, a trace tag), a
        platform's own prefix (Zephyr's ``[time] <inf> module:``), or none at all (a plain
        printf PAL). True when it was recognised (its LogLine and events are out)."""
        found = _runtime_inside(text)
        if found is not None:
            inner, close, m = found
            level, file, line_no, function = (m[1], m[2], int(m[3]) if m[3] else None, m[4])
            after = close + 2 if inner[close + 1 : close + 2] == " " else close + 1
            message = inner[after:]
            out.append(
                new_log_line(
                    n, raw, end, text, level, file, line_no, function, message,
                    "runtime", False, self._stream,
                )
            )  # fmt: skip
            body = message.lstrip(" ")
            sp = body.find(" ")
            key = body if sp < 0 else body[:sp]
            handler = self._runtime_handlers.get(key)
            if handler is None or not handler(n, level, message, out):
                self._runtime_rest(n, level, message, key, handler is not None, out)
            return True
        stripped, level = _foreign_prefix(text)
        message = text[stripped:]
        if self._message(n, raw, end, text, level, message, out):
            return True
        if stripped and level is None:
            # A trace tag between a report's lines does not end the report.
            out.append(
                new_log_line(n, raw, end, text, None, None, None, None, message, None, False,
                             self._stream)
            )  # fmt: skip
            return True
        return False

    def _message(
        self, n: int, raw: bytes, end: bytes, text: str, level: str | None, message: str,
        out: list[Event],
    ) -> bool:  # fmt: skip
        """Dispatch a bare message to the runtime handlers by its first word. With an
        explicit ``level`` (from a platform prefix) it is a runtime line whatever it says
        (an error level makes it an error); without one, only a recognised message is."""
        body = message.lstrip(" ")
        sp = body.find(" ")
        key = body if sp < 0 else body[:sp]
        handler = self._runtime_handlers.get(key)
        if handler is None:
            c = key[:1]
            if c == "e" and key.startswith("ethosu_pmu_cntr"):
                handler = self._h_pmu
            elif c == "o" and key.startswith("output["):
                handler = self._h_zephyr_output
            elif c == "[" and self._group is not None and self._group.kind == "output":
                handler = self._h_zephyr_value
            elif level is None:
                pass
            elif c.isdigit():
                handler = self._h_counted
            elif c == "O" and body.startswith("Output["):
                self._output_line(n, body, out)
                return True
        failure = level is None and (
            ("ail" in body and ("fail" in body or "Fail" in body))
            or ("!=" in body and "!= expected" in body)
        )  # without a level, what the message says is all there is
        if handler is None and level is None and not failure:
            return False
        at = len(out)
        handled = handler is not None and handler(n, level or "I", body, out)
        if not handled and level is None:
            if not failure:
                return False
            out.insert(
                at,
                new_log_line(n, raw, end, text, None, None, None, None, message, "runtime",
                             False, self._stream),
            )  # fmt: skip
            if self._group is not None:
                self._settle(None, out)
            status = _status_of(body)
            out.append(RunError(n, status, status_name(status), body, "runtime"))
            return True
        out.insert(
            at,
            new_log_line(n, raw, end, text, level, None, None, None, message, "runtime", False,
                         self._stream),
        )  # fmt: skip
        if not handled:
            self._runtime_rest(n, level or "I", body, key, handler is not None, out)
        return True

    def _driver(self, n: int, level: str, message: str, out: list[Event]) -> None:
        group = self._group
        if group is not None and group.kind == "fault" and level == "E":
            self._fault_registers(group, message)  # Zephyr's fault dump continues
            return
        if "HARD FAULT" in message or "FATAL ERROR" in message:
            self._start_fault(n, message.strip(), out)
            return
        if self._group is not None:
            self._settle(None, out)
        if level == "E":
            status = _status_of(message)
            out.append(RunError(n, status, status_name(status), message, "driver"))

    # Handlers for _classify_other (plain functions of (parser, n, text, out)).

    def _o_fault(self, n: int, text: str, out: list[Event]) -> None:
        self._start_fault(n, text.strip(), out)

    def _o_fault_more(self, n: int, text: str, out: list[Event]) -> None:
        group = self._group
        if group is not None and group.kind == "fault":
            self._fault_registers(group, text)
        else:
            if self._group is not None:
                self._settle(None, out)

    def _o_banner(self, n: int, text: str, out: list[Event]) -> None:
        if self._group is not None:
            self._settle(None, out)
        body = text.strip()
        if body.startswith("Ethos-U rev"):
            version, _, date = body[len("Ethos-U rev") :].partition("---")
            out.append(FvpBanner(n, "Ethos-U", version.strip() or None, date.strip() or None))
        elif body.startswith("Fast Models ["):
            inner = body[len("Fast Models [") :].rstrip("]")
            version, _, date = inner.partition(" (")
            out.append(FvpBanner(n, "Fast Models", version.strip(), date.rstrip(")") or None))
        elif "with FVP:" in body:
            model = _after(body, "with FVP:").split()[:1]
            if model:
                out.append(FvpBanner(n, model[0]))

    def _o_info(self, n: int, text: str, out: list[Event]) -> None:
        if self._group is not None:
            self._settle(None, out)
        body = text[len("Info:") :].strip()
        if body.startswith("Simulation is stopping."):
            reason = _after(body, "Reason:").strip().rstrip(".") or body
            low = reason.lower()
            kind = "time_limit" if "exceeded" in low or "limit" in low else "stopping"
            out.append(FvpStopped(n, kind, reason))
        elif "Simulation is terminated" in body:
            out.append(FvpStopped(n, "terminated", body.rstrip(".")))
        elif "Simulation stopped" in body:
            out.append(FvpStopped(n, "stopped", _after(body, ": ").rstrip(".") or body))

    def _o_warning(self, n: int, text: str, out: list[Event]) -> None:
        if self._group is not None:
            self._settle(None, out)
        if "Simulation stopped" in text:
            m = _SIM_TIME.search(text)
            reason = text[text.rfind("]") + 1 :].strip()
            out.append(FvpStopped(n, "stopped", reason, m.group(1) if m else None))

    def _o_exit(self, n: int, text: str, out: list[Event]) -> None:
        if self._group is not None:
            self._settle(None, out)
        if text.startswith("Application exit code:"):
            code = _int(_after(text, ":"))
            out.append(FvpStopped(n, "exit", text.strip().rstrip("."), exit_code=code))
        elif text.strip() == "EXITTHESIM":
            out.append(FvpStopped(n, "shutdown_tag", "EXITTHESIM"))

    def _o_script(self, n: int, text: str, out: list[Event]) -> None:
        if self._group is not None:
            self._settle(None, out)
        if "Simulation complete," in text:
            code = _int(_after(text, "Simulation complete,"))
            out.append(FvpStopped(n, "script", text.strip(), exit_code=code))

    def _o_launch(self, n: int, text: str, out: list[Event]) -> None:
        if self._group is not None:
            self._settle(None, out)
        out.append(FvpStopped(n, "launch_failed", text.strip()))

    def _o_assert(self, n: int, text: str, out: list[Event]) -> None:
        # newlib's assert(): 'assertion "cond" failed: file "f.c", line 12, function: fn'
        if self._group is not None:
            self._settle(None, out)
        cond = text.split('"')[1] if text.count('"') >= 2 else None
        function = _after(text, "function:").strip() or None
        out.append(AssertFailed(n, function, cond, None, None, None, text.strip()))

    def _o_etdump_start(self, n: int, text: str, out: list[Event]) -> None:
        if self._group is not None:
            self._settle(None, out)
        closer = "#[END]" if text.strip() == "#[RUN THIS]" else "#---"
        self._etdump = _EtdumpState(n, closer, self._etdump_blocks)
        self._etdump_blocks += 1

    # ----------------------------------------------------------------- ETDump block

    def _etdump_claims(self, text: str) -> bool:
        """Inside a block: the script's own lines (a runtime line can interleave)."""
        state = self._etdump
        if state is not None and state.heredoc_line is not None:
            return True
        return text[:1] in '#ep"b' or not text.strip()

    def _etdump_line(self, n: int, text: str, out: list[Event]) -> None:
        state = self._etdump
        if state is None:
            return
        if self._group is not None:
            self._settle(None, out)
        stripped = text.strip()
        if state.heredoc_line is not None:
            if stripped.startswith('"'):
                m = _HEREDOC_END.match(stripped)
                b64 = "".join(state.heredoc)
                state.heredoc_line, line_no = None, state.heredoc_line
                state.heredoc = []
                state.heredoc_size = 0
                self._etdump_file(line_no, b64, m.group(1) if m else "etdump.bin", out)
            else:
                state.heredoc_size += len(stripped)
                if state.heredoc_size > self._max_etdump:
                    out.append(EtdumpError(n, "ETDump heredoc too long: not decoded"))
                    state.heredoc_line = None
                    state.heredoc = []
                    state.heredoc_size = 0
                    self._etdump = None
                    return
                state.heredoc.append(stripped.rstrip("\\"))
            return
        if stripped == state.closer:
            self._etdump = None
            return
        if stripped.startswith("echo "):
            m = _ECHO.search(stripped)
            if m is None:
                out.append(EtdumpError(n, "ETDump line cut or malformed: " + stripped[:60]))
                return
            self._etdump_file(n, m.group(1), m.group(2), out)
        elif stripped.startswith("base64") and "<<<" in stripped:
            state.heredoc_line = n
            rest = _after(stripped, '<<<"').rstrip("\\")
            if rest:
                state.heredoc.append(rest)

    def _etdump_file(self, n: int, b64: str, target: str, out: list[Event]) -> None:
        index = self._etdump.index if self._etdump is not None else 0
        name = _safe_file_name(target, index)
        try:
            data = _decode_base64(b64)
        except ValueError as error:
            out.append(EtdumpError(n, str(error), name))
            return
        if not data:
            out.append(EtdumpError(n, "empty ETDump data", name))
            return
        identifier = None
        for at in (4, 8):
            if data[at : at + 4] == b"ED00":
                identifier = "ED00"
                break
        out.append(EtdumpBlock(n, name, data, index, identifier))


_MEMORY_KEYS: dict[str, tuple[str, str]] = {
    "model_pte_program_size:": ("value", "program_size"),
    "model_pte_loaded_size:": ("value", "loaded_size"),
    "method_allocator_used:": ("pool", "method_allocator"),
    "input_file_allocator_used:": ("pool", "input_file_allocator"),
    "planned_fast_allocator:": ("pool", "planned_fast_allocator"),
    "temp_allocator_used:": ("pool", "temp_allocator"),
    "peak_temp_allocator:": ("pool", "temp_allocator"),
    "ETDump_outputs_buffer:": ("pool", "etdump_outputs_buffer"),
    "method_allocator_planned:": ("value", "planned"),
    "method_allocator_loaded:": ("value", "loaded"),
    "method_allocator_input:": ("value", "input"),
    "method_allocator_executor:": ("value", "executor"),
    "planned_fast_used:": ("value", "planned_fast_used"),
    "temp_allocator:": ("value", "temp_allocator_size"),
}

_FINISHERS = {
    "pmu": RunnerLogParser._finish_pmu,
    "memory": RunnerLogParser._finish_memory,
    "planned": RunnerLogParser._finish_planned,
    "output": RunnerLogParser._finish_output,
    "fault": RunnerLogParser._finish_fault,
}

_P = RunnerLogParser
_LAUNCH_FAILURES = (
    ": cannot execute binary file",
    ": command not found",
    "cannot execute binary file: Exec format error",
)


def _classify_other(text: str) -> tuple[str | None, Any]:
    """Origin and handler of a line without the ExecuTorch prefix (cheap prefix checks)."""
    c = text[:1]
    if c == " ":
        body = text.lstrip(" ")
        if body.startswith("Ethos-U rev"):
            return "fvp", _P._o_banner
        if body.startswith(("(C) COPYRIGHT", "ALL RIGHTS RESERVED")):
            return "fvp", None
        if body.startswith("cfsr="):
            return "platform", _P._o_fault_more
        return None, None
    if c == "I" and text.startswith("Info:"):
        return "fvp", _P._o_info
    if c == "t" and text.startswith("telnetterminal"):
        return "fvp", None
    if c == "[":
        if text.startswith("[warning ]") or text.startswith("[critical]"):
            return "fvp", _P._o_warning
        if text.startswith(("[backends/arm/scripts/", "[run_fvp", "[build_")) or (
            text.startswith("[examples/arm/")
        ):
            return "script", _P._o_script
        return None, None
    if c == "H" and text.startswith("Hard fault"):
        return "platform", _P._o_fault
    if c == "A" and text.startswith("Application exit code:"):
        return "platform", _P._o_exit
    if c == "E" and text.rstrip() == "EXITTHESIM":
        return "platform", _P._o_exit
    if c == "#" and text.rstrip() in ("#[RUN THIS]", "#---"):
        return "etdump", _P._o_etdump_start
    if c == "F" and text.startswith("Fast Models ["):
        return "fvp", _P._o_banner
    if c == "R" and text.startswith("Running ") and "with FVP:" in text:
        return "script", _P._o_banner
    if c == "a" and text.startswith('assertion "'):
        return "platform", _P._o_assert
    if c == ">" and "ZEPHYR FATAL ERROR" in text:
        return "platform", _P._o_fault
    if c == "*" and "HARD FAULT" in text:
        return "platform", _P._o_fault
    if text.endswith(_LAUNCH_FAILURES):
        return "script", _P._o_launch
    return None, None


def line_text(text: str) -> str:
    """A line's decoded text as a LogLine's ``text`` holds it: EOT bytes and ANSI colour
    codes removed."""
    if "\x04" in text:
        text = text.replace("\x04", "")
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    return text


def _runtime_inside(text: str) -> tuple[str, int, re.Match[str]] | None:
    """ExecuTorch's prefix after a foreign one (a timestamp, a trace tag): the text from
    that prefix on, the index of its "]" there, and its match; None if there is none."""
    mark = text.find(_ET_MARK, 0, _PREFIX_MAX)
    if mark <= 0:
        return None
    start = mark - 2 if text[mark - 1] in " [" else mark - 1
    if text[mark - 1] == "[":
        start -= 1
    if start <= 0 or text[start] not in "DIEF?":
        return None
    inner = text[start:]
    close = inner.find("]", 0, _PREFIX_MAX)
    m = _RUNTIME.match(inner) if close > 0 else None
    return None if m is None else (inner, close, m)


def _foreign_prefix(text: str) -> tuple[int, str | None]:
    """How many characters a platform's prefix takes (0 for none), and the level its tag
    gives (Zephyr's ``<err>``, syslog's ``<3>``), if any."""
    m = _FOREIGN.match(text) if text[:1] in _FOREIGN_FIRST else None
    if m is None or not m.end():
        return 0, None
    tag = m["lvl"]
    if not tag:
        return m.end(), None
    return m.end(), _FOREIGN_LEVELS.get(tag, "E" if tag.isdigit() and int(tag) % 8 <= 3 else "I")


def line_level(text: str) -> str | None:
    """The level the parser gives the line ``text`` read on its own, or None.

    For views that read lines back from a session file instead of through the parser: the
    same rules in the same order (ExecuTorch's prefix, also after a foreign one; a driver's
    ``E:``; a custom PAL's ``[E]``; a platform's level tag). A line inside a report or an
    ETDump block may get another level from the parser, which reads it in context.
    """
    text = line_text(text)
    if not text:
        return None
    if text.find("]", 0, _PREFIX_MAX) > 0:
        m = _RUNTIME.match(text)
        if m is not None:
            return m[1]
    c = text[0]
    if c == "O" and text.startswith("Output["):
        return None
    if c not in _OTHER_FIRST:
        if text.endswith(_LAUNCH_FAILURES):
            return None
    elif text[1:3] == ": " and c in "EWID":
        return c
    elif c == "[" and text[2:4] == "] " and text[1] in "DIEWF":
        return text[1]
    elif _classify_other(text)[1] is not None:
        return None
    found = _runtime_inside(text)
    if found is not None:
        return found[2][1]
    return _foreign_prefix(text)[1]


def parse_log_bytes(data: bytes, **options: Any) -> list[Event]:
    """Every event of a whole log at once (``options`` go to :class:`RunnerLogParser`)."""
    parser = RunnerLogParser(**options)
    events = parser.feed(data)
    events.extend(parser.close())
    return events
