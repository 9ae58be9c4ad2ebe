"""A session's log files read in place: lines of a file that only grows, and their times.

``raw.log`` holds every byte a run printed; ``raw.index`` one ``<offset> <host time>`` line
per line start, in the same order. Neither is loaded. ``raw.log`` is scanned once in blocks
(a C-level ``bytes.count`` per 64 KiB chunk) into an ``array('Q')`` of how many lines start
before each chunk (16 bytes per 64 KiB of log, so 10 million lines index in ~150 KB), and
read back with ``os.pread`` only for the lines asked for; ``raw.index`` is not scanned at
all: a line's time is found by bisecting its sorted offsets in place. A search and a filter
by level run over the file in blocks, holding one block at a time.

Both are opened once, as regular files (a FIFO, a device or a link is refused, and a log
past the session cap when first opened), and read with ``pread``, never mapped: a file cut
short under the console (truncated, replaced) reads back shorter, where a map of it would
kill the process with SIGBUS.

A search of a big file runs in a child process (:func:`offsets_in_child`): the scan is
C-level ``bytes`` work that holds the GIL, and in the console's process it would share one
core with the UI thread. Plain files and the standard library only: the child imports
nothing else.
"""

from __future__ import annotations

import bisect
import itertools
import os
import re
import subprocess
import sys
import threading
from array import array
from collections import OrderedDict
from collections.abc import Callable, Iterable
from pathlib import Path

CHUNK = 1 << 16  # bytes of a file per index entry
_BLOCK = 1 << 24  # bytes read at once by a scan or a search (a multiple of CHUNK)
_LEVEL_BLOCK = _BLOCK  # bytes read at once by a filter by level (any size)
SEARCH_IN_CHILD = 64 << 20  # bytes past which a search runs in a child process
_CACHED_CHUNKS = 64
# A line's level is the parser's (etu.parsers.log_prefix.line_level). A filter by level reads
# it from the bytes for the two forms that decide it at the line's start, ExecuTorch's
# prefix ("I [executorch:f.cpp:12 fn()] m": its level, or none if the prefix is malformed)
# and a driver's ("E: m"); a line that could get a level some other way (a foreign prefix
# before ExecuTorch's, a platform's level tag, a colour code) is decoded and asked. Plain
# log lines, nearly all of them, stay in C.
_START = rb"(?:\d+:\d\d:\d\d\.\d+ )?\[?executorch:"
_PREFIX = _START + rb"[^:\]\s]*(?::(?:\d+|\w+))?(?: [^\](\n]*\(\))?\]"
_PREFIX_MAX = 160  # the parser looks for a prefix's "]" this far (characters): past it, ask
_PLAIN = rb"[DIEF?] " + _START + rb"|[EWID]: "
_MAYBE = rb"(?P<maybe>(?!" + _PLAIN + rb")(?:[\x1b\x04\[<(0-9]|[^\n]{0,640}?executorch:))"

NAMED_LEVELS = "DIEF"
_LINE_READ = 1 << 16  # bytes of a line a level is read from (a view's longest line)
_INDEX_LINE = 256  # bytes of a raw.index line past which it is torn (runner.session's)
_NO_CAP = 1 << 62  # a file etu already opened, read again while it grows


def _open_regular(path: Path, what: str, cap: int) -> int:
    """A descriptor of ``path`` if it is a regular file (not a link) of at most ``cap``
    bytes; else a ParseError naming it. (parsers.files is imported here: the search child
    imports nothing it does not use.)"""
    from etu.parsers.files import open_regular

    return open_regular(path, what, cap, follow=False)[0]


def _open_log(path: Path):
    """``path`` (a session log) opened for reading, refused unless a regular file."""
    return open(_open_regular(path, "a session log", _NO_CAP), "rb", closefd=True)


def _log_cap() -> int:
    from etu.runner.session import LOG_CAP

    return LOG_CAP


def read_at(fd: int | None, at: int, size: int) -> bytes:
    """Bytes ``at:at+size`` of an open file as it is now: fewer (or none) if it was cut
    short since it was indexed, never a SIGBUS as a mapping of it would give."""
    if fd is None or size <= 0:
        return b""
    try:
        return os.pread(fd, size, at)
    except OSError:
        return b""


