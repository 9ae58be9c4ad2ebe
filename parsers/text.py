"""Text from outside (files, devices, simulators) made safe to show on a terminal.

A file or a device can carry anything: escape sequences that move the cursor, retitle the
window (OSC 0/2) or rewrite the clipboard (OSC 52), device control strings (DCS, APC, PM,
SOS), bidirectional overrides and invisible formatters that disguise text, tag characters
that hide whole words. Each such character is shown as a visible escape instead, never
dropped: C0/C1 controls as ``\\x1b``, the others as ``<U+202E>``. With the ESC and C1
introducers made visible, no sequence can start, so what is on screen is exactly what was
sent and nothing it sent acts on the terminal. Pure: no terminal, no Textual.
"""

from __future__ import annotations

import re

# C0 (but tab), DEL, C1; soft hyphen; Arabic letter mark; zero-width and direction marks;
# line/paragraph separators and embeddings/overrides; word joiner and invisible operators;
# isolates; BOM; lone surrogates (undecodable file names); tag characters.
_OTHERS = (
    "\x7f-\x9f\u00ad\u061c\u200b-\u200f\u2028-\u202e"
    "\u2060-\u2064\u2066-\u2069\ufeff\ud800-\udfff\U000e0000-\U000e007f"
)
_UNSAFE = re.compile(f"[\x00-\x08\x0a-\x1f{_OTHERS}]")
_UNSAFE_KEEP_NEWLINE = re.compile(f"[\x00-\x08\x0b-\x1f{_OTHERS}]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0xA0 else f"<U+{code:04X}>"


def printable(text: str) -> str:
    """``text`` with every control, invisible and direction-changing character made visible
    (newlines too: one outside string stays one line)."""
    if text.isascii() and text.isprintable():
        return text
    return _UNSAFE.sub(_escape, str(text))


def printable_lines(text: str) -> str:
    """Like :func:`printable` but newlines are kept: for whole blocks of output."""
    return _UNSAFE_KEEP_NEWLINE.sub(_escape, text)


def is_printable(text: str) -> bool:
    """True when :func:`printable` would leave ``text`` as it is."""
    return _UNSAFE.search(text) is None
