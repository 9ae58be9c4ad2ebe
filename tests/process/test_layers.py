"""etu compare --layers: where precision is lost, layer by layer (issue 22 §4).

The demo's layers map to DemoCNN's module paths in graph order, all on the NPU; a program
with a CPU kernel between two delegates has a CPU layer between NPU ones, on the program's
own scale; a network of depthwise convolutions, a residual add, a LUT sigmoid and pools maps
too; a program without a float model or a TOSA graph is one line."""

from __future__ import annotations

import io
import json
import math
import shutil
from pathlib import Path

import pytest

from etu.runner.layers import (
    Layer,
    LayersError,
    layer_figures,
    layers_record,
    program_layers,
)
from etu.tui.cli import main
from tests import two_delegates

ROOT = Path(__file__).resolve().parent.parent.parent
DEMO = ROOT / "etu_tui" / "demo" / "demo_cnn.pte"
MODELS = ROOT / "tests" / "data" / "models"


@pytest.fixture(scope="module")
def demo_layers() -> dict:
    return program_layers(DEMO)


def demo_module_paths() -> set[str]:
    from etu.tui.demo.model import DemoCNN

    return {name for name, _module in DemoCNN().named_modules()}


def test_the_demo_layers_map_to_the_model_module_paths_in_graph_order(demo_layers):
    layers = demo_layers["layers"]
    modules = [layer["module"] for layer in layers]
    # conv+ReLU, pool, conv+ReLU, pool, conv+ReLU, global pool, the classifier (Linear)
    assert modules == ["features.0", "features.2", "features.3", "features.5", "features.6",
                       "features.8", "classifier"]  # fmt: skip
    assert set(modules) <= demo_module_paths()
    assert [layer["op"] for layer in layers] == ["CONV2D", "MAX_POOL2D", "CONV2D", "MAX_POOL2D",
                                                 "CONV2D", "AVG_POOL2D", "CONV2D"]  # fmt: skip
    # the TOSA tensors are named after the lowered graph's nodes, numbered per kind
    assert [layer["name"] for layer in layers if layer["op"] == "CONV2D"] == [
        "tosa_rescale_default", "tosa_rescale_default_1", "tosa_rescale_default_2",
        "tosa_rescale_default_3",
    ]  # fmt: skip
    assert layers[0]["float_node"] == "conv2d+relu"  # the ReLU the NPU fuses comes with it
    assert {layer["unit"] for layer in layers} == {"NPU"}  # one delegate holds the whole net
    assert all(layer["scale_source"] == "fitted" for layer in layers)
    for layer in layers:
        assert layer["note"] is None
        assert layer["sqnr_db"] is not None and layer["sqnr_db"] > 0
        assert 0.9 < layer["cosine"] <= 1.0 + 1e-12
        assert layer["max_abs_error"] >= 0
    # a pool keeps its input's grid: the same zero point and (fitted) scale as the conv
    assert layers[1]["zero_point"] == layers[0]["zero_point"]
    assert layers[1]["scale"] == pytest.approx(layers[0]["scale"], rel=0.02)


def test_the_weakest_layer_of_the_demo_is_named(demo_layers):
    layers = demo_layers["layers"]
    weakest = min(layers, key=lambda layer: layer["sqnr_db"])
    summary = demo_layers["layers_summary"]
    assert summary["weakest"] == weakest["name"]
    assert [layer["name"] for layer in layers if layer["weakest"]] == [weakest["name"]]
    out = io.StringIO()
    from etu.tui.cli.compare import write_layers_text

    write_layers_text(demo_layers, out)
    text = out.getvalue()
    assert f"weakest layer: {weakest['name']} ({weakest['module']}, " in text
    rows = [line for line in text.splitlines() if line[:3].strip().isdigit()]
    assert len(rows) == len(layers)
    assert all(layer["name"] in row for layer, row in zip(layers, rows, strict=True))


