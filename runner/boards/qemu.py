"""The emulated board: QEMU's ``mps3-an547`` (Cortex-M55, Corstone-300 map, no NPU).

``qemu-system-arm -M mps3-an547 -nographic -no-reboot -kernel ELF`` with UART0 on a
pseudo-terminal (``-serial pty``): the caller opens that pty with pyserial exactly as it
opens a board's USB serial port. "Flashing" this board is loading the ELF.

QEMU starts paused (``-S``) because a pty nobody has opened drops what the guest writes:
open the port first, then :meth:`QemuBoard.resume`. The monitor is on QEMU's stdin/stdout
(``-monitor stdio``), which is how ``cont`` and ``quit`` reach it. QEMU is started through
:func:`etu.runner.process.spawn`, in its own process group: it dies with etu (even when etu is
SIGKILLed: parent-death signal and etu's reaper), and :meth:`QemuBoard.stop` ends it and
anything it started: ``quit``, then SIGKILL of the group (SIGTERM would not do: with
``-action shutdown=pause`` QEMU takes it as a shutdown request and pauses).

The stand-in firmware ends with SYSRESETREQ; ``-no-reboot`` makes that a shutdown. If QEMU
exited then, the pty would hang up and the kernel would throw away what the reader had not
yet read (seen: every byte of a short run lost), so ``-action shutdown=pause`` keeps QEMU
alive with the guest stopped; a watcher asks the monitor ``info status`` ten times a second,
sets :attr:`QemuBoard.guest_ended`, and the reader drains the pty before :meth:`stop`.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from etu.runner.process import kill_group, spawn

if TYPE_CHECKING:
    from etu.runner.npu_bridge import NpuBridge

QEMU = "qemu-system-arm"
MACHINE = "mps3-an547"
LABEL = "emulated board (QEMU, no NPU)"
_PTY = re.compile(rb"char device redirected to (/dev/pts/\d+)")
_ENDED = b"paused (shutdown)"
_KEEP = 65536  # bytes of QEMU's own messages kept (the status polls add up)


class QemuError(RuntimeError):
    """QEMU could not start or gave no pty; the message is one line."""


def find_qemu(qemu: str | None = None) -> str:
    found = shutil.which(qemu or os.environ.get("ETU_QEMU") or QEMU)
    if found is None:
        raise QemuError(
            f"{qemu or QEMU}: not found on PATH (install it: apt-get install qemu-system-arm)"
        )
    return found


def qemu_argv(
    elf: Path | str,
    *,
    qemu: str = QEMU,
    machine: str = MACHINE,
    paused: bool = True,
    extra_args: Sequence[str] = (),
) -> list[str]:
    """The command line: headless, no reboot, UART0 on a pty, monitor on stdio."""
    argv = [qemu, "-M", machine, "-nographic", "-no-reboot", "-action", "shutdown=pause",
            "-serial", "pty", "-monitor", "stdio"]  # fmt: skip
    if paused:
        argv.append("-S")
    return [*argv, *extra_args, "-kernel", str(elf)]


class QemuBoard:
    """One QEMU process standing for a board; ``start()`` gives the pty to open."""

    def __init__(
        self,
        elf: Path | str,
        *,
        qemu: str | None = None,
        machine: str = MACHINE,
        start_timeout: float = 10.0,
        extra_args: Sequence[str] = (),
    ) -> None:
        self.elf = Path(elf)
        self._qemu = qemu
        self.machine = machine
        self.start_timeout = start_timeout
        self.extra_args = tuple(extra_args)
        self.argv: list[str] = []
        self.pty: str | None = None
        self._popen: subprocess.Popen | None = None
        self._messages = bytearray()  # what QEMU itself printed (monitor, errors)
        self._lock = threading.Lock()
        self._pty_found = threading.Event()
        self._readers: list[threading.Thread] = []
        self.guest_ended = threading.Event()  # the firmware reset/shut the machine down
        self._swept = False
        self.bridge: NpuBridge | None = None  # etu's Ethos-U, when the runner was built for it

    @property
    def pid(self) -> int | None:
        return self._popen.pid if self._popen else None

    @property
    def returncode(self) -> int | None:
        return self._popen.poll() if self._popen else None

    @property
    def running(self) -> bool:
        return self._popen is not None and self._popen.poll() is None

    def messages(self) -> str:
        with self._lock:
            return self._messages.decode("utf-8", "replace")

    def start(self, *, paused: bool = True) -> str:
        """Start QEMU (paused unless told otherwise) and return the pty of UART0."""
        if not self.elf.is_file():
            raise QemuError(f"{self.elf}: no such firmware ELF")
        # QEMU would load anything else as a raw image at 0 and run garbage.
        from etu.parsers.elf_map import check_arm_firmware
        from etu.parsers.errors import ParseError, describe_error

        try:
            check_arm_firmware(self.elf)
        except ParseError as error:
            raise QemuError(f"{describe_error(error)} (QEMU would run it as raw bytes)") from None
        qemu = find_qemu(self._qemu)
        from etu.runner.npu_bridge import BridgeError
        from etu.runner.runtime_run import npu_bridge_for

        try:  # a runner built with etu's Ethos-U driver layer: etu serves its NPU part
            self.bridge = npu_bridge_for(self.elf)
        except BridgeError as error:
            raise QemuError(str(error)) from None
        machine, extra = self.machine, self.extra_args
        if self.bridge is not None:
            machine = f"{machine},{self.bridge.machine_options}"
            extra = (*self.bridge.qemu_args(), *extra)
        self.argv = qemu_argv(self.elf, qemu=qemu, machine=machine, paused=paused,
                              extra_args=extra)  # fmt: skip
        try:
            if self.bridge is not None:
                self.bridge.start()
            self._popen = spawn(
                self.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                pass_fds=self.bridge.pass_fds if self.bridge is not None else (),
            )
        except OSError as error:
            self._close_bridge()
            raise QemuError(f"{qemu}: could not start: {error.strerror or error}") from None
        finally:
            if self.bridge is not None:
                self.bridge.child_started()
        try:
            for stream in (self._popen.stdout, self._popen.stderr):
                reader = threading.Thread(target=self._read, args=(stream,), daemon=True)
                reader.start()
                self._readers.append(reader)
            waited = 0.0
            while not self._pty_found.wait(0.05):
                waited += 0.05
                if self._popen.poll() is not None or waited >= self.start_timeout:
                    for reader in self._readers:
                        reader.join(0.5)
                    self.stop()
                    last = [line for line in self.messages().splitlines() if line.strip()]
                    why = last[-1].strip() if last else "no message"
                    raise QemuError(f"{self.elf}: QEMU gave no pty: {why}")
        except BaseException:  # a stop signal (or Ctrl+C) while it starts: no QEMU left
            self.stop()
            raise
        return self.pty  # type: ignore[return-value]

    def _read(self, stream) -> None:
        fd = stream.fileno()
        while True:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            with self._lock:
                self._messages += chunk
                match = None if self._pty_found.is_set() else _PTY.search(self._messages)
                if _ENDED in self._messages[-len(chunk) - len(_ENDED) :]:
                    self.guest_ended.set()
                if len(self._messages) > _KEEP and self._pty_found.is_set():
                    del self._messages[: len(self._messages) - _KEEP // 2]
            if match:
                self.pty = match.group(1).decode()
                self._pty_found.set()
        self.guest_ended.set()  # QEMU itself is gone

    def monitor(self, command: str) -> None:
        """Send one line to QEMU's monitor (``cont``, ``quit``, ``system_reset``...)."""
        if not self.running or self._popen is None or self._popen.stdin is None:
            return
        with contextlib.suppress(OSError, ValueError):
            self._popen.stdin.write(command.encode() + b"\n")
            self._popen.stdin.flush()

    def resume(self) -> None:
        """Let the guest run (after the port is open, so no byte is lost)."""
        self.monitor("cont")
        threading.Thread(target=self._watch, name="etu-qemu-status", daemon=True).start()

    def _watch(self) -> None:
        while not self.guest_ended.wait(0.1):
            if not self.running:
                self.guest_ended.set()
                return
            self.monitor("info status")

    def wait(self, timeout: float | None = None) -> int | None:
        if self._popen is None:
            return None
        try:
            return self._popen.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def stop(self, grace: float = 2.0) -> int | None:
        """``quit`` on the monitor, then SIGKILL of the process group (which also takes
        anything QEMU started)."""
        if self._popen is None:
            return None
        if self._popen.poll() is None:
            self.monitor("quit")
            if self.wait(grace) is None:
                kill_group(self._popen.pid)
                self.wait(grace)
        if not self._swept:  # whatever outlived QEMU in its group (once: the id is free now)
            self._swept = True
            kill_group(self._popen.pid)
        for stream in (self._popen.stdin, self._popen.stdout, self._popen.stderr):
            with contextlib.suppress(OSError, ValueError, AttributeError):
                stream.close()
        self._close_bridge()
        return self._popen.returncode

    def _close_bridge(self) -> None:
        if self.bridge is not None:
            self.bridge.close()
            self.bridge = None

    def __enter__(self) -> QemuBoard:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


__all__ = ["LABEL", "MACHINE", "QEMU", "QemuBoard", "QemuError", "find_qemu", "qemu_argv"]
