"""A warm interpreter that forks etu's torch children with torch and ExecuTorch imported.

Every compile worker used to spend ~5 s of CPU importing torch, ExecuTorch's Arm backend and
torchao before its first stage, and the console's second compile paid it again; each host
comparison after a run paid ~1.3 s for torch and the host runtime. A host imports them once
(its preload: ``aot`` for compile workers, ``reference`` for comparisons), then forks one
child per job. The child is what a cold
worker is, minus those imports: ``-I`` isolated (the host was started so), its own process
group, stdout/stderr/channel on the parent's pipes, the parent's environment and folder at
launch, killed with the host (``PR_SET_PDEATHSIG``) and registered with etu's reaper, so a
cancel (the group), a crash (its status) and etu's death behave as they did. Each fork starts
from the state the preload left, so a job sees nothing of the jobs before it.

What a library reads from the environment *while it is imported* is read once, when the
host starts; a host is kept per value of those variables (:data:`IMPORT_ENV_PREFIXES`).

Protocol: a ``SOCK_SEQPACKET`` control socket carries one JSON message per job with the
job's own socket, its stdout and stderr write ends and the descriptors to pass; the host
answers on the job's socket with ``{"pid": N}`` once the child leads its group, and with
``{"status": CODE}`` (``Popen.returncode``'s convention) when it has exited. A host that is
gone answers nothing: the caller starts its worker cold instead (:func:`launch`).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

from etu.runner.isolated import isolated_python

# Environment variables read while torch, ExecuTorch or the Python runtime import.
IMPORT_ENV_PREFIXES = ("TORCH", "PYTORCH", "OMP_", "MKL_", "KMP_", "OPENBLAS", "EXECUTORCH",
                       "TOSA", "PYTHON", "LD_", "MALLOC", "CUDA")  # fmt: skip
MESSAGE_LIMIT = 1 << 20  # one job's message: its argv and environment
MAX_PASSED_FDS = 16
LAUNCH_TIMEOUT = 300  # seconds for a new host's preload (torch on a cold disk) and a fork
OPT_OUT = "ETU_WARM_HOST"
HOST_IGNORES = ("SIGHUP", "SIGTSTP", "SIGTTIN", "SIGTTOU")  # and SIGINT


class HostGone(OSError):
    """The host did not take the job (not started, exited, or crashed)."""


class HostStuck(HostGone):
    """The host did not answer in time (it was killed; another would be stuck alike)."""


class WarmChild:
    """One forked job, as :class:`etu.runner.process.StreamingProcess` uses a Popen: its
    pid (which leads its process group), stdout, stderr and ``wait()``."""

    def __init__(self, pid: int, job: socket.socket, stdout, stderr) -> None:
        self.pid = pid
        self.stdout = stdout
        self.stderr = stderr
        self.returncode: int | None = None
        self._job = job
        self._lock = threading.Lock()

    def wait(self, timeout: float | None = None) -> int:
        with self._lock:
            if self.returncode is None:
                self._job.settimeout(timeout)
                try:
                    data = self._job.recv(4096)
                except (TimeoutError, BlockingIOError):
                    raise subprocess.TimeoutExpired(f"warm child {self.pid}", timeout) from None
                try:
                    self.returncode = int(json.loads(data)["status"])
                except (ValueError, KeyError, TypeError):
                    # The host is gone, and with it the child (PR_SET_PDEATHSIG).
                    self.returncode = -signal.SIGKILL
                self._job.close()
            return self.returncode

    def communicate(self, timeout: float | None = None) -> tuple[int, bytes, bytes]:
        """(status, stdout, stderr), all of it; its group killed after ``timeout`` seconds
        (subprocess.TimeoutExpired), as ``subprocess.run`` does."""
        said: dict[str, bytes] = {}

        def read(stream, name: str) -> None:
            with stream:
                said[name] = stream.read()

        readers = [threading.Thread(target=read, args=(s, n), daemon=True)
                   for s, n in ((self.stdout, "stdout"), (self.stderr, "stderr"))]  # fmt: skip
        for reader in readers:
            reader.start()
        try:
            code = self.wait(timeout)
        except subprocess.TimeoutExpired:
            from etu.runner.process import kill_group

            kill_group(self.pid)
            self.wait()
            raise
        for reader in readers:
            reader.join()
        return code, said.get("stdout", b""), said.get("stderr", b"")


class WarmHost:
    """The parent's side: the host process and its control socket."""

    def __init__(self, preload: str, env: Mapping[str, str] | None = None) -> None:
        from etu.runner.process import reaper_socket, spawn

        self.preload = preload
        self._lock = threading.Lock()
        self._control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        reaper = reaper_socket()
        passed = [theirs.fileno()] + ([reaper.fileno()] if reaper is not None else [])
        argv = isolated_python("etu.runner.warm_host", "--control-fd", str(theirs.fileno()),
                               "--reaper-fd", str(reaper.fileno() if reaper else -1),
                               "--preload", preload)  # fmt: skip
        try:
            self.process = spawn(
                argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL, start_new_session=True, pass_fds=passed,
                env=dict(env) if env is not None else None,
            )  # fmt: skip
        finally:
            theirs.close()

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def launch(self, module: str, args: Sequence[str], *, env: Mapping[str, str],
               cwd: Path | str, pass_fds: Sequence[int] = ()) -> WarmChild:  # fmt: skip
        """Fork ``python -m module args`` in the host; HostGone when it cannot."""
        if len(pass_fds) > MAX_PASSED_FDS - 3:
            raise ValueError(f"at most {MAX_PASSED_FDS - 3} descriptors can be passed")
        spec = {"module": module, "args": [str(a) for a in args], "env": dict(env),
                "cwd": str(cwd), "fds": [int(fd) for fd in pass_fds]}  # fmt: skip
        message = json.dumps(spec).encode()
        if len(message) > MESSAGE_LIMIT:
            raise HostGone("the job's environment is too large to send")
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        out_read, out_write = os.pipe()
        err_read, err_write = os.pipe()
        try:
            with self._lock:
                socket.send_fds(self._control, [message],
                                [theirs.fileno(), out_write, err_write, *pass_fds])  # fmt: skip
        except OSError as error:
            for fd in (out_read, err_read):
                os.close(fd)
            ours.close()
            raise HostGone(f"the warm host did not take the job: {error}") from None
        finally:
            theirs.close()
            os.close(out_write)
            os.close(err_write)
        ours.settimeout(LAUNCH_TIMEOUT)  # its preload, then the fork
        try:
            pid = int(json.loads(ours.recv(4096))["pid"])
        except (OSError, ValueError, KeyError, TypeError) as error:
            for fd in (out_read, err_read):
                os.close(fd)
            ours.close()
            if isinstance(error, TimeoutError):  # stuck importing: no host, start cold
                with contextlib.suppress(OSError):
                    self.process.kill()
                raise HostStuck(f"the warm host did not answer in {LAUNCH_TIMEOUT} s") from None
            raise HostGone("the warm host exited before forking the job") from None
        ours.settimeout(None)
        return WarmChild(pid, ours, open(out_read, "rb", buffering=0),
                         open(err_read, "rb", buffering=0))  # fmt: skip

    def close(self) -> None:
        """The host exits when its control socket closes (its running jobs with it)."""
        self._control.close()


