"""The host reference (issue 22 §1): what a program should output, NPU delegates included.

Checked against the two oracles it stands on, run directly here: ExecuTorch's host runtime
for CPU-only programs (exactly equal, also with every kernel call run as a program of its
own, so the hand-over of planned memory between parts is tested), and the TOSA reference
model on the graph Vela was given for each Ethos-U delegate (bit for bit). Real programs:
the demo (its graph matched by Vela), a two-delegate program compiled by etu (matched by the
compile record, which pairs delegate 0 with ``output_tag1_…``: names are no guide), the
cached programs of tests/real_programs.py, one network of every NPU operator family on each
of the Ethos-U55-128, U65-256 and U85-256 (and two delegates on the U85) from
tests/reference_programs.py, and a stand-in FVP session of the demo.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from functools import partial
from pathlib import Path

import numpy
import pytest

from etu.parsers.pte import KernelCall, open_program
from etu.runner.reference import integer_comparison, program_reference
from etu.runner.tosa_graphs import TOSA_DTYPES
from tests.helpers import etu as run_etu
from tests.history_workspace import make_workspace, record_run

ROOT = Path(__file__).resolve().parent.parent.parent
DEMO = ROOT / "etu_tui" / "demo"
DEMO_GRAPH = DEMO / "vela" / "output_tag0_TOSA-1.0+INT+int16+int4+u55.tosa"
QUANTIZE = "quantized_decomposed::quantize_per_tensor.out"
DEQUANTIZE = "quantized_decomposed::dequantize_per_tensor.out"
NUMPY_DTYPES = dict(TOSA_DTYPES.values())  # TOSA's name → numpy's

pytestmark = pytest.mark.aot


@pytest.fixture
def fresh_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty etu cache: Vela's matches are proven again, not remembered."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("ETU_BUILD_CACHE", str(cache))
    return cache


@pytest.fixture(scope="module")
def two_delegates() -> Path:
    from tests.two_delegates import build

    return build() / "TwoDelegates.pte"


etu = partial(run_etu, cwd=ROOT)


def tosa_run(graph: Path, inputs: list[numpy.ndarray]) -> list[numpy.ndarray]:
    import tosa_reference_model

    outputs, status = tosa_reference_model.run(graph.read_bytes(), inputs)
    assert status == tosa_reference_model.GraphStatus.TOSA_VALID
    return outputs


def scalar_args(pte: Path, operator: str) -> list:
    """The scalar arguments of the first call of ``operator`` (its quantization parameters)."""
    with open_program(pte) as program:
        plan = program.plans[0]
        for call in plan.instructions:
            if isinstance(call, KernelCall) and (
                plan.operators[call.op_index].qualified_name == operator
            ):
                return [getattr(plan.values[i], "payload", None) for i in call.args]
    raise AssertionError(f"no {operator} call")


def test_a_delegated_programs_reference_is_the_tosa_reference_models_output(
    fresh_cache, monkeypatch, tmp_path: Path
) -> None:
    """The demo (one delegate doing all the work): the delegate's output is what the TOSA
    reference model gives on the saved graph for the quantized all-ones input, bit for bit,
    and the program's output is its dequantization. Its compile record is left out of this
    copy, so Vela proves the match."""
    demo = tmp_path / "demo"
    shutil.copytree(DEMO, demo, ignore=shutil.ignore_patterns(".etu", "etu_compile.json"))
    reference = program_reference(demo / "demo_cnn.pte").to_json()
    (delegate,) = reference["delegates"]
    assert delegate["matched_by"] == "vela" and Path(delegate["tosa"]).read_bytes() == (
        DEMO_GRAPH.read_bytes()
    )
    # The input the delegate gets: quantize_per_tensor(ones), computed here from its
    # parameters as the kernel defines it (round half to even, clamp).
    _x, scale, zero, low, high, *_ = scalar_args(DEMO / "demo_cnn.pte", QUANTIZE)
    q = numpy.clip(numpy.rint(numpy.float32(1.0) / numpy.float32(scale)) + zero, low, high)
    graph_input = numpy.full((1, 3, 32, 32), q, dtype=numpy.int8)
    assert delegate["inputs"][0]["values"] == graph_input.reshape(-1).tolist()
    (expected,) = tosa_run(DEMO_GRAPH, [graph_input])
    assert expected.dtype == numpy.int8 and expected.shape == (1, 10)
    assert delegate["outputs"][0]["values"] == expected.reshape(-1).tolist()
    # ...and dequantized on the CPU: (q - zero point) * scale, in float32.
    _q, scale, zero, *_ = scalar_args(DEMO / "demo_cnn.pte", DEQUANTIZE)
    dequantized = (expected.astype(numpy.int32) - zero).astype(numpy.float32) * numpy.float32(scale)
    (output,) = reference["outputs"]
    assert output["dtype"] == "Float" and output["shape"] == [1, 10]
    assert output["values"] == dequantized.reshape(-1).tolist()
    # The proof is remembered (by content hash): a second reference does not run Vela again.
    assert len(json.loads((fresh_cache / "tosa-matches.json").read_text())) == 1
    monkeypatch.setattr("etu.runner.tosa_graphs.vela_blocks", lambda *a: pytest.fail("Vela ran"))
    again = program_reference(demo / "demo_cnn.pte").to_json()
    assert again["delegates"][0]["matched_by"] == "vela" and again["outputs"] == [output]


@pytest.mark.parametrize("name", ["float_cpu", "int8_cpu"])
@pytest.mark.parametrize("split", [False, True], ids=["one part", "every call a part"])
def test_a_cpu_only_programs_reference_is_the_host_runtimes_output_exactly(
    real_program, name: str, split: bool
) -> None:
    import torch

    from etu.runner.compare import host_reference

    pte = real_program(name)
    reference = program_reference(pte, split_every_call=split)
    assert reference.flat_outputs() == host_reference(pte)
    # Not only on ones: a seeded random input, given the same to both.
    (shape,) = [tuple(t.shape) for t in reference.inputs]
    inputs = [torch.rand(shape, generator=torch.Generator().manual_seed(7)) * 4 - 2]
    again = program_reference(pte, inputs=inputs, split_every_call=split)
    assert again.flat_outputs() == host_reference(pte, inputs)
    assert again.flat_outputs() != reference.flat_outputs()
    if split:
        assert reference.segments == reference.kernel_calls > 1


def quantized(values: numpy.ndarray, pte: Path) -> numpy.ndarray:
    """``quantize_per_tensor`` of ``values`` with the program's first quantize call's
    parameters, as ExecuTorch's kernel computes it (times 1/scale in float32, rounded half to
    even, clamped)."""
    _x, scale, zero, low, high, *_ = scalar_args(pte, QUANTIZE)
    inverse = numpy.float32(1.0) / numpy.float32(scale)
    q = numpy.rint((values.astype(numpy.float32) * inverse).astype(numpy.float32)) + zero
    return numpy.clip(q, low, high).astype(numpy.int8)


def assert_each_delegate_is_its_graphs_output(reference: dict) -> None:
    """Every delegate's outputs are what the TOSA reference model gives on its saved graph
    for the inputs the program handed it, bit for bit."""
    for delegate in reference["delegates"]:
        assert delegate["matched_by"] == "compile record"
        inputs = [
            numpy.array(i["values"], NUMPY_DTYPES[i["tosa"]["dtype"]]).reshape(i["tosa"]["shape"])
            for i in delegate["inputs"]
        ]
        expected = tosa_run(Path(delegate["tosa"]), inputs)
        assert [o["values"] for o in delegate["outputs"]] == [
            e.reshape(-1).tolist() for e in expected
        ]


def seeded_input(seed: int = 3):
    """A seeded input within the calibration range (uniform in [0, 1)): ones hide things."""
    import torch

    return torch.rand((1, 3, 16, 16), generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("target", ["ethos-u55-128", "ethos-u65-256", "ethos-u85-256"])
def test_every_operator_familys_reference_is_the_tosa_reference_models_output(target) -> None:
    """A fully delegated network of every NPU operator family (strided padded convolution,
    depthwise, max and average pools, broadcast add and mul, tanh and sigmoid tables, a
    concatenation, a fully connected layer, a softmax) on each target: the program's input
    quantized as the kernel does it, the graph's output bit for bit, and its dequantization."""
    from tests.reference_programs import build

    pte = build(f"families-{target}")
    given = seeded_input()
    reference = program_reference(pte, inputs=[given]).to_json()
    (delegate,) = reference["delegates"]
    assert reference["kernel_calls"] == 2 and reference["aten_calls"] == {}  # (de)quantize
    with open_program(pte) as program:
        assert program.plans[0].delegates[0].id == "EthosUBackend"
    graph_input = quantized(given.numpy(), pte)
    assert delegate["inputs"][0]["values"] == graph_input.reshape(-1).tolist()
    assert len(set(delegate["inputs"][0]["values"])) > 100  # not a constant image
    (expected,) = tosa_run(Path(delegate["tosa"]), [graph_input])
    assert delegate["outputs"][0]["values"] == expected.reshape(-1).tolist()
    _q, scale, zero, *_ = scalar_args(pte, DEQUANTIZE)
    dequantized = (expected.astype(numpy.int32) - zero).astype(numpy.float32) * numpy.float32(scale)
    (output,) = reference["outputs"]
    assert output["shape"] == [1, 10] and output["values"] == dequantized.reshape(-1).tolist()
    assert_each_delegate_is_its_graphs_output(reference)
    # The float model on the same input: within the quantisation error one expects.
    a, b = numpy.array(output["values"]), numpy.array(reference["float_outputs"][0]["values"])
    assert a @ b / numpy.linalg.norm(a) / numpy.linalg.norm(b) > 0.98


