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

This module is the byte-level split and the per-line dispatch (the hot loop). What a runtime
message means is :mod:`etu.parsers.runner_messages` (a handler per first word, also for a
message behind a foreign prefix or none); what the
driver's, the platform's, the FVP's and the scripts' lines mean is
:mod:`etu.parsers.runner_other`; both are base classes of :class:`RunnerLogParser`. Prefixes
and levels are :mod:`etu.parsers.log_prefix`; the reports spread over several lines are
gathered by the collectors of :mod:`etu.parsers.runner_reports`; numbers inside a message are
read by :mod:`etu.parsers.log_values`.

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
  A chunk's lines come from C-level passes, not per-line tests: its CRs deleted in one
  replace (a memchr hop from CR to CR) and checked with one CRLF count, one split at LF, a
  mixed LF/CRLF chunk's ends looked up at once from its line ends alone, one decoding (an
  ASCII chunk at once; otherwise as Latin-1, only its non-ASCII lines decoded again, so one
  "♦" does not make every line a wide string). The EOT/ANSI/"♦" lines are found with
  ``bytes.find`` and take the full path; the lines between stay in the hot loop. The hot
  loop uses ``partition`` and indexing rather than ``find``/``startswith`` with bounds (each
  such call parses its arguments: in CPython 3.11 that cost more than the search), and
  builds a LogLine inline (see ``LogLineSlots``). A line of no known kind skips the
  foreign-prefix reading when its quick refusal is certain.
  ``_complete_many`` (the fast path) and ``_complete`` (the full path, line by line) give the
  same events (tests/unit/test_runner_log_fast_path.py).
* ETDump base64 is decoded, never run.
"""

from __future__ import annotations

import re
from itertools import repeat
from operator import itemgetter as _END_OF
from typing import Any

from etu.parsers.log_prefix import (
    ET_MARK,
    FOREIGN_FIRST,
    LAUNCH_FAILURES,
    OTHER_FIRST,
    PREFIX_MAX,
    RUNTIME_PREFIX,
    classify_other,
    line_level,
    line_text,
)
from etu.parsers.log_summary import VERDICTS, LogSummary, summarize
from etu.parsers.log_values import status_in
from etu.parsers.runner_events import (
    EtdumpError,
    Event,
    FvpStopped,
    LogLine,
    LogLineSlots,
    RunError,
    new_log_line,
)
from etu.parsers.runner_messages import FALLBACK_FIRST, RuntimeMessages
from etu.parsers.runner_other import OTHER_HANDLERS, OtherLines
from etu.parsers.runner_reports import (
    U55_EVENTS,
    U85_EVENTS_5,
    U85_EVENTS_7,
    EtdumpCollector,
    Report,
    npu_generation,
)

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
_LAUNCH_LAST = frozenset(failure[-1] for failure in LAUNCH_FAILURES)  # a cheap first refusal


_SPECIAL = (b"\x04", b"\x1b", "\u2666".encode())  # what ``_complete`` treats: EOT, ANSI, "♦"
# A line's end by the byte standing for it (LF, or CR for a CRLF), and what else is dropped.
_ENDS = tuple({10: b"\n", 13: b"\r\n"}.get(byte) for byte in range(256))
_NOT_CR_LF = bytes(byte for byte in range(256) if byte not in (10, 13))


def _special_lines(data: bytes, parts: list[bytes]) -> list[int]:
    """Indices of the lines ``parts`` (``data`` split at LF, without the unfinished rest)
    holding an EOT byte, an ANSI escape or "♦", in order. A line is found in ``parts`` by its
    bytes from the last one found on (an earlier equal line would hold the same mark)."""
    positions: list[int] = []
    for mark in _SPECIAL:
        pos = data.find(mark)
        while pos >= 0:
            positions.append(pos)
            pos = data.find(mark, pos + 1)
    found: list[int] = []
    stop = -1
    for pos in sorted(positions):
        if pos < stop:
            continue  # in the line just found
        stop = data.find(b"\n", pos)
        if stop < 0:
            break  # in the unfinished rest
        line = data[data.rfind(b"\n", 0, pos) + 1 : stop]
        found.append(parts.index(line, found[-1] + 1 if found else 0))
    return found


def _texts(data: bytes, parts: list[bytes]) -> list[str]:
    """The lines of ``data`` (``parts``, then the rest) as UTF-8 with replacement characters.
    Non-ASCII data is read as Latin-1 (the LFs fall where they do in the bytes) and only its
    non-ASCII lines decoded again: one "♦" does not make every line a wide string. A line
    ends at an ASCII byte, which ends any broken UTF-8 sequence: the texts are the lines'."""
    if data.isascii():
        return data.decode("ascii").split("\n")
    texts = data.decode("latin-1").split("\n")
    plain = list(map(str.isascii, texts))
    count = len(parts)
    i = -1
    while True:
        try:
            i = plain.index(False, i + 1, count)
        except ValueError:
            return texts
        texts[i] = parts[i].decode("utf-8", "replace")


