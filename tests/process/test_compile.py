"""Compile jobs with the real ExecuTorch + Vela flow in a worker process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from etu.parsers.program_facts import cpu_operators, delegates
from etu.parsers.pte import open_program
from etu.parsers.vela import load_vela_report
from etu.runner import warm_host
from etu.runner.compile_job import (
    CompileJob,
    CompileListener,
    comparison_row,
    run_sweep,
    sweep_requests,
)
from etu.runner.compile_request import CompileRequest, InputSpec, RequestError
from tests.board_peers import wait_for

pytestmark = pytest.mark.aot
MODELS = Path(__file__).resolve().parent.parent / "data" / "models"
TARGETS = ["ethos-u55-128", "ethos-u65-256", "ethos-u85-256"]


@pytest.fixture(scope="module")
def out_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("compiled")


@pytest.fixture(scope="module")
def sweep(out_dir: Path):
    requests = sweep_requests(CompileRequest("cnn"), targets=TARGETS)
    return run_sweep(requests, out_dir, workers=2)


def test_sweep_compiles_u55_u65_u85(sweep) -> None:
    assert [r.status for r in sweep] == ["ok"] * 3, [r.message for r in sweep]
    for result, target in zip(sweep, TARGETS, strict=True):
        assert result.folder.name.startswith(f"cnn-{target}-")
        with open_program(result.pte) as program:
            (info,) = delegates(program)
            assert info.payload.target == target == info.delegate.spec("target")
        report = load_vela_report(result.vela_dir)
        assert report.cycles and report.per_layer  # --verbose-performance is always on
        assert set(result.stages) >= {"load", "export", "quantize", "calibrate", "tosa", "vela"}
    # ExecuTorch's defaults were filled in per target
    modes = [r.request.memory_mode for r in sweep]
    assert modes == ["Shared_Sram", "Dedicated_Sram_384KB", "Sram_Only"]


def test_sweep_table(sweep) -> None:
    rows = [comparison_row(r) for r in sweep]
    assert [row["target"] for row in rows] == TARGETS
    for row in rows:
        assert row["cycles"] > 0 and row["program_bytes"] > 0 and row["scratch_bytes"] > 0
        assert row["cpu_operators"] == 2  # quantize and dequantize around the delegate


def test_unchanged_job_is_a_cache_hit(sweep, out_dir: Path) -> None:
    job = CompileJob(CompileRequest("cnn", target="ethos-u85-256"), out_dir)
    result = job.run()
    assert result.cached and result.folder == sweep[2].folder and job._process is None
    changed = CompileJob(CompileRequest("cnn", target="ethos-u85-256", per_channel=False), out_dir)
    assert changed.key != job.key


def test_cpu_fallback_is_a_result_not_a_failure(out_dir: Path) -> None:
    request = CompileRequest(f"{MODELS / 'fallback.py'}:SortNet", inputs=(InputSpec((1, 3, 8, 8)),))
    result = CompileJob(request, out_dir).run()
    assert result.status == "ok", result.message
    with open_program(result.pte) as program:
        names = [op.name for op in cpu_operators(program)]
        assert "aten::sort.values" in names
        assert len(delegates(program)) == 2  # the convs either side of sort


def failed(request: CompileRequest, out_dir: Path):
    result = CompileJob(request, out_dir).run()
    assert result.status == "failed"
    assert not CompileJob(request, out_dir).folder.exists()  # nothing looks like a result
    return result


def test_model_file_that_does_not_import(tmp_path: Path, out_dir: Path) -> None:
    broken = tmp_path / "broken.py"
    broken.write_text("import torch\nclass Net(torch.nn.Module):\n    def forward(self, x)\n")
    result = failed(CompileRequest(f"{broken}:Net", inputs=(InputSpec((1, 4)),)), out_dir)
    assert result.failed_stage == "load" and "SyntaxError" in result.message
    assert "broken.py" in result.traceback


def test_class_that_does_not_exist(out_dir: Path) -> None:
    request = CompileRequest(f"{MODELS / 'fallback.py'}:Nope", inputs=(InputSpec((1, 3, 8, 8)),))
    result = failed(request, out_dir)
    assert result.failed_stage == "load" and "has no 'Nope'" in result.message
    assert "SortNet" in result.message


def test_wrong_input_shape(out_dir: Path) -> None:
    result = failed(CompileRequest("cnn", inputs=(InputSpec((1, 5, 32, 32)),)), out_dir)
    assert result.failed_stage == "export"
    assert "RuntimeError" in result.message or "Error" in result.message


def test_vela_error(out_dir: Path) -> None:
    result = failed(CompileRequest("add", vela_flags=("--no-such-vela-option",)), out_dir)
    assert result.failed_stage == "vela"
    assert "--no-such-vela-option" in result.message


def test_pairs_that_cannot_work_are_refused_before_any_work(out_dir: Path) -> None:
    with pytest.raises(RequestError, match="AXI1 is DRAM"):
        CompileJob(CompileRequest("cnn", memory_mode="Dedicated_Sram"), out_dir)
    with pytest.raises(RequestError, match="for Ethos-U85"):
        CompileJob(CompileRequest("cnn", system_config="Ethos_U85_SYS_DRAM_Mid"), out_dir)
    with pytest.raises(RequestError, match="Unsupported SYSTEM_CONFIG"):
        request = CompileRequest("cnn", target="ethos-u65-256", system_config="Ethos_U65_Mid_End")
        CompileJob(request, out_dir)
    with pytest.raises(RequestError, match="unknown target"):
        CompileJob(CompileRequest("cnn", target="ethos-u99-1"), out_dir)


class WaitFor(CompileListener):
    def __init__(self, stage: str) -> None:
        self.stage = stage
        self.reached = threading.Event()

    def on_stage(self, stage: str, state: str, seconds) -> None:
        if stage == self.stage and state == "start":
            self.reached.set()


def run_in_thread(job: CompileJob):
    box = {}
    thread = threading.Thread(target=lambda: box.setdefault("result", job.run()))
    thread.start()
    return thread, box


def test_killed_worker(out_dir: Path) -> None:
    listener = WaitFor("export")
    job = CompileJob(CompileRequest("softmax"), out_dir, listener, use_cache=False)
    thread, box = run_in_thread(job)
    assert listener.reached.wait(120)
    os.kill(job._process.pid, signal.SIGKILL)
    thread.join(60)
    result = box["result"]
    assert result.status == "failed" and "signal 9" in result.message
    assert not job.folder.exists() and result.folder.name.endswith(".failed")


def test_cancel(out_dir: Path) -> None:
    listener = WaitFor("export")
    job = CompileJob(CompileRequest("add"), out_dir, listener, use_cache=False)
    thread, box = run_in_thread(job)
    assert listener.reached.wait(120)
    job.cancel()
    thread.join(60)
    assert box["result"].status == "cancelled" and not job.folder.exists()


def test_a_cancel_while_the_warm_host_still_imports_ends_the_job_at_once(
    out_dir: Path, monkeypatch
) -> None:
    """Cancelled before the worker exists (its host is still importing torch): the worker
    is killed as soon as it is forked, before its first stage ends."""
    monkeypatch.setenv("OMP_NUM_THREADS", "2")  # read at import: a host of its own, cold
    job = CompileJob(CompileRequest("add"), out_dir, use_cache=False)
    thread, box = run_in_thread(job)
    assert wait_for(lambda: job._process is not None or not thread.is_alive())
    job.cancel()  # the host takes seconds to import torch: the worker is not forked yet
    thread.join(120)
    result = box["result"]
    assert result.status == "cancelled" and result.warm
    assert "load" not in result.stages and not job.folder.exists()
    warm_host.host_for("etu.runner.aot", os.environ).close()  # this test's own host ends


def test_cli_json(sweep, out_dir: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "etu.tui.cli", "compile", "cnn", "--target", "ethos-u55-128",
         "--out", str(out_dir), "--json"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    record = json.loads(result.stdout)
    assert record["status"] == "ok" and record["cached"] is True
    assert record["pte"] == str(sweep[0].pte)
    refused = subprocess.run(
        [sys.executable, "-m", "etu.tui.cli", "compile", "cnn", "--memory-mode", "Dedicated_Sram",
         "--out", str(out_dir)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert refused.returncode == 2 and "AXI1 is DRAM" in refused.stderr


def test_pt2_archive_and_npy_inputs(tmp_path: Path, out_dir: Path) -> None:
    """The other two source forms: a torch.export archive, and inputs from a .npy file."""
    import numpy
    import torch

    from etu.runner.example_models import Add

    archive = tmp_path / "add.pt2"
    torch.export.save(torch.export.export(Add(), (torch.rand(1, 16),)), archive)
    result = CompileJob(CompileRequest(str(archive)), out_dir).run()
    assert result.status == "ok", result.message
    assert (result.vela_dir / "out_debug.xml").is_file()  # the debug DB is kept too
    with open_program(result.pte) as program:
        assert program.plans[0].values[program.plans[0].inputs[0]].sizes == (1, 16)

    samples = tmp_path / "inputs.npy"
    numpy.save(samples, numpy.random.default_rng(0).random((1, 24), dtype=numpy.float32))
    request = CompileRequest(f"{MODELS / 'fallback.py'}:SortNet", input_file=str(samples))
    bad = CompileJob(request, out_dir).run()  # a 2-D input cannot feed a conv: export fails
    assert bad.status == "failed" and bad.failed_stage == "export"
    result = CompileJob(CompileRequest("add", input_file=str(samples)), out_dir).run()
    assert result.status == "ok", result.message
    with open_program(result.pte) as program:
        assert program.plans[0].values[program.plans[0].inputs[0]].sizes == (1, 24)


def test_a_model_py_with_random_initial_weights_is_built_the_same_each_time() -> None:
    """The worker seeds torch before it builds the user's model: a model.py that loads no
    checkpoint compiles to one program (two compiles of NpuMix gave two before, and a test
    on its layers' scales passed or failed with the draw)."""
    import torch

    from etu.runner.compile_worker import load_model

    request = CompileRequest(source=f"{MODELS / 'npu_mix.py'}:NpuMix")
    first, _ = load_model(request)
    torch.rand(16)  # the generator moves on in between, as other work in a process would
    second, _ = load_model(request)
    weights = first.state_dict()
    assert weights.keys() == second.state_dict().keys()
    for name, value in second.state_dict().items():
        assert torch.equal(weights[name], value), name
