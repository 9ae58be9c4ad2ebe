"""etu diff: two stand-in runs that differ in one counter and one output, equal runs,
a run from before this change against one from now, two real programs (delegated to the
NPU and compiled for the CPU only), two Vela outputs; exit 0 only when equal."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from etu.runner.diff import Tolerance, compare_outputs, first_divergence
from tests.history_workspace import (
    DEMO,
    add_v1_sessions,
    etu,
    fallback_programs,
    make_workspace,
    record_run,
)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    ws = make_workspace(tmp_path_factory.mktemp("diff") / "ws")
    old = add_v1_sessions(ws)
    # the stand-in as it was when the v1 sessions were recorded: made-up outputs, not the
    # host reference's the demo firmware now ships (fvp/standin.py STANDIN_REFERENCE)
    shipped = ws / "firmware" / "etu_reference.json"
    kept = shipped.read_bytes()
    shipped.unlink()
    made_up = record_run(ws)
    shipped.write_bytes(kept)
    return {
        "ws": ws,
        "made_up": made_up,
        "base": record_run(ws),
        "drift": record_run(ws, ETU_STANDIN_DRIFT="3"),
        "again": record_run(ws),
        "old_success": old[0],
        "old_error": old[1],
    }


def diff(runs, a: str, b: str, *extra: str):
    result = etu("diff", runs[a].name, runs[b].name, "--json", *extra, cwd=runs["ws"])
    assert result.returncode in (0, 1), result.stderr
    return result.returncode, json.loads(result.stdout)


def test_one_counter_and_one_output_differ(runs) -> None:
    status, result = diff(runs, "base", "drift")
    assert status == 1 and result["kind"] == "sessions" and not result["equal"]
    assert not result["ending"]["changed"] and result["ending"]["a"] == "success"
    changed = [c for c in result["counters"] if not c["equal"]]
    assert len(changed) == 1
    counter = changed[0]
    assert counter["name"] == "ETHOSU_PMU_AXI1_RD_DATA_BEAT_RECEIVED"
    assert counter["delta"] == 3 and counter["percent"] == pytest.approx(
        300 / counter["a"], abs=1e-4
    )
    assert all(c["equal"] for c in result["cycles"] + result["allocators"])
    (output,) = result["outputs"]
    assert not output["equal"] and output["compared"] == 10
    assert output["max_abs_diff"] == pytest.approx(0.003)
    assert output["mean_abs_diff"] == pytest.approx(0.0003)
    assert 0.99 < output["cosine_similarity"] < 1.0
    diverge = result["first_divergence"]
    assert "ethosu_pmu_cntr1" in diverge["a"] and diverge["a"] != diverge["b"]
    text = etu("diff", runs["base"].name, runs["drift"].name, cwd=runs["ws"]).stdout
    assert "≠ ETHOSU_PMU_AXI1_RD_DATA_BEAT_RECEIVED" in text and "+3" in text
    assert f"first differs at line {diverge['line']}" in text and text.endswith("different\n")


def test_tolerances_decide_the_exit_status(runs) -> None:
    status, result = diff(runs, "base", "drift", "--atol", "3.5")
    assert status == 0 and result["equal"]  # 3 cycles and 0.003 are within atol 3.5
    assert result["first_divergence"] is not None  # still shown, numbers only
    assert not result["log_text_differs"]


def test_equal_runs_exit_0(runs) -> None:
    status, result = diff(runs, "base", "again")
    assert status == 0 and result["equal"] and result["first_divergence"] is None
    assert result["outputs"][0]["cosine_similarity"] == 1.0


def test_a_session_from_before_this_change_diffs(runs) -> None:
    status, result = diff(runs, "old_success", "made_up")
    assert status == 0 and result["a"]["format"] == 1 and result["b"]["format"] == 2
    assert result["a"]["program"]["name"] == "demo_cnn.pte"
    status, result = diff(runs, "old_error", "base")
    assert status == 1 and result["ending"] == {
        "a": "runner_error", "b": "success", "changed": True,
        "a_proof": result["ending"]["a_proof"], "b_proof": result["ending"]["b_proof"],
    }  # fmt: skip
    assert "not found" in result["ending"]["a_proof"]
    assert result["first_divergence"]["line"] == 13  # the missing kernel's line
    assert result["log_text_differs"]


def test_programs_with_and_without_the_npu(real_program, tmp_path: Path) -> None:
    npu, cpu = real_program("u55"), real_program("float_cpu")
    result = etu("diff", str(npu), str(cpu), "--json", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    record = json.loads(result.stdout)
    assert record["kind"] == "programs"
    ops = record["operators"]
    assert "aten::convolution.out" in ops["added"] and "aten::convolution.out" in ops["cpu_added"]
    assert "quantized_decomposed::quantize_per_tensor.out" in ops["removed"]
    split = {item["name"]: (item["a"], item["b"]) for item in record["split"]}
    assert split["delegate_calls"] == (1, 0) and split["kernel_calls"][1] > split["kernel_calls"][0]
    (delegate,) = record["delegates"]
    assert delegate["a"]["id"] == "EthosUBackend" and delegate["b"] is None
    assert delegate["a"]["payload_size"] > 0 and delegate["a"]["npu_target"] == "ethos-u55-128"
    sizes = {item["name"]: item for item in record["sizes"]}
    assert sizes["constant_data_size"]["a"] == 0 and sizes["constant_data_size"]["b"] > 0
    assert record["planned_memory"][0]["name"] == "forward.mem_id 1"
    same = etu("diff", str(npu), str(npu), cwd=tmp_path)
    assert same.returncode == 0 and same.stdout.endswith("equal\n")
    other = etu("diff", str(npu), str(real_program("u85")), "--json", cwd=tmp_path)
    changes = json.loads(other.stdout)["delegates"][0]["changes"]
    target = next(c for c in changes if c["name"] == "npu_target")
    assert (target["a"], target["b"]) == ("ethos-u55-128", "ethos-u85-256")


@pytest.mark.aot
def test_programs_compiled_without_and_with_a_cpu_fallback(tmp_path: Path) -> None:
    without, with_fallback = fallback_programs()
    result = etu("diff", str(without), str(with_fallback), "--json", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    record = json.loads(result.stdout)
    assert record["operators"]["added"] == ["aten::topk.values"]
    assert record["operators"]["cpu_added"] == ["aten::topk.values"]
    assert record["operators"]["removed"] == [] and record["operators"]["cpu_removed"] == []
    split = {item["name"]: (item["a"], item["b"]) for item in record["split"]}
    assert split["delegate_calls"] == (1, 1)  # the rest still runs on the NPU
    assert split["kernel_calls"][1] > split["kernel_calls"][0]
    assert "aten::topk.values" in record["b"]["select_ops_list"]
    assert "aten::topk.values" not in record["a"]["select_ops_list"]
    text = etu("diff", str(without), str(with_fallback), cwd=tmp_path).stdout
    assert "now on the CPU: aten::topk.values" in text


def test_two_vela_outputs(tmp_path: Path) -> None:
    changed = tmp_path / "vela-b"
    shutil.copytree(DEMO / "vela", changed)
    summary = next(changed.glob("*_summary_*.csv"))
    summary.write_text(summary.read_text().replace("54916", "60000"))
    result = etu("diff", str(DEMO / "vela"), str(changed), "--json", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    record = json.loads(result.stdout)
    cycles = next(m for m in record["metrics"] if m["name"] == "cycles")
    assert (cycles["a"], cycles["b"], cycles["delta"]) == (54916, 60000, 5084)
    assert cycles["label"] == "cycles" and not cycles["equal"]
    assert etu("diff", str(DEMO / "vela"), str(DEMO / "vela"), cwd=tmp_path).returncode == 0


def test_unknown_inputs_are_one_line_errors(runs, tmp_path: Path) -> None:
    result = etu("diff", "nope", runs["base"].name, cwd=runs["ws"])
    assert result.returncode == 2 and result.stderr.startswith("etu: nope: not a session")
    bad = tmp_path / "bad.pte"
    bad.write_bytes(b"not a program")
    result = etu("diff", str(bad), str(bad), cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr


def test_divergence_masks_volatile_text(tmp_path: Path) -> None:
    a, b = tmp_path / "a.log", tmp_path / "b.log"
    a.write_bytes(b"[12:00:01.5] boot at 0x1000\nready in 12 ms\nvalue 1\nend\n")
    b.write_bytes(b"[12:00:09.1] boot at 0x2000\nready in 15 ms\nvalue 2\nend\nextra\n")
    found, text_differs = first_divergence(a, b)
    assert found == {"line": 3, "a": "value 1", "b": "value 2"}
    assert text_differs  # B has a line more
    b.write_bytes(b"[12:00:09.1] boot at 0x2000\nready in 15 ms\nvalue 1\nend\n")
    assert first_divergence(a, b) == (None, False)


def test_output_metrics() -> None:
    tol = Tolerance(rtol=0, atol=0)
    (same,) = compare_outputs({"0": {"values": [1, 2], "numel": 2}},
                              {"0": {"values": [1, 2], "numel": 2}}, tol)  # fmt: skip
    assert same["equal"] and same["cosine_similarity"] == 1.0 and same["max_abs_diff"] == 0
    (opposite,) = compare_outputs({"0": {"values": [1, 0], "numel": 2}},
                                  {"0": {"values": [-1, 0], "numel": 2}}, tol)  # fmt: skip
    assert opposite["cosine_similarity"] == -1.0 and opposite["max_abs_diff"] == 2.0
    (missing,) = compare_outputs({"0": {"values": [1], "numel": 1}}, {}, tol)
    assert not missing["equal"] and missing["compared"] == 0