_hosts: dict[str, WarmHost] = {}
_hosts_lock = threading.Lock()


def _import_env_key(env: Mapping[str, str]) -> str:
    read = sorted((k, v) for k, v in env.items() if k.startswith(IMPORT_ENV_PREFIXES))
    return hashlib.sha256(json.dumps(read).encode()).hexdigest()[:16]


def host_for(preload: str, env: Mapping[str, str]) -> WarmHost:
    """This process's host for ``preload`` and the import-time part of ``env``, started
    on first use and again after it died."""
    key = f"{preload}:{_import_env_key(env)}"
    with _hosts_lock:
        host = _hosts.get(key)
        if host is None or not host.alive():
            if host is not None:
                host.close()
            host = _hosts[key] = WarmHost(preload, env)
        return host


def launch(preload: str, module: str, args: Sequence[str], *,
           pass_fds: Sequence[int] = ()) -> WarmChild | None:  # fmt: skip
    """``module`` forked from a warm host with this process's environment and folder, or
    None when no host could take it (the caller starts it cold: same result, slower), or
    when ``ETU_WARM_HOST=0`` asks for every worker to start cold."""
    env = dict(os.environ)
    if env.get(OPT_OUT) == "0":
        return None
    for _attempt in range(2):  # a host that died since its last job is replaced once
        try:
            host = host_for(preload, env)
            return host.launch(module, args, env=env, cwd=os.getcwd(), pass_fds=pass_fds)
        except HostStuck:
            return None
        except HostGone:
            continue
        except OSError:
            return None
    return None


def _forget_hosts() -> None:
    """A forked copy of etu does not share its parent's hosts."""
    _hosts.clear()


os.register_at_fork(after_in_child=_forget_hosts)


# ------------------------------------------------------------------------- the host side


def serve(control: socket.socket, reaper_fd: int, preload: str) -> int:
    """The host's loop: fork a child per job, report its pid and status; end when the
    parent closes the control socket."""
    import importlib
    import select

    from etu.runner.heap import settle_imports

    # A missing extra is the job's to report, cold or warm; the libraries' import-time
    # noise is kept and repeated in each job's log, as a cold worker's imports print it.
    with _captured() as said, contextlib.suppress(Exception):
        importlib.import_module(preload).preload()
    settle_imports()  # what the preload made is shared with each fork, never copied by GC
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.set_wakeup_fd(wake_write)
    jobs: dict[int, socket.socket] = {}
    while True:
        ready, _, _ = select.select([control, wake_read], [], [])
        if wake_read in ready:
            with contextlib.suppress(BlockingIOError):
                os.read(wake_read, 4096)
        if control in ready:
            try:
                message, fds, _flags, _ = socket.recv_fds(control, MESSAGE_LIMIT,
                                                          MAX_PASSED_FDS)  # fmt: skip
            except OSError:
                break
            if not message:
                break
            _start(message, fds, jobs, control, (wake_read, wake_write), reaper_fd, said)
        _reap(jobs)
    return 0


