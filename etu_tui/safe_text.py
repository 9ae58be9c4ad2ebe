"""Text from a board or a simulator, made safe to show on a terminal.

A device can send anything: escape sequences that move the cursor, retitle the window or
rewrite the clipboard, bidirectional overrides that disguise text. Every control
character except tab is shown as a visible escape instead (``\\x1b``), so what is on screen
is exactly what was sent, and nothing it sent can act on the terminal.
"""

from __future__ import annotations

import re

_UNSAFE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` with every control and direction-changing character made visible."""
    return _UNSAFE.sub(_escape, text)
