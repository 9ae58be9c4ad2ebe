"""Values inside a runner-log message: counts, ratios, status codes, the text after a mark.

A runner prints with a small printf: ``%zu`` may come out as ``zu`` and ``%f`` as ``?``, so
a number that is not there is None, never an error.
"""

from __future__ import annotations

import re

_INT = re.compile(r"\s*(-?\d+)")
_FLOAT = re.compile(r"\s*(-?[0-9.]+(?:[eE][-+]?\d+)?|-?nan|-?inf)")
_STATUS = re.compile(r"(?:^|[\s:(])0x([0-9A-Fa-f]{1,4})\)?\.?\s*\Z")


def leading_int(text: str | None) -> int | None:
    """The leading decimal of ``text``; None for ``zu``/``?`` (unsupported printf)."""
    if not text:
        return None
    # The usual case, a count maybe between spaces and followed by a word: the first word
    # (str.lstrip drops what the regex's \s skips) all ASCII digits is the regex's match.
    word = text.lstrip().partition(" ")[0]
    if len(word) < 20 and word.isascii() and word.isdigit():
        return int(word)
    m = _INT.match(text)
    if m is None:
        return None
    try:
        return int(m.group(1))
    except ValueError:  # more digits than int() converts (4300): not a real count
        return None


def leading_float(text: str | None) -> float | None:
    """The leading decimal, exponent, ``nan`` or ``inf`` of ``text``; None if there is none."""
    if not text:
        return None
    m = _FLOAT.match(text)
    if not m:
        return None
    try:
        return float(m.group(1))
    except ValueError:
        return None


def after(text: str, sep: str) -> str:
    """What follows the first ``sep`` in ``text`` ("" when ``sep`` is absent)."""
    i = text.find(sep)
    return text[i + len(sep) :] if i >= 0 else ""


def status_in(message: str) -> int | None:
    """The ExecuTorch ``Error`` code a message ends with (``... 0x12``), if any.

    Only the last "0x" can start the code (what may follow it holds no "x"), so the search
    starts one character before it instead of trying every position of the message."""
    at = message.rfind("0x")
    if at < 0:
        return None
    m = _STATUS.search(message, at - 1 if at else 0)
    return int(m.group(1), 16) if m else None
