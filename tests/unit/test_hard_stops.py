"""Hard stops (issue 9): SIGTERM/SIGHUP end a run like Ctrl+C, SIGKILL of etu leaves no
simulator behind, a watchdog kills a simulator that outlives its time limit, and a full disk
or an unwritable sessions folder stops the run with the reason instead of hanging.

All with real processes: ``etu run`` as a subprocess, the stand-in FVP or shell scripts as
the simulator, a real tmpfs when the tests run as root (and RLIMIT_FSIZE otherwise)."""

from __future__ import annotations

import json
import os
import pty
import resource
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from fvp.standin import install_standin
from runner.run import RunController, install_stop_signals
from runner.session import read_session

ROOT = Path(__file__).resolve().parent.parent.parent
ELF = ROOT / "etu_tui" / "demo" / "firmware" / "arm_executor_runner.elf"
SIM = "FVP_Corstone_SSE-300_Ethos-U55"


@pytest.fixture(scope="module")
def standin(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("fvps")
    install_standin(folder)
    return folder / SIM


def env(**extra: str) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("ETU_STANDIN")}
    return {**clean, "PYTHONPATH": str(ROOT), **extra}


def start_etu(args: list, cwd: Path, **kwargs) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "etu_tui.cli", *map(str, args)], cwd=cwd,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kwargs,
    )  # fmt: skip


def wait_for_simulator(etu: subprocess.Popen, sessions: Path) -> psutil.Process:
    """The simulator child once it has printed its first lines."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        raws = list(sessions.glob("*/raw.log"))
        if raws and raws[0].read_bytes().count(b"\n") >= 5:
            (child,) = psutil.Process(etu.pid).children()
            return child
        time.sleep(0.05)
    raise AssertionError("the simulator never printed")


def gone(process: psutil.Process, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if process.status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_signals_end_a_cli_run_and_finish_the_session(sig, standin, tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    etu = start_etu(
        ["run", "--elf", ELF, "--fvp-path", standin, "--sessions", sessions],
        tmp_path, env=env(ETU_STANDIN_FAULT="hang"),
    )  # fmt: skip
    simulator = wait_for_simulator(etu, sessions)
    etu.send_signal(sig)
    _, err = etu.communicate(timeout=30)
    assert etu.returncode == 6, err  # killed
    assert f"stopped by {sig.name}".encode() in err
    assert gone(simulator)
    (folder,) = sessions.iterdir()
    meta = read_session(folder).meta
    assert meta["ended"] is not None and meta["exit_reason"] == "killed"


def test_sigkill_of_etu_leaves_no_simulator(standin, tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    etu = start_etu(
        ["run", "--elf", ELF, "--fvp-path", standin, "--sessions", sessions],
        tmp_path, env=env(ETU_STANDIN_FAULT="hang"),
    )  # fmt: skip
    simulator = wait_for_simulator(etu, sessions)
    etu.kill()
    etu.wait(10)
    assert gone(simulator), "the simulator outlived a SIGKILLed etu"


RUN_FROM_A_WORKER_THREAD = """
import sys, threading, time
from pathlib import Path
from runner.run import RunController, install_stop_signals, wait_all_runs

exited = []
install_stop_signals(exited.append)
box = {}

def start():  # as the console does: a worker thread that ends right after starting the run
    box["run"] = RunController([sys.argv[1], "-a", sys.argv[2]], sessions=Path(sys.argv[3]),
                               kind="fvp", meta={}).start()

worker = threading.Thread(target=start)
worker.start()
worker.join()
print(box["run"].pid, flush=True)
while not exited:
    time.sleep(0.05)
wait_all_runs(20)
print(box["run"].outcome.reason, box["run"].outcome.proof, flush=True)
"""


def test_console_style_run_survives_its_thread_and_stops_on_sigterm(standin, tmp_path) -> None:
    """A run started from a short-lived thread is not killed when that thread ends (the
    parent-death signal is tied to the spawner thread), and SIGTERM stops and records it."""
    script = tmp_path / "console_like.py"
    script.write_text(RUN_FROM_A_WORKER_THREAD)
    sessions = tmp_path / "sessions"
    host = subprocess.Popen(
        [sys.executable, str(script), str(standin), str(ELF), str(sessions)],
        stdout=subprocess.PIPE, text=True, env=env(ETU_STANDIN_FAULT="hang"), cwd=tmp_path,
    )  # fmt: skip
    pid = int(host.stdout.readline())
    time.sleep(1.5)  # the starting thread is long gone
    simulator = psutil.Process(pid)
    assert simulator.is_running() and simulator.status() != psutil.STATUS_ZOMBIE
    host.send_signal(signal.SIGTERM)
    out, _ = host.communicate(timeout=30)
    assert out.strip() == "killed stopped by SIGTERM"
    assert gone(simulator)
    (folder,) = sessions.iterdir()
    assert read_session(folder).meta["exit_reason"] == "killed"


def test_console_exits_cleanly_on_sigterm(tmp_path: Path) -> None:
    """The console itself: SIGTERM leaves it as `q` would, the terminal restored."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: the console on the demo program
        os.chdir(tmp_path)
        os.environ["PYTHONPATH"] = str(ROOT)
        os.execv(sys.executable, [sys.executable, "-m", "etu_tui.cli",
                                  str(ROOT / "etu_tui" / "demo" / "demo_cnn.pte")])  # fmt: skip
    output = b""

    def read_for(seconds: float) -> None:
        nonlocal output
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            ready, _, _ = select.select([fd], [], [], 0.1)
            if ready:
                try:
                    output += os.read(fd, 65536)
                except OSError:
                    return

    read_for(8)
    assert b"\x1b[?1049h" in output  # the console is up (alternate screen)
    os.kill(pid, signal.SIGTERM)
    read_for(8)
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 128 + signal.SIGTERM
    assert output.rfind(b"\x1b[?1049l") > output.rfind(b"\x1b[?1049h")  # screen restored


