"""A child process whose output is streamed as it arrives, watched and stoppable.

Spawned in its own session (process group) so stopping it also stops anything it started;
stdout and stderr are read by two threads in raw chunks (no line buffering, nothing lost);
psutil samples CPU, memory and threads once a second. Callbacks run on those threads: the
caller hands the data to its own loop (a Textual app posts messages, the CLI prints).

When etu dies, even by SIGKILL, its children die too: each child gets ``PR_SET_PDEATHSIG``
(which reaches the child itself only) and each child that leads a process group of its own
registers that group with etu's *reaper* before it execs: a tiny process started once per
etu, in a session of its own, ignoring the terminal's signals, that holds one end of a socket
whose other end only etu holds. When etu is gone, by any means, the reaper reads end-of-file
and SIGKILLs every group still registered, so a simulator's own children (its terminal
servers, helpers) go with it. Groups nobody is left in are forgotten every second or two.
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

CHUNK = 65536
PR_SET_PDEATHSIG = 1  # linux/prctl.h


try:
    import ctypes

    _LIBC = ctypes.CDLL(None, use_errno=True)  # loaded here: nothing is imported after fork
    _PRCTL = _LIBC.prctl
except (OSError, AttributeError, ImportError):  # not Linux: the watchdog and stop() remain
    _PRCTL = None


# The reaper: it reads "+PGID" lines; at end-of-file (etu gone) it stops those groups
# (SIGTERM, then SIGKILL after a second).
# Python with -I -S and nothing but os/select/signal: it starts in a few milliseconds.
REAPER_NAME = "etu-reaper"
REAPER_CODE = """\
import os, select, signal, time
for name in ("SIGINT", "SIGHUP", "SIGTERM", "SIGQUIT", "SIGTSTP", "SIGTTIN", "SIGTTOU"):
    signal.signal(getattr(signal, name), signal.SIG_IGN)
groups, pending, pruned = set(), b"", time.monotonic()
while True:
    ready, _, _ = select.select([0], [], [], 2.0)
    if ready:
        try:
            data = os.read(0, 4096)
        except OSError:
            data = b""
        if not data:
            break
        pending += data
        *lines, pending = pending.split(b"\\n")
        for line in lines:
            if line[:1] == b"+" and line[1:].isdigit():
                groups.add(int(line[1:]))
    if time.monotonic() - pruned >= 2.0:
        pruned = time.monotonic()
        for group in list(groups):
            try:
                os.killpg(group, 0)
            except ProcessLookupError:
                groups.discard(group)
            except OSError:
                pass
# TERM first, so a group's leader can stop what it put in groups of its own (ninja runs
# each compiler in a group of its own and kills them on TERM), then KILL what is left.
for sig in (signal.SIGTERM, signal.SIGKILL):
    for group in groups:
        try:
            os.killpg(group, sig)
        except OSError:
            pass
    if sig == signal.SIGTERM:
        end = time.monotonic() + 1.0
        while time.monotonic() < end and any(os.path.exists(f"/proc/{g}") for g in groups):
            time.sleep(0.02)
"""
_reaper_lock = threading.Lock()
_reaper_socket: socket.socket | None = None
_reaper_pid: int | None = None  # -1: could not be started (PR_SET_PDEATHSIG remains)


def reaper_pid() -> int | None:
    """The reaper's process id once one has been started (tests look for it)."""
    return _reaper_pid if _reaper_pid and _reaper_pid > 0 else None


def reaper_socket() -> socket.socket | None:
    """etu's end of the reaper's socket, the reaper started on first use (a process that
    forks children of its own, the warm host, registers their groups through it)."""
    global _reaper_socket, _reaper_pid
    with _reaper_lock:
        if _reaper_pid is None:
            _reaper_pid = -1
            if sys.executable:
                ours, theirs = socket.socketpair()  # both close on exec: no child inherits one
                try:
                    reaper = subprocess.Popen(
                        [sys.executable, "-I", "-S", "-c", REAPER_CODE, REAPER_NAME],
                        stdin=theirs, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                        start_new_session=True, close_fds=True,
                    )  # fmt: skip
                except OSError:
                    ours.close()
                else:
                    _reaper_pid, _reaper_socket = reaper.pid, ours
                    _reapers.append(reaper)  # never waited for: it outlives etu by design
                finally:
                    theirs.close()
        return _reaper_socket


