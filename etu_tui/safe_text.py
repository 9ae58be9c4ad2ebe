"""Text from a board, a simulator or a file, made safe to show on a terminal.

The console's one rendering path for outside text: every widget that shows such text calls
:func:`printable`. The rules live in :mod:`parsers.text` (pure, shared with the headless
commands); see there for what is made visible and how.
"""

from __future__ import annotations

from parsers.text import is_printable, printable, printable_lines

__all__ = ["is_printable", "printable", "printable_lines"]