def test_etu_compare_layers_on_a_program_without_a_session(tmp_path, capsys):
    """The CI form: --layers --pte alone, JSON; the threshold flag moves the marker."""
    code = main(["compare", "--layers", "--pte", str(DEMO), "--sqnr-threshold", "1000",
                 "--json"])  # fmt: skip
    assert code == 0
    record = json.loads(capsys.readouterr().out)
    first = record["layers"][0]
    assert set(first) >= {"name", "module", "unit", "sqnr_db", "cosine", "max_abs_error"}
    # every layer is below 1000 dB: the first one is marked
    assert record["layers_summary"]["first_below_threshold"] == first["name"]
    assert first["first_below_threshold"] and first["below_threshold"]


def test_a_cpu_kernel_between_delegates_is_a_cpu_layer_on_the_program_scale():
    job = two_delegates.compile_job(MODELS / "cpu_between.py", "CpuBetween", "1x3x16x16")
    record = program_layers(job / "CpuBetween.pte")
    layers = record["layers"]
    assert [layer["unit"] for layer in layers] == ["NPU", "CPU", "NPU"]
    assert [layer["module"] for layer in layers] == ["conv1", "", "conv2"]  # topk in forward
    assert [layer["delegate"] for layer in layers] == [0, None, 1]
    cpu = layers[1]
    assert cpu["name"] == "topk" and cpu["float_node"] == "topk"
    assert cpu["program_scale"] > 0 and cpu["program_scale_sqnr_db"] is not None
    # conv1's real scale (the compile record: its TOSA graph keeps none) is the one the
    # program's own quantize kernel after topk uses (topk shares its input's grid)
    assert layers[0]["program_scale"] == cpu["program_scale"]
    assert layers[0]["program_scale_sqnr_db"] == pytest.approx(cpu["program_scale_sqnr_db"])
    # topk only reorders: on the same (best) scale its figures are conv1's, no false drop
    assert cpu["cosine"] == pytest.approx(layers[0]["cosine"], abs=1e-9)
    assert cpu["sqnr_db"] == pytest.approx(layers[0]["sqnr_db"], abs=1e-6)


def test_depthwise_residual_sigmoid_and_pools_map_to_their_modules():
    job = two_delegates.compile_job(MODELS / "npu_mix.py", "NpuMix", "1x3x16x16")
    layers = program_layers(job / "NpuMix.pte")["layers"]
    assert [(layer["op"], layer["module"]) for layer in layers] == [
        ("CONV2D", "stem"), ("DEPTHWISE_CONV2D", "depthwise"), ("DEPTHWISE_CONV2D", "dilated"),
        ("TABLE", ""), ("MUL", ""), ("ADD", ""), ("MAX_POOL2D", ""), ("AVG_POOL2D", ""),
        ("CONV2D", "head"),
    ]  # fmt: skip
    assert [layer["float_node"] for layer in layers][3:6] == ["sigmoid", "mul", "add"]
    pools = {layer["op"]: layer for layer in layers}
    # the average pool's zero point operands cancel: it stays on the max pool's grid
    assert pools["AVG_POOL2D"]["zero_point"] == pools["MAX_POOL2D"]["zero_point"]
    assert all(layer["note"] is None and layer["cosine"] > 0.9 for layer in layers)
    # each NPU layer's real scale, as calibration chose it (the compile record), beside the
    # fitted one: the fitted scale is the least-squares best, so the real one is no better
    scaled = [layer for layer in layers if layer["program_scale"] is not None]
    assert len(scaled) >= len(layers) - 2, [layer["float_node"] for layer in layers]
    for layer in scaled:
        assert layer["program_scale_sqnr_db"] <= layer["sqnr_db"] + 1e-6, layer
        assert layer["program_scale"] == pytest.approx(layer["scale"], rel=0.2), layer
    # the last layer's real scale is the one the program dequantizes its output with
    from etu.parsers.pte import open_program
    from etu.runner.io_quantization import program_io_quantization

    with open_program(job / "NpuMix.pte") as program:
        (output,) = [q for q in program_io_quantization(program.plans[0]) if q.kind == "output"]
    assert layers[-1]["program_scale"] == output.scale and output.scale is not None


