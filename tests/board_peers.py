"""Protocol peers for the board tests: ptys, lrzsz's rx behind socat, a faulty relay.

Nothing here is etu code: the peers are other people's programs (lrzsz, socat, ser2net) or
small stand-ins built from the reference facts (the WiseEye2 bootloader, the MPS3 MCC).
"""

from __future__ import annotations

import contextlib
import os
import random
import select
import subprocess
import threading
import time
import tty
from pathlib import Path


class Pty:
    """A pseudo-terminal pair: etu opens ``path`` (the slave, like /dev/ttyUSB0); the test
    reads and writes ``master``. The test keeps the slave open too, so the line never hangs
    up under etu when a peer exits."""

    def __init__(self) -> None:
        self.master, self.slave = os.openpty()
        tty.setraw(self.master)
        tty.setraw(self.slave)
        self.path = os.ttyname(self.slave)

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            written = os.write(self.master, view)
            view = view[written:]

    def read(self, timeout: float = 0.1) -> bytes:
        ready, _, _ = select.select([self.master], [], [], timeout)
        if not ready:
            return b""
        try:
            return os.read(self.master, 65536)
        except OSError:
            return b""

    def close(self) -> None:
        for fd in (self.master, self.slave):
            with contextlib.suppress(OSError):
                os.close(fd)


def start_rx(pty: Pty, out: Path, *, crc: bool = True, side: str = "master") -> subprocess.Popen:
    """lrzsz's ``rx`` on its own pty (socat's EXEC pty), wired to the master of ``pty``
    (etu opens the slave), or to its slave (a relay drives the master). The pitfall in
    boards.md: rx must not change the modes of a line someone else uses."""
    fd = pty.master if side == "master" else pty.slave
    rx = f"rx {'-c ' if crc else ''}-b {out}"
    with open(Path(out).with_suffix(".rx.log"), "wb") as log:  # never a pipe nobody reads
        return subprocess.Popen(
            ["socat", f"FD:{fd}", f"EXEC:{rx},pty,raw,echo=0"],
            pass_fds=(fd,),
            stdout=subprocess.DEVNULL,
            stderr=log,
            start_new_session=True,  # whatever rx signals on its way out stays in its group
        )


class FaultyRelay:
    """Forwards bytes between two ptys (host side → peer side and back), dropping and
    corrupting some of the host's bytes: ``faults(offset, byte)`` returns None to drop,
    or the byte to send. Runs on a thread until ``stop()``."""

    def __init__(self, host: Pty, peer: Pty, faults) -> None:
        self.host, self.peer, self.faults = host, peer, faults
        self.forwarded = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            ready, _, _ = select.select([self.host.master, self.peer.master], [], [], 0.05)
            for fd in ready:
                try:
                    data = os.read(fd, 4096)
                except OSError:
                    return
                if self._stop.is_set():
                    return
                if fd == self.host.master:
                    out = bytearray()
                    for byte in data:
                        kept = self.faults(self.forwarded, byte)
                        self.forwarded += 1
                        if kept is not None:
                            out.append(kept)
                    target, data = self.peer, bytes(out)
                else:
                    target = self.host
                try:
                    target.write(data)
                except OSError:
                    return

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(1)


def random_faults(seed: int, drop: float, corrupt: float, until: int | None = None):
    rng = random.Random(seed)

    def faults(offset: int, byte: int) -> int | None:
        if until is not None and offset >= until:
            return byte
        roll = rng.random()
        if roll < drop:
            return None
        if roll < drop + corrupt:
            return byte ^ 0x5A
        return byte

    return faults


def wait_for(predicate, timeout: float = 10.0, interval: float = 0.02) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()


