"""A run's log read from its session file on disk: the Run tab's store for recorded runs,
and for a live run once it outgrows the in-memory ring.

``raw.log`` holds every byte a run printed; ``raw.index`` one ``<offset> <host time>`` line
per line start, in the same order. Neither is loaded. ``raw.log`` is scanned once in blocks
(a C-level ``bytes.count`` per 64 KiB chunk) into an ``array('Q')`` of how many lines start
before each chunk (16 bytes per 64 KiB of log, so 10 million lines index in ~150 KB), and
read back through a read-only ``mmap`` only for the lines on screen; ``raw.index`` is not
scanned at all: a line's time is found by bisecting its sorted offsets in place. A search
and a filter run over the file in blocks too, so a whole session of any length is
scrollable and searchable while the console holds a few chunks of it.
:meth:`FileLogStore.grow` picks up bytes appended since.
"""

from __future__ import annotations

import bisect
import mmap
import re
import threading
from array import array
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from etu_tui.widgets.run_model import TEXT, WHEN, Entry
from parsers.runner_events import LogLine
from runner.session import INDEX, RAW

CHUNK = 1 << 16  # bytes of a file per index entry
_BLOCK = 1 << 24  # bytes read at once by a scan or a search (a multiple of CHUNK)
_LEVEL_BLOCK = _BLOCK  # bytes read at once by a filter by level (any size)
_CACHED_CHUNKS = 64
LINE_BYTES = 1 << 16  # bytes of one line shown (a device may print megabytes without a newline)
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
# The level of a runtime line ("I [executorch:f.cpp:12 fn()] m") or a driver line ("E: m"):
# the parser's own rules, applied to the lines on screen only.
_RUNTIME = re.compile(r"([DIEF?]) (?:\d+:\d\d:\d\d\.\d+ )?\[?executorch:")


_NAMED = "DIEF"


def _level_pattern(levels: Iterable[str]) -> re.Pattern[bytes] | None:
    """Lines whose :func:`line_level` is one of ``levels`` (of D, I, E, F), found in bytes."""
    named = "".join(sorted(set(levels) & set(_NAMED)))
    if not named:
        return None
    driver = "".join(lv for lv in named if lv != "F")
    runtime = rf"[{named}] (?:\d+:\d\d:\d\d\.\d+ )?\[?executorch:"
    either = rf"{runtime}|[{driver}]: " if driver else runtime
    return re.compile(rf"^(?:{either})".encode(), re.M)


def line_level(text: str) -> str | None:
    m = _RUNTIME.match(text)
    if m is not None:
        return m[1]
    if text[1:3] == ": " and text[:1] in ("E", "W", "I", "D"):
        return text[0]
    return None