def _has_long_line(data: bytes, cut: int, limit: int) -> bool:
    """Whether a line of ``data[:cut]`` (complete lines) is longer than ``limit`` bytes. Such
    a line holds an offset that is a multiple of ``limit``, so only those lines are looked
    at: a few C scans instead of every line's length."""
    for at in range(0, cut, limit):
        if data.find(b"\n", at) - data.rfind(b"\n", 0, at) - 1 > limit:
            return True
    return False


def _utf8_cut(data: bytes | bytearray, limit: int) -> int:
    """A cut position ≤ limit that does not split a UTF-8 sequence (data is longer)."""
    cut = limit
    while cut > limit - 3 and cut > 0 and (data[cut] & 0xC0) == 0x80:
        cut -= 1
    return cut if cut > 0 and (data[cut] & 0xC0) != 0x80 else limit


# --------------------------------------------------------------------------- the parser


class RunnerLogParser(OtherLines, RuntimeMessages):
    """Incremental: ``feed(chunk)`` as bytes arrive, ``close()`` at the end of the stream.

    ``stream`` is copied onto every LogLine (which pipe or port the bytes came from); ``npu``
    (``"ethos-u55-128"``, ``"U85"``…) names PMU counters when the log omits the event list.
    Never raises on input bytes; never blocks; holds at most ``max_line`` bytes of an
    unfinished line (plus a capped ETDump block being decoded).
    """

    # The hot loop for chunks whose CRs are all in CRLFs (False: every chunk takes the general
    # split and every line the full path; the tests compare the two).
    _fast_path = True

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
        self._runtime_handlers = self._message_handlers()

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
        # Fast path for chunks whose CRs are all in CRLFs: the CRs go in one C-level replace
        # (a CR left after it is one of its own: the general split), one split at LF, and
        # the per-line work only (the length limit is checked for the whole chunk at once).
        has_cr = b"\r" in data
        if _BLANK_FLOODS[0] in data or (has_cr and any(f in data for f in _BLANK_FLOODS[1:])):
            self._split_runs(data, out)
            return
        # Every CR in a CRLF (none ending the data, maybe half a CRLF) when there are as
        # many CRLFs as CRs; deleting one byte value is a memchr hop from CR to CR.
        lf = data.replace(b"\r", b"") if has_cr else data
        crlf = len(data) - len(lf)
        if self._fast_path and (not crlf or data.count(b"\r\n") == crlf):
            parts = lf.split(b"\n")
            rest = parts.pop()
            if parts:
                if not crlf:
                    self._lines(lf, parts, b"\n", False, out)
                elif crlf == len(parts):
                    self._lines(lf, parts, b"\r\n", False, out)
                else:
                    # LF and CRLF mixed: the line ends alone, in order (a CRLF made one CR),
                    # looked up at once; no per-line test.
                    ends = data.translate(None, _NOT_CR_LF).replace(b"\r\n", b"\r")
                    self._lines(lf, parts, list(_END_OF(*ends)(_ENDS)), True, out)
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

    def _lines(
        self,
        data: bytes,
        parts: list[bytes],
        end: bytes | list[bytes],
        mixed: bool,
        out: list[Event],
    ) -> None:
        """The complete lines ``parts`` of ``data`` (split at LF, no CR of their own), ending
        with ``end`` (or ``end[i]`` when ``mixed``): the hot loop, but for over-long lines
        (cut in pieces) and the lines holding EOT, ANSI or "♦" (the full path)."""
        ends = end if mixed else repeat(end)
        if self._long or _has_long_line(data, data.rfind(b"\n") + 1, self._max):
            line = self._line
            for raw, end_ in zip(parts, ends, strict=False):
                line(raw, end_, out)
            return
        texts = _texts(data, parts)
        special = _special_lines(data, parts)
        if special:
            self._complete_special(parts, texts, end, mixed, special, out)
        else:
            self._complete_many(parts, texts, end, mixed, out)

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

    def _complete_special(
        self,
        parts: list[bytes],
        texts: list[str],
        end: bytes | list[bytes],
        mixed: bool,
        special: list[int],
        out: list[Event],
    ) -> None:
        """A chunk with EOT bytes, ANSI codes or "♦" in it: the lines holding one (their
        indices: ``special``) go through ``_complete`` (which removes and reports them), the
        runs between through the hot loop, so the hot loop never looks for them line by line."""
        start = 0
        for i in special:
            if i > start:
                ends = end[start:i] if mixed else end
                self._complete_many(parts[start:i], texts[start:i], ends, mixed, out)
            self._complete(parts[i], end[i] if mixed else end, out)  # type: ignore[arg-type]
            start = i + 1
        if start < len(parts):
            ends = end[start:] if mixed else end
            self._complete_many(parts[start:], texts[start:], ends, mixed, out)

    def _complete_many(
        self,
        parts: list[bytes],
        texts: list[str],
        end: bytes | list[bytes],
        mixed: bool,
        out: list[Event],
    ) -> None:
        """The hot loop: the complete, short lines of one chunk (no CR of their own), with
        their texts (``texts[i]`` is ``parts[i]`` decoded) and their end (``end``, or
        ``end[i]`` when ``mixed``).

        Same result as ``_complete`` line by line (tests/unit/test_runner_log_fast_path.py
        holds them to it), with the common cases inlined: a runtime line whose prefix was
        seen before, dispatched on its first word; anything else goes through ``_complete``
        or ``_other``. String methods taking a start or an end cost an argument parse per
        call, so the loop partitions and indexes instead. A runtime line's LogLine is built
        here as a blank ``LogLineSlots`` relabelled (see there): no call per line.
        """
        cache = self._prefix_cache
        make = new_log_line
        blank = LogLineSlots
        log_line = LogLine
        append = out.append
        handlers = self._runtime_handlers
        rest = self._runtime_rest
        fallback = FALLBACK_FIRST
        stream = self._stream
        prefix_max = PREFIX_MAX
        n = self._next  # kept local in the loop; self._next is synced around slow paths
        # Only the slow paths (_complete, _other) can open an ETDump block: re-read after them.
        in_etdump = self._etdump is not None
        # texts (and a mixed end) have one more item, the unfinished rest: zip stops before.
        ends = end if mixed else repeat(end)
        for raw, text, end_ in zip(parts, texts, ends, strict=False):  # type: ignore[arg-type]
            if not raw and not in_etdump:  # an empty line: it only ends an open report
                append(make(n, raw, end_, "", None, None, None, None, None, None, False, stream))
                if self._group is not None:
                    self._settle(None, out)
                n += 1
                continue
            if in_etdump:
                self._next = n
                self._complete(raw, end_, out)
                n = self._next
                in_etdump = self._etdump is not None
                continue
            # The prefix up to the first "]" decides whether (and how) the line is a runtime
            # line; a log repeats a few hundred call sites, so the regex runs once per site.
            head, close, tail = text.partition("]")
            # Only heads that passed the length check are cached: a hit needs no check.
            info = cache.get(head) if close else False
            if info is None:
                info = self._prefix(text, len(head)) if 0 < len(head) < prefix_max else False
            if info is False:
                self._other(n, raw, end_, text, out)  # reads n, not self._next
                n += 1
                in_etdump = self._etdump is not None
                continue
            level, file, line_no, function = info
            message = tail.removeprefix(" ")
            line = blank()
            line.line_no = n
            line.raw = raw
            line.end = end_
            line.text = text
            line.level = level
            line.file = file
            line.line = line_no
            line.function = function
            line.message = message
            line.origin = "runtime"
            line.partial = False
            line.stream = stream
            line.lines = 1
            line.__class__ = log_line
            append(line)
            key = message.lstrip(" ").partition(" ")[0]
            handler = handlers.get(key)
            if handler is not None:
                if not handler(n, level, message, out):
                    rest(n, level, message, key, True, out)
            elif key[:1] not in fallback:
                # No handler and none of the fallbacks' first characters: _runtime_rest's
                # first steps inlined (the open report ends; then errors, "Demo Complete").
                if self._group is not None:
                    self._settle(None, out)
                if level in "EF" or "ail" in message or "Demo Complete" in message:
                    rest(n, level, message, key, False, out)
            else:
                rest(n, level, message, key, False, out)
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
            if text[-1:] in _LAUNCH_LAST and text.endswith(LAUNCH_FAILURES):
                origin, handler = "script", "launch"
            else:
                origin = handler = None
        elif c in "EWID" and text[1:3] == ": ":
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
        # A line of no known kind may still be a message behind a foreign prefix or none;
        # _unprefixed reads it unless its quick refusal below is certain (no ExecuTorch mark,
        # no foreign prefix, a first word no handler has, no failure).
        if (
            handler is None
            and (
                c in FOREIGN_FIRST
                or ET_MARK in text
                or "ail" in text
                or "!=" in text
                or (
                    (key := (text.lstrip(" ") if c == " " else text).partition(" ")[0])
                    in self._runtime_handlers
                )
                or key[:1] in "eo["
            )
            and self._unprefixed(n, raw, end, text, out)
        ):
            return
        line = LogLineSlots()  # new_log_line(...) inlined: most lines end here
        line.line_no = n
        line.raw = raw
        line.end = end
        line.text = text
        line.level = line.file = line.line = line.function = line.message = None
        line.origin = origin
        line.partial = False
        line.stream = stream
        line.lines = 1
        line.__class__ = LogLine
        out.append(line)
        if handler is None:
            if self._group is not None and not text.startswith("..."):
                self._settle(None, out)  # "...(Skipped)" inside a dump keeps it open
            return
        OTHER_HANDLERS[handler](self, n, text, out)

    # ----------------------------------------------------------------- ETDump block

    def _etdump_line(self, n: int, text: str, out: list[Event]) -> None:
        block = self._etdump
        if block is None:
            return
        if self._group is not None:
            self._settle(None, out)
        if not block.add(n, text, out):
            self._etdump = None


def parse_log_bytes(data: bytes, **options: Any) -> list[Event]:
    """Every event of a whole log at once (``options`` go to :class:`RunnerLogParser`)."""
    parser = RunnerLogParser(**options)
    events = parser.feed(data)
    events.extend(parser.close())
    return events
