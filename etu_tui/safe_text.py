"""Text from a board, a simulator or a file, made safe to show on a terminal.

The console's one rendering path for outside text: widgets that show such text call
:func:`printable` (so the escaped form is laid out at its real width), and
:class:`PrintableFilter`, installed on the app, passes every rendered line through the same
rule, so a widget that forgets cannot put a raw ESC, C1, bidi or invisible character on the
terminal. The rules live in :mod:`etu.parsers.text` (pure, shared with the headless commands).
"""

from __future__ import annotations

from rich.cells import cell_len
from rich.segment import Segment
from textual.color import Color
from textual.filter import LineFilter

from etu.parsers.text import is_printable, printable, printable_lines

__all__ = ["PrintableFilter", "is_printable", "printable", "printable_lines"]


def _clean(text: str) -> bool:
    return (text.isascii() and text.isprintable()) or is_printable(text)


class PrintableFilter(LineFilter):
    """Every segment of every rendered line made printable (the boundary to the terminal).

    A line that needed it is cut or padded back to the width it was laid out at (a raw
    control counts as zero cells, its escaped form as several), so the layout holds."""

    def apply(self, segments: list[Segment], background: Color) -> list[Segment]:
        if all(segment.control or _clean(segment.text) for segment in segments):
            return segments
        width = sum(cell_len(s.text) for s in segments if not s.control)
        safe = [
            s if s.control or _clean(s.text) else Segment(printable(s.text), s.style)
            for s in segments
        ]
        return Segment.adjust_line_length(safe, width)
