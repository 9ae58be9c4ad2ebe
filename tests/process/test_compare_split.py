"""The three-way split (issue 22 §2) and integer IO made visible (§5).

Without torch: the demo program's input and output quantization read from its own kernels,
Vela's out_vela.npz read without running its pickle's code, the integers a dequantized
output came from, the verdict line. With the host reference (marked aot): a demo workspace
whose float model is gone says so and keeps the deployment side.
"""

from __future__ import annotations

import io
import json
import pickle
import zipfile
from pathlib import Path

import numpy
import pytest

from etu.parsers.pte import open_program
from etu.runner.compare import grid_comparison, off_grid, to_integers, verdict
from etu.runner.io_quantization import (
    delegate_io_quantization,
    io_line,
    io_quantization,
    real_formula,
    vela_io_quantization,
)

ROOT = Path(__file__).resolve().parent.parent.parent
DEMO = ROOT / "etu_tui" / "demo"


def demo_quantization():
    with open_program(DEMO / "demo_cnn.pte") as program:
        return io_quantization(program.plans[0], DEMO / "vela")


def test_the_demos_io_quantization_comes_from_its_kernels() -> None:
    entry, exit_ = demo_quantization()
    assert (entry.kind, entry.dtype, entry.integer_dtype) == ("input", "float32", "int8")
    assert entry.source == "quantize_per_tensor on the CPU before delegate 0"
    assert (exit_.kind, exit_.dtype, exit_.integer_dtype) == ("output", "float32", "int8")
    assert exit_.source == "dequantize_per_tensor on the CPU after delegate 0"
    for q in (entry, exit_):
        assert q.known and 0 < q.scale < 1 and -128 <= q.zero_point <= 127
        assert (q.quant_min, q.quant_max) == (-128, 127)
        assert f"scale {q.scale:.4g}, zero point {q.zero_point}" in q.sentence()
        assert q.quantize(q.dequantize(17)) == 17
    line = io_line(exit_.to_json())
    assert line.startswith("output 0: float32 ↔ int8, scale ") and "after delegate 0" in line
    assert real_formula({"scale": 0.5, "zero_point": -12}) == "(q + 12) × 0.5"
    assert real_formula({"scale": 0.5, "zero_point": 0}) == "q × 0.5"


def test_velas_npz_is_read_without_running_its_pickle(tmp_path: Path) -> None:
    # The demo's (Vela 5.1 from TOSA): quant_type none, no figures.
    found = vela_io_quantization(DEMO / "vela")
    assert found["input"][0]["quant_type"] == "none" and found["input"][0]["scale"] == []
    # A hand-made one with figures: read.
    entry = {"quant_type": "per_tensor", "scale": numpy.array([0.5], numpy.float32),
             "zero_point": numpy.array([3], numpy.int32)}  # fmt: skip
    array = numpy.empty(1, dtype=object)
    array[0] = entry
    numpy.savez(tmp_path / "out_vela.npz", input_quantization=array, allow_pickle=True)
    (read,) = vela_io_quantization(tmp_path)["input"]
    assert read == {"quant_type": "per_tensor", "scale": [0.5], "zero_point": [3]}

    # A pickle that would run code when loaded: refused, one line, nothing run.
    class Boom:
        def __reduce__(self):
            return (Path("/tmp/etu-must-not-exist").touch, ())

    header = io.BytesIO()
    numpy.lib.format.write_array_header_1_0(
        header, {"descr": "|O", "fortran_order": False, "shape": (1,)}
    )
    (tmp_path / "bad").mkdir()
    with zipfile.ZipFile(tmp_path / "bad" / "out_vela.npz", "w") as archive:
        archive.writestr("input_quantization.npy", header.getvalue() + pickle.dumps([Boom()]))
    with pytest.raises(ValueError, match=r"out_vela\.npz: .*not allowed"):
        vela_io_quantization(tmp_path / "bad")
    assert not Path("/tmp/etu-must-not-exist").exists()


def test_a_dequantized_output_compares_in_its_integers() -> None:
    grid = {"scale": 0.25, "zero_point": -2, "quant_min": -128, "quant_max": 127,
            "integer_dtype": "int8"}  # fmt: skip
    assert to_integers([0.0, 0.25, -0.5, 1000.0, float("nan")], grid) == [-2, -1, -4, 127, None]
    # The runner prints six decimals: a printed value rounds back to its integer.
    printed = [round((q + 2) * 0.25, 6) for q in (5, -7, 0)]
    same = grid_comparison(printed, [(q + 2) * 0.25 for q in (5, -7, 0)], grid)
    assert (same["differing"], same["max_lsb"], same["target_integers"]) == (0, 0, [5, -7, 0])
    off = grid_comparison([0.0, 1.0], [0.0, 0.25], grid)
    assert (off["differing"], off["max_lsb"]) == (1, 3)
    # Values no integer in range dequantizes to (a made-up target) are counted as such.
    assert same["off_grid"] == 0
    assert off_grid([0.1, 0.25 + 4e-7, (127 + 2) * 0.25, (128 + 2) * 0.25], grid) == 2


