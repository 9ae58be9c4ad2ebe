"""A run's log read from its session file on disk: the Run tab's store for recorded runs.

``raw.log`` holds every byte a run printed; ``raw.index`` one ``<offset> <host time>`` line
per line start, in the same order. Neither is loaded: each is scanned once in blocks (a
C-level ``bytes.count`` per 64 KiB chunk) into an ``array('Q')`` of how many lines start
before each chunk (16 bytes per 64 KiB of log, so 10 million lines index in ~150 KB), and
read back through a read-only ``mmap`` only for the lines on screen. A search runs over the
file in blocks too, so a whole session of any length is scrollable and searchable while the
console holds a few chunks of it. :meth:`FileLogStore.grow` picks up bytes appended since.
"""

from __future__ import annotations

import mmap
import re
from array import array
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path

from etu_tui.widgets.run_model import TEXT, WHEN, Entry
from parsers.runner_events import LogLine
from runner.session import INDEX, RAW

CHUNK = 1 << 16  # bytes of a file per index entry
_BLOCK = 1 << 24  # bytes read at once by a scan or a search
_CACHED_CHUNKS = 64
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
# The level of a runtime line ("I [executorch:f.cpp:12 fn()] m") or a driver line ("E: m"):
# the parser's own rules, applied to the lines on screen only.
_RUNTIME = re.compile(r"([DIEF?]) (?:\d+:\d\d:\d\d\.\d+ )?\[?executorch:")


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
        if self._map is not None:
            self._map.close()
            self._map = None

    def _newlines_in(self, chunk: int) -> list[int]:
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

    def get(self, line: int) -> bytes:
        start, end = self.span(line)
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

    def find_all(self, needle: str, limit: int | None = None) -> array:
        """The lines holding ``needle`` (ASCII case folded), in order: a scan over the file
        in blocks, holding one block at a time."""
        folded = needle.lower().encode("utf-8")
        hits = array("Q")
        if not folded or not self.size:
            return hits
        fold = folded != needle.upper().encode("utf-8")
        overlap = len(folded) - 1
        last = -1
        with open(self.path, "rb") as handle:
            at = 0
            while at < self.size:
                handle.seek(at)
                block = handle.read(min(_BLOCK + overlap, self.size - at))
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


class FileLogStore:
    """A recorded run's lines, as :class:`~etu_tui.widgets.run_model.LogStore` offers them,
    read from ``raw.log`` (bytes) and ``raw.index`` (host times) on demand."""

    def __init__(self, folder: Path, started: float | None = None) -> None:
        self.folder = Path(folder)
        self.raw = LineFile(self.folder / RAW)
        self.index = LineFile(self.folder / INDEX) if (self.folder / INDEX).exists() else None
        self.fallback = started or 0.0
        self.first = 0
        self.widest = 0
        self._entries: OrderedDict[int, Entry] = OrderedDict()
        self._hits: dict[str, array] = {}

    @property
    def total(self) -> int:
        return self.raw.lines

    def __len__(self) -> int:
        return self.raw.lines

    def nbytes(self) -> int:
        """What the store holds in memory besides the mapped file (for tests and benches)."""
        held = self.raw.starts.itemsize * len(self.raw.starts)
        if self.index is not None:
            held += self.index.starts.itemsize * len(self.index.starts)
        return held

    def grow(self) -> bool:
        grown = self.raw.grow()
        if self.index is not None:
            self.index.grow()
        if grown:
            self._entries.pop(self.raw.newlines - 1, None)
            self._entries.pop(self.raw.newlines, None)
            self._hits.clear()
        return grown

    def close(self) -> None:
        self.raw.close()
        if self.index is not None:
            self.index.close()

    def _when(self, seq: int) -> float:
        index = self.index
        if index is None or seq >= index.lines:
            return self.fallback
        try:
            return float(index.get(seq).split()[1])
        except (IndexError, ValueError):
            return self.fallback

    def entry(self, seq: int) -> Entry:
        cached = self._entries.get(seq)
        if cached is not None:
            return cached
        data = self.raw.get(seq)
        if data.endswith(b"\r\n"):
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
        entry: Entry = (self._when(seq), seq + 1, raw, end, text, line_level(text), "stdout",
                        False)  # fmt: skip
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

    def find_all(self, needle: str) -> array:
        """Every line holding ``needle`` (case folded), computed once per needle."""
        key = needle.lower()
        hits = self._hits.get(key)
        if hits is None:
            hits = self.raw.find_all(key)
            if len(self._hits) > 8:
                self._hits.clear()
            self._hits[key] = hits
        return hits

    def add(self, entries) -> None:  # a recorded run is read-only
        raise TypeError("a recorded session's log is read from its file")


__all__ = ["CHUNK", "FileLogStore", "LineFile", "line_level"]
