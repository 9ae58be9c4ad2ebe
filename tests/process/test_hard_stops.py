"""Hard stops (issues 9 and 20): SIGTERM/SIGHUP end a run like Ctrl+C, SIGKILL of etu leaves
no child behind (nor a child's children), a watchdog kills a simulator that outlives its time
limit, and a full disk or an unwritable sessions folder stops the run with the reason instead
of hanging.

All with real processes: ``etu run`` (the stand-in FVP, the emulated board), ``etu monitor``
on a pty and ``etu flash --board qemu-an547 --monitor`` as subprocesses, each sent TERM, HUP,
INT and KILL, then every process etu had started looked for (psutil); shell scripts as
simulators; a real tmpfs when the tests run as root (and RLIMIT_FSIZE otherwise).

Every process a test starts is started with SIGINT, SIGTERM and SIGHUP at their defaults (a
test run as a background job inherits SIGINT ignored, and etu rightly keeps an inherited
ignore), and killed with everything it started when the test ends, passed or failed: a red
test leaves no orphan behind to slow or break the rest of the run."""

from __future__ import annotations

import contextlib
import json
import os
import pty
import resource
import select
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from etu.fvp.standin import install_standin
from etu.runner.process import REAPER_NAME
from etu.runner.run import RunController, install_stop_signals
from etu.runner.session import read_session
from tests.board_peers import Pty, runner_log

ROOT = Path(__file__).resolve().parent.parent.parent
ELF = ROOT / "etu_tui" / "demo" / "firmware" / "arm_executor_runner.elf"
SIM = "FVP_Corstone_SSE-300_Ethos-U55"
STOPS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)  # etu ends the run: status 6, killed
SIGNALS = (*STOPS, signal.SIGKILL)
needs_qemu = pytest.mark.skipif(
    not (shutil.which("qemu-system-arm") and shutil.which("arm-none-eabi-gcc")),
    reason="needs qemu-system-arm and arm-none-eabi-gcc (make system-deps)",
)


class Family:
    """The processes a test started and every process they started, as far as it has seen
    them: killed (SIGKILL, identity checked by psutil) when the test ends."""

    def __init__(self) -> None:
        self.roots: list[int] = []
        self.seen: dict[int, psutil.Process] = {}

    def add(self, pid: int) -> None:
        self.roots.append(pid)
        self.note()

    def note(self) -> list[psutil.Process]:
        """Look again (call it when a test has seen its processes start); the descendants."""
        found = []
        for pid in self.roots:
            with contextlib.suppress(psutil.Error):
                root = self.seen.setdefault(pid, psutil.Process(pid))
                for child in root.children(recursive=True):
                    found.append(self.seen.setdefault(child.pid, child))
        return found

    def kill_all(self) -> None:
        self.note()
        killed = []
        for process in self.seen.values():
            with contextlib.suppress(psutil.Error):
                if process.status() != psutil.STATUS_ZOMBIE or process.ppid() == os.getpid():
                    process.kill()
                    killed.append(process)
        psutil.wait_procs(killed, timeout=5)


_FAMILIES: list[Family] = []


@pytest.fixture(autouse=True)
def family():
    current = Family()
    _FAMILIES.append(current)
    try:
        yield current
    finally:
        _FAMILIES.remove(current)
        current.kill_all()


def default_signals() -> None:
    """In the child before exec: SIGINT (and TERM, HUP) as a terminal's foreground job has
    them, whatever the shell that started the tests left ignored."""
    for sig in STOPS:
        signal.signal(sig, signal.SIG_DFL)


def start(argv: list, **kwargs) -> subprocess.Popen:
    """A process of the test's family, its stop signals at their defaults."""
    first = kwargs.pop("preexec_fn", None)

    def preexec() -> None:
        default_signals()
        if first is not None:
            first()

    process = subprocess.Popen([*map(str, argv)], preexec_fn=preexec, **kwargs)
    if _FAMILIES:
        _FAMILIES[-1].add(process.pid)
    return process