class _LevelScan:
    """The lines at some of the named levels (D, I, E, F), found in a block of bytes."""

    def __init__(self, levels: Iterable[str]) -> None:
        # The parser's rules, for the lines the bytes leave open (imported here: the search
        # child, which never filters by level, imports nothing beyond this module).
        from etu.parsers.log_prefix import line_level

        self._level_of = line_level
        self.levels = frozenset(levels) & frozenset(NAMED_LEVELS)
        named = "".join(sorted(self.levels)).encode()
        driver = named.replace(b"F", b"")
        forms = [rb"[" + named + rb"] " + _PREFIX] if named else []
        if driver:
            forms.append(rb"[" + driver + rb"]: ")
        self.pattern = re.compile(rb"^(?:" + b"|".join([*forms, _MAYBE]) + rb")", re.M)

    def __bool__(self) -> bool:
        return bool(self.levels)

    def holds(self, block: bytes, at: int) -> bool:
        """Whether the line starting at ``at`` is at one of the levels (the parser's)."""
        end = block.find(b"\n", at, at + _LINE_READ)
        line = block[at : end if end >= 0 else at + _LINE_READ].rstrip(b"\r")
        return self._level_of(line.decode("utf-8", "replace")) in self.levels


class LineFile:
    """The lines of a file that only grows, found by a chunk index and read via mmap."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.starts = array("Q")  # lines starting before chunk c (c * CHUNK)
        self.size = 0  # bytes indexed
        self.newlines = 0  # newlines in the first ``size`` bytes
        self._fd: int | None = None  # opened at the first growth (the file may not exist yet)
        self._last = (0, 0x0A)  # (size, the last byte of the first ``size`` bytes)
        self._chunks: OrderedDict[int, list[int]] = OrderedDict()  # chunk → its newlines
        # A search or filter worker reads lines while the UI thread grows the file's map.
        self._lock = threading.RLock()
        self.grow()

    @property
    def lines(self) -> int:
        """Lines in the file (a last line without its newline counts)."""
        tail = self.size and (self.newlines == 0 or self._last_byte() != 0x0A)
        return self.newlines + (1 if tail else 0)

    def _last_byte(self) -> int:
        size = self.size
        if self._last[0] != size:
            last = self._read(size - 1, 1)
            self._last = (size, last[0] if last else 0x0A)  # cut short since: no line added
        return self._last[1]

    def _read(self, at: int, size: int) -> bytes:
        """Bytes ``at:at+size`` of the file as it is now (fewer if it was cut short)."""
        return read_at(self._fd, at, size)

    def grow(self) -> bool:
        """Index bytes appended since the last call; True when there were any."""
        with self._lock:
            return self._grow()

    def _grow(self) -> bool:
        if self._fd is None:
            if not os.path.lexists(self.path):
                return False  # not written yet
            self._fd = _open_regular(self.path, "a session log", _log_cap())
        try:
            size = os.fstat(self._fd).st_size
        except OSError:
            return False
        if size <= self.size:
            return False
        # Re-index from the start of the last (possibly partial) chunk: its count of lines
        # before it is already known and stays right however the file grew.
        at = 0
        count = 0
        if self.starts:
            at = (len(self.starts) - 1) * CHUNK
            count = self.starts.pop()
        buffer = bytearray(min(_BLOCK, size - at))  # read into, not allocated per block
        with memoryview(buffer) as view:
            while at < size:
                got = os.preadv(self._fd, [view[: min(len(buffer), size - at)]], at)
                if not got:
                    break
                for offset in range(0, got, CHUNK):
                    self.starts.append(count)
                    count += buffer.count(b"\n", offset, min(offset + CHUNK, got))
                at += got
        self.size, self.newlines = at, count
        for chunk in [c for c in self._chunks if c >= len(self.starts) - 2]:
            del self._chunks[chunk]
        return True

    def extent(self) -> tuple[int, int]:
        """(bytes, newlines) indexed, read together (another thread may be growing it)."""
        with self._lock:
            return self.size, self.newlines

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def _newlines_in(self, chunk: int) -> list[int]:
        """Offsets of the newlines in ``chunk`` (the last few chunks asked for are kept)."""
        with self._lock:
            found = self._chunks.get(chunk)
            if found is not None:
                self._chunks.move_to_end(chunk)
                return found
            first = chunk * CHUNK
            data = self._read(first, min((chunk + 1) * CHUNK, self.size) - first)
            found = []
            at = 0
            while (at := data.find(b"\n", at)) != -1:
                found.append(first + at)
                at += 1
            self._chunks[chunk] = found
            if len(self._chunks) > _CACHED_CHUNKS:
                self._chunks.popitem(last=False)
            return found

    def _newline(self, number: int) -> int:
        """Offset of the ``number``-th newline (1-based); the file's end past the last."""
        if number > self.newlines:
            return self.size
        starts = self.starts
        chunk = bisect.bisect_left(starts, number) - 1  # the last with fewer before it
        found = self._newlines_in(chunk)
        nth = number - starts[chunk] - 1
        if nth >= len(found):  # the file was cut short since it was indexed
            return min((chunk + 1) * CHUNK, self.size)
        return found[nth]

    def span(self, line: int) -> tuple[int, int]:
        """(start, end) of line ``line`` (0-based), the end past its newline."""
        start = 0 if line == 0 else self._newline(line) + 1
        end = self._newline(line + 1)
        return start, min(end + 1, self.size)

    def get(self, line: int, limit: int | None = None) -> bytes:
        """Line ``line``'s bytes with its newline; at most ``limit`` of them."""
        with self._lock:
            start, end = self.span(line)
            if limit is not None:
                end = min(end, start + limit)
            return self._read(start, end - start)

    def line_at(self, offset: int) -> int:
        """The line holding byte ``offset``."""
        chunk = offset // CHUNK
        return self.starts[chunk] + bisect.bisect_left(self._newlines_in(chunk), offset)

    def find_all(
        self,
        needle: str,
        start: int = 0,
        end: int | None = None,
        stop: Callable[[], bool] | None = None,
    ) -> array:
        """The lines holding ``needle`` (ASCII case folded) among bytes ``start:end``, in
        order. ``stop`` is asked between blocks (a newer search makes this one moot)."""
        end = self.size if end is None else min(end, self.size)
        if end - start > SEARCH_IN_CHILD:
            offsets = offsets_in_child(self.path, needle, start, end)
        else:
            offsets = find_offsets(self.path, needle, start, end, stop)
        return array("Q", map(self.line_at, offsets))

    def level_lines(
        self, levels: Iterable[str], start_line: int, stop: Callable[[], bool] | None = None
    ) -> array:
        """The complete lines from ``start_line`` on whose level (the parser's, see
        ``_LevelScan``) is one of ``levels`` (D, I, E, F, "other"), in order."""
        chosen = set(levels)
        complete = self.extent()[1]  # lines whole now: the file may grow meanwhile
        wanted = _LevelScan(chosen)
        if "other" not in chosen:  # only the named levels: their lines
            if not wanted:
                return array("Q")
            return self._matching_lines(wanted, start_line, complete, stop)
        unwanted = _LevelScan(set(NAMED_LEVELS) - chosen)
        shown = array("Q")
        at = start_line
        if unwanted:  # every line but those at the levels left out
            for line in self._matching_lines(unwanted, start_line, complete, stop):
                shown.extend(range(at, line))
                at = line + 1
        shown.extend(range(at, complete))
        return shown

    def _matching_lines(
        self,
        scan: _LevelScan,
        start_line: int,
        complete: int,
        stop: Callable[[], bool] | None,
    ) -> array:
        """Lines ``start_line`` to ``complete`` at the levels of ``scan``, scanned in blocks
        cut at a newline (a line is never split between two blocks)."""
        found = array("Q")
        if start_line >= complete:
            return found
        at = self.span(start_line)[0]
        end = self.span(complete - 1)[1]
        line = start_line
        with _open_log(self.path) as handle:
            while at < end:
                if stop is not None and stop():
                    break
                handle.seek(at)
                block = handle.read(min(_LEVEL_BLOCK, end - at))
                if not block:
                    break  # cut short since
                cut = block.rfind(b"\n") + 1
                if cut == 0:  # a line longer than a block: only its start can match
                    if scan.holds(block, 0):
                        found.append(line)
                    at = _line_end(handle, at + len(block), end)
                    line += 1
                    continue
                block = block[:cut]
                previous = 0
                for match in scan.pattern.finditer(block):
                    start = match.start()
                    asked = match.lastgroup is not None or match.end() - start > _PREFIX_MAX
                    if asked and not scan.holds(block, start):
                        continue  # a line that had to be asked, and is at another level
                    line += block.count(b"\n", previous, start)
                    previous = start
                    found.append(line)
                line += block.count(b"\n", previous)
                at += len(block)
        return found


