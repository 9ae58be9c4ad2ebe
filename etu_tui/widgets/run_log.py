"""The Run tab's log: a Line-API view of a run's ring of lines, and a hex view of one line.

Only the rows on screen are ever formatted (the toolong LogLines design), so a run printing
20,000 lines a second costs the UI a list append per line and a repaint per batch. Filtering
keeps a list of matching line numbers, extended as lines arrive. Every line is shown through
:func:`etu.tui.safe_text.printable`: nothing a device prints can act on the terminal.
"""

from __future__ import annotations

import bisect
from array import array
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import ClassVar

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import BindingType
from textual.content import Content
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widgets import Static

from etu.parsers.errors import describe_error
from etu.parsers.runner_events import LogLine
from etu.runner.run_model import (
    LEVEL,
    LEVELS,
    STREAM,
    TEXT,
    WHEN,
    Entry,
    LogStore,
    entry_level,
)
from etu.tui.keys import bindings
from etu.tui.numbers import time_text
from etu.tui.safe_text import printable

TIME_MODES = ("relative", "delta", "absolute", "off")
_TIME_WIDTH = {"relative": 10, "delta": 10, "absolute": 13, "off": 0}
_LEVEL_CLASS = {"D": "log--debug", "E": "log--error", "F": "log--fatal"}
HEX_LIMIT = 128  # bytes of a line shown in the hex view
# A search or filter reading more of a session file than this runs in a worker (the view
# says "searching…"); less is read at once, in the key's handler.
SCAN_IN_PLACE = 4 << 20


def hexdump(data: bytes, limit: int = HEX_LIMIT) -> list[str]:
    """``0000  49 20 5b …  I [e…``: 16 bytes a row, printable ASCII on the right."""
    rows = []
    for offset in range(0, min(len(data), limit), 16):
        block = data[offset : offset + 16]
        left = " ".join(f"{b:02x}" for b in block[:8])
        right = " ".join(f"{b:02x}" for b in block[8:])
        text = "".join(chr(b) if 0x20 <= b < 0x7F else "." for b in block)
        rows.append(f"{offset:04x}  {left:<23}  {right:<23}  {text}")
    if len(data) > limit:
        rows.append(f"… {len(data) - limit:,} more bytes")
    return rows


@dataclass
class LogViewMessage(Message):
    """Base of the messages a LogView posts about itself (its ``control``)."""

    view: LogView

    @property
    def control(self) -> LogView:
        return self.view