@pytest.fixture(scope="module")
def standin(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("fvps")
    install_standin(folder)
    return folder / SIM


@pytest.fixture(scope="module")
def fvp_with_a_child(standin: Path) -> Path:
    """The stand-in FVP started by a script that first starts a helper of its own (as an FVP
    starts its terminal servers): a child of the simulator, detached from its output, that
    only a kill of the simulator's whole process group ends."""
    script = standin.parent / "fvp-with-a-child"
    script.write_text(f'#!/bin/sh\nsleep 600 </dev/null >/dev/null 2>&1 &\nexec "{standin}" "$@"\n')
    script.chmod(0o755)
    return script


@pytest.fixture(scope="module")
def endless_elf(tmp_path_factory) -> Path:
    """The stub runner (cross-compiled here, a second) told to run 4e9 inferences: it
    prints its start, then computes on QEMU for hours."""
    from etu.runner.firmware import build_stub_firmware

    if not (shutil.which("qemu-system-arm") and shutil.which("arm-none-eabi-gcc")):
        pytest.skip("needs qemu-system-arm and arm-none-eabi-gcc (make system-deps)")
    out = tmp_path_factory.mktemp("endless-fw")
    return build_stub_firmware(ROOT / "etu_tui" / "demo" / "demo_cnn.pte", out,
                               ops=["quantized_decomposed::quantize_per_tensor.out"],
                               num_inferences=4_000_000_000).elf  # fmt: skip


def env(**extra: str) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("ETU_STANDIN")}
    return {**clean, "PYTHONPATH": str(ROOT), **extra}


def start_etu(args: list, cwd: Path, **kwargs) -> subprocess.Popen:
    return start([sys.executable, "-m", "etu.tui.cli", *args], cwd=cwd,
                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kwargs)  # fmt: skip


def is_reaper(process: psutil.Process) -> bool:
    with contextlib.suppress(psutil.Error):
        return REAPER_NAME in process.cmdline()
    return False


def wait_for_lines(sessions: Path, lines: int = 5, timeout: float = 60) -> None:
    """Until the run's session has recorded ``lines`` lines."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        raws = list(sessions.glob("*/raw.log"))
        if raws and raws[0].read_bytes().count(b"\n") >= lines:
            return
        time.sleep(0.05)
    raise AssertionError("the run never printed")


def wait_for_simulator(etu: subprocess.Popen, sessions: Path) -> psutil.Process:
    """The simulator child once it has printed its first lines (etu's reaper aside)."""
    wait_for_lines(sessions)
    (child,) = [c for c in psutil.Process(etu.pid).children() if not is_reaper(c)]
    return child


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


def signal_and_check(etu: subprocess.Popen, sig: signal.Signals, family: Family,
                     sessions: Path, children: tuple[str, ...] = ()) -> None:  # fmt: skip
    """Send ``sig`` to etu; then nothing etu started is left (its reaper neither), and
    for a stop signal: exit status 6, the signal named, the session ended ``killed``.
    ``children``: names that must be among what etu had started (the check checks them)."""
    started = family.note()
    names = " ".join(" ".join(p.cmdline()) for p in started if p.is_running())
    for name in children:
        assert name in names, f"{name} was not running under etu: {names}"
    etu.send_signal(sig)
    _, err = etu.communicate(timeout=30)
    survivors = [p for p in started if not gone(p)]
    assert not survivors, f"{sig.name} left {[' '.join(p.cmdline()) for p in survivors]}"
    if sig == signal.SIGKILL:
        assert etu.returncode == -signal.SIGKILL
        return
    assert etu.returncode == 6, err  # killed
    assert f"stopped by {sig.name}".encode() in err, err
    (folder,) = sessions.iterdir()
    meta = read_session(folder).meta
    assert meta["ended"] is not None and meta["exit_reason"] == "killed", meta
    assert meta["proof"].startswith(f"stopped by {sig.name}"), meta


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
def test_signals_end_a_cli_run_and_finish_the_session(
    sig, fvp_with_a_child, family, tmp_path: Path
) -> None:
    """`etu run` on the stand-in FVP, whose own child only a group kill ends."""
    sessions = tmp_path / "sessions"
    etu = start_etu(
        ["run", "--elf", ELF, "--fvp-path", fvp_with_a_child, "--sessions", sessions],
        tmp_path, env=env(ETU_STANDIN_FAULT="hang"),
    )  # fmt: skip
    wait_for_simulator(etu, sessions)
    signal_and_check(etu, sig, family, sessions, children=("etu.fvp.standin", "sleep 600"))


@needs_qemu
@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
def test_signals_end_a_run_on_the_emulated_board(sig, endless_elf, family, tmp_path) -> None:
    """`etu run --board qemu-an547 --elf ...`: QEMU stopped, the session ended killed."""
    sessions = tmp_path / "sessions"
    # --force: the stub runner bakes in a delegated program it does not run (pre-flight)
    etu = start_etu(["run", "--board", "qemu-an547", "--elf", endless_elf, "--force",
                     "--sessions", sessions], tmp_path, env=env())  # fmt: skip
    wait_for_lines(sessions)
    signal_and_check(etu, sig, family, sessions, children=("qemu-system-arm",))


@pytest.fixture(scope="module")
def bridged_elf(tmp_path_factory) -> Path:
    """The delegated demo's real runner built with etu's NPU bridge (the build tree is
    cached like the other real-runner tests')."""
    from tests.helpers import demo_workspace
    from tests.real_runner import build, runtime_environment

    if not (shutil.which("qemu-system-arm") and shutil.which("arm-none-eabi-gcc")):
        pytest.skip("needs qemu-system-arm and arm-none-eabi-gcc (make system-deps)")
    folder = demo_workspace(tmp_path_factory.mktemp("bridged") / "demo", "vela")
    record = build(folder / "demo_cnn.pte", folder / "fw", runtime_environment())
    assert record["options"]["npu_bridge"]
    return Path(record["elf"])


BOARD_DDR = "memfd:etu-board-ddr"  # the name of the board's DDR file (runner.npu_bridge)


def shared_files() -> set[str]:
    return {p.name for p in Path("/dev/shm").iterdir()} if Path("/dev/shm").is_dir() else set()


@pytest.mark.runtime_build
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=lambda s: s.name)
def test_signals_end_a_bridged_run_on_the_emulated_board(
    sig, bridged_elf, family, tmp_path
) -> None:
    """`etu run --board qemu-an547` of a runner whose NPU etu serves: TERM or KILL of etu in
    the middle of the run (QEMU frozen while its DDR is etu's memory file, so the run cannot
    end first) leaves no QEMU, no memory file and nothing on disk."""
    before = shared_files()
    sessions = tmp_path / "sessions"
    etu = start_etu(["run", "--board", "qemu-an547", "--elf", bridged_elf, "--sessions",
                     sessions], tmp_path, env=env())  # fmt: skip
    deadline = time.monotonic() + 60
    qemu = None
    while qemu is None:
        assert etu.poll() is None, etu.communicate()
        assert time.monotonic() < deadline, "QEMU never started"
        with contextlib.suppress(psutil.Error):
            qemu = next((c for c in psutil.Process(etu.pid).children()
                         if c.name().startswith("qemu-system")), None)  # fmt: skip
        time.sleep(0.01)
    deadline = time.monotonic() + 30
    while not any(BOARD_DDR in m.path for m in qemu.memory_maps()):
        assert time.monotonic() < deadline, "QEMU never mapped the board's DDR file"
        time.sleep(0.01)
    qemu.suspend()  # the board stops in the middle of the run, its DDR mapped from etu's file
    assert "memory-backend-file" in " ".join(qemu.cmdline())
    signal_and_check(etu, sig, family, sessions, children=("qemu-system-arm",))
    assert shared_files() == before
    assert {p.name for p in tmp_path.iterdir()} <= {"sessions"}