def test_two_delegates_with_a_cpu_op_between_on_the_u85() -> None:
    """conv → top-k on the CPU → conv, for the Ethos-U85: both delegates run, each is its
    graph's output bit for bit, the top-k is a host-runtime kernel between them."""
    from tests.reference_programs import build

    reference = program_reference(build("cpu_between-ethos-u85-256"), inputs=[seeded_input()])
    record = reference.to_json()
    assert [d["calls"] for d in record["delegates"]] == [1, 1]
    assert_each_delegate_is_its_graphs_output(record)
    assert record["aten_calls"] == {}
    a = numpy.array(record["outputs"][0]["values"])
    b = numpy.array(record["float_outputs"][0]["values"])
    assert a @ b / numpy.linalg.norm(a) / numpy.linalg.norm(b) > 0.98


def test_delegates_are_matched_by_the_compile_record_not_by_file_name(two_delegates) -> None:
    record = json.loads((two_delegates.parent / "vela" / "etu_compile.json").read_text())
    names = [d["tosa"] for d in record["delegates"]]
    assert len(names) == 2 and names[0] != names[1]
    reference = program_reference(two_delegates).to_json()
    assert [d["matched_by"] for d in reference["delegates"]] == ["compile record"] * 2
    assert [Path(d["tosa"]).name for d in reference["delegates"]] == names
    for delegate in reference["delegates"]:  # each one is its graph's output, bit for bit
        graph = Path(delegate["tosa"])
        inputs = [
            numpy.array(i["values"], dtype=numpy.int8).reshape(i["tosa"]["shape"])
            for i in delegate["inputs"]
        ]
        (expected,) = tosa_run(graph, inputs)
        assert delegate["outputs"][0]["values"] == expected.reshape(-1).tolist()
    # The sort between the delegates has no host-runtime kernel: ATen ran it, and says so.
    assert reference["aten_calls"] == {"aten::sort.values": 1}
    assert any("aten::sort.values" in note for note in reference["notes"])
    # The float model's outputs, kept by the compile: the quantized program is close to them.
    (floats,) = reference["float_outputs"]
    (output,) = reference["outputs"]
    a, b = numpy.array(output["values"]), numpy.array(floats["values"])
    assert floats["shape"] == output["shape"]
    assert a @ b / numpy.linalg.norm(a) / numpy.linalg.norm(b) > 0.99