def _start(message: bytes, fds: list[int], jobs: dict[int, socket.socket],
           control: socket.socket, wake: tuple[int, int], reaper_fd: int,
           said: dict[int, bytes]) -> None:  # fmt: skip
    if len(fds) < 3:
        for fd in fds:
            os.close(fd)
        return
    job = socket.socket(fileno=fds[0])
    try:
        spec = json.loads(message)
    except ValueError:
        spec = None
    if not isinstance(spec, dict):
        job.close()
        for fd in fds[1:]:
            os.close(fd)
        return
    host = os.getpid()
    pid = os.fork()
    if pid == 0:  # the job: never returns
        _run_child(spec, fds, closing=[control.fileno(), fds[0], *wake], host=host,
                   reaper_fd=reaper_fd, said=said)  # fmt: skip
    with contextlib.suppress(OSError):  # the child sets it too: whichever runs first
        os.setpgid(pid, pid)
    for fd in fds[1:]:
        os.close(fd)
    jobs[pid] = job
    with contextlib.suppress(OSError):
        job.send(json.dumps({"pid": pid}).encode())


def _reap(jobs: dict[int, socket.socket]) -> None:
    while jobs:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        job = jobs.pop(pid, None)
        if job is not None:
            with contextlib.suppress(OSError):
                job.send(json.dumps({"status": os.waitstatus_to_exitcode(status)}).encode())
            job.close()


def _run_child(spec: dict, fds: list[int], *, closing: list[int], host: int,
               reaper_fd: int, said: dict[int, bytes]) -> None:  # fmt: skip
    """In the forked child: become the job, run it, and exit with its status."""
    code = 1
    try:
        os.setpgid(0, 0)
        from etu.runner.process import die_with_parent

        die_with_parent()
        if os.getppid() != host:  # the host died between fork and prctl
            os._exit(1)
        if reaper_fd >= 0:
            with contextlib.suppress(OSError):
                os.write(reaper_fd, b"+%d\n" % os.getpid())
        signal.set_wakeup_fd(-1)
        for name in ("SIGCHLD", *HOST_IGNORES):  # a cold worker's dispositions
            signal.signal(getattr(signal, name), signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        _plumb(fds, [int(fd) for fd in spec["fds"]], [*closing, reaper_fd])
        for fd, text in said.items():  # what a cold worker's imports would have printed
            with contextlib.suppress(OSError):
                os.write(fd, text)
        os.chdir(spec["cwd"])
        os.environ.clear()
        os.environ.update(spec["env"])
        code = _run_module(spec["module"], spec["args"])
    except BaseException:  # the job's own failure reached nothing that reports it
        import traceback

        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)


@contextlib.contextmanager
def _captured():
    """What is written to stdout and stderr inside, by Python or C, as ``{fd: bytes}``."""
    import tempfile

    said: dict[int, bytes] = {}
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        files = {1: out, 2: err}
        saved = {fd: os.dup(fd) for fd in files}
        try:
            for fd, file in files.items():
                os.dup2(file.fileno(), fd)
            yield said
        finally:
            for fd, file in files.items():
                with contextlib.suppress(Exception):
                    (sys.stdout if fd == 1 else sys.stderr).flush()
                os.dup2(saved[fd], fd)
                os.close(saved[fd])
                file.seek(0)
                said[fd] = file.read()


def _plumb(fds: list[int], targets: list[int], closing: list[int]) -> None:
    """stdin from /dev/null, stdout and stderr to the parent's pipes, each passed
    descriptor at the number the job's argv names; the host's own descriptors closed."""
    received = fds[1:]
    moved = [fcntl.fcntl(fd, fcntl.F_DUPFD, 1024) for fd in received]  # above any target
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(moved[0], 1)
    os.dup2(moved[1], 2)
    for fd, target in zip(moved[2:], targets, strict=False):
        os.dup2(fd, target)  # inheritable, as Popen passes them
    keep = {0, 1, 2, *targets}
    for fd in {*received, *moved, *closing}:
        if fd >= 0 and fd not in keep:
            with contextlib.suppress(OSError):
                os.close(fd)


def _run_module(module: str, args: list[str]) -> int:
    import runpy

    sys.argv = [module, *args]
    sys.modules.pop(module, None)  # run as __main__ from its source, as a cold worker is
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit as done:
        if done.code is None:
            return 0
        if isinstance(done.code, int):
            return done.code
        print(done.code, file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    options = dict(zip(argv[::2], argv[1::2], strict=False))
    control = socket.socket(fileno=int(options["--control-fd"]))
    for name in ("SIGINT", *HOST_IGNORES):  # the parent decides when the host ends
        signal.signal(getattr(signal, name), signal.SIG_IGN)
    return serve(control, int(options.get("--reaper-fd", -1)), options["--preload"])


if __name__ == "__main__":
    raise SystemExit(main())
