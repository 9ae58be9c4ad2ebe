"""How etu writes a number (and a log line's time): one formatter for the CLI's text and
the console's widgets, so ``etu sessions`` and the History tab (or ``etu compile --sweep``
and the Compile tab's sweep) print the same figure the same way.

Pure: no Textual, no I/O. The CLI's tables mark a missing figure with ``-``; a widget may
pass its own mark (``–``).
"""

from __future__ import annotations

import time

MISSING = "-"


def number(
    value: object,
    *,
    digits: int | None = None,
    scale: float = 1.0,
    signed: bool = False,
    missing: str = MISSING,
) -> str:
    """One figure for a table cell or a line.

    None gives ``missing``; a bool yes / no; an int (unscaled) is exact, with thousands
    separators (cycles, bytes and counters are compared against other tools' figures); a
    float, or an int times ``scale``, has ``digits`` decimals, else six significant digits;
    anything else is its text. ``signed``: a change, always with its sign (``+1,024``).
    """
    if value is None:
        return missing
    if isinstance(value, bool):
        return "yes" if value else "no"
    sign = "+" if signed else ""
    if isinstance(value, int) and scale == 1.0:
        return format(value, f"{sign},")
    if isinstance(value, int | float):
        precision = ".6g" if digits is None else f".{digits}f"
        return format(value * scale, f"{sign},{precision}")
    return str(value)


def percent(
    value: float | None, *, digits: int = 2, signed: bool = False, missing: str = MISSING
) -> str:
    """A share or a change in percent (``+3.25%``)."""
    return missing if value is None else f"{number(value, digits=digits, signed=signed)}%"


def seconds(value: float | None, *, missing: str = MISSING) -> str:
    """A duration in a table: tenths of a second (``12.3s``)."""
    return missing if value is None else f"{value:.1f}s"


def transfer(sent: int, total: int, rate: float, eta: float | None = None, retries: int = 0) -> str:
    """A flash's progress, as ``etu flash`` prints it and the Boards tab shows it:
    ``12,288 / 65,536 B · 3.2 KiB/s · ETA 16.4s · 2 retries`` (rate in bytes per second)."""
    parts = [f"{sent:,} / {nbytes(total)}", f"{rate / 1024:,.1f} KiB/s"]
    if eta is not None:
        parts.append(f"ETA {seconds(eta)}")
    if retries:
        parts.append(plural(retries, "retry", "retries"))
    return " · ".join(parts)


def nbytes(n: int) -> str:
    """Exact bytes with thousands separators: sizes here are compared against linker maps."""
    return f"{n:,} B"


def plural(n: int, word: str, many: str | None = None) -> str:
    return f"{n:,} {word if n == 1 else many or word + 's'}"


def time_text(mode: str, when: float, start: float | None, before: float | None) -> str:
    """The time column of a line: host arrival time, absolute / since the start / since the
    line before."""
    if mode == "absolute":
        stamp = time.strftime("%H:%M:%S", time.localtime(when))
        return f"{stamp}.{int(when * 1000) % 1000:03d} "
    if mode == "relative":
        return f"{when - (start if start is not None else when):9.3f} "
    if mode == "delta":
        return f"+{when - (before if before is not None else when):8.3f} "
    return ""