def test_without_a_record_vela_proves_the_match(two_delegates, tmp_path, fresh_cache) -> None:
    """The same program and graphs, without the compile record: Vela compiles each graph
    with the delegate's flags and finds the one that is its command stream."""
    shutil.copy(two_delegates, tmp_path / "p.pte")
    graphs = tmp_path / "graphs"
    graphs.mkdir()
    for graph in (two_delegates.parent / "vela").glob("output_tag*.tosa"):
        shutil.copy(graph, graphs / graph.name)
    by_record = program_reference(two_delegates).to_json()
    by_vela = program_reference(tmp_path / "p.pte", tosa=graphs).to_json()
    assert [d["matched_by"] for d in by_vela["delegates"]] == ["vela", "vela"]
    assert [Path(d["tosa"]).name for d in by_vela["delegates"]] == [
        Path(d["tosa"]).name for d in by_record["delegates"]
    ]
    assert by_vela["outputs"] == by_record["outputs"]
    assert by_vela["float_outputs"] is None  # not this folder's compile: not known


def test_etu_reference_on_the_demo(tmp_path: Path) -> None:
    result = etu("reference", str(DEMO / "demo_cnn.pte"), "--json",
                 env={"ETU_BUILD_CACHE": str(tmp_path)})  # fmt: skip
    assert result.returncode == 0, result.stderr
    (line,) = result.stdout.splitlines()  # nothing Vela or the reference model prints
    record = json.loads(line)
    (output,) = record["outputs"]
    assert output["dtype"] == "Float" and output["shape"] == [1, 10]
    assert len(output["values"]) == 10 and len(set(output["values"])) > 1
    assert record["inputs"][0]["source"] == "all ones"
    # The demo's compile kept its float model (an ExecuTorch program of the float export):
    # it runs on the same inputs, close to the quantised outputs.
    (floats,) = record["float_outputs"]
    assert "float model before quantization" in record["float_outputs_note"]
    assert floats["shape"] == output["shape"]
    a, b = numpy.array(output["values"]), numpy.array(floats["values"])
    assert 10 * numpy.log10((b**2).sum() / ((a - b) ** 2).sum()) > 20  # SNR in dB
    assert "TOSA reference model" in record["reference"]
    text = etu("reference", str(DEMO / "demo_cnn.pte"), env={"ETU_BUILD_CACHE": str(tmp_path)})
    assert text.returncode == 0, text.stderr
    assert "output 0: Float [1, 10]" in text.stdout
    assert "matched by compile record" in text.stdout  # the demo's compile recorded it
    assert "float model: the float model before quantization" in text.stdout