def test_watchdog_kills_a_simulator_that_outlives_its_time_limit(tmp_path: Path) -> None:
    stubborn = tmp_path / "stubborn-fvp"
    stubborn.write_text(
        "#!/bin/sh\ntrap '' TERM INT HUP\necho started\nwhile :; do sleep 0.1; done\n"
    )
    stubborn.chmod(0o755)
    started = time.monotonic()
    controller = RunController(
        [str(stubborn), "--timelimit", "1"], sessions=tmp_path / "s", kind="fvp", meta={},
        grace=1.0,
    ).start()  # fmt: skip
    pid = controller.pid
    outcome = controller.wait(30)
    assert outcome is not None and outcome.reason == "time_limit"
    assert "watchdog" in outcome.proof and 2.0 <= time.monotonic() - started < 15
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    assert read_session(controller.folder).meta["exit_reason"] == "time_limit"


FLOOD = (
    "#!/bin/sh\nyes 'I [executorch:arm_executor_runner.cpp:912 runner_init()] flooding the UART'\n"
)


def flood_sim(folder: Path) -> Path:
    sim = folder / "flood-fvp"
    sim.write_text(FLOOD)
    sim.chmod(0o755)
    return sim


def check_full_disk_run(etu: subprocess.Popen, sessions: Path, reason: str) -> None:
    _, err = etu.communicate(timeout=60)  # never hangs
    err = err.decode()
    assert etu.returncode == 7, err  # incomplete
    assert "could not record the session" in err and reason in err, err
    for process in psutil.process_iter(["cmdline"]):
        assert "yes" not in (process.info["cmdline"] or [])[:1] or process.ppid() != etu.pid


def test_file_size_limit_while_recording_stops_the_run(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"

    def small_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (256 * 1024, 256 * 1024))

    etu = start_etu(
        ["run", "--elf", ELF, "--fvp-path", flood_sim(tmp_path), "--sessions", sessions],
        tmp_path, env=env(), preexec_fn=small_files,
    )  # fmt: skip
    check_full_disk_run(etu, sessions, "File too large")
    (folder,) = sessions.iterdir()
    meta = json.loads((folder / "meta.json").read_text())
    assert meta["incomplete"] is True and "File too large" in meta["record_error"]


@pytest.fixture
def tiny_tmpfs(tmp_path: Path):
    mount = tmp_path / "tiny"
    mount.mkdir()
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)],
        capture_output=True, check=False,
    )  # fmt: skip
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.decode().strip()}")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def test_disk_full_while_recording_stops_the_run(tiny_tmpfs: Path, tmp_path: Path) -> None:
    sessions = tiny_tmpfs / "sessions"
    etu = start_etu(
        ["run", "--elf", ELF, "--fvp-path", flood_sim(tmp_path), "--sessions", sessions],
        tmp_path, env=env(),
    )  # fmt: skip
    check_full_disk_run(etu, sessions, "No space left on device")
    (folder,) = sessions.iterdir()
    session = read_session(folder)
    assert session.meta.get("incomplete") is True or any(
        "no end recorded" in w for w in session.warnings
    )


def test_sessions_on_a_file_is_one_line(tmp_path: Path) -> None:
    file = tmp_path / "not-a-folder"
    file.write_text("x")
    etu = start_etu(["run", "--elf", ELF, "--fvp-path", "/bin/true", "--sessions", file],
                    tmp_path, env=env())  # fmt: skip
    _out, err = etu.communicate(timeout=60)
    assert etu.returncode == 2 and err.count(b"\n") == 1, err
    assert b"cannot record a session" in err and b"Traceback" not in err


def test_sessions_on_a_read_only_folder_is_one_line(tmp_path: Path) -> None:
    read_only = tmp_path / "ro"
    read_only.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(read_only)],
                          capture_output=True, check=False)  # fmt: skip
    if made.returncode != 0:
        if os.geteuid() == 0:
            pytest.skip("cannot mount a read-only tmpfs here")
        read_only.chmod(0o500)
    try:
        etu = start_etu(["run", "--elf", ELF, "--fvp-path", "/bin/true", "--sessions",
                         read_only / "s"], tmp_path, env=env())  # fmt: skip
        _out, err = etu.communicate(timeout=60)
    finally:
        subprocess.run(["umount", "-l", str(read_only)], check=False, capture_output=True)
    assert etu.returncode == 2 and err.count(b"\n") == 1, err
    assert b"Read-only file system" in err or b"Permission denied" in err


def test_install_stop_signals_is_main_thread_only() -> None:
    """Documented limit: Python takes signal handlers in the main thread only."""
    box = {}

    def other() -> None:
        try:
            install_stop_signals()
        except ValueError as error:
            box["error"] = error

    thread = threading.Thread(target=other)
    thread.start()
    thread.join()
    assert "main thread" in str(box["error"])