_reapers: list[subprocess.Popen] = []


def die_with_parent() -> None:
    """Be SIGKILLed when the parent (the thread that forked this process) dies."""
    if _PRCTL is not None:
        _PRCTL(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def _forget_reaper() -> None:
    """In a forked copy of etu: its own reaper on first use (the socket object is left
    alone: a child about to exec still registers through it)."""
    global _reaper_socket, _reaper_pid
    _reaper_socket, _reaper_pid = None, None


os.register_at_fork(after_in_child=_forget_reaper)


def _die_with_parent(parent: int, reaper: socket.socket | None = None) -> Callable[[], None]:
    """The child's last step before exec: be SIGKILLed when etu dies, even by SIGKILL.

    A child in its own session survives its parent; a simulator left running after the
    console was killed would hold the UART, the license and a core. The death signal fires
    when the *thread* that forked exits, so children are forked by one long-lived thread
    (:func:`spawn`). ``reaper``: the child leads its own group and registers it (before
    exec, so no window is left where etu could die with the group unknown)."""

    def preexec() -> None:
        die_with_parent()
        if reaper is not None:
            with contextlib.suppress(OSError):  # MSG_NOSIGNAL: a gone reaper is no SIGPIPE
                reaper.send(b"+%d\n" % os.getpid(), socket.MSG_NOSIGNAL)
        if os.getppid() != parent:  # etu died between fork and prctl
            os._exit(1)

    return preexec


_spawn_queue: queue.SimpleQueue = queue.SimpleQueue()
_spawner_lock = threading.Lock()
_spawner: threading.Thread | None = None


def _spawn_loop() -> None:
    while True:
        work, box, done = _spawn_queue.get()
        try:
            box["value"] = work()
        except BaseException as error:  # handed back to the caller
            box["error"] = error
        done.set()


def spawn(argv: Sequence[str], **popen_kwargs) -> subprocess.Popen:
    """``subprocess.Popen`` from etu's spawner thread, which lives as long as etu does."""
    global _spawner
    with _spawner_lock:
        if _spawner is None:
            _spawner = threading.Thread(target=_spawn_loop, name="etu-spawner", daemon=True)
            _spawner.start()
    box: dict = {}
    done = threading.Event()
    parent = os.getpid()
    own_group = popen_kwargs.get("start_new_session") or popen_kwargs.get("process_group") == 0
    reaper = reaper_socket() if own_group else None
    kwargs = {"preexec_fn": _die_with_parent(parent, reaper), **popen_kwargs}
    _spawn_queue.put((lambda: subprocess.Popen(list(argv), **kwargs), box, done))
    done.wait()
    if "error" in box:
        raise box["error"]
    return box["value"]


@dataclass(frozen=True, slots=True)
class ProcessStats:
    cpu_percent: float
    rss_bytes: int
    threads: int
    children: int
    elapsed_s: float


OutputCallback = Callable[[bytes, str], None]  # (chunk, "stdout" | "stderr")
StatsCallback = Callable[[ProcessStats], None]
ExitCallback = Callable[[int], None]


class StreamingProcess:
    """Run ``argv`` (a list: never a shell) and stream what it prints."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        on_output: OutputCallback,
        on_exit: ExitCallback | None = None,
        on_stats: StatsCallback | None = None,
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
        sample_interval: float = 1.0,
        pass_fds: Sequence[int] = (),
        launcher: Callable[[], Any] | None = None,
    ) -> None:
        """``launcher``: starts the child some other way (the warm compile host) and
        returns what stands for a Popen (pid leading its own group, stdout, stderr,
        ``wait()``), or None to have it spawned from ``argv`` as usual."""
        self.argv = [str(a) for a in argv]
        self._on_output = on_output
        self._on_exit = on_exit
        self._on_stats = on_stats
        self._env = env
        self._cwd = cwd
        self._interval = sample_interval
        self._pass_fds = tuple(pass_fds)
        self._launcher = launcher
        self._popen: Any = None  # a subprocess.Popen, or what the launcher returned
        self._readers: list[threading.Thread] = []
        self._exited = threading.Event()
        self.returncode: int | None = None
        self.stopped_by_user = False
        self._launch_lock = threading.Lock()  # a stop meets a launch that is still under way
        self.started_at = 0.0

    @property
    def pid(self) -> int | None:
        return self._popen.pid if self._popen else None

    def start(self) -> StreamingProcess:
        """Start it; OSError (not found, not executable) is raised here, not in a thread."""
        self.started_at = time.monotonic()
        launched = self._launcher() if self._launcher is not None else None
        if launched is None:
            launched = spawn(
                self.argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, env=self._env, cwd=self._cwd, start_new_session=True,
                pass_fds=self._pass_fds,
            )  # fmt: skip
        with self._launch_lock:
            self._popen = launched
            stopped = self.stopped_by_user
        if stopped:  # stopped while a launcher was still starting it (a warm host's preload)
            self._signal(signal.SIGKILL)
        for stream, name in ((self._popen.stdout, "stdout"), (self._popen.stderr, "stderr")):
            reader = threading.Thread(
                target=self._read, args=(stream, name), name=f"etu-{name}", daemon=True
            )
            reader.start()
            self._readers.append(reader)
        threading.Thread(target=self._wait, name="etu-wait", daemon=True).start()
        if self._on_stats is not None:
            threading.Thread(target=self._sample, name="etu-psutil", daemon=True).start()
        return self

    def _read(self, stream, name: str) -> None:
        fd = stream.fileno()
        while True:
            try:
                chunk = os.read(fd, CHUNK)
            except OSError:
                break
            if not chunk:
                break
            self._on_output(chunk, name)
        stream.close()

    def _wait(self) -> None:
        assert self._popen is not None
        code = self._popen.wait()
        for reader in self._readers:
            reader.join()  # every byte is delivered before the exit is
        self.returncode = code
        self._exited.set()
        if self._on_exit is not None:
            self._on_exit(code)

    def _sample(self) -> None:
        assert self._popen is not None
        try:
            process = psutil.Process(self._popen.pid)
            process.cpu_percent(None)
        except psutil.Error:
            return
        while not self._exited.wait(self._interval):
            try:
                with process.oneshot():
                    stats = ProcessStats(
                        cpu_percent=process.cpu_percent(None),
                        rss_bytes=process.memory_info().rss,
                        threads=process.num_threads(),
                        children=len(process.children(recursive=True)),
                        elapsed_s=time.monotonic() - self.started_at,
                    )
            except psutil.Error:
                return
            self._on_stats(stats)

    def wait(self, timeout: float | None = None) -> int | None:
        self._exited.wait(timeout)
        return self.returncode

    def stop(self, grace: float = 3.0) -> None:
        """SIGTERM the whole process group, then SIGKILL what is left after ``grace``
        (also what outlived the child itself: its group is its own, nothing else is in it)."""
        with self._launch_lock:
            self.stopped_by_user = True
        self._signal(signal.SIGTERM)
        deadline = time.monotonic() + grace
        if not self._exited.wait(grace):
            self._signal(signal.SIGKILL)
            return
        group = self._popen.pid if self._popen is not None else None
        while group is not None and time.monotonic() < deadline:
            if not group_alive(group):
                return
            time.sleep(0.05)
        kill_group(group)

    def kill(self) -> None:
        with self._launch_lock:
            self.stopped_by_user = True
        self._signal(signal.SIGKILL)

    def _signal(self, sig: int) -> None:
        if self._popen is None or self._exited.is_set():
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self._popen.pid, sig)


def group_alive(group: int) -> bool:
    """Is anyone left in process group ``group``?"""
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def kill_group(group: int | None, sig: int = signal.SIGKILL) -> None:
    """Signal a child's own process group; nothing if it is empty or gone."""
    if group is not None and group > 0:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(group, sig)