class LineFile:
    """The lines of a file that only grows, found by a chunk index and read via mmap."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.starts = array("Q")  # lines starting before chunk c (c * CHUNK)
        self.size = 0  # bytes indexed
        self.newlines = 0  # newlines in the first ``size`` bytes
        self._map: mmap.mmap | None = None
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
        assert self._map is not None
        return self._map[self.size - 1]

    def grow(self) -> bool:
        """Index bytes appended since the last call; True when there were any."""
        with self._lock:
            return self._grow()

    def _grow(self) -> bool:
        try:
            size = self.path.stat().st_size
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
        with open(self.path, "rb") as handle:
            handle.seek(at)
            while at < size:
                block = handle.read(min(_BLOCK, size - at))
                if not block:
                    break
                for offset in range(0, len(block), CHUNK):
                    self.starts.append(count)
                    count += block.count(b"\n", offset, offset + CHUNK)
                at += len(block)
        self.size, self.newlines = at, count
        if self._map is not None:
            self._map.close()
        with open(self.path, "rb") as handle:
            self._map = mmap.mmap(handle.fileno(), at, access=mmap.ACCESS_READ)
        for chunk in [c for c in self._chunks if c >= len(self.starts) - 2]:
            del self._chunks[chunk]
        return True

    def close(self) -> None:
        with self._lock:
            if self._map is not None:
                self._map.close()
                self._map = None

    def _newlines_in(self, chunk: int) -> list[int]:
        with self._lock:
            return self._newlines_in_locked(chunk)

    def _newlines_in_locked(self, chunk: int) -> list[int]:
        found = self._chunks.get(chunk)
        if found is not None:
            self._chunks.move_to_end(chunk)
            return found
        data = self._map
        assert data is not None
        found = []
        at, end = chunk * CHUNK, min((chunk + 1) * CHUNK, self.size)
        while (at := data.find(b"\n", at, end)) != -1:
            found.append(at)
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
        lo, hi = 0, len(starts)
        while lo < hi:  # the last chunk with fewer than ``number`` newlines before it
            mid = (lo + hi) // 2
            if starts[mid] < number:
                lo = mid + 1
            else:
                hi = mid
        chunk = lo - 1
        return self._newlines_in(chunk)[number - starts[chunk] - 1]

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
            assert self._map is not None
            return self._map[start:end]

    def line_at(self, offset: int) -> int:
        """The line holding byte ``offset``."""
        chunk = offset // CHUNK
        before = self.starts[chunk]
        found = self._newlines_in(chunk)
        lo, hi = 0, len(found)
        while lo < hi:
            mid = (lo + hi) // 2
            if found[mid] < offset:
                lo = mid + 1
            else:
                hi = mid
        return before + lo

    def find_all(
        self,
        needle: str,
        limit: int | None = None,
        start: int = 0,
        end: int | None = None,
        stop: Callable[[], bool] | None = None,
    ) -> array:
        """The lines holding ``needle`` (ASCII case folded) among bytes ``start:end``, in
        order: a scan over the file in blocks, holding one block at a time. ``stop`` is
        asked between blocks (a newer search makes this one moot)."""
        folded = needle.lower().encode("utf-8")
        hits = array("Q")
        end = self.size if end is None else min(end, self.size)
        if not folded or start >= end:
            return hits
        fold = folded != needle.upper().encode("utf-8")
        overlap = len(folded) - 1
        last = -1
        with open(self.path, "rb") as handle:
            at = start
            while at < end:
                if stop is not None and stop():
                    break
                handle.seek(at)
                block = handle.read(min(_BLOCK + overlap, end - at))
                if fold:
                    block = block.lower()
                pos = block.find(folded)
                while pos != -1:
                    line = self.line_at(at + pos)
                    if line != last:
                        hits.append(line)
                        last = line
                        if limit is not None and len(hits) >= limit:
                            return hits
                        nl = block.find(b"\n", pos)
                        if nl == -1:
                            break
                        pos = block.find(folded, nl + 1)
                    else:
                        pos = block.find(folded, pos + 1)
                at += _BLOCK
        return hits

    @staticmethod
    def _after_newline(handle, at: int, end: int) -> int:
        """The offset past the first newline at or after ``at`` (``end`` if none)."""
        while at < end:
            handle.seek(at)
            piece = handle.read(min(_LEVEL_BLOCK, end - at))
            newline = piece.find(b"\n")
            if newline != -1:
                return at + newline + 1
            at += len(piece)
        return end

    def level_lines(
        self, levels: Iterable[str], start_line: int, stop: Callable[[], bool] | None = None
    ) -> array:
        """The complete lines from ``start_line`` on whose level (:func:`line_level`, read
        from the bytes) is one of ``levels`` (D, I, E, F, "other"), in order."""
        chosen = set(levels)
        wanted = _level_pattern(chosen & set(_NAMED))
        if "other" not in chosen:  # only the named levels: their lines
            return self._matching_lines(wanted, start_line, stop) if wanted else array("Q")
        unwanted = _level_pattern(set(_NAMED) - chosen)
        shown = array("Q")
        if unwanted is None:  # every level
            shown.extend(range(start_line, self.newlines))
            return shown
        at = start_line
        for line in self._matching_lines(unwanted, start_line, stop):
            shown.extend(range(at, line))
            at = line + 1
        shown.extend(range(at, self.newlines))
        return shown

    def _matching_lines(
        self, pattern: re.Pattern[bytes], start_line: int, stop: Callable[[], bool] | None
    ) -> array:
        """Complete lines from ``start_line`` on that ``pattern`` matches at their start,
        scanned in blocks cut at a newline (a line is never split between two blocks)."""
        found = array("Q")
        with self._lock:
            at = self.span(start_line)[0] if start_line < self.newlines else self.size
            end = self._newline(self.newlines) + 1 if self.newlines else 0
        line = start_line
        with open(self.path, "rb") as handle:
            while at < end:
                if stop is not None and stop():
                    break
                handle.seek(at)
                block = handle.read(min(_LEVEL_BLOCK, end - at))
                cut = block.rfind(b"\n") + 1
                if cut == 0:  # a line longer than a block: only its start can match
                    if pattern.match(block):
                        found.append(line)
                    at = self._after_newline(handle, at + len(block), end)
                    line += 1
                    continue
                block = block[:cut]
                previous = 0
                for match in pattern.finditer(block):
                    line += block.count(b"\n", previous, match.start())
                    previous = match.start()
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
        self._map: mmap.mmap | None = None
        self.grow()

    def grow(self) -> None:
        try:
            size = self.path.stat().st_size
        except OSError:
            return
        if size <= self.size:
            return
        self.close()
        with open(self.path, "rb") as handle:
            self._map = mmap.mmap(handle.fileno(), size, access=mmap.ACCESS_READ)
        self.size = size

    def close(self) -> None:
        if self._map is not None:
            self._map.close()
            self._map = None

    def time_of(self, offset: int) -> float | None:
        """The host time of the last index line at or before byte ``offset`` of the log."""
        data = self._map
        if data is None:
            return None
        lo, hi, found = 0, self.size, None
        while lo < hi:  # [lo, hi) always holds whole index lines
            start = data.rfind(b"\n", 0, (lo + hi) // 2) + 1
            end = data.find(b"\n", start, hi)
            end = hi if end == -1 else end
            try:
                at, when = data[start:end].split()
                key, stamp = int(at), float(when)
            except ValueError:  # a torn line (the run was killed mid-write): skip it
                hi = start
                continue
            if key <= offset:
                found, lo = stamp, end + 1
            else:
                hi = start
        return found


class FileLogStore:
    """A recorded run's lines, as :class:`~etu_tui.widgets.run_model.LogStore` offers them,
    read from ``raw.log`` (bytes) and ``raw.index`` (host times) on demand.

    Searches and filters scan the file: :meth:`scan_cost` says how many bytes one would
    read, so the view runs a big one in a worker (``stop`` is asked between blocks)."""

    file_backed = True

    def __init__(self, folder: Path, started: float | None = None) -> None:
        self.folder = Path(folder)
        self.raw = LineFile(self.folder / RAW)
        self.index = LineTimes(self.folder / INDEX)
        self.fallback = started or 0.0
        self.first = 0
        self.widest = 0
        self._entries: OrderedDict[int, Entry] = OrderedDict()
        # needle → (lines holding it, bytes searched, complete lines then)
        self._hits: dict[str, tuple[array, int, int]] = {}
        self._search_lock = threading.Lock()

    @property
    def total(self) -> int:
        return self.raw.lines

    @property
    def complete(self) -> int:
        """Lines ended by a newline (a filter covers these; the last may still grow)."""
        return self.raw.newlines

    def __len__(self) -> int:
        return self.raw.lines

    def nbytes(self) -> int:
        """What the store holds in memory besides the mapped file (for tests and benches)."""
        return self.raw.starts.itemsize * len(self.raw.starts)

    def grow(self) -> bool:
        growing = self.raw.newlines  # the line that may have been cut short
        grown = self.raw.grow()
        self.index.grow()
        if grown:
            for seq in [seq for seq in self._entries if seq >= growing]:
                del self._entries[seq]
        return grown

    def close(self) -> None:
        self.raw.close()
        self.index.close()

    def scan_cost(self, needle: str = "") -> int:
        """Bytes a search for ``needle`` (a filter by level, with no needle) would read."""
        cached = self._hits.get(needle.lower()) if needle else None
        return self.raw.size - (cached[1] if cached else 0)

    def find_all(self, needle: str, stop: Callable[[], bool] | None = None) -> array | None:
        """Every line holding ``needle`` (case folded): searched once per needle, then only
        the bytes appended since. None when ``stop`` ended the search."""
        key = needle.lower()
        with self._search_lock:
            hits, searched, lines = self._hits.get(key, (array("Q"), 0, 0))
            with self.raw._lock:
                size, complete = self.raw.size, self.raw.newlines
                start = self.raw.span(lines)[0] if lines else 0
            if searched == size:
                return hits
            new = self.raw.find_all(key, start=start, end=size, stop=stop)
            if stop is not None and stop():
                return None
            kept = hits[: bisect.bisect_left(hits, lines)]  # a line then unfinished: again
            kept.extend(new)
            if len(self._hits) > 8 and key not in self._hits:
                self._hits.clear()
            self._hits[key] = (kept, size, complete)
            return kept

    def level_of(self, seq: int) -> str:
        """D, I, E, F or "other": the level of line ``seq`` from its first bytes."""
        level = line_level(self.raw.get(seq, 80).decode("utf-8", "replace"))
        return level if level is not None and level in _NAMED else "other"

    def filtered(
        self,
        needle: str,
        levels: frozenset[str],
        start_line: int = 0,
        stop: Callable[[], bool] | None = None,
    ) -> array | None:
        """The complete lines from ``start_line`` on holding ``needle`` at one of ``levels``
        (D, I, E, F, "other"); None when ``stop`` ended the scan."""
        if needle:
            found = self.find_all(needle, stop)
            if found is None:
                return None
            lo = bisect.bisect_left(found, start_line)
            picked = found[lo : bisect.bisect_left(found, self.raw.newlines, lo)]
            if levels >= {*_NAMED, "other"}:
                return picked
            return array("Q", (seq for seq in picked if self.level_of(seq) in levels))
        rows = self.raw.level_lines(levels, start_line, stop)
        return None if stop is not None and stop() else rows

    def _when(self, seq: int) -> float:
        when = self.index.time_of(self.raw.span(seq)[0])
        return self.fallback if when is None else when

    def entry(self, seq: int) -> Entry:
        cached = self._entries.get(seq)
        if cached is not None:
            return cached
        data = self.raw.get(seq, LINE_BYTES + 2)
        cut = len(data) > LINE_BYTES and not data.endswith(b"\n")
        if cut:  # shown up to LINE_BYTES; the hex view calls it a piece of a longer line
            raw, end = data[:LINE_BYTES], b""
        elif data.endswith(b"\r\n"):
            raw, end = data[:-2], b"\r\n"
        elif data.endswith(b"\n"):
            raw, end = data[:-1], b"\n"
        else:
            raw, end = data, b""
        text = raw.decode("utf-8", "replace")
        if "\x04" in text:
            text = text.replace("\x04", "")
        if "\x1b" in text:
            text = _ANSI.sub("", text)
        if cut:
            start, stop = self.raw.span(seq)
            text += f" … ({stop - start - LINE_BYTES:,} more bytes in the session file)"
        entry: Entry = (self._when(seq), seq + 1, raw, end, text, line_level(text), "stdout",
                        cut)  # fmt: skip
        self._entries[seq] = entry
        if len(self._entries) > 512:
            self._entries.popitem(last=False)
        return entry

    def line(self, seq: int) -> tuple[float, LogLine]:
        e = self.entry(seq)
        return e[WHEN], LogLine(e[1], e[2], e[3], e[TEXT], e[5], partial=False, stream="stdout")

    def time_before(self, seq: int) -> float | None:
        return self.entry(seq - 1)[WHEN] if seq >= 1 else None

    def last(self, count: int) -> list[tuple[int, Entry]]:
        count = min(count, self.total)
        return [(seq, self.entry(seq)) for seq in range(self.total - count, self.total)]

    def iter_from(self, seq: int, backwards: bool = False) -> Iterator[tuple[int, Entry]]:
        if backwards:
            for at in range(min(seq, self.total - 1), -1, -1):
                yield at, self.entry(at)
        else:
            for at in range(max(seq, 0), self.total):
                yield at, self.entry(at)

    def add(self, entries) -> None:  # a recorded run is read-only
        raise TypeError("a recorded session's log is read from its file")


__all__ = ["CHUNK", "FileLogStore", "LineFile", "LineTimes", "line_level"]