def runner_log(lines: int = 20, *, verdict: bool = True) -> bytes:
    """A runner log like arm_executor_runner's, ``lines`` lines of it."""
    head = [
        "I [executorch:arm_executor_runner.cpp:912 runner_init()] PTE @ 0x70000000 [----ET12]",
        "I [executorch:arm_executor_runner.cpp:917 runner_init()] PTE Model data loaded. "
        "Size: 21392 bytes.",
        "I [executorch:arm_executor_runner.cpp:1140 run_model()] Starting running 1 inferences...",
    ]
    body = [f"I [executorch:arm_executor_runner.cpp:1270 print_outputs()] line {n} of the log"
            for n in range(max(lines - len(head) - 1, 0))]  # fmt: skip
    tail = ["I [executorch:arm_executor_runner.cpp:1381 main()] Program complete, exiting."]
    text = head + body + (tail if verdict else [])
    return "".join(line + "\n" for line in text).encode()


def etu_argv(*args: str) -> list[str]:
    import sys

    return [sys.executable, "-m", "etu.tui.cli", *args]


def etu_env() -> dict[str, str]:
    root = Path(__file__).resolve().parent.parent
    env = dict(os.environ)
    env["PYTHONPATH"] = str(root) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def only_session(root: Path) -> Path | None:
    folders = sorted((root / ".etu" / "sessions").glob("*")) if root.exists() else []
    return folders[-1] if folders else None


class VirtualWiseEye2:
    """A WiseEye2 first-stage bootloader on the master side of ``pty``, built from the facts
    in shared/reference/boards.md: its banner and "any key" window repeated until a key
    comes, the menu, choice 1, XMODEM receive (the PyPI ``xmodem`` package's receiver, a
    peer etu's sender did not write), the end question, then on ``y`` the reboot into a
    runner log. ``received`` holds each file as it arrived (placement block included)."""

    BANNER = (b"\r\n1st BL Modem Build DATE=Nov 24 2026, 0x0002000a\r\n"
              b"Please input any key to enter X-Modem mode\r\n")  # fmt: skip
    MENU = (b"\r\n[1] Xmodem download and burn FW image\r\n[2] Burn default image\r\n"
            b"[3] Reboot\r\n")  # fmt: skip
    READY = b"Send data using the xmodem protocol from your terminal\r\n"
    QUESTION = b"Do you want to end file transmission and reboot system? (y)\r\n"

    def __init__(self, pty: Pty, boot_log: bytes, *, eager: bool = False) -> None:
        self.pty = pty
        self.boot_log = boot_log
        # A key that came right after the menu was the choice: the menu and the ready line
        # reach the host together (a host slow to read the menu, still pressing keys).
        self.eager = eager
        self.received: list[bytes] = []
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> VirtualWiseEye2:
        self.thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self.thread.join(10)

    def _key(self, timeout: float) -> bytes:
        return self.pty.read(timeout)

    def _run(self) -> None:
        try:
            got = b""
            while not got and not self._stop.is_set():  # the 100 ms "any key" window
                self.pty.write(self.BANNER)
                got = self._key(0.1)
            self.pty.write(self.MENU)
            shown = time.monotonic()
            while not self._stop.is_set():
                # Keys from the "any key" pokes still arrive just after the menu; the
                # choice is the host's key after it has read the menu.
                if self.eager:
                    break
                got = self._key(0.2)
                if b"1" in got and time.monotonic() - shown > 0.04:
                    break
            self.pty.write(self.READY)
            while True:  # after "n" the board waits for the next file: no new prompt
                self.received.append(self._xmodem_receive())
                self.pty.write(self.QUESTION)
                answer = b""
                while answer not in (b"y", b"n") and not self._stop.is_set():
                    answer = self._key(0.5)[-1:]
                if answer == b"y":
                    break
                if answer != b"n":  # stopped before the host answered: no second file
                    return
            time.sleep(0.05)
            self.pty.write(b"\r\nreboot...\r\n" + self.boot_log)
        except BaseException as error:  # reported by the test
            self.error = error

    def _xmodem_receive(self) -> bytes:
        import io

        from xmodem import XMODEM

        def getc(size: int, timeout: float = 1) -> bytes | None:
            data = b""
            deadline = time.monotonic() + timeout
            while len(data) < size and time.monotonic() < deadline:
                ready, _, _ = select.select([self.pty.master], [], [], 0.05)
                if ready:
                    data += os.read(self.pty.master, size - len(data))
            return data or None

        def putc(data: bytes, timeout: float = 1) -> int:
            self.pty.write(data)
            return len(data)

        out = io.BytesIO()
        if XMODEM(getc, putc).recv(out, crc_mode=1, retry=16) is None:
            raise RuntimeError("the virtual bootloader's XMODEM receive failed")
        return out.getvalue()


