"""Waiting for what a board prints (a banner, a menu, a question), with a time-out.

A board that does not say what its profile promises must be reported as such: the error
names the prompt, its text, how long etu waited and the tail of what it did see (escaped,
so device bytes never reach a terminal raw). Edge Impulse's WE2 tool waiting for a banner
the board never prints (boards.md) is the cautionary tale.
"""

from __future__ import annotations

import time

import serial

from etu.runner.boards.profiles import Prompt


class PromptTimeout(RuntimeError):
    """The awaited text did not come in time; the message is one line."""


def shown(data: bytes, limit: int = 120) -> str:
    """The tail of what a device sent, as escaped text (never raw control bytes)."""
    if not data:
        return "nothing"
    tail = data[-limit:]
    text = tail.decode("utf-8", "replace")
    escaped = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return ("..." if len(data) > limit else "") + repr(escaped)[1:-1].join('""')


def expect(
    handle: serial.SerialBase,
    prompt: Prompt,
    *,
    port_name: str,
    seen: bytearray | None = None,
    poke: bytes | None = None,
    poke_every: float = 0.02,
) -> bytes:
    """Read until ``prompt.text`` arrives; return what came after it (already read).

    ``poke`` is written every ``poke_every`` seconds meanwhile (the WE2 bootloader's
    "any key" window is 100 ms). ``seen`` collects everything read, for the caller."""
    seen = bytearray() if seen is None else seen
    start = len(seen)
    wanted = prompt.text.encode()
    deadline = time.monotonic() + prompt.timeout
    next_poke = 0.0
    handle.timeout = min(poke_every, 0.05) if poke else 0.05
    while True:
        now = time.monotonic()
        if poke is not None and now >= next_poke:
            handle.write(poke)
            next_poke = now + poke_every
        chunk = handle.read(max(1, handle.in_waiting))
        seen += chunk
        found = seen.find(wanted, max(start - len(wanted), 0))
        if found != -1:
            return bytes(seen[found + len(wanted) :])
        if now >= deadline:
            raise PromptTimeout(
                f"{port_name}: waited {prompt.timeout:g} s for the {prompt.name} prompt "
                f"{prompt.text!r}; saw {shown(bytes(seen[start:]))}"
            )
