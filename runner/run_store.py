"""A run's log read from its session file on disk: the Run tab's store for recorded runs,
and for a live run once it outgrows the in-memory ring.

The files are read in place (runner.session_file): the console holds a small index and the
lines on screen, so a whole session of any length is scrollable, searchable and filterable.
:meth:`FileLogStore.grow` picks up bytes appended since.
"""

from __future__ import annotations

import bisect
import threading
from array import array
from collections import OrderedDict
from collections.abc import Callable, Iterator
from pathlib import Path

from etu.parsers.log_prefix import line_level, line_text
from etu.parsers.runner_events import LogLine
from etu.runner.session import INDEX
from etu.runner.session import RAW as RAW_LOG
from etu.runner.session_file import NAMED_LEVELS, LineFile, LineTimes

# A kept line: (host time, line_no, raw, end, text, level, stream, partial). A plain tuple of
# strings and numbers, which the garbage collector stops tracking: 100,000 LogLine objects
# made every full collection walk them all (80 ms pauses in a flood); these it never visits.
Entry = tuple[float, int, bytes, bytes, str, "str | None", "str | None", bool]
WHEN, NUMBER, RAW, END, TEXT, LEVEL, STREAM, PARTIAL = range(8)

LINE_BYTES = 1 << 16  # bytes of one line shown (a device may print megabytes without a newline)


class FileLogStore:
    """A recorded run's lines, as :class:`~etu.runner.run_model.LogStore` offers them,
    read from ``raw.log`` (bytes) and ``raw.index`` (host times) on demand.

    Searches and filters scan the file: :meth:`scan_cost` says how many bytes one would
    read, so the view runs a big one in a worker (``stop`` is asked between blocks)."""

    file_backed = True

    def __init__(self, folder: Path, started: float | None = None) -> None:
        self.folder = Path(folder)
        self.raw = LineFile(self.folder / RAW_LOG)
        self.index = LineTimes(self.folder / INDEX)
        self.fallback = started or 0.0
        self.first = 0
        self.widest = 0
        self._entries: OrderedDict[int, Entry] = OrderedDict()
        # needle → (lines holding it, bytes searched, complete lines then)
        self._hits: dict[str, tuple[array, int, int]] = {}
        # One search per needle at a time (a worker's long search of one text never holds
        # up the UI's quick look at another's cached lines).
        self._search_locks: dict[str, threading.Lock] = {}

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
        with self._search_locks.setdefault(key, threading.Lock()):
            hits, searched, lines = self._hits.get(key, (array("Q"), 0, 0))
            size, complete = self.raw.extent()
            start = self.raw.span(lines)[0] if lines else 0  # a whole line: stays put
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
        """D, I, E, F or "other": the level the parser gives line ``seq`` on its own."""
        level = line_level(self.raw.get(seq, LINE_BYTES).rstrip(b"\r\n").decode("utf-8", "replace"))
        return level if level is not None and level in NAMED_LEVELS else "other"

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
            if levels >= {*NAMED_LEVELS, "other"}:
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
        text = line_text(raw.decode("utf-8", "replace"))
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
        return e[WHEN], LogLine(e[1], e[2], e[3], e[TEXT], e[5], partial=e[7], stream="stdout")

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


__all__ = ["LINE_BYTES", "FileLogStore"]