def test_inputs_from_a_file(tmp_path: Path) -> None:
    numpy.save(tmp_path / "ones.npy", numpy.ones((1, 3, 32, 32)))  # float64: cast
    numpy.savez(tmp_path / "half.npz", numpy.full((1, 3, 32, 32), 0.5, dtype=numpy.float32))
    values = [
        program_reference(DEMO / "demo_cnn.pte", inputs=inputs).flat_outputs()
        for inputs in (None, tmp_path / "ones.npy", tmp_path / "half.npz")
    ]
    assert values[0] == values[1] != values[2]
    numpy.save(tmp_path / "wrong.npy", numpy.ones((1, 3, 16, 16)))
    wrong = etu("reference", str(DEMO / "demo_cnn.pte"), "--inputs", str(tmp_path / "wrong.npy"))
    assert wrong.returncode == 2 and wrong.stdout == ""
    assert wrong.stderr.splitlines()[-1].startswith("etu: ")  # one line, whatever C++ logged
    assert "shape [1, 3, 16, 16]" in wrong.stderr.splitlines()[-1]


def test_random_inputs_are_the_ones_a_run_on_the_same_seed_bundles(tmp_path: Path) -> None:
    """``etu reference --inputs random:SEED`` draws as ``etu run``/``etu firmware build
    --inputs random:SEED`` do (runner.bundleio, the same range), so the reference and the
    run see the same bytes; a bad seed is one line, as there."""
    from etu.runner.bundleio import choose_inputs

    result = etu("reference", str(DEMO / "demo_cnn.pte"), "--inputs", "random:7", "--json",
                 env={"ETU_BUILD_CACHE": str(tmp_path)})  # fmt: skip
    assert result.returncode == 0, result.stderr
    record = json.loads(result.stdout)
    assert record["inputs"][0]["source"].startswith("random:7 (range [0, ")
    bundled, _ = choose_inputs(DEMO / "demo_cnn.pte", "random:7")  # what a run bundles
    expected = program_reference(DEMO / "demo_cnn.pte", inputs=bundled).flat_outputs()
    assert [o["values"] for o in record["outputs"]] == expected
    ones = program_reference(DEMO / "demo_cnn.pte").flat_outputs()
    assert expected != ones
    bad = etu("reference", str(DEMO / "demo_cnn.pte"), "--inputs", "random:x")
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.splitlines()[-1] == (
        f"etu: {DEMO / 'demo_cnn.pte'}: --inputs random:x: the seed must be a whole number "
        "(random:7)"
    )


