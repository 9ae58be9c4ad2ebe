"""A read-only table drawn with the Line API: only the rows on screen are ever formatted.

A plan can hold 100k values; a DataTable would build 100k rows up front. Here the table
knows its row count, and ``render_line`` asks ``row_cells(index)`` for the few visible
rows (the LogLines design from Textualize/toolong).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import ClassVar, Literal

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import BindingType
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from etu.tui.keys import bindings
from etu.tui.safe_text import printable

SEPARATOR = " "


@dataclass(frozen=True, slots=True)
class Column:
    label: str
    width: int
    justify: Literal["left", "right"] = "left"
    shrink: bool = False  # may narrow (down to MIN_SHRUNK) so the row fits the widget


MIN_SHRUNK = 8


def layout_columns(columns: tuple[Column, ...], width: int) -> tuple[Column, ...]:
    """Narrow shrinkable columns, last first, until the row fits ``width`` if it can."""
    laid = list(columns)
    excess = sum(c.width for c in laid) + len(SEPARATOR) * max(len(laid) - 1, 0) - width
    for i in reversed(range(len(laid))):
        if excess <= 0:
            break
        column = laid[i]
        if column.shrink and column.width > MIN_SHRUNK:
            cut = min(excess, column.width - MIN_SHRUNK)
            laid[i] = replace(column, width=column.width - cut)
            excess -= cut
    return tuple(laid)


def fit(text: str, width: int, justify: Literal["left", "right"] = "left") -> str:
    """Pad or cut ``text`` to exactly ``width`` cells, marking a cut with an ellipsis."""
    if cell_len(text) > width:
        return set_cell_size(text, width - 1) + "…" if width > 1 else set_cell_size(text, width)
    if justify == "right":
        return " " * (width - cell_len(text)) + text
    return set_cell_size(text, width)


class VirtualTable(ScrollView, can_focus=True):
    """Fixed header, a cursor row, keyboard scrolling; subclasses supply the rows."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {"vtable--header", "vtable--cursor"}

    DEFAULT_CSS = """
    VirtualTable {
        height: 1fr;
        scrollbar-size-vertical: 1;
        & > .vtable--header { text-style: bold; color: $text-primary; }
        & > .vtable--cursor { background: $block-cursor-blurred-background; }
        &:focus > .vtable--cursor {
            background: $block-cursor-background;
            color: $block-cursor-foreground;
            text-style: bold;
        }
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = bindings("table")

    cursor_row: reactive[int] = reactive(0, layout=False, init=False)

    class RowHighlighted(Message):
        """The cursor moved: ``index`` is the row under it."""

        def __init__(self, table: VirtualTable, index: int) -> None:
            super().__init__()
            self.table = table
            self.index = index

        @property
        def control(self) -> VirtualTable:
            return self.table

    def __init__(
        self,
        columns: Sequence[Column] = (),
        *,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._columns: tuple[Column, ...] = tuple(columns)
        self._laid_out = self._columns
        self._row_count = 0
        self._update_virtual_size()

    # -- what subclasses provide -------------------------------------------------------

    def row_cells(self, index: int) -> Sequence[str]:
        """The cell texts of row ``index`` (called only for rows on screen)."""
        raise NotImplementedError

    def row_class(self, index: int) -> str | None:
        """A component class that colours the whole row, or None."""
        return None

    # -- data --------------------------------------------------------------------------

    @property
    def row_count(self) -> int:
        return self._row_count

    @property
    def columns(self) -> tuple[Column, ...]:
        return self._columns

    def reset(self, row_count: int, columns: Sequence[Column] | None = None) -> None:
        """Point the table at new rows: cursor and scroll go back to the top."""
        if columns is not None:
            self._columns = tuple(columns)
        self._row_count = row_count
        self._update_virtual_size()
        self.set_reactive(VirtualTable.cursor_row, 0)
        self.scroll_to(0, 0, animate=False, immediate=True)
        self.refresh()

    def _update_virtual_size(self) -> None:
        self._laid_out = layout_columns(self._columns, self.size.width)
        width = sum(c.width for c in self._laid_out) + len(SEPARATOR) * max(
            len(self._laid_out) - 1, 0
        )
        self.virtual_size = Size(width, self._row_count + 1)  # +1: the header line

    def on_resize(self) -> None:
        self._update_virtual_size()

    # -- rendering ---------------------------------------------------------------------

    def _line(self, cells: Sequence[str], style: Style) -> Strip:
        # Cells hold outside text (operator, layer, symbol names): made printable here, the
        # one place every table row is drawn.
        texts = [
            fit(printable(text), column.width, column.justify)
            for text, column in zip(cells, self._laid_out, strict=False)
        ]
        return Strip([Segment(SEPARATOR.join(texts), style)])

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        width = self.size.width
        base = self.rich_style
        if y == 0:
            style = base + self.get_component_rich_style("vtable--header", partial=True)
            strip = self._line([c.label for c in self._columns], style)
            return strip.crop_extend(scroll_x, scroll_x + width, base)
        index = scroll_y + y - 1
        if not 0 <= index < self._row_count:
            return Strip.blank(width, base)
        style = base
        row_class = self.row_class(index)
        if row_class:
            style += self.get_component_rich_style(row_class, partial=True)
        if index == self.cursor_row:
            style += self.get_component_rich_style("vtable--cursor", partial=True)
        strip = self._line(self.row_cells(index), style)
        # The cursor bar spans the whole width, past the last column.
        fill = style if index == self.cursor_row else base
        return strip.crop_extend(scroll_x, scroll_x + width, fill)

    # -- cursor ------------------------------------------------------------------------

    @property
    def _page_height(self) -> int:
        return max(self.scrollable_content_region.height - 1, 1)

    def validate_cursor_row(self, value: int) -> int:
        return max(0, min(value, self._row_count - 1))

    def watch_cursor_row(self, old: int, new: int) -> None:
        self._scroll_cursor_into_view()
        self.refresh()
        self.post_message(self.RowHighlighted(self, new))

    def _scroll_cursor_into_view(self) -> None:
        row = self.cursor_row
        top = round(self.scroll_y)
        if row < top:
            self.scroll_to(y=row, animate=False, immediate=True)
        elif row > top + self._page_height - 1:
            self.scroll_to(y=row - self._page_height + 1, animate=False, immediate=True)

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is not None and offset.y > 0:
            self.cursor_row = round(self.scroll_y) + offset.y - 1

    def action_cursor(self, delta: int) -> None:
        self.cursor_row += delta

    def action_page(self, direction: int) -> None:
        self.cursor_row += direction * self._page_height

    def action_jump(self, index: int) -> None:
        self.cursor_row = self._row_count - 1 if index < 0 else index