class VirtualMps3:
    """An Arm MPS3's microcontroller (MCC) on ``mcc``, from the facts in boards.md: ``Cmd>``
    on a line end, and on ``reboot`` its banners while it reads ``images.txt`` from the
    folder standing for its USB drive and "writes" each listed file, then the application's
    UART (``app``) prints ``boot_log``. ``images`` holds (MCC address, bytes) as read."""

    def __init__(self, mcc: Pty, app: Pty, drive: Path, images_dir: str, boot_log: bytes):
        self.mcc, self.app, self.drive = mcc, app, drive
        self.images_dir = images_dir
        self.boot_log = boot_log
        self.images: list[tuple[int, bytes]] = []
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> VirtualMps3:
        self.thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self.thread.join(10)

    def _run(self) -> None:
        try:
            typed = b""
            while not self._stop.is_set():
                typed += self.mcc.read(0.1)
                if b"reboot" in typed:
                    break
                if typed.endswith(b"\n"):
                    self.mcc.write(b"\r\nCmd> ")
                    typed = b""
            self.mcc.write(b"\r\nPowering down...\r\nARM V2M-MPS3 Firmware v1.5.1\r\n")
            config = self.drive / self.images_dir / "images.txt"
            where = f"\\{self.images_dir}\\images.txt".encode()
            self.mcc.write(b"Reading images file " + where + b"\r\n")
            fields = dict(
                line.split(": ", 1) for line in config.read_text().splitlines() if ": " in line
            )
            for n in range(int(fields["TOTALIMAGES"])):
                name = fields[f"IMAGE{n}FILE"]
                address = int(fields[f"IMAGE{n}ADDRESS"], 16)
                data = (self.drive / name.strip("\\").replace("\\", "/")).read_bytes()
                self.images.append((address, data))
                self.mcc.write(f"Writing File {name} to Address 0x{address:08X}\r\n".encode())
                self.mcc.write(f"File {name} written\r\n".encode())
            time.sleep(0.2)  # the board starts after the MCC has written its images
            self.app.write(self.boot_log)
        except BaseException as error:  # reported by the test
            self.error = error


class PyocdStandIn:
    """pyOCD's Python API as etu uses it (``ConnectHelper.session_with_chosen_probe``, a
    session that is a context manager, ``FileProgrammer(session, progress=).program(path,
    base_address=)``, ``session.board.target.reset()``), standing for a probe on a board:
    what is programmed lands in ``programmed`` (path, address, bytes); the reset makes the
    board print ``boot_log`` on ``uart`` (a Pty: the probe's own serial port, VCOM), if any.
    ``install(monkeypatch)`` puts it where ``import pyocd...`` finds it."""

    def __init__(self, uart: Pty | None, boot_log: bytes, *, probe: bool = True) -> None:
        self.uart, self.boot_log, self.probe = uart, boot_log, probe
        self.programmed: list[tuple[str, int | None, bytes]] = []
        self.options: dict | None = None
        self.resets = 0

    def install(self, monkeypatch) -> None:
        import sys
        import types

        stand_in = self

        class Target:
            def reset(self) -> None:
                stand_in.resets += 1
                if stand_in.uart is not None:
                    threading.Timer(0.1, stand_in.uart.write, (stand_in.boot_log,)).start()

        class Session:
            board = types.SimpleNamespace(target=Target())

            def __enter__(self):
                return self

            def __exit__(self, *exc) -> None:
                return None

        class ConnectHelper:
            @staticmethod
            def session_with_chosen_probe(blocking: bool = True, options: dict | None = None):
                stand_in.options = options
                return Session() if stand_in.probe else None

        class FileProgrammer:
            def __init__(self, session, progress=None) -> None:
                self.progress = progress

            def program(self, path: str, base_address: int | None = None) -> None:
                data = Path(path).read_bytes()
                for fraction in (0.25, 0.5, 1.0):
                    if self.progress:
                        self.progress(fraction)
                stand_in.programmed.append((path, base_address, data))

        names = ("pyocd", "pyocd.core", "pyocd.core.helpers", "pyocd.flash",
                 "pyocd.flash.file_programmer")  # fmt: skip
        modules = {name: types.ModuleType(name) for name in names}
        modules["pyocd.core.helpers"].ConnectHelper = ConnectHelper
        modules["pyocd.flash.file_programmer"].FileProgrammer = FileProgrammer
        for name, module in modules.items():
            monkeypatch.setitem(sys.modules, name, module)


