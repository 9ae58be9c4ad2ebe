"""Measured NPU cycles per layer end to end: ``etu run`` has the FVP (the stand-in installed
under the real FVP names) write its PMU trace into the session, ``etu log --json`` joins it
to the demo firmware's program and to a Vela debug database made here by the installed
Vela from the demo's own TOSA graph, and ``etu diff`` shows the per-layer deltas."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from etu.fvp.standin import install_standin
from tests.pmu_workspace import demo_debug_db

ROOT = Path(__file__).resolve().parent.parent.parent
DEMO = ROOT / "etu_tui" / "demo"
ELF = DEMO / "firmware" / "arm_executor_runner.elf"


def etu(*args: str, env: dict, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "etu.tui.cli", *args],
        capture_output=True, text=True, env=env, cwd=cwd, timeout=180, check=False,
    )  # fmt: skip


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    """``firmware/fw.elf`` (the demo's) and ``vela/`` holding Vela's debug database for
    the demo's delegate, compiled as ExecuTorch compiled it (its etu_compile.json)."""
    root = tmp_path_factory.mktemp("pmu")
    demo_debug_db(root / "vela" / "out_debug.xml")
    (root / "firmware").mkdir()
    shutil.copy(ELF, root / "firmware" / "fw.elf")
    fvps = root / "fvps"
    install_standin(fvps)
    return root


@pytest.fixture
def env(workspace: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ETU_STANDIN")}
    return {**env, "ETU_FVP_DIR": str(workspace / "fvps")}


def run_session(workspace: Path, env: dict, *extra: str) -> Path:
    result = etu("run", "--elf", "firmware/fw.elf", "--json", *extra, env=env, cwd=workspace)
    assert result.returncode == 0, result.stderr
    return workspace / json.loads(result.stdout.splitlines()[-1])["session"]


def test_standin_run_keeps_a_simulated_trace_and_log_shows_layers(workspace, env) -> None:
    session = run_session(workspace, {**env, "ETU_STANDIN_INFERENCES": "2"})
    trace = json.loads((session / "pmu_trace.json").read_text())
    assert trace["otherData"]["etu_standin"] is True
    meta = json.loads((session / "meta.json").read_text())
    assert meta["pmu_trace"] == "pmu_trace.json"
    assert f"--pmu-trace {session.resolve()}/pmu_trace.json" in " ".join(meta["command"])
    summary = json.loads(etu("log", "--json", str(session), env=env, cwd=workspace).stdout)
    layers = summary["npu_layers"]
    assert summary["npu_layers_source"] == "stand-in (simulated)"
    assert summary["npu_layers_debug_db"].endswith("_debug.xml")
    assert summary["npu_layers_passes"] == 2 and summary["npu_layers_warnings"] == []
    assert {layer["measured_source"] for layer in layers} == {"stand-in (simulated)"}
    operators = [layer["operator"] for layer in layers]
    assert "Conv2D" in operators and "MaxPool" in operators
    assert all(layer["estimated_cycles"] and layer["ratio"] > 0 for layer in layers)
    # every cycle of the PMU report's per-inference count is charged to some layer
    (pmu,) = summary["pmu"]
    per_inference = pmu["npu_cycles"] // 2
    measured = sum(layer["measured_cycles"] for layer in layers)
    assert per_inference - len(layers) * 2 <= measured <= per_inference
    text = etu("log", str(session), env=env, cwd=workspace).stdout
    assert "NPU cycles per layer (stand-in (simulated))" in text and "Conv2D" in text


def test_no_pmu_trace_option_keeps_none(workspace, env) -> None:
    session = run_session(workspace, env, "--no-pmu-trace")
    assert not (session / "pmu_trace.json").exists()
    summary = json.loads(etu("log", "--json", str(session), env=env, cwd=workspace).stdout)
    assert "npu_layers" not in summary


def test_a_session_folder_with_a_space_is_named_relatively(workspace, env) -> None:
    """The plugin's extra_args are split at spaces: a session folder whose absolute path
    has one is passed relative to the working folder."""
    spaced = workspace / "with space"
    spaced.mkdir(exist_ok=True)
    shutil.copytree(workspace / "firmware", spaced / "firmware", dirs_exist_ok=True)
    shutil.copytree(workspace / "vela", spaced / "vela", dirs_exist_ok=True)
    session = run_session(spaced, env)
    meta = json.loads((session / "meta.json").read_text())
    (extra,) = [arg for arg in meta["command"] if "--pmu-trace" in arg]
    assert extra == f"ethosu.extra_args=--pmu-trace .etu/sessions/{session.name}/pmu_trace.json"
    assert (session / "pmu_trace.json").is_file()


def test_a_missing_trace_is_said_only_for_a_run_that_succeeded(workspace, env) -> None:
    session = run_session(workspace, env)
    (session / "pmu_trace.json").unlink()
    summary = json.loads(etu("log", "--json", str(session), env=env, cwd=workspace).stdout)
    assert summary["npu_layers"] == [] and "wrote no PMU trace" in summary["npu_layers_error"]
    failed = etu("run", "--elf", "firmware/fw.elf", "--json", cwd=workspace,
                 env={**env, "ETU_STANDIN_FAULT": "missing-operator"})  # fmt: skip
    folder = workspace / json.loads(failed.stdout.splitlines()[-1])["session"]
    assert not (folder / "pmu_trace.json").exists()
    summary = json.loads(etu("log", "--json", str(folder), env=env, cwd=workspace).stdout)
    assert "npu_layers" not in summary


def test_a_garbled_trace_is_one_line_in_the_log(workspace, env) -> None:
    session = run_session(workspace, env)
    (session / "pmu_trace.json").write_text('{"traceEvents": [}')
    result = etu("log", "--json", str(session), env=env, cwd=workspace)
    assert result.returncode == 0
    error = json.loads(result.stdout)["npu_layers_error"]
    assert "pmu_trace.json" in error and "JSON" in error and "\n" not in error


def test_diff_of_two_runs_shows_per_layer_deltas(workspace, env) -> None:
    # the first run's NPU takes the demo's Vela estimate, the second the stand-in's rough
    # figure (no Vela summary in this workspace): every layer moves
    first = run_session(workspace, {**env, "ETU_STANDIN_VELA": str(DEMO / "vela")})
    second = run_session(workspace, env)
    result = etu("diff", str(first), str(second), "--json", env=env, cwd=workspace)
    record = json.loads(result.stdout)
    layers = record["npu_layers"]
    assert result.returncode == 1 and not record["equal"]
    assert layers and all(not row["equal"] and row["delta"] for row in layers)
    assert all(row["estimated_cycles"] for row in layers)
    same = etu("diff", str(first), str(first), "--json", env=env, cwd=workspace)
    assert all(row["equal"] for row in json.loads(same.stdout)["npu_layers"])
    text = etu("diff", str(first), str(second), env=env, cwd=workspace).stdout
    assert "NPU cycles per layer:" in text and "Conv2D" in text


def test_a_real_program_and_its_own_debug_db_are_joined() -> None:
    """The compiled ``mix_u55`` test program and the debug database Vela wrote for it:
    every queue row is one of its NPU operations,
    the layers carry Vela's per-source estimate, and a trace's cycles all reach a layer."""
    from etu.fvp.standin_trace import standin_trace
    from etu.parsers.ethosu_commands import program_operations
    from etu.parsers.pmu_trace import npu_layers, parse_pmu_trace, stream_units, time_units
    from etu.parsers.program_facts import delegates
    from etu.parsers.pte import decode_program
    from etu.parsers.vela_debug_db import parse_debug_db
    from tests.npu_programs import build

    folder = build("mix_u55")
    pte = folder / "program.pte"
    program = decode_program(pte.read_bytes(), str(pte))
    (decoded,) = [d for d in program_operations(program, delegates(program)) if d.stream]
    db = parse_debug_db((folder / "vela" / "out_debug.xml").read_bytes(), "out_debug.xml")
    units, why = stream_units(decoded.index, decoded.stream, db)
    assert why is None and units.from_debug_db
    assert len(units.units) == len(db.tables["queue"])
    covered = sorted(i for unit in units.units for i in unit.operations)
    assert covered == list(range(len(decoded.stream.operations)))
    trace = standin_trace([decoded.stream], 100_000, 2, 128)
    timing = time_units(parse_pmu_trace(json.dumps(trace).encode(), "t.json"), [units])
    assert timing.warnings == [] and timing.passes == 2
    layers = npu_layers(timing, inferences=2)
    assert len(layers) < len(units.units)  # two scheduled operators from one source operator
    perf = db.tables["perf"]
    assert sum(x.estimated_cycles or 0 for x in layers) == sum(r["npu_cycles"] for r in perf)
    assert 100_000 - 2 * len(units.units) <= 2 * sum(x.measured_cycles for x in layers)
    assert {"Conv2D", "DepthwiseConv2D", "MaxPool"} <= {x.operator for x in layers}
