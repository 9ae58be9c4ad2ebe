"""Serial ports (and the emulated board's pty) as byte sources for RunController.

The port is opened exclusively (pyserial's ``exclusive=True``: an advisory lock a second
etu, or any well-behaved terminal program, respects); when another process holds it the
error names that process. A reader thread hands every chunk to the controller, which
records it before parsing it. When the port goes away (unplug, board reset of a USB bridge,
a ser2net connection dropped) the source says so as an event, waits for the port to come
back, reopens it, and records the gap; bytes that reached etu are already on disk.

A port never "exits": the run ends at the runner's verdict once the port has been quiet for
``settle`` seconds, at the time limit, or when the user stops it.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import serial

from etu.parsers.errors import first_line

READ_TIMEOUT = 0.05
RETRY_INTERVAL = 0.1


class PortError(OSError):
    """The port cannot be opened; ``str()`` is one line naming the port and why."""

    def __str__(self) -> str:
        return self.args[0] if self.args else "port error"


@dataclass(frozen=True, slots=True)
class PortLost:
    """The port went away (unplugged, reset, connection dropped)."""

    port: str
    at: float  # host time
    byte_offset: int  # bytes recorded before it went
    reason: str
    line_no: int | None = None

    def to_json(self) -> dict:
        return {"type": "PortLost", "port": self.port, "at": self.at,
                "byte_offset": self.byte_offset, "reason": self.reason}  # fmt: skip


@dataclass(frozen=True, slots=True)
class PortGap:
    """The port is back: how long it was gone, and where in the recorded bytes."""

    port: str
    lost_at: float
    back_at: float
    byte_offset: int
    line_no: int | None = None

    @property
    def seconds(self) -> float:
        return self.back_at - self.lost_at

    def to_json(self) -> dict:
        return {"type": "PortGap", "port": self.port, "lost_at": self.lost_at,
                "back_at": self.back_at, "seconds": round(self.seconds, 3),
                "byte_offset": self.byte_offset}  # fmt: skip


def is_url(port: str) -> bool:
    return "://" in port


def port_holders(device: str) -> list[tuple[int, str]]:
    """Processes (pid, name) with ``device`` open, from /proc (Linux); others: empty."""
    try:
        target = os.path.realpath(device)
        own = os.getpid()
        holders = []
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit() or int(entry.name) == own:
                continue
            with contextlib.suppress(OSError):
                for fd in os.scandir(f"/proc/{entry.name}/fd"):
                    with contextlib.suppress(OSError):
                        if os.readlink(fd.path) == target:
                            name = Path(f"/proc/{entry.name}/comm").read_text().strip()
                            holders.append((int(entry.name), name))
                            break
        return holders
    except OSError:
        return []


def rfc2217_url(port: str) -> str:
    """``port``, with pyserial's ``ign_set_control`` added to an ``rfc2217://`` URL: ser2net
    (4.x, Debian's) does not answer SET_CONTROL the way pyserial waits for, and the open
    would time out ("timeout while waiting for option 'control'")."""
    if not port.startswith("rfc2217://") or "ign_set_control" in port:
        return port
    return port + ("&" if "?" in port else "?") + "ign_set_control"


def open_port(port: str, settings: dict | None = None, *, exclusive: bool = True):
    """Open a device path or any pyserial URL; errors are PortError naming the port."""
    settings = dict(settings or {})
    try:
        handle = serial.serial_for_url(
            rfc2217_url(port), do_not_open=True, timeout=READ_TIMEOUT, **settings
        )
        if exclusive and hasattr(handle, "exclusive") and not is_url(port):
            handle.exclusive = True
        handle.open()
        return handle
    except (serial.SerialException, OSError, ValueError) as error:
        text = str(error).strip() or type(error).__name__
        if "exclusively lock" in text or "Resource temporarily unavailable" in text:
            holders = port_holders(port)
            who = ", ".join(f"{name} (pid {pid})" for pid, name in holders) or "another process"
            raise PortError(f"{port}: held by {who}: it is open exclusively elsewhere") from None
        if isinstance(error, serial.SerialException) and "No such file" in text:
            raise PortError(f"{port}: no such port") from None
        raise PortError(f"{port}: cannot open: {first_line(text)}") from None


class SerialSource:
    """A serial port (device path or pyserial URL) as RunController's byte source."""

    def __init__(
        self,
        port: str,
        settings: dict | None = None,
        *,
        exclusive: bool = True,
        reconnect: bool = True,
        timelimit: float | None = None,
        settle: float = 1.0,
        handle=None,
        initial: bytes = b"",
        eol: str = "crlf",
        reset: str | None = None,
    ) -> None:
        """``handle``: a port already open (flashing used it); ``initial``: bytes already
        read from it (what followed the last prompt), recorded first; ``eol`` and
        ``reset``: the board's line ending and reset line (its profile's), for a front end
        that types to it or pulses its reset (the Run tab's send box)."""
        self.port = port
        self.eol = eol
        self.reset = reset
        self.settings = dict(settings or {})
        self.exclusive = exclusive
        self.reconnect = reconnect
        self.timelimit = timelimit
        self.settle = settle
        self.stopped_by_user = False
        self.time_limit_hit: str | None = None
        self.received = 0
        self.gaps: list[PortGap] = []
        self._handle = handle
        self._initial = initial
        self._stop = threading.Event()
        self._write_lock = threading.Lock()  # a typed line and a reset pulse, one at a time
        self._verdict_at: float | None = None
        self._thread: threading.Thread | None = None
        self._on_output: Callable[[bytes, str], None] = lambda c, s: None
        self._on_exit: Callable[[int | None], None] = lambda code: None
        self._on_notice: Callable[[list], None] = lambda events: None
        self.exited = threading.Event()

    # ------------------------------------------------------------------ ByteSource
    def bind(self, on_output, on_exit, on_stats, on_notice) -> None:
        self._on_output, self._on_exit, self._on_notice = on_output, on_exit, on_notice

    def open(self) -> SerialSource:
        """Open now (before a session exists), so a busy or missing port is a clean error."""
        if self._handle is None:
            self._handle = open_port(self.port, self.settings, exclusive=self.exclusive)
        return self

    def start(self) -> SerialSource:
        self.open()
        self._started = time.monotonic()
        self._thread = threading.Thread(target=self._loop, name="etu-serial", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopped_by_user = True
        self._stop.set()

    kill = stop

    def close(self) -> None:
        """Let go of a source that was opened but never started (the port; QEMU)."""
        if self._thread is None:
            self._stop.set()
            self._close()

    def verdict_reached(self) -> None:
        self._verdict_at = time.monotonic()

    # ------------------------------------------------------------------ the terminal
    def send(self, data: bytes) -> None:
        """Write ``data`` to the board (a typed line, stdin passed through), from any
        thread but the UI's; PortError when the port is not open (gone, or ended)."""
        with self._write_lock:
            handle = self._live_handle()
            try:
                handle.write(data)
                handle.flush()
            except (serial.SerialException, OSError, AttributeError, TypeError) as error:
                raise PortError(f"{self.port}: not sent: {first_line(str(error))}") from None

    def pulse(self, line: str, seconds: float | None = None) -> None:
        """Pulse DTR or RTS (runner.boards.terminal.pulse_line): the board's reset or boot
        pin, when its USB bridge wires one to it. PortError when the port is not open."""
        from etu.runner.boards.terminal import PULSE_SECONDS, pulse_line

        with self._write_lock:
            handle = self._live_handle()
            try:
                pulse_line(handle, line, PULSE_SECONDS if seconds is None else seconds)
            except (serial.SerialException, OSError, AttributeError, TypeError) as error:
                text = first_line(str(error))
                raise PortError(f"{self.port}: {line.upper()} not pulsed: {text}") from None

    def _live_handle(self):
        handle = self._handle
        if handle is None or self.exited.is_set():
            raise PortError(f"{self.port}: the port is not open")
        return handle

    def wait(self, timeout: float | None = None) -> bool:
        return self.exited.wait(timeout)

    # ------------------------------------------------------------------ the reader
    def _loop(self) -> None:
        code: int | None = None
        last_data = time.monotonic()
        try:
            if self._initial:
                self.received += len(self._initial)
                self._on_output(self._initial, "stdout")
            if self._handle is not None:
                self._handle.timeout = READ_TIMEOUT
            while not self._stop.is_set():
                if self._over_time():
                    break
                try:
                    chunk = self._handle.read(max(1, self._handle.in_waiting))
                except (serial.SerialException, OSError, AttributeError, TypeError) as error:
                    if not self._lost(str(error) or type(error).__name__):
                        break
                    continue
                now = time.monotonic()
                if chunk:
                    self.received += len(chunk)
                    last_data = now
                    self._on_output(chunk, "stdout")
                elif self._finished(now - last_data):
                    break
            code = self._final_code()
        finally:
            self._close()
            self.exited.set()
            self._on_exit(code)

    def _over_time(self) -> bool:
        if self.timelimit is not None and time.monotonic() - self._started >= self.timelimit:
            self.time_limit_hit = f"no verdict within the time limit ({self.timelimit:g} s)"
            return True
        return False

    def _finished(self, quiet: float) -> bool:
        """At the verdict, once the port has been quiet for ``settle`` seconds."""
        return self._verdict_at is not None and quiet >= self.settle

    def _final_code(self) -> int | None:
        return None

    def _close(self) -> None:
        if self._handle is not None:
            with contextlib.suppress(Exception):
                self._handle.close()
            self._handle = None

    def _lost(self, reason: str) -> bool:
        """The port went away: wait for it to come back. False: give up (stop/time)."""
        lost_at = time.time()
        offset = self.received
        self._close()
        self._on_notice([PortLost(self.port, lost_at, offset, first_line(reason) or reason)])
        if not self.reconnect:
            return False
        while not self._stop.wait(RETRY_INTERVAL):
            if self._over_time():
                return False
            try:
                self._handle = open_port(self.port, self.settings, exclusive=self.exclusive)
            except PortError:
                continue
            gap = PortGap(self.port, lost_at, time.time(), offset)
            self.gaps.append(gap)
            self._on_notice([gap])
            return True
        return False


class QemuSource(SerialSource):
    """The emulated board: QEMU started paused, its UART0 pty opened, then the guest runs.

    The run ends when the firmware shuts the machine down (and the pty has been drained),
    at the time limit, or on stop; QEMU is then stopped and its status is the exit code.
    """

    def __init__(self, elf: Path, *, timelimit: float | None = None, qemu: str | None = None):
        from etu.runner.boards.qemu import QemuBoard

        self.board = QemuBoard(elf, qemu=qemu)
        super().__init__("", {}, exclusive=True, reconnect=False, timelimit=timelimit)

    def open(self) -> QemuSource:
        if self._handle is None:
            from etu.runner.boards.qemu import QemuError

            try:
                self.port = self.board.start(paused=True)
            except QemuError as error:
                raise PortError(str(error)) from None
            try:
                super().open()
            except BaseException:  # the port, or a stop signal while it opened: no QEMU left
                self.board.stop()
                raise
        return self

    def start(self) -> QemuSource:
        super().start()
        self.board.resume()
        return self

    def _finished(self, quiet: float) -> bool:
        return (self.board.guest_ended.is_set() and quiet >= 0.2) or super()._finished(quiet)

    def _lost(self, reason: str) -> bool:
        if not self.board.running:
            return False
        return super()._lost(reason)

    def _final_code(self) -> int | None:
        return self.board.stop()

    def _close(self) -> None:
        super()._close()
        if self.exited.is_set() or self._stop.is_set():
            self.board.stop()


__all__ = ["PortError", "PortGap", "PortLost", "QemuSource", "SerialSource", "open_port"]
