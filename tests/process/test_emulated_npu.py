"""Delegated programs on the emulated board: ExecuTorch's real runner and EthosUBackend,
built against etu's driver layer, on QEMU mps3-an547; etu answers each Ethos-U invoke over
the board's UART1, on the board's DDR shared as a memory file.

Slow (a runner build with the delegate); the build tree is cached like the other
real-runner tests'."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import psutil
import pytest

from tests import two_delegates
from tests.helpers import demo_workspace
from tests.real_runner import build, etu, run_qemu, runtime_environment

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [
    pytest.mark.runtime_build,
    pytest.mark.skipif(shutil.which("qemu-system-arm") is None, reason="no qemu-system-arm"),
    pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None, reason="no cross gcc"),
]


def printed_outputs(session: Path) -> list[float]:
    """The runner's printed float outputs, in order (``Output[0][j]: (float) v``)."""
    log = (session / "raw.log").read_text(errors="replace").splitlines()
    return [float(line.rsplit(" ", 1)[1]) for line in log if line.startswith("Output[0][")]


def reference_outputs(pte: Path, env: dict) -> list[float]:
    result = etu(["reference", pte, "--json"], env, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    (output,) = json.loads(result.stdout)["outputs"]
    return output["values"]


def demo_copy(tmp_path: Path) -> Path:
    """The shipped demo with its Vela folder (TOSA graph, compile record), as a user has it."""
    return demo_workspace(tmp_path / "demo", "vela") / "demo_cnn.pte"


def session_lines(session: Path) -> str:
    return (session / "raw.log").read_text(errors="replace")


def test_the_delegated_demo_runs_on_the_emulated_board_and_equals_the_reference(tmp_path):
    env = runtime_environment()
    pte = demo_copy(tmp_path)
    record = build(pte, tmp_path / "fw", env)
    assert record["options"]["npu_bridge"] is True
    code, lines, session = run_qemu(Path(record["elf"]), tmp_path / "sessions", env)
    assert code == 0, lines[-1]
    log = session_lines(session)
    assert "etu-npu: delegate 0:" in log  # the invoke went through etu
    # etu's Ethos-U model executed the delegate's command stream (not the TOSA reference)
    assert "executed by etu's Ethos-U model" in log
    meta = json.loads((session / "meta.json").read_text())
    assert meta["npu_model"] == "etu's Ethos-U model"
    assert "functional Ethos-U model" in meta["label"]
    got = printed_outputs(session)
    expected = reference_outputs(pte, env)
    assert len(got) == len(expected) == 10
    assert got == pytest.approx(expected, abs=1e-6)  # printed with 6 decimals
    # the board path (etu flash --monitor, the Boards tab's) serves the NPU the same way
    flashed = etu(["flash", "--board", "qemu-an547", record["elf"], "--monitor", "--sessions",
                   tmp_path / "board"], env, timeout=120)  # fmt: skip
    assert flashed.returncode == 0, flashed.stderr[-2000:]
    (board_session,) = (tmp_path / "board").iterdir()
    assert printed_outputs(board_session) == got
    compared = etu(["compare", session, "--json"], env, timeout=300)
    assert compared.returncode == 0, compared.stderr[-2000:]
    assert "deployment exact" in etu(["compare", session], env, timeout=300).stdout


@pytest.mark.parametrize(
    ("model", "cls"),
    [("cpu_between.py", "CpuBetween"), ("npu_mix.py", "NpuMix"), ("npu_tables.py", "NpuTables")],
    ids=[
        "two-delegates-topk-between",
        "depthwise-residual-sigmoid-pools",
        "tanh-sigmoid-concat-fc-softmax",
    ],
)
def test_more_networks_run_on_the_emulated_board_and_equal_the_reference(tmp_path, model, cls):
    """conv → topk on the CPU → conv (two delegates, a portable kernel between them); a
    network of depthwise/dilated convolutions, a residual add, a LUT sigmoid and pools; and
    one of tanh, sigmoid, a concatenation, a fully connected layer and a softmax."""
    env = runtime_environment()
    job = two_delegates.compile_job(ROOT / "tests" / "data" / "models" / model, cls, "1x3x16x16")
    work = tmp_path / "job"
    shutil.copytree(job, work)
    pte = work / f"{cls}.pte"
    record = build(pte, tmp_path / "fw", env)
    code, lines, session = run_qemu(Path(record["elf"]), tmp_path / "sessions", env)
    assert code == 0, lines[-1]
    log = session_lines(session)
    calls = sum(f"etu-npu: delegate {i}:" in log for i in range(4))
    assert calls == (2 if cls == "CpuBetween" else 1)
    assert log.count("executed by etu's Ethos-U model") == calls
    got = printed_outputs(session)
    expected = reference_outputs(pte, env)
    assert got and got == pytest.approx(expected, abs=1e-6)


def test_a_program_whose_graph_is_missing_ends_with_a_named_error(tmp_path):
    """The runner was built for a program; the Vela folder beside it is gone at run time:
    with the TOSA reference model asked for, the run fails before QEMU starts, naming the
    missing graph, and leaves no QEMU; etu's Ethos-U model needs no graph and runs."""
    env = runtime_environment()
    pte = demo_copy(tmp_path)
    record = build(pte, tmp_path / "fw", env)
    shutil.rmtree(pte.parent / "vela")
    run = ["run", "--board", "qemu-an547", "--elf", record["elf"], "--timelimit", "30"]
    modelled = etu([*run, "--sessions", tmp_path / "m"], env, timeout=120)
    assert modelled.returncode == 0, modelled.stderr[-2000:]
    (session,) = (tmp_path / "m").iterdir()
    assert "executed by etu's Ethos-U model" in session_lines(session)
    env = {**env, "ETU_NPU_EXECUTOR": "reference"}
    result = etu([*run, "--sessions", tmp_path / "s"], env, timeout=120)
    assert result.returncode != 0
    (line,) = [x for x in result.stderr.splitlines() if "TOSA graph" in x]
    assert "arm_executor_runner.elf" in line and "Traceback" not in result.stderr
    mine = [p for p in psutil.process_iter(["name", "ppid"]) if p.info["ppid"] == os.getpid()]
    assert not [p for p in mine if "qemu" in (p.info["name"] or "")]


def program_with_tanh(tmp_path: Path) -> Path:
    """The demo (with its Vela folder) whose delegate's first activation says tanh: a
    command etu's Ethos-U model does not execute (Vela writes the int8 tanh as a LUT)."""
    import struct

    from etu.parsers.ethosu import _read_command_stream, decode_ethosu_payload
    from etu.parsers.pte import open_program
    from etu.runner.npu_model import decode_cmd_data

    pte = demo_copy(tmp_path)
    with open_program(pte) as program:
        blob = bytes(program.delegate_payload(program.plans[0].delegates[0]))
    cmd = next(b for b in decode_ethosu_payload(blob).blocks if b.name == "cmd_data")
    cmd_data = blob[cmd.payload_offset : cmd.payload_offset + cmd.size]
    *_, start = _read_command_stream(memoryview(cmd_data), 0)
    command = next(c for c in decode_cmd_data(cmd_data).stream.commands
                   if c.name == "NPU_SET_ACTIVATION")  # fmt: skip
    patched = bytearray(cmd_data)
    (word,) = struct.unpack_from("<I", patched, start + 4 * command.word)
    struct.pack_into("<I", patched, start + 4 * command.word, (word & 0xFFFF) | (3 << 16))
    data = pte.read_bytes()
    assert data.count(cmd_data) == 1
    pte.write_bytes(data.replace(cmd_data, bytes(patched)))
    return pte


def test_an_operation_the_model_lacks_ends_the_run_with_a_runner_error_naming_it(tmp_path):
    """ETU_NPU_EXECUTOR=model on a program with an operation etu's Ethos-U model does not
    execute: the invoke fails, the runner prints the line naming the operation and the
    field, the run ends runner_error with it as proof, and the NpuInvoke event says so."""
    env = {**runtime_environment(), "ETU_NPU_EXECUTOR": "model"}
    pte = program_with_tanh(tmp_path)
    record = build(pte, tmp_path / "fw", env)
    code, lines, session = run_qemu(Path(record["elf"]), tmp_path / "sessions", env)
    end = lines[-1]
    assert code != 0 and end["reason"] == "runner_error", end
    assert "etu-npu: delegate 0: operation 0 (NPU_OP_POOL): activation tanh is not supported" \
        in end["proof"]  # fmt: skip
    (invoke,) = [e for e in lines if e.get("type") == "NpuInvoke"]
    assert not invoke["ok"] and (invoke["delegate"], invoke["operation"], invoke["command"]) \
        == (0, 0, "NPU_OP_POOL")  # fmt: skip
    summary = json.loads((session / "summary.json").read_text())
    assert summary["verdict"] == "error" and summary["npu"][0]["failed"] == 1
    assert not printed_outputs(session)  # no wrong tensor printed


def test_u85_programs_are_refused_for_the_emulated_board_before_building(real_program, tmp_path):
    env = {**runtime_environment(), "ETU_NO_DOWNLOAD": "1"}
    env.pop("ETU_EXECUTORCH_SRC", None)
    result = etu(["firmware", "build", real_program("u85"), "--board", "qemu-an547",
                  "--out", tmp_path], env)  # fmt: skip
    assert result.returncode == 2
    (line,) = result.stderr.strip().splitlines()
    assert "ethos-u85" in line and "U85 is not emulated" in line
    ran = etu(["run", "--board", "qemu-an547", real_program("u85"), "--sessions",
               tmp_path / "s"], env, cwd=tmp_path)  # fmt: skip
    assert ran.returncode == 2 and "U85 is not emulated" in ran.stderr
    assert not (tmp_path / "arm_executor_runner.elf").exists()