def test_the_delegates_view_gets_each_npu_tensors_grid() -> None:
    with open_program(DEMO / "demo_cnn.pte") as program:
        (into,), (out,) = delegate_io_quantization(program.plans[0], 0, 1)
        assert delegate_io_quantization(program.plans[0], 5, 1) == ([], [])
    entry, exit_ = demo_quantization()
    assert into == ("int8", entry.scale, entry.zero_point, "quantize_per_tensor on the CPU")
    assert out == ("int8", exit_.scale, exit_.zero_point, "dequantize_per_tensor on the CPU")


def test_the_verdict_line_says_deployment_first() -> None:
    exact = {"passed": True, "deployment": {"differing": 0, "count": 10, "max_lsb": 0,
                                            "passed": True},
             "quantization": {"snr_db": 31.24}}  # fmt: skip
    assert verdict(exact, "the float model") == "deployment exact · quantisation SNR 31.2 dB"
    assert verdict(exact, None, simulated=True) == (
        "deployment exact (target simulated) · quantisation SNR 31.2 dB")  # fmt: skip
    differ = {**exact, "passed": False,
              "deployment": {"differing": 3, "count": 10, "max_lsb": 2, "passed": False},
              "quantization": None}  # fmt: skip
    assert verdict(differ, "gone: the compile saved ...") == (
        "deployment 3 of 10 differ (max 2 LSB) · quantisation gone (float model)")  # fmt: skip
    within = {"differing": None, "passed": True, "max_abs_error": 4e-7}
    floats = {"passed": True, "deployment": within, "quantization": None}
    assert verdict(floats, "not known: no compile record") == (
        "deployment within tolerance (max |e| 4e-07) · quantisation not known (no float model)"
    )


@pytest.mark.aot
def test_when_the_float_model_is_gone_the_deployment_side_stays(tmp_path: Path) -> None:
    from tests.history_workspace import make_workspace, record_run

    workspace = make_workspace(tmp_path / "ws")
    session = record_run(workspace)
    for name in ("etu_float_model.pte", "etu_float_model.pt2"):
        (workspace / "vela" / name).unlink()
    from etu.runner.compare import compare_session

    record = compare_session(session)
    assert record["quantization_note"].startswith("gone: the compile saved the float model")
    (output,) = record["outputs"]
    assert output["quantization"] is None and output["deployment"]["count"] == 10
    assert output["verdict"].endswith("· quantisation gone (float model)")
    saved = json.loads((session / "compare.json").read_text())
    assert saved["quantization_note"] == record["quantization_note"]
    # etu report carries both losses from the saved comparison (here: deployment only).
    from etu.runner.report import build_report
    from etu.tui.report_format import render_markdown

    report = build_report(session)
    (loss,) = report["losses"]["outputs"]
    assert loss["verdict"] == output["verdict"] and loss["quantization"] is None
    text = render_markdown(report)
    assert "| output | verdict | deployment (reference → target) |" in text
    assert "Float model: gone: the compile saved the float model" in text


@pytest.mark.aot
def test_the_compare_child_prints_one_json_line(tmp_path: Path) -> None:
    """The console reads the child's last stdout line: C++ output buffered while a tool ran
    (the TOSA serializer's version warning) must not land after it."""
    import subprocess

    from etu.runner.isolated import isolated_python
    from tests.history_workspace import make_workspace, record_run

    session = record_run(make_workspace(tmp_path / "ws"))
    done = subprocess.run(isolated_python("etu.runner.compare", str(session)),
                          capture_output=True, text=True, timeout=600, check=False)  # fmt: skip
    (line,) = done.stdout.splitlines()
    assert json.loads(line)["outputs"][0]["verdict"].startswith("deployment ")


def test_a_missing_program_is_one_line(tmp_path: Path) -> None:
    """--pte naming no file: the compare says which, before any reference is built."""
    from etu.runner.compare import CompareError, compare_session
    from tests.history_workspace import V1_SESSIONS

    session = next(p for p in sorted(V1_SESSIONS.iterdir()) if p.is_dir())
    with pytest.raises(CompareError, match=r"nothing\.pte: no such program file"):
        compare_session(session, pte=tmp_path / "nothing.pte", save=False)