class LogView(ScrollView, can_focus=True):
    """A run's lines: follow mode, filter by text and level, search, time column, cursor."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "log--time",
        "log--debug",
        "log--error",
        "log--fatal",
        "log--stderr",
        "log--match",
        "log--cursor",
    }

    DEFAULT_CSS = """
    LogView {
        height: 1fr;
        scrollbar-size-vertical: 1;
        scrollbar-size-horizontal: 1;
        & > .log--time { color: $text-muted; }
        & > .log--debug { color: $text-muted; }
        & > .log--error { color: $text-error; }
        & > .log--fatal { color: $text-error; text-style: bold reverse; }
        & > .log--stderr { color: $text-warning; }
        & > .log--match { background: $warning 60%; text-style: bold; }
        & > .log--cursor { background: $block-cursor-blurred-background; }
        &:focus > .log--cursor { background: $block-cursor-background; }
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = bindings("log")

    # How the time column shows each line's host arrival time (one of TIME_MODES).
    time_mode: reactive[str] = reactive("relative", init=False)

    @dataclass
    class CursorMoved(LogViewMessage):
        """The cursor is on line ``seq`` (None: no lines)."""

        seq: int | None

    @dataclass
    class FilterApplied(LogViewMessage):
        """The filter's rows are known (a worker read a big session file for them)."""

        token: int
        rows: array | None
        failure: str | None = None  # why the file could not be filtered (one line)

    @dataclass
    class SearchReady(LogViewMessage):
        """The lines holding ``term`` are known: the find that waited for them can go on."""

        term: str
        forward: bool
        failure: str | None = None  # why the file could not be searched (one line)

    @dataclass
    class FollowChanged(LogViewMessage):
        follow: bool

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.store: LogStore | None = None
        self.start: float | None = None  # relative times count from here
        self.filter_text = ""
        self.levels: frozenset[str] = frozenset(LEVELS)
        self._matches: deque[int] | array | None = None  # seqs shown, when a filter is on
        self._filter_token = 0  # the filter a worker computes rows for
        self.filter_pending = False  # a worker is reading the session file for the rows
        self.search_pending = ""  # the text a worker is searching the session file for
        self._keep: int | None = None  # the cursor's line when the filter changed
        self._seen = 0  # store.total when the shown rows were last brought up to date
        self._first = 0  # store.first then
        self.search = ""
        self._follow = True
        self.cursor: int | None = None  # the seq under the cursor

    # -- state -------------------------------------------------------------------------

    @property
    def follow(self) -> bool:
        return self._follow

    @follow.setter
    def follow(self, value: bool) -> None:
        if value == self._follow:
            return
        self._follow = value
        if value:
            self._to_end()
        self.post_message(self.FollowChanged(self, value))

    def validate_time_mode(self, mode: str) -> str:
        if mode not in TIME_MODES:
            raise ValueError(f"time mode is one of {', '.join(TIME_MODES)}")
        return mode

    def watch_time_mode(self) -> None:
        self._update_size()
        self.refresh()

    @property
    def filtering(self) -> bool:
        return self._matches is not None

    @property
    def row_count(self) -> int:
        if self.store is None:
            return 0
        return len(self._matches) if self._matches is not None else len(self.store)

    def seq_at(self, row: int) -> int:
        assert self.store is not None
        return self._matches[row] if self._matches is not None else self.store.first + row

    def row_of(self, seq: int) -> int:
        """The row showing ``seq``, or the row of the next shown line after it."""
        if self.store is None:
            return 0
        if self._matches is not None:
            return bisect.bisect_left(self._matches, seq)
        return seq - self.store.first

    def line(self, seq: int | None) -> tuple[float, LogLine] | None:
        """Line ``seq`` and its arrival time, when it is kept."""
        store = self.store
        if store is None or seq is None or not store.first <= seq < store.total:
            return None
        return store.line(seq)

    def rows(self) -> Iterable[tuple[int, LogLine]]:
        """Every shown line as (seq, line), for tests and copying."""
        store = self.store
        for row in range(self.row_count):
            seq = self.seq_at(row)
            yield seq, store.line(seq)[1]  # type: ignore[union-attr]

    def _shown(self, entry: Entry) -> bool:
        if entry_level(entry) not in self.levels:
            return False
        return not self.filter_text or self.filter_text in entry[TEXT].lower()

    # -- data --------------------------------------------------------------------------

    def show(self, store: LogStore | None, start: float | None) -> None:
        """Point the view at another run's lines (filter and time mode stay)."""
        self.store, self.start = store, start
        self._rebuild()
        self.cursor = None
        if self._follow:
            self._to_end()
        else:
            self._move_to_row(0)
            self.scroll_to(0, 0, animate=False, immediate=True, force=True)
        self.refresh()

    def set_filter(self, text: str, levels: Iterable[str]) -> None:
        self.filter_text = text.lower()
        self.levels = frozenset(levels)
        self._keep = self.cursor
        self._rebuild()
        self._place_cursor()

    def _place_cursor(self) -> None:
        keep = self._keep
        if self._follow or keep is None:
            self._to_end()
        else:
            self._move_to_row(min(self.row_of(keep), max(self.row_count - 1, 0)))
        self.refresh()

    def _rebuild(self) -> None:
        store = self.store
        filtering = bool(self.filter_text) or self.levels != frozenset(LEVELS)
        self._filter_token += 1
        self.filter_pending = False
        if store is None or not filtering:
            self._matches = None
        elif store.file_backed:
            self._seen = store.complete
            if store.scan_cost(self.filter_text) <= SCAN_IN_PLACE:
                self._matches = store.filtered(self.filter_text, self.levels)
            else:  # nothing shown until the worker has read the file
                self._matches = array("Q")
                self.filter_pending = True
                self.run_worker(
                    partial(
                        self._filter_in_thread,
                        store,
                        self.filter_text,
                        self.levels,
                        self._filter_token,
                    ),
                    thread=True,
                    group="log-filter",
                    exit_on_error=False,
                )
            self._first = 0
            self._update_size()
            return
        else:
            shown = self._shown
            kept = store.iter_from(store.first)
            self._matches = deque(seq for seq, entry in kept if shown(entry))
        self._seen = store.total if store else 0
        self._first = store.first if store else 0
        self._update_size()

    def _filter_in_thread(self, store, text: str, levels: frozenset[str], token: int) -> None:
        """The rows of a filter over a big session file (a worker: it only posts)."""
        try:
            rows = store.filtered(text, levels, stop=lambda: token != self._filter_token)
        except Exception as error:  # a session file gone or unreadable: said, never raised
            self.post_message(self.FilterApplied(self, token, array("Q"), describe_error(error)))
            return
        self.post_message(self.FilterApplied(self, token, rows))

    def on_log_view_filter_applied(self, message: FilterApplied) -> None:
        if message.token != self._filter_token or message.rows is None:
            return
        if message.failure is not None:
            self.notify(message.failure, title="Filter", severity="error", markup=False)
        self._matches = message.rows
        self.filter_pending = False
        self.appended()  # the lines that came while the worker read
        self._place_cursor()

    def appended(self) -> None:
        """The store got lines: show them (matching the filter), drop what the ring
        dropped, keep the viewport on the same lines unless following."""
        store = self.store
        if store is None:
            return
        new = store.total - self._seen
        dropped_rows = 0
        if store.file_backed:
            matches = self._matches
            if matches is None:
                self._seen = store.complete
            elif self.filter_pending:
                pass  # the worker's rows, then the lines from _seen on (its start)
            elif self.filter_text and store.scan_cost(self.filter_text) > SCAN_IN_PLACE:
                self._rebuild()  # the text's lines were forgotten: a worker reads them again
            else:
                while matches and matches[-1] >= self._seen:
                    matches.pop()  # a line that was still growing: filtered again
                found = store.filtered(self.filter_text, self.levels, self._seen)
                matches.extend(found or ())
                self._seen = store.complete
        elif self._matches is not None:
            shown = self._shown
            self._matches.extend(seq for seq, entry in store.last(new) if shown(entry))
            first, matches = store.first, self._matches
            while matches and matches[0] < first:
                matches.popleft()
                dropped_rows += 1
        else:
            dropped_rows = store.first - self._first
        if not store.file_backed:
            self._seen, self._first = store.total, store.first
        self._update_size()
        if self._follow:
            self._to_end()
        else:
            if dropped_rows:
                self.scroll_to(y=max(self.scroll_y - dropped_rows, 0), animate=False, force=True)
            if self.cursor is not None and self.cursor < store.first:
                self._move_to_row(0)
        self.refresh()

    def _update_size(self) -> None:
        widest = self.store.widest if self.store else 0
        size = Size(_TIME_WIDTH[self.time_mode] + 1 + widest, self.row_count)
        old = self.virtual_size
        if size == old:
            return
        view = self.container_size
        if size.width == old.width and min(size.height, old.height) > view.height > 0:
            # Only more (or fewer) rows past a full view: the scrollbars stay as they are,
            # so skip the screen-wide layout a virtual_size change asks for (at 20 batches a
            # second that layout is most of the cost of a flood) and resize them in place.
            self.set_reactive(ScrollView.virtual_size, size)
            self._scroll_update(size)
            self.refresh()
            return
        self.virtual_size = size
        if self._follow:  # scrollbars may come or go with the layout: end there again
            self.call_after_refresh(self._end_if_following)

    def _end_if_following(self) -> None:
        if self._follow:
            self._to_end()

    def watch_show_horizontal_scrollbar(self, shown: bool) -> None:
        """A long line brings the horizontal scrollbar, which takes a row from the view
        without resizing the widget: a following log must end on the last line again."""
        if self._follow:
            self.call_after_refresh(self._end_if_following)

    def on_resize(self, event: events.Resize) -> None:
        """Following survives the pane changing height (e.g. the banner above it growing
        when a run ends): end on the last line now, and again once the new size is laid
        out (the scroll range is only known after the layout)."""
        if self._follow:
            self._to_end()
            self.call_after_refresh(self._end_if_following)

    @property
    def at_rest(self) -> bool:
        """Following, the cursor and the view have reached the last line (follow-mode
        scrolling is deferred to after a refresh; screenshots wait for it)."""
        if not self._follow or not self.row_count:
            return True
        return self.cursor_row == self.row_count - 1 and self.scroll_y >= self.max_scroll_y

    # -- cursor and scrolling ----------------------------------------------------------

    @property
    def cursor_row(self) -> int | None:
        return None if self.cursor is None else self.row_of(self.cursor)

    def _move_to_row(self, row: int) -> None:
        count = self.row_count
        seq = self.seq_at(max(0, min(row, count - 1))) if count else None
        if seq != self.cursor:
            self.cursor = seq
            self.post_message(self.CursorMoved(self, seq))
        if seq is not None:
            self._scroll_row_into_view(self.row_of(seq))
        self.refresh()

    def _scroll_row_into_view(self, row: int) -> None:
        top = round(self.scroll_y)
        height = max(self.scrollable_content_region.height, 1)
        if row < top:
            self.scroll_to(y=row, animate=False, immediate=True, force=True)
        elif row > top + height - 1:
            self.scroll_to(y=row - height + 1, animate=False, immediate=True, force=True)

    def _to_end(self) -> None:
        count = self.row_count
        seq = self.seq_at(count - 1) if count else None
        if seq != self.cursor:
            self.cursor = seq
            self.post_message(self.CursorMoved(self, seq))
        height = max(self.scrollable_content_region.height, 1)
        self.scroll_to(y=max(count - height, 0), animate=False, immediate=True, force=True)

    def jump_to(self, seq: int) -> None:
        """Put the cursor on line ``seq`` (following stops)."""
        self.follow = False
        self._move_to_row(self.row_of(seq))

    def action_cursor(self, delta: int) -> None:
        self.follow = False
        row = self.cursor_row
        self._move_to_row((self.row_count - 1 if row is None else row) + delta)

    def action_page(self, direction: int) -> None:
        self.action_cursor(direction * max(self.scrollable_content_region.height - 1, 1))

    def action_first(self) -> None:
        self.follow = False
        self._move_to_row(0)

    def action_last(self) -> None:
        self.follow = True
        self._to_end()
        self.refresh()

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is not None and self.row_count:
            self.follow = False
            self._move_to_row(round(self.scroll_y) + offset.y)

    def on_mouse_scroll_up(self, event: events.MouseScrollUp) -> None:
        self.follow = False

    # -- search ------------------------------------------------------------------------

    def _hits(self, needle: str) -> Sequence[int] | None:
        """The shown lines holding ``needle``, from a store that searches its file in
        blocks (run_store.FileLogStore); None for the in-memory ring, no text, or while a
        worker searches a big file for them."""
        store = self.store
        if store is None or not store.file_backed or not needle:
            return None
        if store.scan_cost(needle) > SCAN_IN_PLACE:
            return None
        hits = store.find_all(needle)
        matches = self._matches
        if matches is None or hits is None:
            return hits
        return [seq for seq in hits if _holds(matches, seq)]

    def _search_in_thread(self, store, term: str, forward: bool) -> None:
        """Search a big session file for ``term`` (a worker: it only posts)."""
        try:
            store.find_all(term, stop=lambda: self.search_pending != term)
        except Exception as error:  # a session file gone or unreadable: said, never raised
            self.post_message(self.SearchReady(self, term, forward, describe_error(error)))
            return
        self.post_message(self.SearchReady(self, term, forward))

    def on_log_view_search_ready(self, message: SearchReady) -> None:
        if message.term == self.search_pending:
            self.search_pending = ""

    def find(self, term: str, forward: bool = True) -> int | None:
        """Move the cursor to the next (previous) shown line containing ``term``, wrapping
        around; returns its seq, or None when no shown line has it (or a worker is reading
        a big session file for it: ``search_pending``, then SearchReady)."""
        self.search = term
        self.refresh()
        needle = term.lower()
        count = self.row_count
        if not needle or not count:
            return None
        store = self.store
        assert store is not None
        if store.file_backed and store.scan_cost(needle) > SCAN_IN_PLACE:
            if self.search_pending != needle:
                self.search_pending = needle
                self.run_worker(
                    partial(self._search_in_thread, store, needle, forward),
                    thread=True,
                    group="log-search",
                    exit_on_error=False,
                )
            return None
        hits = self._hits(needle)
        if hits is not None:
            if not hits:
                return None
            here = self.cursor
            if forward:
                at = 0 if here is None else bisect.bisect_right(hits, here)
                seq = hits[at % len(hits)]
            else:
                at = len(hits) if here is None else bisect.bisect_left(hits, here)
                seq = hits[at - 1]  # -1 wraps to the last
            self.jump_to(seq)
            return seq
        here = self.cursor_row
        if here is None:
            here = -1 if forward else count
        order = (
            [*range(here + 1, count), *range(0, min(here + 1, count))]
            if forward
            else [*range(here - 1, -1, -1), *range(count - 1, max(here - 1, -1), -1)]
        )
        store = self.store
        assert store is not None
        for row in order:
            seq = self.seq_at(row)
            if needle in store.entry(seq)[TEXT].lower():
                self.jump_to(seq)
                return seq
        return None

    def match_count(self, term: str, seq: int | None = None) -> tuple[int, int | None]:
        """How many shown lines contain ``term``, and the 1-based rank of line ``seq``
        among them (None when it is not one)."""
        needle = term.lower()
        store = self.store
        if not needle or store is None:
            return 0, None
        hits = self._hits(needle)
        if hits is not None:
            at = bisect.bisect_left(hits, seq) if seq is not None else len(hits)
            return len(hits), at + 1 if at < len(hits) and hits[at] == seq else None
        total, rank = 0, None
        for row in range(self.row_count):
            at = self.seq_at(row)
            if needle in store.entry(at)[TEXT].lower():
                total += 1
                if at == seq:
                    rank = total
        return total, rank

    # -- rendering ---------------------------------------------------------------------

    def line_style(self, line: LogLine | Entry) -> Style:
        if isinstance(line, LogLine):
            level, stream = line.level, line.stream
        else:
            level, stream = line[LEVEL], line[STREAM]
        name = _LEVEL_CLASS.get(level or "")
        style = self.get_component_rich_style(name, partial=True) if name else Style()
        if stream == "stderr" and not name:
            style += self.get_component_rich_style("log--stderr", partial=True)
        return style

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        width = self.size.width
        base = self.rich_style
        row = scroll_y + y
        store = self.store
        if store is None or not 0 <= row < self.row_count:
            return Strip.blank(width, base)
        seq = self.seq_at(row)
        entry = store.entry(seq)
        when = entry[WHEN]
        cursor = seq == self.cursor
        extra = self.get_component_rich_style("log--cursor", partial=True) if cursor else None
        segments = []
        if self.time_mode != "off":
            before = store.time_before(seq) if self.time_mode == "delta" else None
            stamp = time_text(self.time_mode, when, self.start, before)
            style = base + self.get_component_rich_style("log--time", partial=True)
            segments.append(Segment(stamp, style + extra if extra else style))
        text = printable(entry[TEXT])
        style = base + self.line_style(entry)
        if extra:
            style += extra
        segments.extend(self._highlight(text, style))
        strip = Strip(segments)
        fill = base + extra if extra else base
        if cell_len(text) + _TIME_WIDTH[self.time_mode] + 1 > self.virtual_size.width:
            self.call_later(self._widen, cell_len(text))
        return strip.crop_extend(scroll_x, scroll_x + width, fill)

    def _highlight(self, text: str, style: Style) -> list[Segment]:
        needle = self.search.lower()
        if not needle:
            return [Segment(text, style)]
        folded = text.lower()
        if len(folded) != len(text) or needle not in folded:
            return [Segment(text, style)]
        match = style + self.get_component_rich_style("log--match", partial=True)
        out, at = [], 0
        while (found := folded.find(needle, at)) != -1:
            if found > at:
                out.append(Segment(text[at:found], style))
            out.append(Segment(text[found : found + len(needle)], match))
            at = found + len(needle)
        if at < len(text):
            out.append(Segment(text[at:], style))
        return out

    def _widen(self, cells: int) -> None:
        if self.store is not None and cells > self.store.widest:
            self.store.widest = cells
            self._update_size()


def _holds(rows: Sequence[int], seq: int) -> bool:
    """Whether the sorted ``rows`` hold ``seq``."""
    at = bisect.bisect_left(rows, seq)
    return at < len(rows) and rows[at] == seq


class HexView(Static):
    """The bytes of the line under the log's cursor, exactly as received."""

    DEFAULT_CSS = """
    HexView {
        display: none;
        height: auto;
        max-height: 11;
        border-top: solid $primary;
        padding: 0 1;
        &.-shown { display: block; }
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.lines: list[str] = []

    def show_line(self, seq: int | None, line: LogLine | None) -> None:
        if line is None or seq is None:
            self.lines = []
            self.update(Content.styled("No line under the cursor.", "dim"))
            return
        data = line.raw + line.end
        ending = {b"\n": "LF", b"\r\n": "CR LF", b"\r": "CR"}.get(line.end, "no line end")
        head = (
            f"line {line.line_no:,} · {line.stream or 'stdout'} · {len(line.raw):,} bytes "
            f"+ {ending}" + (" · piece of a longer line" if line.partial else "")
        )
        self.lines = [head, *hexdump(data)]
        self.update(
            Content("\n").join([Content.styled(head, "bold"), *map(Content, self.lines[1:])])
        )
