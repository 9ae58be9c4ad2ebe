"""What is in front of a runner-log message: ExecuTorch's prefix, a platform's, or none.

ExecuTorch's ``ET_LOG`` prefix has changed over the versions (see ``RUNTIME_PREFIX``); a
platform may put its own in front of it or instead of it (Zephyr's ``[time] <inf> module:``,
a trace tool's tag, a timestamp, syslog's ``<6>``); the FVP, the driver and the run scripts
print lines of their own. This module tells them apart and gives a line's level, for the
parser (:mod:`etu.parsers.runner_log`) and for views that read lines back from a file.
"""

from __future__ import annotations

import re

# How far into a line a prefix is looked for: a longer "prefix" is a message.
PREFIX_MAX = 160

# All runtime prefixes: "I [executorch:f.cpp:12 fn()] m" (≥0.7), "I [executorch:f.cpp:12] m"
# (0.4-0.6), "I executorch:f.cpp:12] m" (≤0.3), "I [executorch:main.cpp] m" (Zephyr sample),
# "I 00:00:00.000000 executorch:f.cpp:zu] m" (POSIX PAL, newlib-nano).
# Groups: level, file, line (digits; None for "zu"), function, message. The parts before the
# closing "]" cannot contain "]", so the text up to the first "]" decides the match (which
# the parser's prefix cache relies on).
RUNTIME_PREFIX = re.compile(
    r"([DIEF?]) (?:\d+:\d\d:\d\d\.\d+ )?\[?executorch:([^:\]\s]*)(?::(?:(\d+)|\w+))?"
    r"(?: ([^\](]*)\(\))?\] ?(.*)\Z",
    re.S,
)
# A platform's or a trace tool's prefix before the message (or before ExecuTorch's own
# prefix): Zephyr's "[00:00:00.123,000] <inf> module: ", timestamps, "[TAG 12] ", "<6>".
_FOREIGN = re.compile(
    r"(?:(?:\[[^\]]{0,48}\]|\(\d[\d:.,]*\)|\d+(?:[:.,]\d+)+)[ \t]*)*"
    r"(?:<(?P<lvl>[a-z]{3}|\d{1,3})>[ \t]*(?:[\w.-]{1,32}: ?)?)?"
)
FOREIGN_FIRST = frozenset("[<(0123456789")  # the first characters _FOREIGN can match
_FOREIGN_LEVELS = {"inf": "I", "err": "E", "wrn": "W", "dbg": "D", "crt": "F"}
ET_MARK = "executorch:"  # in every runtime prefix
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")

# First characters of the non-runtime lines classify_other knows (see there).
OTHER_FIRST = frozenset(" ItHAE#FRa>*[WD")
# The "[" lines classify_other names: the FVP's warnings, then the run scripts' lines.
_BRACKET_KINDS = (
    "[warning ]",
    "[critical]",
    "[backends/arm/scripts/",
    "[run_fvp",
    "[build_",
    "[examples/arm/",
)
LAUNCH_FAILURES = (
    ": cannot execute binary file",
    ": command not found",
    "cannot execute binary file: Exec format error",
)


def line_text(text: str) -> str:
    """A line's decoded text as a LogLine's ``text`` holds it: EOT bytes and ANSI colour
    codes removed."""
    if "\x04" in text:
        text = text.replace("\x04", "")
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    return text