def usb_port(device: str, vid_pid: str | None = None, serial_number: str | None = None,
             location: str | None = None):  # fmt: skip
    """What pyserial's comports() lists for a USB serial port (a pty standing for it)."""
    from serial.tools import list_ports_common

    port = list_ports_common.ListPortInfo(device)
    if vid_pid:
        vid, pid = (int(part, 16) for part in vid_pid.split(":"))
        port.vid, port.pid = vid, pid
    port.serial_number, port.location = serial_number, location
    port.description = f"stand-in for {vid_pid or 'a serial port'}"
    return port


class Rfc2217Peer:
    """An RFC 2217 server (pyserial's own ``PortManager``, the protocol side etu's client
    did not write) in front of a :class:`Pty`: what etu writes reaches ``pty.master`` and
    what the test writes there reaches etu, as through ser2net. A pty carries no modem
    lines (Linux refuses the modem-line ioctls on it, whoever opens it: ser2net too), so
    the server keeps the DTR and RTS changes the client asks for in ``changes``:
    (line, state, host time), in order."""

    def __init__(self) -> None:
        import socket

        self.pty = Pty()
        self.changes: list[tuple[str, bool, float]] = []
        self.error: BaseException | None = None
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.1)
        self.url = f"rfc2217://127.0.0.1:{self._listener.getsockname()[1]}"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def line_changes(self, line: str) -> list[tuple[bool, float]]:
        return [(state, at) for name, state, at in self.changes if name == line]

    def _serve(self) -> None:
        try:
            while not self._stop.is_set():
                try:
                    conn, _ = self._listener.accept()
                except TimeoutError:
                    continue
                with conn:
                    self._connection(conn)
        except BaseException as error:  # reported by the test
            self.error = error

    def _connection(self, conn) -> None:
        from serial.rfc2217 import PortManager

        lock = threading.Lock()

        class Connection:
            def write(self, data: bytes) -> None:
                with lock:
                    conn.sendall(data)

        manager = PortManager(_ModemLines(self), Connection())
        while not self._stop.is_set():
            ready, _, _ = select.select([conn, self.pty.slave], [], [], 0.05)
            if conn in ready:
                data = conn.recv(4096)
                if not data:
                    return
                for chunk in manager.filter(data):
                    os.write(self.pty.slave, chunk)
            if self.pty.slave in ready:
                data = os.read(self.pty.slave, 4096)
                with lock:
                    conn.sendall(b"".join(manager.escape(data)))

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self._listener.close()
        self.pty.close()


class _ModemLines:
    """The serial port an RFC 2217 PortManager drives: settings are kept, DTR and RTS
    changes are recorded on the peer, the input lines read inactive."""

    baudrate, bytesize, parity, stopbits = 115200, 8, "N", 1
    rtscts = xonxoff = break_condition = False
    cts = dsr = ri = cd = False

    def __init__(self, peer: Rfc2217Peer) -> None:
        self._peer = peer
        self._lines = {"dtr": False, "rts": False}

    def _set(self, line: str, state: bool) -> None:
        self._lines[line] = state
        self._peer.changes.append((line, bool(state), time.time()))

    dtr = property(lambda self: self._lines["dtr"], lambda self, v: self._set("dtr", v))
    rts = property(lambda self: self._lines["rts"], lambda self, v: self._set("rts", v))

    def reset_input_buffer(self) -> None:
        return None

    def reset_output_buffer(self) -> None:
        return None
