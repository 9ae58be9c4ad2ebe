"""The real FVP launch path, against the stand-in installed under the real FVP names.

Real subprocesses in their own process groups, real pipes, real psutil sampling; the
stand-in reads the real demo firmware ELF and the program baked into it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from etu.fvp.command import FvpOptions, build_command
from etu.fvp.discovery import find_fvps, fvp_version
from etu.fvp.launch import LaunchError, prepare_fvp_launch
from etu.fvp.standin import STANDIN_VERSION, install_standin
from etu.fvp.targets import SSE300_U55, SSE320, fvp_target
from etu.parsers.elf_map import read_elf
from etu.parsers.runner_events import InferenceStarted, PmuReport
from etu.runner.run import RunController, RunListener
from etu.runner.session import read_session

ROOT = Path(__file__).resolve().parent.parent.parent
ELF = ROOT / "etu_tui" / "demo" / "firmware" / "arm_executor_runner.elf"


@pytest.fixture(scope="module")
def fvp_dir(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("fvps") / "models" / "Linux64_GCC-9.3"
    install_standin(folder)
    return folder.parent.parent


@pytest.fixture
def env(fvp_dir: Path, monkeypatch) -> dict[str, str]:
    monkeypatch.setenv("ETU_FVP_DIR", str(fvp_dir))
    for name in ("ETU_STANDIN_FAULT", "ETU_STANDIN_INFERENCES", "ETU_STANDIN_LINE_DELAY"):
        monkeypatch.delenv(name, raising=False)
    return dict(os.environ)


def run_cli(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "etu.tui.cli", *args],
        capture_output=True, env=env, cwd=cwd, timeout=120, check=False,
    )  # fmt: skip


def test_discovery_finds_every_simulator_by_its_real_name(env) -> None:
    found = find_fvps(env)
    assert set(found) == {SSE300_U55, "FVP_Corstone_SSE-300_Ethos-U65", SSE320}
    assert all(f.found_via == "ETU_FVP_DIR" for f in found.values())
    assert fvp_version(found[SSE320].path) == STANDIN_VERSION
    assert find_fvps({"PATH": "/nonexistent"}) == {}


def test_dry_run_prints_the_exact_argv(env, tmp_path: Path) -> None:
    result = run_cli(
        "run", "--fvp", "--target", "ethos-u85-256", "--elf", str(ELF), "--timelimit", "30",
        "--dry-run", "--json", env=env, cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    record = json.loads(result.stdout)
    simulator = find_fvps(env)[SSE320].path
    trace = Path("<session>") / "pmu_trace.json"  # the run's session folder, once it exists
    assert record["argv"] == build_command(
        simulator, fvp_target("ethos-u85-256"), ELF, FvpOptions(timelimit=30, pmu_trace=trace)
    )
    assert "mps4_board.subsystem.ethosu.num_macs=256" in record["argv"]
    assert record["simulated"] is True
    assert not (tmp_path / ".etu").exists()  # nothing started, nothing recorded


def test_launch_errors_are_one_line(env, tmp_path: Path) -> None:
    with pytest.raises(LaunchError, match="unknown target"):
        prepare_fvp_launch("ethos-u55-100", ELF)
    with pytest.raises(LaunchError, match="not found"):
        prepare_fvp_launch("ethos-u55-128", ELF, env={"PATH": "/nonexistent"})
    result = run_cli("run", "--elf", str(tmp_path / "missing.elf"), env=env, cwd=tmp_path)
    assert result.returncode == 2 and b"no such firmware" in result.stderr


def test_successful_run_records_every_byte(env, tmp_path: Path) -> None:
    result = run_cli("run", "--elf", str(ELF), "--json", env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert lines[-1]["type"] == "RunEnded" and lines[-1]["reason"] == "success"
    assert any(e["type"] == "PmuReport" for e in lines)
    session = read_session(Path(tmp_path / lines[-1]["session"]))
    direct = subprocess.run(
        build_command(find_fvps(env)[SSE300_U55].path, fvp_target("ethos-u55-128"), ELF),
        capture_output=True, env=env, check=False,
    ).stdout  # fmt: skip
    assert session.raw == direct  # exactly what the simulator printed
    assert len(session.line_times) == direct.count(b"\n")
    assert session.meta["exit_reason"] == "success" and session.meta["simulated"] is True
    assert session.meta["program_sha256"] and session.meta["elf_sha256"]
    assert session.events[-1]["type"] == "RunEnded" and session.warnings == []


@pytest.mark.parametrize(
    ("fault", "reason", "status", "proof"),
    [
        ("missing-operator", "runner_error", 1, "not found"),
        ("alloc-failure", "runner_error", 1, "Memory allocation failed"),
        ("hard-fault", "hard_fault", 3, "Hard fault"),
        ("crash", "crash", 5, "signal 11"),
        ("hang", "time_limit", 4, "CPU time has been exceeded"),
    ],
)
def test_each_injected_fault(env, tmp_path: Path, fault, reason, status, proof) -> None:
    env = {**env, "ETU_STANDIN_FAULT": fault}
    result = run_cli("run", "--elf", str(ELF), "--timelimit", "2", "--json", env=env, cwd=tmp_path)
    ended = json.loads(result.stdout.splitlines()[-1])
    assert (result.returncode, ended["reason"]) == (status, reason)
    assert proof in ended["proof"]


def test_repeated_inferences(env, tmp_path: Path) -> None:
    env = {**env, "ETU_STANDIN_INFERENCES": "5"}
    result = run_cli("run", "--elf", str(ELF), "--json", env=env, cwd=tmp_path)
    (pmu,) = [json.loads(x) for x in result.stdout.splitlines() if b'"PmuReport"' in x]
    assert pmu["npu_inferences"] == 5 and pmu["delegations"] == 5


def test_unknown_parameter_is_refused_like_the_fvp(env, tmp_path: Path) -> None:
    result = run_cli("run", "--elf", str(ELF), "--param", "ethosu.bogus=1", env=env, cwd=tmp_path)
    assert result.returncode == 5
    assert b'Could not find parameter "ethosu.bogus"' in result.stderr


class Collector(RunListener):
    def __init__(self) -> None:
        self.events: list = []
        self.stats: list = []
        self.started = threading.Event()

    def on_events(self, events) -> None:
        self.events += events
        if any(isinstance(e, InferenceStarted) for e in events):
            self.started.set()

    def on_stats(self, stats) -> None:
        self.stats.append(stats)


def test_stop_kills_the_process_group_and_samples_it(env, tmp_path: Path) -> None:
    launch = prepare_fvp_launch("ethos-u55-128", ELF, FvpOptions(timelimit=60), env=env)
    listener = Collector()
    controller = RunController(
        launch.argv, sessions=tmp_path, kind="fvp", meta=launch.meta(), listener=listener,
        env={**env, "ETU_STANDIN_FAULT": "hang"},
    ).start()  # fmt: skip
    assert listener.started.wait(30)
    pid = controller.pid
    time.sleep(1.5)  # at least one psutil sample
    controller.stop()
    outcome = controller.wait(30)
    assert outcome.reason == "killed" and outcome.exit_status == 6
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    assert listener.stats and listener.stats[0].rss_bytes > 0
    assert read_session(controller.folder).meta["exit_reason"] == "killed"


def test_session_survives_kill_9_of_the_console(env, tmp_path: Path) -> None:
    env = {**env, "ETU_STANDIN_LINE_DELAY": "0.05"}
    console = subprocess.Popen(
        [sys.executable, "-m", "etu.tui.cli", "run", "--elf", str(ELF)],
        cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    sessions = tmp_path / ".etu" / "sessions"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        raws = list(sessions.glob("*/raw.log"))
        if raws and raws[0].read_bytes().count(b"\n") >= 10:
            break
        time.sleep(0.05)
    console.send_signal(signal.SIGKILL)
    console.wait()
    (folder,) = sessions.iterdir()
    session = read_session(folder)
    assert any("no end recorded" in w for w in session.warnings)
    full = subprocess.run(
        build_command(find_fvps(env)[SSE300_U55].path, fvp_target("ethos-u55-128"), ELF),
        capture_output=True, env={**env, "ETU_STANDIN_LINE_DELAY": "0"}, check=False,
    ).stdout  # fmt: skip
    assert session.raw.count(b"\n") >= 10 and full.startswith(session.raw)
    assert session.events and session.events[0]["type"] in ("LogLine", "FvpBanner")
    summary = run_cli("log", "--json", str(folder), env=env, cwd=tmp_path)
    assert summary.returncode == 0 and json.loads(summary.stdout)["verdict"] == "incomplete"


def test_log_command_on_a_saved_transcript(env, tmp_path: Path) -> None:
    saved = tmp_path / "run.log"
    saved.write_bytes(
        subprocess.run(
            build_command(find_fvps(env)[SSE300_U55].path, fvp_target("ethos-u55-128"), ELF),
            capture_output=True, env=env, check=False,
        ).stdout
    )  # fmt: skip
    result = run_cli("log", "--json", str(saved), env=env, cwd=tmp_path)
    summary = json.loads(result.stdout)
    pte_size = (ROOT / "etu_tui" / "demo" / "demo_cnn.pte").stat().st_size
    assert summary["verdict"] == "success" and summary["model"]["pte_size"] == pte_size
    assert summary["allocators"]["temp_allocator"]["size"] == 2097152
    events = run_cli("log", "--events", str(saved), env=env, cwd=tmp_path)
    kinds = {json.loads(line)["type"] for line in events.stdout.splitlines()}
    assert {"LogLine", "PmuReport", "MemoryReport", "OutputTensor"} <= kinds
    assert PmuReport.__name__ in kinds


def test_etdump_block_is_saved_under_a_name_etu_chooses(env, tmp_path: Path) -> None:
    env = {**env, "ETU_STANDIN_ETDUMP": "1"}
    result = run_cli("run", "--elf", str(ELF), "--json", env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    folder = tmp_path / json.loads(result.stdout.splitlines()[-1])["session"]
    (saved,) = folder.glob("etdump-*.bin")
    assert saved.name == "etdump-001.bin" and saved.read_bytes()[4:8] == b"ED00"
    assert not (tmp_path / "etdump.bin").exists() and not (folder / "etdump.bin").exists()


def test_standin_npu_cycles_come_from_the_workspace_vela_estimate(env, tmp_path: Path) -> None:
    from etu.parsers.vela import load_vela_report

    estimate = load_vela_report(ROOT / "etu_tui" / "demo" / "vela").cycles
    env = {**env, "ETU_STANDIN_INFERENCES": "3"}
    result = run_cli("run", "--elf", str(ELF), "--json", env=env, cwd=tmp_path)
    (pmu,) = [json.loads(x) for x in result.stdout.splitlines() if b'"PmuReport"' in x]
    assert pmu["npu_cycles"] == 3 * estimate
    # Away from its workspace (no vela/ beside it) the figure is the stand-in's own guess.
    alone = tmp_path / "alone" / "fw.elf"
    alone.parent.mkdir()
    alone.write_bytes(ELF.read_bytes())
    result = run_cli("run", "--elf", str(alone), "--json", env=env, cwd=tmp_path)
    (pmu,) = [json.loads(x) for x in result.stdout.splitlines() if b'"PmuReport"' in x]
    # exactly the stand-in's rough figure: 120 cycles per command-stream word per inference
    from etu.parsers.memory_map import build_memory_map
    from etu.parsers.program_facts import inspect_record
    from etu.parsers.pte import decode_program

    with read_elf(alone) as image:
        pool = build_memory_map(image).pools["model_pte"]
        program = decode_program(image.read_bytes(pool.address, pool.size), "model_pte")
    words = sum(
        d["ethosu"]["command_stream_words"]
        for plan in inspect_record(program)["plans"]
        for d in plan["delegates"]
        if d["ethosu"]
    )
    assert words > 0 and 120 * words != estimate
    assert pmu["npu_cycles"] == 3 * 120 * words


def test_an_fvp_npu_of_another_size_is_refused_by_the_driver_and_named(env, tmp_path) -> None:
    """The stand-in's NPU checks the command stream's config as the real driver does
    (issue 25 §5): a 128-MAC stream on a 256-MAC FVP ends with the driver's lines, and
    `etu log --json` names the mismatch in words."""
    result = run_cli("run", "--elf", str(ELF), "--param", "ethosu.num_macs=256", "--json",
                     env=env, cwd=tmp_path)  # fmt: skip
    ended = json.loads(result.stdout.splitlines()[-1])
    assert (result.returncode, ended["reason"]) == (1, "runner_error")
    assert "NPU config mismatch. npu.macs_per_cc=8, optimizer.macs_per_cc=7" in ended["proof"]
    logged = run_cli("log", str(tmp_path / ended["session"]), "--json", env=env, cwd=tmp_path)
    (skew,) = json.loads(logged.stdout)["version_skew"]
    assert skew["kind"] == "mismatch" and "MACs 256" in skew["text"]
    assert "wants 128" in skew["text"] and skew["line"] == ended["proof_line"]