def classify_other(text: str) -> tuple[str | None, str | None]:
    """Origin and kind of a line without the ExecuTorch prefix (cheap prefix checks).

    The kind names what the line is (``banner``, ``info``, ``warning``, ``fault``,
    ``fault_more``, ``exit``, ``etdump_start``, ``script``, ``assert``, ``launch``), or is
    None for a line that says nothing more than its origin."""
    c = text[:1]
    if c == " ":
        body = text.lstrip(" ")
        if body.startswith("Ethos-U rev"):
            return "fvp", "banner"
        if body.startswith(("(C) COPYRIGHT", "ALL RIGHTS RESERVED")):
            return "fvp", None
        if body.startswith("cfsr="):
            return "platform", "fault_more"
        return None, None
    if c == "I" and text.startswith("Info:"):
        return "fvp", "info"
    if c == "t" and text.startswith("telnetterminal"):
        return "fvp", None
    if c == "[":
        if not text.startswith(_BRACKET_KINDS):  # most "[" lines: one check
            return None, None
        if text.startswith(("[warning ]", "[critical]")):
            return "fvp", "warning"
        return "script", "script"
    if c == "H" and text.startswith("Hard fault"):
        return "platform", "fault"
    if c == "A" and text.startswith("Application exit code:"):
        return "platform", "exit"
    if c == "E" and text.rstrip() == "EXITTHESIM":
        return "platform", "exit"
    if c == "#" and text.rstrip() in ("#[RUN THIS]", "#---"):
        return "etdump", "etdump_start"
    if c == "F" and text.startswith("Fast Models ["):
        return "fvp", "banner"
    if c == "R" and text.startswith("Running ") and "with FVP:" in text:
        return "script", "banner"
    if c == "a" and text.startswith('assertion "'):
        return "platform", "assert"
    if c == ">" and "ZEPHYR FATAL ERROR" in text:
        return "platform", "fault"
    if c == "*" and "HARD FAULT" in text:
        return "platform", "fault"
    if text.endswith(LAUNCH_FAILURES):
        return "script", "launch"
    return None, None


def runtime_inside(text: str) -> tuple[str, int, re.Match[str]] | None:
    """ExecuTorch's prefix after a foreign one (a timestamp, a trace tag): the text from
    that prefix on, the index of its "]" there, and its match; None if there is none."""
    if ET_MARK not in text:  # most lines: one scan without find()'s argument parsing
        return None
    mark = text.find(ET_MARK, 0, PREFIX_MAX)
    if mark <= 0:
        return None
    start = mark - 2 if text[mark - 1] in " [" else mark - 1
    if text[mark - 1] == "[":
        start -= 1
    if start <= 0 or text[start] not in "DIEF?":
        return None
    inner = text[start:]
    close = inner.find("]", 0, PREFIX_MAX)
    m = RUNTIME_PREFIX.match(inner) if close > 0 else None
    return None if m is None else (inner, close, m)


def foreign_prefix(text: str) -> tuple[int, str | None]:
    """How many characters a platform's prefix takes (0 for none), and the level its tag
    gives (Zephyr's ``<err>``, syslog's ``<3>``), if any."""
    m = _FOREIGN.match(text) if text[:1] in FOREIGN_FIRST else None
    if m is None or not m.end():
        return 0, None
    tag = m["lvl"]
    if not tag:
        return m.end(), None
    return m.end(), _FOREIGN_LEVELS.get(tag, "E" if tag.isdigit() and int(tag) % 8 <= 3 else "I")


def line_level(text: str) -> str | None:
    """The level the parser gives the line ``text`` read on its own, or None.

    For views that read lines back from a session file instead of through the parser: the
    same rules in the same order (ExecuTorch's prefix, also after a foreign one; a driver's
    ``E:``; a custom PAL's ``[E]``; a platform's level tag). A line inside a report or an
    ETDump block may get another level from the parser, which reads it in context.
    """
    text = line_text(text)
    if not text:
        return None
    if text.find("]", 0, PREFIX_MAX) > 0:
        m = RUNTIME_PREFIX.match(text)
        if m is not None:
            return m[1]
    c = text[0]
    if c == "O" and text.startswith("Output["):
        return None
    if c not in OTHER_FIRST:
        if text.endswith(LAUNCH_FAILURES):
            return None
    elif text[1:3] == ": " and c in "EWID":
        return c
    elif c == "[" and text[2:4] == "] " and text[1] in "DIEWF":
        return text[1]
    elif classify_other(text)[1] is not None:
        return None
    found = runtime_inside(text)
    if found is not None:
        return found[2][1]
    return foreign_prefix(text)[1]
