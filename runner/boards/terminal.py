"""The bring-up terminal's essentials, the parts tio and picocom have: a line typed to the
board (with the board's line ending), and a modem line (DTR or RTS) pulsed to reset the
board or put it in its boot mode.

Both act on an open pyserial handle (a device, or an ``rfc2217://`` URL whose server sets
the real port's lines); nothing here reads the port: the monitor's reader thread does.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

RESET_LINES = ("dtr", "rts")
# A typed line's ending as sent to the board (profile ``serial.eol``, ``--eol``).
LINE_ENDINGS: dict[str, bytes] = {"cr": b"\r", "lf": b"\n", "crlf": b"\r\n"}
DEFAULT_EOL = "crlf"
PULSE_SECONDS = 0.1  # how long a pulsed line stays inverted (tio's default is 100 ms)


def pulse_line(handle, line: str, seconds: float = PULSE_SECONDS) -> None:
    """Invert ``line`` (``dtr`` or ``rts``) for ``seconds``, then restore it, as tio's
    "pulse" does: a board whose reset (or boot pin) is wired to the line sees one edge
    and its return. pyserial asserts both lines when it opens a port, so the pulse is
    usually a drop and a rise."""
    if line not in RESET_LINES:
        raise ValueError(f"{line!r}: the lines to pulse are {', '.join(RESET_LINES)}")
    state = bool(getattr(handle, line))
    setattr(handle, line, not state)
    time.sleep(seconds)
    setattr(handle, line, state)


def typed_line(text: str, eol: str = DEFAULT_EOL) -> bytes:
    """A line typed in a send box: its text (UTF-8) with the board's line ending."""
    return text.encode("utf-8") + LINE_ENDINGS[eol]


def in_foreground(fd: int) -> bool:
    """``fd`` is not the controlling terminal of a background job (reading it is safe)."""
    try:
        return os.tcgetpgrp(fd) == os.getpgrp()
    except OSError:  # not our controlling terminal: no job control applies to it
        return True


class StdinPump:
    """Standard input passed through to the board (``etu monitor``) from a thread of its
    own: on a terminal, line by line, each line's ``\\n`` replaced by the board's ending;
    from a pipe or a file, the bytes as they come. End of input ends the pump, not the
    monitor; a send that fails (the port gone) is said through ``say`` and the pump goes on.
    """

    def __init__(
        self,
        send: Callable[[bytes], None],
        *,
        fd: int = 0,
        eol: str = DEFAULT_EOL,
        say: Callable[[str], None] = lambda text: None,
    ) -> None:
        self.send, self.fd, self.say = send, fd, say
        self.ending = LINE_ENDINGS[eol]
        self.lines = os.isatty(fd)
        self.sent = 0
        self.thread = threading.Thread(target=self._run, name="etu-stdin", daemon=True)

    def start(self) -> StdinPump:
        """Start reading, unless stdin is the terminal of a job in the background: a read
        there would stop etu (SIGTTIN) until it is brought to the foreground."""
        if not self.lines or in_foreground(self.fd):
            self.thread.start()
        return self

    def _run(self) -> None:
        pending = b""
        while True:
            try:
                chunk = os.read(self.fd, 4096)
            except OSError:
                chunk = b""
            if not chunk:
                if pending:
                    self._send(pending)
                return
            if not self.lines:
                self._send(chunk)
                continue
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                self._send(line.rstrip(b"\r") + self.ending)

    def _send(self, data: bytes) -> None:
        try:
            self.send(data)
            self.sent += len(data)
        except OSError as error:
            self.say(f"not sent ({len(data)} bytes): {error}")


__all__ = ["DEFAULT_EOL", "LINE_ENDINGS", "RESET_LINES", "StdinPump", "pulse_line", "typed_line"]