@needs_qemu
@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
def test_signals_end_flash_and_monitor_of_the_emulated_board(
    sig, endless_elf, family, tmp_path
) -> None:
    """`etu flash --board qemu-an547 --monitor`: QEMU (paused on a shutdown, deaf to
    SIGTERM) quit or killed, never orphaned."""
    sessions = tmp_path / "sessions"
    etu = start_etu(["flash", "--board", "qemu-an547", "--monitor", "--sessions", sessions,
                     endless_elf], tmp_path, env=env())  # fmt: skip
    wait_for_lines(sessions)
    signal_and_check(etu, sig, family, sessions, children=("qemu-system-arm",))


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
def test_signals_end_a_monitored_port(sig, family, tmp_path: Path) -> None:
    """`etu monitor` on a pty: it owns a port, not a child; the session ends killed."""
    port = Pty()
    sessions = tmp_path / "sessions"
    try:
        etu = start_etu(["monitor", port.path, "--sessions", sessions, "--timelimit", "120"],
                        tmp_path, env=env())  # fmt: skip
        deadline = time.monotonic() + 30
        while not list(sessions.glob("*/raw.log")) and time.monotonic() < deadline:
            time.sleep(0.05)
        port.write(runner_log(8, verdict=False))
        wait_for_lines(sessions)
        signal_and_check(etu, sig, family, sessions)
    finally:
        port.close()