class LineTimes:
    """``raw.index`` looked up in place: its lines are sorted by offset, so the time of the
    line starting at a byte offset is a bisection over the file's bytes (a few dozen reads
    per line on screen, nothing per line of the file)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.size = 0
        self._fd: int | None = None
        self.grow()

    def grow(self) -> None:
        if self._fd is None:
            if not os.path.lexists(self.path):
                return
            # bisected in place, never read whole: the log's cap, not the whole index's
            self._fd = _open_regular(self.path, "a session's raw.index", _log_cap())
        try:
            size = os.fstat(self._fd).st_size
        except OSError:
            return
        self.size = max(size, self.size)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def _read(self, at: int, size: int) -> bytes:
        return read_at(self._fd, at, size)

    def time_of(self, offset: int) -> float | None:
        """The host time of the last index line at or before byte ``offset`` of the log."""
        if self._fd is None:
            return None
        lo, hi, found = 0, self.size, None
        while lo < hi:  # [lo, hi) always holds whole index lines
            middle = (lo + hi) // 2
            back = max(lo, middle - _INDEX_LINE)
            window = self._read(back, min(hi, middle + _INDEX_LINE + 1) - back)  # one read
            first = window.rfind(b"\n", 0, middle - back) + 1  # 0: none, ``back`` starts it
            start = back + first
            newline = window.find(b"\n", first)
            end = back + (newline if newline != -1 else len(window))
            try:
                if newline == -1 and end < hi:  # longer than any index line, or cut short
                    raise ValueError(window)
                at, when = window[first : end - back].split()
                key, stamp = int(at), float(when)
            except ValueError:  # a torn line (the run was killed mid-write): skip it
                hi = start
                continue
            if key <= offset:
                found, lo = stamp, end + 1
            else:
                hi = start
        return found


def find_offsets(
    path: Path, needle: str, start: int, end: int, stop: Callable[[], bool] | None = None
) -> array:
    """The offset of the first hit of ``needle`` (ASCII case folded) in each line that holds
    one, among bytes ``start:end`` of ``path``: a scan in blocks, one block held at once."""
    folded = needle.lower().encode("utf-8")
    hits = array("Q")
    if not folded or start >= end:
        return hits
    fold = folded != needle.upper().encode("utf-8")
    overlap = len(folded) - 1
    after = start  # hits before this are in a line already counted
    with _open_log(path) as handle:
        at = start
        while at < end:
            if stop is not None and stop():
                break
            handle.seek(at)
            block = handle.read(min(_BLOCK + overlap, end - at))
            if not block:
                break  # cut short since
            if fold:
                block = block.lower()
            pos = block.find(folded, max(after - at, 0))
            while pos != -1:
                hits.append(at + pos)
                newline = block.find(b"\n", pos)
                if newline == -1:  # the line goes on past this block
                    after = _line_end(handle, at + len(block), end)
                    break
                after = at + newline + 1
                pos = block.find(folded, newline + 1)
            at += _BLOCK
    return hits


def _line_end(handle, at: int, end: int) -> int:
    """The offset past the first newline at or after ``at`` (``end`` if none)."""
    while at < end:
        handle.seek(at)
        piece = handle.read(min(_BLOCK, end - at))
        if not piece:
            return end  # cut short since
        newline = piece.find(b"\n")
        if newline != -1:
            return at + newline + 1
        at += len(piece)
    return end


def offsets_in_child(path: Path, needle: str, start: int, end: int) -> array:
    """:func:`find_offsets` in isolated child processes, one per core, each over its own
    run of whole lines: their cores, not the UI's, and a 650 MB session searched in about
    the time one core takes for half of it."""
    from etu.runner.isolated import ChildError, isolated_python, last_line

    cuts = [start]
    with _open_log(path) as handle:
        parts = max(min(os.cpu_count() or 1, 8), 1)
        for n in range(1, parts):
            cut = _line_end(handle, start + (end - start) * n // parts, end)
            if cuts[-1] < cut < end:
                cuts.append(cut)
    cuts.append(end)
    children = [
        subprocess.Popen(
            isolated_python("etu.runner.session_file", str(path), needle, str(lo), str(hi)),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for lo, hi in itertools.pairwise(cuts)
    ]
    hits = array("Q")
    failures = []
    for child in children:
        out, err = child.communicate()
        if child.returncode != 0:
            failures.append(last_line(err))
        hits.frombytes(out[: len(out) // hits.itemsize * hits.itemsize])
    if failures:
        raise ChildError(f"{path}: the search failed ({failures[0]})")
    return hits


def main(argv: list[str]) -> int:
    path, needle, start, end = Path(argv[0]), argv[1], int(argv[2]), int(argv[3])
    from etu.parsers.errors import ParseError

    try:
        hits = find_offsets(path, needle, start, end)
    except ParseError as error:
        print(error, file=sys.stderr)
        return 1
    except OSError as error:
        print(f"{path}: {error.strerror or error}", file=sys.stderr)
        return 1
    sys.stdout.buffer.write(hits.tobytes())
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