def test_a_program_without_tosa_graphs_is_one_line(real_program, tmp_path: Path) -> None:
    pte = real_program("u55")  # lowered without keeping Vela's files
    result = etu("reference", str(pte))
    assert result.returncode == 2 and result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert "no TOSA graph" in line and "--tosa" in line
    as_json = etu("reference", str(pte), "--json")
    assert as_json.returncode == 2
    assert "no TOSA graph" in json.loads(as_json.stdout)["error"]
    # A folder of graphs that are not this program's: none is proven, none is used.
    (tmp_path / "other").mkdir()
    shutil.copy(DEMO_GRAPH, tmp_path / "other" / DEMO_GRAPH.name)
    other = etu("reference", str(pte), "--tosa", str(tmp_path / "other"),
                env={"ETU_BUILD_CACHE": str(tmp_path / "cache")})  # fmt: skip
    assert other.returncode == 2 and "is the graph it was compiled from" in other.stderr


def test_compare_on_a_standin_session_of_the_demo(tmp_path: Path) -> None:
    """The demo's firmware ships the host reference's outputs, which the stand-in prints:
    the demo's numbers agree (deployment exact), and every view still says simulated."""
    workspace = make_workspace(tmp_path / "ws")
    session = record_run(workspace)
    result = etu("compare", str(session), "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "not registered" not in result.stderr
    record = json.loads(result.stdout)
    assert record["simulated"] is True and "proves nothing" in record["simulated_note"]
    assert "TOSA reference model" in record["reference"]
    (output,) = record["outputs"]
    assert output["count"] == 10 and output["differing"] is None  # Float: the float metrics
    # The three-way split: deployment (reference → target) in the output's int8 integers,
    # quantisation (float model → reference) from the float model the demo's compile kept.
    deployment, quantization = output["deployment"], output["quantization"]
    assert deployment["integer_dtype"] == "int8" and deployment["differing"] == 0
    assert quantization is not None and quantization["snr_db"] > 20
    assert output["verdict"].startswith("deployment exact (target simulated) · quantisation SNR")
    grid = output["io_quantization"]
    assert grid["integer_dtype"] == "int8" and grid["source"].startswith("dequantize_per_tensor")
    assert len(output["target_integers"]) == 10
    assert all(-128 <= q <= 127 for q in output["target_integers"])
    assert json.loads((session / "compare.json").read_text())["outputs"][0]["verdict"] == (
        output["verdict"])  # fmt: skip
    text = etu("compare", str(session), cwd=tmp_path)
    assert text.stdout.startswith("SIMULATED: the etu stand-in FVP printed these outputs")
    assert text.stdout.splitlines()[1].startswith("output 0: PASS · deployment exact (target")
    assert "output 0 quantisation (float model → reference): n=10  exact int8: " in text.stdout
    assert "  output 0: float32 ↔ int8, scale " in text.stdout  # the output's integer grid
    diff = etu("diff", session.name, session.name, "--json", cwd=workspace)
    assert json.loads(diff.stdout)["simulated"] == ["A", "B"]
    # etu diff carries both losses, from the comparison etu compare saved in the session
    (losses,) = json.loads(diff.stdout)["losses"]
    assert losses["a"]["verdict"] == losses["b"]["verdict"] == output["verdict"]
    assert losses["a"]["quantization"]["snr_db"] == quantization["snr_db"]
    diff_text = etu("diff", session.name, session.name, cwd=workspace)
    assert diff_text.stdout.startswith("SIMULATED: A and B ran on the etu stand-in FVP")
    assert f"  A output 0: {output['verdict']}" in diff_text.stdout


def test_the_standin_prints_the_shipped_reference_only_for_its_program(tmp_path) -> None:
    """etu_reference.json beside the demo firmware is the host reference of the shipped
    demo program on all ones (written by etu_tui/demo/build_firmware.py: rerun it when the
    demo changes); the stand-in prints it only for that program's bytes, else made-up
    values (a session of another program, or without the file, differs from its reference)."""
    from etu.fvp.standin import STANDIN_REFERENCE, shipped_reference
    from etu.parsers.pte import open_program

    firmware = DEMO / "firmware"
    shipped = json.loads((firmware / STANDIN_REFERENCE).read_text())
    program = (DEMO / "demo_cnn.pte").read_bytes()
    assert shipped["program_sha256"] == hashlib.sha256(program).hexdigest()
    assert shipped["outputs"] == program_reference(DEMO / "demo_cnn.pte").flat_outputs()
    with open_program(DEMO / "demo_cnn.pte") as opened:
        plan = opened.plans[0]
        outputs = [plan.values[i] for i in plan.outputs]
    elf = firmware / "arm_executor_runner.elf"
    assert shipped_reference(elf, program, outputs) == shipped["outputs"]
    assert shipped_reference(elf, program + b"\0", outputs) is None  # another program
    assert shipped_reference(tmp_path / "fw.elf", program, outputs) is None  # none shipped
    (tmp_path / STANDIN_REFERENCE).write_text(json.dumps({**shipped, "outputs": [[1.0]]}))
    assert shipped_reference(tmp_path / "fw.elf", program, outputs) is None  # does not fit
    # Without the file, the stand-in's values are made up: the deployment side differs.
    workspace = make_workspace(tmp_path / "ws")
    (workspace / "firmware" / STANDIN_REFERENCE).unlink()
    result = etu("compare", str(record_run(workspace)), "--json", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    (output,) = json.loads(result.stdout)["outputs"]
    assert output["deployment"]["differing"] > 0


def test_integer_outputs_compare_exactly(tmp_path: Path, monkeypatch) -> None:
    """An integer output passes only when every element is the reference's; the record
    counts the elements that differ and the largest difference in LSBs."""
    from etu.runner import reference
    from etu.runner.compare import HostReference, compare_session, session_outputs

    assert integer_comparison([1, 2, 3, -4], [1, 2, 5, -4]) == {"differing": 1, "max_lsb": 2}
    assert integer_comparison([7, 7], [7, 7]) == {"differing": 0, "max_lsb": 0}
    session = record_run(make_workspace(tmp_path / "ws"))
    (printed,) = [e["values"] for e in session_outputs(session)[0].values()]

    def fake(values, dtype):
        host = HostReference([values], "fake", [dtype])
        monkeypatch.setattr(
            reference, "compare_reference", lambda program, tosa=None, inputs=None: host
        )

    fake([float(v) for v in printed], "Char")
    assert compare_session(session, pte=DEMO / "demo_cnn.pte")["outputs"][0]["differing"] == 0
    off = list(printed)
    off[3] += 3
    fake(off, "Char")
    (row,) = compare_session(session, pte=DEMO / "demo_cnn.pte")["outputs"]
    assert not row["passed"] and row["differing"] == 1 and row["max_lsb"] == 3
    fake([v + 1e-7 for v in printed], "Float")  # within tolerance for a float output
    (row,) = compare_session(session, pte=DEMO / "demo_cnn.pte")["outputs"]
    assert row["passed"] and row["differing"] is None