@needs_qemu
def test_a_stop_signal_before_the_run_stops_the_command_and_its_qemu(
    endless_elf, family, tmp_path: Path
) -> None:
    """SIGTERM while `etu flash` waits for QEMU's pty (no run yet to stop): the command
    stops there, exit status 6, and the QEMU it started (here one that never gives a pty,
    with a child of its own) is gone."""
    fake = tmp_path / "qemu-that-hangs"
    fake.write_text("#!/bin/sh\nsleep 600 </dev/null >/dev/null 2>&1 &\nexec sleep 601\n")
    fake.chmod(0o755)
    etu = start_etu(["flash", "--board", "qemu-an547", "--monitor", "--sessions",
                     tmp_path / "sessions", endless_elf], tmp_path,
                    env=env(ETU_QEMU=str(fake)))  # fmt: skip
    deadline = time.monotonic() + 30
    while "sleep 601" not in " ".join(" ".join(p.cmdline()) for p in family.note()):
        assert time.monotonic() < deadline, "the fake QEMU never started"
        time.sleep(0.05)
    started = family.note()
    etu.send_signal(signal.SIGTERM)
    _, err = etu.communicate(timeout=30)
    assert etu.returncode == 6 and err.endswith(b"etu: stopped by SIGTERM\n"), err
    assert not [p for p in started if not gone(p)]
    assert not (tmp_path / "sessions").exists()  # no run began


def test_a_run_stopped_before_it_starts_ends_killed_as_it_starts(tmp_path: Path) -> None:
    """A stop signal between a run's set-up and its start is kept: the run is stopped as
    it starts, and its session ends killed with the signal's name."""
    looping = tmp_path / "looping-fvp"
    looping.write_text("#!/bin/sh\nwhile :; do echo tick; sleep 0.05; done\n")
    looping.chmod(0o755)
    controller = RunController([str(looping)], sessions=tmp_path / "s", kind="fvp", meta={})
    controller.stop("stopped by SIGTERM")
    outcome = controller.start().wait(30)
    assert outcome is not None and outcome.reason == "killed", outcome
    assert outcome.proof == "stopped by SIGTERM"
    assert read_session(controller.folder).meta["exit_reason"] == "killed"


RUN_FROM_A_WORKER_THREAD = """
import sys, threading, time
from pathlib import Path
from etu.runner.run import RunController, install_stop_signals, wait_all_runs

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
    host = start(
        [sys.executable, script, standin, ELF, sessions],
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


def test_console_exits_cleanly_on_sigterm(family, tmp_path: Path) -> None:
    """The console itself: SIGTERM leaves it as `q` would, the terminal restored."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: the console on the demo program
        default_signals()
        os.chdir(tmp_path)
        os.environ["PYTHONPATH"] = str(ROOT)
        os.execv(sys.executable, [sys.executable, "-m", "etu.tui.cli",
                                  str(ROOT / "etu_tui" / "demo" / "demo_cnn.pte")])  # fmt: skip
    family.add(pid)
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
    # the end is recorded all the same (room for it was kept): listed incomplete, not
    # unfinished, and no empty meta.json.partial or reserve file stays behind
    assert session.meta.get("incomplete") is True and session.meta["ended"] is not None
    assert sorted(p.name for p in folder.iterdir() if p.name.startswith(("meta", "."))) == [
        "meta.json"
    ]


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


@pytest.mark.runtime_build
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=lambda s: s.name)
def test_a_stopped_firmware_build_leaves_no_compiler_behind(sig, family, tmp_path: Path):
    """cmake, ninja and the compilers they start are in their own process group, which etu
    (or, when etu is killed outright, its reaper) kills: nothing keeps building."""
    from tests.real_programs import build as real_program
    from tests.real_runner import runtime_environment

    program = real_program("float_cpu")
    build_env = {**runtime_environment(), "ETU_BUILD_CACHE": str(tmp_path / "cache")}
    etu = start_etu(["firmware", "build", program, "--board", "qemu-an547", "--out",
                     tmp_path / "fw"], tmp_path, env=build_env)  # fmt: skip
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and etu.poll() is None:
        names = " ".join(_cmdline(p) for p in family.note())
        if "ninja" in names and ("cc1plus" in names or "cc1" in names):
            break
        time.sleep(0.2)
    else:
        raise AssertionError("the build never reached the compilers")
    started = family.note()
    etu.send_signal(sig)
    etu.communicate(timeout=60)
    builders = [p for p in started if not is_reaper(p)]  # the reaper goes on its own time
    survivors = [p for p in builders if not gone(p, timeout=3)]  # a compile takes longer
    survivors += [p for p in started if is_reaper(p) and not gone(p, timeout=15)]
    assert not survivors, f"{sig.name} left {[_cmdline(p) or p.pid for p in survivors]}"


def _cmdline(process: psutil.Process) -> str:
    with contextlib.suppress(psutil.Error):
        return " ".join(process.cmdline())
    return ""
