"""Incremental parser for the console output of ExecuTorch's bare-metal ``arm_executor_runner``.

The bytes come from a UART: an FVP's stdout or a board's serial port, in chunks cut anywhere.
:class:`RunnerLogParser` turns them into :mod:`etu.parsers.runner_events`: a ``LogLine`` for every
physical line (the exact bytes, never one dropped), then what the line means when it is
recognised: program and method loading, planned buffers, the PMU report, the memory summary,
output tensors, BundleIO results, ETDump blocks, errors with their ``error.h`` names, faults,
FVP start/stop lines and the Ethos-U invokes etu answered on the emulated board. Formats of
ExecuTorch 0.1 to 1.5 are read (with or without the function name, ``%zu`` printed literally
as ``zu``); lines it does not know stay plain.
Messages are recognised by what they say whatever is in front: ExecuTorch's prefix after a
timestamp or trace tag, a platform's own prefix (Zephyr's ``[time] <inf> module:``), or no
prefix at all (a plain printf PAL: then a message is an error only when it says so).

This module is the byte-level split and the per-line dispatch (the hot loop). Prefixes and
levels are :mod:`etu.parsers.log_prefix`; the reports spread over several lines are gathered
by the collectors of :mod:`etu.parsers.runner_reports`; numbers inside a message are read by
:mod:`etu.parsers.log_values`.

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

import re
from typing import Any

from etu.parsers.log_prefix import (
    LAUNCH_FAILURES,
    OTHER_FIRST,
    PREFIX_MAX,
    RUNTIME_PREFIX,
    classify_other,
    foreign_prefix,
    line_level,
    line_text,
    runtime_inside,
)
from etu.parsers.log_summary import VERDICTS, LogSummary, summarize
from etu.parsers.log_values import after, leading_float, leading_int, status_in
from etu.parsers.npu_log import PREFIX as NPU_PREFIX
from etu.parsers.npu_log import npu_invoke
from etu.parsers.runner_events import (
    AssertFailed,
    BundleIOResult,
    EtdumpError,
    Event,
    FvpBanner,
    FvpStopped,
    InferenceFinished,
    InferenceStarted,
    InputsPrepared,
    LogLine,
    MethodAllocatorSetUp,
    MethodLoaded,
    MethodSelected,
    MissingKernel,
    OutputTensor,
    ProgramLoaded,
    PteLoaded,
    RunError,
    RunSucceeded,
    new_log_line,
)
from etu.parsers.runner_reports import (
    MEMORY_KEYS,
    U55_EVENTS,
    U85_EVENTS_5,
    U85_EVENTS_7,
    EtdumpCollector,
    FaultCollector,
    MemoryCollector,
    OutputCollector,
    PlannedCollector,
    PmuCollector,
    Report,
    npu_generation,
)
from etu.parsers.status_codes import status_name

__all__ = [
    "BLANK_RUN",
    "MAX_LINE",
    "U55_EVENTS",
    "U85_EVENTS_5",
    "U85_EVENTS_7",
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

_SPLIT = re.compile(rb"(\r\n|\r|\n)")
# A line's terminator and the empty lines right after it (their terminators, maybe none).
_SPLIT_RUNS = re.compile(rb"(\r\n|\r|\n)([\r\n]*)")
# Runs of this many empty lines or more become one LogLine (``lines``): a CR/LF flood costs
# one event, not one per byte; shorter runs stay a line each, as logs usually have them.
BLANK_RUN = 16
_BLANK_FLOODS = (b"\n" * BLANK_RUN, b"\r" * BLANK_RUN, b"\r\n" * BLANK_RUN)
_PREFIX_CACHE_SIZE = 4096
_FALLBACK_FIRST = frozenset("e0123456789o[")
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
_KERNEL = re.compile(r"kernel '([^']*)' not found")
_MISSING_OP = re.compile(r"Missing operator: \[(\w+)\] ?(\S+)?")
_SIM_TIME = re.compile(r"\[(\d+(?:\.\d+)? ?[munp]?s)\]")


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
        tail = at + len(_ASSERT_MARK)
        if body.startswith(" (", tail) and last_close >= tail + 2:
            close = body.find("): ", tail + 2)
            return body[start:at], body[tail + 2 : close], body[close + 3 :], None
        if body.startswith(": ", tail):
            return body[start:at], None, None, body[tail + 2 :]
        at = body.find(_ASSERT_MARK, at + 1)
    return None


def _utf8_cut(data: bytes | bytearray, limit: int) -> int:
    """A cut position ≤ limit that does not split a UTF-8 sequence (data is longer)."""
    cut = limit
    while cut > limit - 3 and cut > 0 and (data[cut] & 0xC0) == 0x80:
        cut -= 1
    return cut if cut > 0 and (data[cut] & 0xC0) != 0x80 else limit


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
        self._npu = npu_generation(npu)
        self._max = max_line
        self._max_etdump = max_etdump_text
        self._max_values = max_output_values
        self._buf = bytearray()
        self._next = 1  # number of the line being assembled
        self._long = False  # the line being assembled was already cut into pieces
        self._closed = False
        # Parse state.
        self._group: Report | None = None  # the multi-line report being collected
        self._prefix_cache: dict[str, Any] = {}
        self._pte_address: int | None = None
        self._pte_identifier: str | None = None
        self._method: str | None = None
        self._load_status: int | None = None
        self._load_failed = False
        self._bundle: dict[str, float | None] = {}
        self._etdump: EtdumpCollector | None = None
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
            NPU_PREFIX: self._h_npu,
        }
        for key in MEMORY_KEYS:
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
            out.append(self._etdump.unclosed())
            self._etdump = None
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
        prefix_max = PREFIX_MAX
        n = self._next  # kept local in the loop; self._next is synced around slow paths
        # Only the slow paths (_complete, _other) can open an ETDump block: re-read after them.
        in_etdump = self._etdump is not None
        for raw in parts:
            end = lf
            if crlf and raw[-1:] == b"\r":
                raw = raw[:-1]
                end = crlf_end
            if not raw and not in_etdump:  # an empty line: it only ends an open report
                append(make(n, raw, end, "", None, None, None, None, None, None, False, stream))
                if self._group is not None:
                    self._settle(None, out)
                n += 1
                continue
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
        m = RUNTIME_PREFIX.match(text) if close > 0 else None
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
        if self._etdump is not None and self._etdump.claims(text):
            out.append(
                new_log_line(n, raw, end, text, None, None, None, None, None, "etdump", False,
                            self._stream)
            )  # fmt: skip
            self._etdump_line(n, text, out)
            return
        close = text.find("]", 0, PREFIX_MAX)
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

    def _settle(self, kind: str | None, out: list[Event]) -> Report | None:
        """Close the open report unless this line continues it; return the open one."""
        group = self._group
        if group is not None and group.kind != kind:
            self._group = None
            out.append(group.finish())
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
            status = status_in(body)
            out.append(RunError(n, status, status_name(status), body, "runtime"))
        elif "ail" in body and ("fail" in body or "Fail" in body):
            status = status_in(body)
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
        size = leading_int(m.group(1)) if m else None
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
                    n,
                    int(m.group(1), 16) if m else None,
                    None,
                    leading_int(s.group(1)) if s else None,
                )
            )
            return True
        if body.startswith(("Model buffer loaded", "Model loaded, has")):
            out.append(ProgramLoaded(n, leading_int(after(body, "has "))))
            return True
        if body.startswith("Model executed successfully"):
            out.append(InferenceFinished(n, None, True))
            return True
        if body.startswith("Model run:"):
            if leading_int(after(body, ":")) == 0:
                out.append(RunError(n, None, None, body, "runtime"))
            return True
        if body.startswith("Model output match expected"):
            return True
        if body.startswith("Model output don't match"):
            self._bundle["rtol"] = leading_float(after(body, "rtol="))
            self._bundle["atol"] = leading_float(after(body, "atol="))
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
            out.append(InferenceStarted(n, None, leading_int(after(body, "number"))))
            return True
        return False

    def _h_setup(self, n: int, level: str, body: str, out: list[Event]) -> bool:
        if self._group is not None:
            self._settle(None, out)
        if body.startswith("Setup Method allocator pool"):
            m = _SIZE.search(body)
            out.append(MethodAllocatorSetUp(n, leading_int(m.group(1)) if m else None, "method"))
            return True
        if body.startswith("Setup planned FAST_MEMORY_REGION pool"):
            m = _SIZE.search(body)
            out.append(
                MethodAllocatorSetUp(n, leading_int(m.group(1)) if m else None, "planned_fast")
            )
            return True
        return False

    def _h_method(self, n: int, level: str, body: str, out: list[Event]) -> bool:
        if self._group is not None:
            self._settle(None, out)
        if body.startswith("Method allocator pool size:"):  # Zephyr mv2 sample
            out.append(MethodAllocatorSetUp(n, leading_int(after(body, ":")), "method"))
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
            status = status_in(body)
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
            out.append(InferenceStarted(n, leading_int(after(body, "running")), None))
            return True
        if body.startswith("Starting the model execution"):
            out.append(InferenceStarted(n, None, None))
            return True
        return False

    def _h_counted(self, n: int, level: str, body: str, out: list[Event]) -> bool:
        if self._group is not None:
            self._settle(None, out)
        if body.endswith("inferences finished"):
            out.append(InferenceFinished(n, leading_int(body), True))
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
        status = status_in(message) if message else None
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
            out.append(MissingKernel(n, m.group(2), leading_int(m.group(1))))
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
        self._bundle[name.strip()] = leading_float(value)
        return True

    def _h_bundle_result(self, n: int, level: str, body: str, out: list[Event]) -> bool:
        if self._group is not None:
            self._settle(None, out)
        if "Test_result:" not in body:
            return False
        passed = "PASS" in after(body, "Test_result:")
        stats = self._bundle
        self._bundle = {}
        out.append(
            BundleIOResult(
                n,
                leading_int(after(body, "index[")),
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

    # Reports over several lines: which lines belong is decided here, the collectors of
    # etu.parsers.runner_reports keep what they say.

    def _h_pmu(self, n: int, level: str, body: str, out: list[Event]) -> bool:
        if body.startswith("Inference completed in"):  # Zephyr mv2 sample
            if self._group is not None:
                self._settle(None, out)
            ms = leading_int(after(body, " in "))
            out.append(InferenceFinished(n, None, True, ms))
            return True
        if body.startswith("NPU Inferences"):
            if self._group is not None:  # a new report closes any earlier one
                self._settle(None, out)
            group = self._group = PmuCollector(n, self._npu)
        else:
            group = self._settle("pmu", out)
            if group is None:
                if not body.startswith(("ethosu_pmu_", "Ethos-U PMU", "Inference runtime")):
                    return False
                group = self._group = PmuCollector(n, self._npu)  # its first line was cut
        if group.add(body):  # the event list: the report's last line
            self._group = None
            out.append(group.finish())
        return True

    def _h_npu(self, n: int, level: str, body: str, out: list[Event]) -> bool:
        """An Ethos-U invoke etu answered on the emulated board; a failed one is also the
        run's error (its line names the operation)."""
        if self._group is not None:
            self._settle(None, out)
        event = npu_invoke(n, level, body)
        if event is None:
            return False
        out.append(event)
        if not event.ok:
            out.append(RunError(n, None, None, body, "runtime"))
        return True

    def _h_memory(self, n: int, level: str, body: str, out: list[Event]) -> bool:
        group = self._settle("memory", out)
        if group is None:
            group = self._group = MemoryCollector(n)
        return group.add(body)

    def _h_planned(self, n: int, level: str, body: str, out: list[Event]) -> bool:
        m = _PLANNED.search(body)
        if m is None:
            if self._group is not None:
                self._settle(None, out)
            return False
        group = self._settle("planned", out)
        if group is None:
            group = self._group = PlannedCollector(n)
        ident = leading_int(m.group(1))
        if "mem_id=" not in body and ident is not None:
            ident += 1  # ≤1.4: 0-based buffer index; mem_id = index + 1
        group.add(ident, leading_int(m.group(2)))
        return True

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
        if group is not None and group.index != index:
            self._settle(None, out)  # the next output starts
            group = None
        if group is None:
            group = self._group = OutputCollector(n, index, dtype, self._max_values)
        group.add(int(elem_s), token, dtype)

    def _h_zephyr_output(self, n: int, level: str, body: str, out: list[Event]) -> bool:
        if self._group is not None:
            self._settle(None, out)
        m = _ZEPHYR_OUTPUT.match(body.lstrip())
        if m is None:
            return False
        index_s, kind, dtype, numel = m.groups()
        self._group = OutputCollector(
            n, int(index_s), dtype, self._max_values, leading_int(numel) or 0, kind == "tensor"
        )
        return True

    def _h_zephyr_value(self, n: int, level: str, body: str, out: list[Event]) -> bool:
        group = self._settle("output", out)
        m = _ZEPHYR_VALUE.match(body.lstrip())
        if group is None or m is None:
            return False
        group.add(int(m.group(1)), m.group(2), group.dtype)
        return True

    # Hard faults: the platform's line plus its register line(s).

    def _start_fault(self, n: int, text: str, out: list[Event]) -> None:
        if self._group is not None:
            self._settle(None, out)
        self._group = FaultCollector(n, text)

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
        if c not in OTHER_FIRST:
            # Most plain lines: no prefix worth a look (one check for an FVP launch failure).
            origin = handler = None
            if text.endswith(LAUNCH_FAILURES):
                origin, handler = "script", "launch"
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
                out.append(RunError(n, status_in(message), None, message, None))
            return
        else:
            origin, handler = classify_other(text)
            if handler is None and self._unprefixed(n, raw, end, text, out):
                return
        out.append(
            new_log_line(n, raw, end, text, None, None, None, None, None, origin, False, stream)
        )
        if handler is None:
            if self._group is not None and not text.startswith("..."):
                self._settle(None, out)  # "...(Skipped)" inside a dump keeps it open
            return
        _OTHER_HANDLERS[handler](self, n, text, out)

    def _unprefixed(self, n: int, raw: bytes, end: bytes, text: str, out: list[Event]) -> bool:
        """A line the known formats did not claim, read by what it says whatever is in
        front: ExecuTorch's prefix after a foreign one (a timestamp, a trace tag), a
        platform's own prefix (Zephyr's ``[time] <inf> module:``), or none at all (a plain
        printf PAL). True when it was recognised (its LogLine and events are out)."""
        found = runtime_inside(text)
        if found is not None:
            inner, close, m = found
            level, file, line_no, function = (m[1], m[2], int(m[3]) if m[3] else None, m[4])
            begins = close + 2 if inner[close + 1 : close + 2] == " " else close + 1
            message = inner[begins:]
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
        stripped, level = foreign_prefix(text)
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
            status = status_in(body)
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
            group.add(message)  # Zephyr's fault dump continues
            return
        if "HARD FAULT" in message or "FATAL ERROR" in message:
            self._start_fault(n, message.strip(), out)
            return
        if self._group is not None:
            self._settle(None, out)
        if level == "E":
            status = status_in(message)
            out.append(RunError(n, status, status_name(status), message, "driver"))

    # Handlers of the kinds classify_other names (see _OTHER_HANDLERS).

    def _o_fault(self, n: int, text: str, out: list[Event]) -> None:
        self._start_fault(n, text.strip(), out)

    def _o_fault_more(self, n: int, text: str, out: list[Event]) -> None:
        group = self._group
        if group is not None and group.kind == "fault":
            group.add(text)
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
            model = after(body, "with FVP:").split()[:1]
            if model:
                out.append(FvpBanner(n, model[0]))

    def _o_info(self, n: int, text: str, out: list[Event]) -> None:
        if self._group is not None:
            self._settle(None, out)
        body = text[len("Info:") :].strip()
        if body.startswith("Simulation is stopping."):
            reason = after(body, "Reason:").strip().rstrip(".") or body
            low = reason.lower()
            kind = "time_limit" if "exceeded" in low or "limit" in low else "stopping"
            out.append(FvpStopped(n, kind, reason))
        elif "Simulation is terminated" in body:
            out.append(FvpStopped(n, "terminated", body.rstrip(".")))
        elif "Simulation stopped" in body:
            out.append(FvpStopped(n, "stopped", after(body, ": ").rstrip(".") or body))

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
            code = leading_int(after(text, ":"))
            out.append(FvpStopped(n, "exit", text.strip().rstrip("."), exit_code=code))
        elif text.strip() == "EXITTHESIM":
            out.append(FvpStopped(n, "shutdown_tag", "EXITTHESIM"))

    def _o_script(self, n: int, text: str, out: list[Event]) -> None:
        if self._group is not None:
            self._settle(None, out)
        if "Simulation complete," in text:
            code = leading_int(after(text, "Simulation complete,"))
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
        function = after(text, "function:").strip() or None
        out.append(AssertFailed(n, function, cond, None, None, None, text.strip()))

    def _o_etdump_start(self, n: int, text: str, out: list[Event]) -> None:
        if self._group is not None:
            self._settle(None, out)
        self._etdump = EtdumpCollector(n, text, self._etdump_blocks, self._max_etdump)
        self._etdump_blocks += 1

    # ----------------------------------------------------------------- ETDump block

    def _etdump_line(self, n: int, text: str, out: list[Event]) -> None:
        block = self._etdump
        if block is None:
            return
        if self._group is not None:
            self._settle(None, out)
        if not block.add(n, text, out):
            self._etdump = None


# classify_other's kinds of line → the parser's handler (a plain function of (parser, n,
# text, out)).
_OTHER_HANDLERS = {
    "banner": RunnerLogParser._o_banner,
    "info": RunnerLogParser._o_info,
    "warning": RunnerLogParser._o_warning,
    "fault": RunnerLogParser._o_fault,
    "fault_more": RunnerLogParser._o_fault_more,
    "exit": RunnerLogParser._o_exit,
    "etdump_start": RunnerLogParser._o_etdump_start,
    "script": RunnerLogParser._o_script,
    "assert": RunnerLogParser._o_assert,
    "launch": RunnerLogParser._o_launch,
}


def parse_log_bytes(data: bytes, **options: Any) -> list[Event]:
    """Every event of a whole log at once (``options`` go to :class:`RunnerLogParser`)."""
    parser = RunnerLogParser(**options)
    events = parser.feed(data)
    events.extend(parser.close())
    return events