def _copy_demo(tmp_path: Path, *, keep: tuple[str, ...]) -> Path:
    shutil.copy(DEMO, tmp_path / DEMO.name)
    vela = DEMO.parent / "vela"
    (tmp_path / "vela").mkdir()
    for path in vela.iterdir():
        if any(path.name.endswith(ending) for ending in keep):
            shutil.copy(path, tmp_path / "vela" / path.name)
    return tmp_path / DEMO.name


@pytest.mark.parametrize(
    ("keep", "message"),
    [
        ((), "no compile record beside it"),
        ((".json", ".tosa"), "the float model"),
        ((".json", ".pt2"), "no TOSA graph"),
    ],
    ids=["no-compile-record", "no-float-model", "no-tosa-graph"],
)
def test_a_program_without_a_float_model_or_a_graph_is_one_line(tmp_path, capsys, keep,
                                                                 message):  # fmt: skip
    program = _copy_demo(tmp_path, keep=keep)
    with pytest.raises(LayersError, match=message):
        program_layers(program)
    assert main(["compare", "--layers", "--pte", str(program)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and message in captured.err
    assert "Traceback" not in captured.err


def test_a_float_model_that_is_not_one_is_one_line_without_a_traceback(tmp_path):
    import subprocess
    import sys

    program = _copy_demo(tmp_path, keep=(".json", ".tosa", ".pt2"))
    (tmp_path / "vela" / "etu_float_model.pt2").write_bytes(b"not a zip archive")
    done = subprocess.run([sys.executable, "-m", "etu.tui.cli", "compare", "--layers", "--pte",
                           str(program)], capture_output=True, text=True, timeout=300,
                          cwd=ROOT)  # fmt: skip
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    (line,) = [text for text in done.stderr.splitlines() if text.startswith("etu: ")]
    assert "etu_float_model.pt2" in line


def test_the_cpu_twin_is_not_taken_for_the_delegated_compile(capsys):
    """demo_cnn_cpu.pte sits beside the delegated demo's compile record: that record's float
    model is not proven to be the twin's, so no layers (one line), rather than a guess."""
    twin = DEMO.with_name("demo_cnn_cpu.pte")
    with pytest.raises(LayersError, match="another program's compile"):
        program_layers(twin)
    assert main(["compare", "--layers", "--pte", str(twin)]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_compare_layers_on_random_inputs_drawn_as_a_run_draws_them(demo_layers, capsys):
    """--inputs random:SEED with --layers --pte: the layers on the seeded draw (the one
    ``etu run --inputs random:SEED`` bundles), named so; a session's inputs are its run's."""
    code = main(["compare", "--layers", "--pte", str(DEMO), "--inputs", "random:7", "--json"])
    assert code == 0
    record = json.loads(capsys.readouterr().out)
    assert record["layers_summary"]["inputs"].startswith("random:7 (range [0, ")
    names = [layer["name"] for layer in record["layers"]]
    assert names == [layer["name"] for layer in demo_layers["layers"]]
    assert [layer["sqnr_db"] for layer in record["layers"]] != [
        layer["sqnr_db"] for layer in demo_layers["layers"]
    ]  # not the all-ones figures
    assert main(["compare", "--layers", "--pte", str(DEMO), "--inputs", "random:x"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert "the seed must be a whole number" in line
    assert main(["compare", "somesession", "--inputs", "random:7"]) == 2
    assert "a session is compared on the inputs its run read" in capsys.readouterr().err


def test_a_session_or_a_program_is_needed(capsys):
    assert main(["compare", "--layers"]) == 2
    assert "--layers --pte PROGRAM.pte" in capsys.readouterr().err


def _layer(name: str, sqnr: float | None) -> Layer:
    return Layer(name=name, op="CONV2D", kind="conv", module=name, float_node=name, unit="NPU",
                 delegate=0, shape=[1], dtype="int8", zero_point=0, scale=1.0,
                 scale_source="fitted", sqnr_db=sqnr, cosine=1.0, max_abs_error=0.0)  # fmt: skip


def test_the_markers_first_below_threshold_largest_drop_weakest():
    layers = [_layer("a", 40.0), _layer("b", 35.0), _layer("c", 18.0), _layer("d", None),
              _layer("e", 15.0), _layer("f", 30.0), _layer("g", 12.0)]  # fmt: skip
    record = layers_record(Path("p.pte"), layers, 20.0, "all ones", Path("m.pt2"))
    summary = record["layers_summary"]
    assert summary["first_below_threshold"] == "c"
    assert summary["largest_drop"] == {"name": "g", "drop_db": 18.0}
    assert summary["weakest"] == "g"
    flags = {row["name"]: row for row in record["layers"]}
    assert flags["c"]["first_below_threshold"] and not flags["e"]["first_below_threshold"]
    assert not flags["d"]["below_threshold"]  # exact (no error): not below anything


def test_layer_figures_on_a_known_grid_and_fitted():
    import numpy

    floats = numpy.linspace(-1.0, 1.0, 101)
    integers = numpy.round(floats / 0.01).astype(numpy.int8) + 3  # zero point 3
    exact = layer_figures(integers, 3, floats, 0.01)
    assert exact["sqnr_db"] is None or exact["sqnr_db"] > 100  # on the grid: no error
    noisy = floats + 0.004 * numpy.sin(numpy.arange(101))
    fitted = layer_figures(integers, 3, noisy)
    assert fitted["scale"] == pytest.approx(0.01, rel=0.01)
    expected = 10 * math.log10((noisy @ noisy) / ((noisy - (integers - 3) * fitted["scale"]) ** 2
                                                  ).sum())  # fmt: skip
    assert fitted["sqnr_db"] == pytest.approx(expected)
    unknown = layer_figures(integers, None, floats)  # zero point fitted too
    assert unknown["zero_point"] == 3


@pytest.mark.aot
def test_a_session_compared_with_layers_keeps_its_outputs_and_adds_the_layers(tmp_path, capsys):
    """With a session, --layers adds layers[] to etu compare's record (the program is the
    session's), its outputs compared as before."""
    from tests.history_workspace import make_workspace, record_run

    session = record_run(make_workspace(tmp_path / "ws"))
    code = main(["compare", str(session), "--layers", "--json"])
    record = json.loads(capsys.readouterr().out)
    assert code == (0 if record["passed"] else 1)
    assert record["outputs"] and record["outputs"][0]["deployment"]["count"] == 10
    assert [layer["module"] for layer in record["layers"]][-1] == "classifier"
    assert record["layers_summary"]["weakest"] in {layer["name"] for layer in record["layers"]}
    main(["compare", str(session), "--layers"])
    text = capsys.readouterr().out
    assert "output 0 deployment" in text and "weakest layer: " in text
    assert record["layers_summary"]["inputs"] == "all ones"
    # a run on saved inputs: its layers are compared on those, as its outputs are
    import numpy

    saved = tmp_path / "inputs.npz"
    numpy.savez(saved, numpy.random.default_rng(3).random((1, 3, 32, 32), dtype="float32"))
    meta_path = session / "meta.json"
    meta = json.loads(meta_path.read_text())
    meta["inputs"] = {"kind": "file", "source": "inputs.npz", "file": str(saved)}
    meta_path.write_text(json.dumps(meta))
    main(["compare", str(session), "--layers", "--json"])
    record = json.loads(capsys.readouterr().out)
    assert record["inputs"]["kind"] == "file"
    assert record["layers_summary"]["inputs"] == f"from {saved}"
    # the console's Layers view asks the same of the session (its program, its inputs)
    from etu.runner.layers import session_layers

    viewed = session_layers(None, session)
    assert viewed["layers_summary"]["inputs"] == f"from {saved}"
    assert [layer["sqnr_db"] for layer in viewed["layers"]] == [
        layer["sqnr_db"] for layer in record["layers"]
    ]
    meta["inputs"] = {"kind": "file", "source": "gone.npz", "file": str(tmp_path / "gone.npz")}
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(LayersError, match=r"gone\.npz.* no longer there") as gone:
        session_layers(None, session)
    assert "\n" not in str(gone.value)
