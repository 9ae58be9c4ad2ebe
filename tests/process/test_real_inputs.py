"""Real inputs, not only ones (issue 22 §3): ``--inputs FILE.npy|FILE.npz|random:SEED`` on
``etu firmware build`` and ``etu run --board``, bundled into the runner (BundleIO) with the
host reference's outputs as the expected ones; the session and ``etu compare`` say which
inputs were used. The end-to-end test builds a runner (slow, cached like the other
real-runner tests'); the rest runs on the host."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.real_runner import etu, runtime_environment

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "etu_tui" / "demo"


def demo_copy(folder: Path, *, vela: bool = True) -> Path:
    """The shipped demo (delegated), with its Vela folder and compile record unless not."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(DEMO / "demo_cnn.pte", folder / "demo_cnn.pte")
    if vela:
        shutil.copytree(DEMO / "vela", folder / "vela")
    return folder / "demo_cnn.pte"


# ---------------------------------------------------------------------------- the option


@pytest.mark.parametrize(
    ("text", "problem"),
    [("random:x", "whole number"), ("random:-1", "whole number"), ("inputs.txt", "FILE.npy"),
     ("missing.npz", "no such inputs file")],
)  # fmt: skip
def test_a_bad_inputs_option_is_one_line(text: str, problem: str) -> None:
    from etu.runner.bundleio import BundleError, parse_inputs_option

    with pytest.raises(BundleError, match=problem) as caught:
        parse_inputs_option(text)
    assert "\n" not in str(caught.value)


def test_an_inputs_path_that_is_not_a_regular_file_is_one_line(tmp_path) -> None:
    import os

    from etu.runner.bundleio import BundleError, parse_inputs_option

    fifo = tmp_path / "inputs.npz"
    os.mkfifo(fifo)  # opening it to read would wait for a writer forever
    with pytest.raises(BundleError, match="not a regular file"):
        parse_inputs_option(str(fifo))


def test_random_inputs_of_a_program_compiled_elsewhere_use_its_quantisation_range(tmp_path):
    from etu.runner.bundleio import choose_inputs

    pte = demo_copy(tmp_path, vela=False)  # no compile record: the quantize kernel's range
    tensors, record = choose_inputs(pte, "random:7")
    (span,) = record["range"]
    assert record["kind"] == "random" and record["source"] == "random:7"
    assert "quantisation range" in span["basis"] and "no calibration range" in span["basis"]
    # the demo quantizes its input to int8 with zero point -128, scale ~1/255: [0, ~1]
    assert span["min"] == 0.0 and 0.99 < span["max"] <= 1.0
    (tensor,) = tensors
    assert tuple(tensor.shape) == (1, 3, 32, 32)
    assert span["min"] <= float(tensor.min()) and float(tensor.max()) <= span["max"]
    assert float(tensor.max()) - float(tensor.min()) > 0.9  # not a constant image
    again, _ = choose_inputs(pte, "random:7")
    other, _ = choose_inputs(pte, "random:8")
    assert again[0].equal(tensor) and not other[0].equal(tensor)


def test_random_inputs_use_the_calibration_range_the_compile_recorded(tmp_path):
    from etu.runner.bundleio import choose_inputs

    pte = demo_copy(tmp_path)
    record_path = tmp_path / "vela" / "etu_compile.json"
    record = json.loads(record_path.read_text())
    record["calibration"] = {"samples": 4, "inputs": [{"index": 0, "min": -2.5, "max": 3.0}]}
    record_path.write_text(json.dumps(record))
    (tensor,), chosen = choose_inputs(pte, "random:3")
    (span,) = chosen["range"]
    assert (span["min"], span["max"]) == (-2.5, 3.0) and "calibration" in span["basis"]
    assert -2.5 <= float(tensor.min()) < -2.0 and 2.5 < float(tensor.max()) <= 3.0
    # another program's compile record is not this program's calibration
    record["delegates"][0]["payload_sha256"] = "0" * 64
    record_path.write_text(json.dumps(record))
    _, chosen = choose_inputs(pte, "random:3")
    assert "quantisation range" in chosen["range"][0]["basis"]


def test_the_calibration_range_is_the_min_and_max_over_every_sample() -> None:
    import torch

    from etu.runner.bundleio import calibration_ranges

    samples = [(torch.tensor([0.5, 2.0]), torch.tensor([1.0])),
               (torch.tensor([-1.0, 0.0]), torch.tensor([4.0]))]  # fmt: skip
    assert calibration_ranges(samples) == [
        {"index": 0, "min": -1.0, "max": 2.0},
        {"index": 1, "min": 1.0, "max": 4.0},
    ]


def test_the_compile_records_its_calibration_range(tmp_path):
    import torch

    from etu.runner.aot import LoweringSpec, lower_to_pte
    from etu.runner.bundleio import choose_inputs
    from etu.runner.example_models import EXAMPLES

    factory, shapes = EXAMPLES["add"]
    torch.manual_seed(0)
    samples = [(torch.full(shapes[0], -3.0),), (torch.linspace(-1, 5, 8).reshape(shapes[0]),)]
    lower_to_pte(factory(), samples[1], LoweringSpec(), tmp_path / "add.pte",
                 vela_dir=tmp_path / "vela", calibration=samples)  # fmt: skip
    record = json.loads((tmp_path / "vela" / "etu_compile.json").read_text())
    assert record["calibration"] == {
        "samples": 2,
        "inputs": [{"index": 0, "min": -3.0, "max": 5.0}],
    }
    _, chosen = choose_inputs(tmp_path / "add.pte", "random:1")
    assert chosen["range"][0]["min"] == -3.0 and chosen["range"][0]["max"] == 5.0


def test_a_wrong_shape_npz_is_one_line_naming_the_file_and_the_input(tmp_path):
    import numpy

    pte = demo_copy(tmp_path)
    bad = tmp_path / "bad.npz"
    numpy.savez(bad, image=numpy.zeros((1, 3, 16, 16), dtype="float32"))
    result = etu(["firmware", "build", pte, "--board", "qemu-an547", "--inputs", bad],
                 runtime_environment(), timeout=300)  # fmt: skip
    assert result.returncode == 2, result.stderr[-2000:]
    lines = [line for line in result.stderr.splitlines()
             if line.startswith("etu:") and not line.startswith("etu: firmware:")]  # fmt: skip
    assert len(lines) == 1 and "Traceback" not in result.stderr
    assert str(bad) in lines[0] and "input 0" in lines[0] and "[1, 3, 32, 32]" in lines[0]
    assert not (tmp_path / "demo_cnn.qemu-an547" / "arm_executor_runner.elf").exists()


# ---------------------------------------------------------------------- what compare uses


def test_compare_names_the_inputs_a_session_recorded_or_the_all_ones_fallback(tmp_path):
    from etu.runner.compare import (
        ONES_INPUTS,
        CompareError,
        inputs_file,
        inputs_text,
        session_inputs,
    )

    assert session_inputs({}) == ONES_INPUTS
    assert inputs_text(session_inputs({})) == "all ones (fallback)"
    saved = tmp_path / "inputs.npz"
    saved.write_bytes(b"")
    recorded = {
        "kind": "random",
        "source": "random:7",
        "seed": 7,
        "file": str(saved),
        "range": [{"index": 0, "min": 0.0, "max": 1.0, "basis": "the calibration"}],
    }
    assert session_inputs({"inputs": recorded}) == recorded
    assert inputs_text(recorded) == "random:7 (range [0, 1]: the calibration)"
    assert inputs_file(recorded) == saved
    saved.unlink()
    with pytest.raises(CompareError, match="no longer there"):
        inputs_file(recorded)
    # a BundleIO firmware built before etu recorded its inputs: not all ones, not known
    firmware = tmp_path / "fw"
    firmware.mkdir()
    (firmware / "etu_firmware.json").write_text(json.dumps({"options": {"bundleio": True}}))
    meta = {"elf": str(firmware / "arm_executor_runner.elf")}
    assert session_inputs(meta)["kind"] == "bundle"


# ------------------------------------------------------------------- end to end (slow)


@pytest.mark.runtime_build
@pytest.mark.skipif(shutil.which("qemu-system-arm") is None, reason="no qemu-system-arm")
@pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None, reason="no cross gcc")
def test_the_demo_runs_on_random_inputs_and_compare_says_so(tmp_path):
    env = runtime_environment()
    pte = demo_copy(tmp_path)
    run = etu(["run", "--board", "qemu-an547", pte, "--inputs", "random:7", "--sessions",
               tmp_path / "sessions", "--timelimit", "60", "--json"], env)  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    events = [json.loads(line) for line in run.stdout.splitlines() if line.strip()]
    session = Path(events[-1]["session"])
    (bundle,) = [e for e in events if e.get("type") == "BundleIOResult"]
    assert bundle["passed"] is True  # the target checked the host reference's outputs
    # the session records the inputs; the bytes are saved beside the firmware
    meta = json.loads((session / "meta.json").read_text())
    inputs = meta["inputs"]
    assert inputs["kind"] == "random" and inputs["source"] == "random:7"
    saved = Path(inputs["file"])
    assert saved.parent == tmp_path / "demo_cnn.qemu-an547" and saved.is_file()
    # the target's printed outputs are the reference's on the same bytes (not on ones)
    (output,) = [e for e in events if e.get("type") == "OutputTensor"]
    reference = etu(["reference", pte, "--inputs", saved, "--json"], env, timeout=300)
    assert reference.returncode == 0, reference.stderr[-2000:]
    expected = json.loads(reference.stdout)["outputs"][0]["values"]
    assert output["values"] == pytest.approx(expected, abs=1e-6)  # six printed decimals
    ones = json.loads(etu(["reference", pte, "--json"], env, timeout=300).stdout)
    assert ones["outputs"][0]["values"] != pytest.approx(expected, abs=1e-3)
    compared = etu(["compare", session, "--json"], env, timeout=300)
    assert compared.returncode == 0, compared.stderr[-2000:]
    record = json.loads(compared.stdout)
    assert record["inputs"]["kind"] == "random" and record["inputs"]["source"] == "random:7"
    assert record["passed"] and record["outputs"][0]["verdict"].startswith("deployment exact")
    assert str(saved) in record["reference"]
    text = etu(["compare", session], env, timeout=300).stdout
    assert "inputs: random:7 (range [0, " in text and "deployment exact" in text


def test_the_run_tabs_outputs_pane_names_the_inputs_compared_on() -> None:
    from etu.tui.widgets.run_panes import comparison_footer

    record = {"rtol": 1e-3, "atol": 1e-5, "missing_outputs": [],
              "inputs": {"kind": "random", "source": "random:7"}}  # fmt: skip
    assert "inputs random:7, rtol 0.001" in comparison_footer(record).plain
    older = {"rtol": 1e-3, "atol": 1e-5}  # a compare.json from before inputs were recorded
    assert "inputs all ones (fallback)" in comparison_footer(older).plain
    hostile = {**record, "inputs": {"kind": "file", "source": "x\x1b[2J.npz"}}
    assert "\x1b" not in comparison_footer(hostile).plain


def test_a_session_on_the_emulated_board_records_the_firmwares_inputs(tmp_path):
    from etu.runner.runtime_run import qemu_meta

    elf = tmp_path / "arm_executor_runner.elf"
    elf.write_bytes(b"\x7fELF" + bytes(60))
    assert "inputs" not in qemu_meta(elf)  # not built by etu: not known
    record = tmp_path / "etu_firmware.json"
    record.write_text(json.dumps({"options": {"bundleio": False}}))
    assert qemu_meta(elf)["inputs"] == {"kind": "ones", "source": "all ones (fallback)"}
    chosen = {"kind": "file", "source": "cat.npy", "file": str(tmp_path / "inputs.npz")}
    record.write_text(json.dumps({"options": {"bundleio": True, "inputs": chosen}}))
    assert qemu_meta(elf)["inputs"] == chosen


def test_an_integer_input_with_no_recorded_range_is_drawn_over_its_whole_dtype(tmp_path):
    from etu.runner.bundleio import input_ranges

    pte = demo_copy(tmp_path, vela=False)
    specs = [((1, 3, 32, 32), "Float"), ((1, 8), "Char"), ((1, 8), "Long")]
    quantized, int8, other = input_ranges(pte, specs)
    assert "quantisation range" in quantized["basis"]
    assert (int8["min"], int8["max"]) == (-128, 127) and "whole Char range" in int8["basis"]
    assert (other["min"], other["max"]) == (0.0, 1.0) and other["basis"].startswith("[0, 1)")


def test_a_firmware_is_rebuilt_only_when_its_request_changes(tmp_path):
    """etu run --board … --inputs and the Run tab ask runner.run_inputs the same thing: the
    firmware beside the program is reused while the program, the inputs (a file's bytes
    too) and the options are those it was built for."""
    import numpy

    from etu.runner.run_inputs import build_request, built_firmware

    pte = demo_copy(tmp_path, vela=False)
    folder = tmp_path / "demo_cnn.qemu-an547"
    folder.mkdir()
    elf = folder / "arm_executor_runner.elf"
    elf.write_bytes(b"\x7fELF")
    chosen = tmp_path / "cat.npy"
    numpy.save(chosen, numpy.zeros((1, 3, 32, 32), dtype="float32"))
    wanted = build_request(pte, str(chosen))
    assert wanted["inputs"] == str(chosen) and len(wanted["inputs_sha256"]) == 64
    assert built_firmware(folder, wanted) is None  # never built
    (folder / "etu_firmware.json").write_text(json.dumps({"elf": str(elf), "request": wanted}))
    assert built_firmware(folder, wanted) == elf
    assert built_firmware(folder, build_request(pte, "random:7")) is None
    assert built_firmware(folder, build_request(pte, None)) is None
    numpy.save(chosen, numpy.ones((1, 3, 32, 32), dtype="float32"))  # same name, new bytes
    assert built_firmware(folder, build_request(pte, str(chosen))) is None
    elf.unlink()
    assert built_firmware(folder, wanted) is None


@pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None, reason="no cross gcc")
def test_a_runner_built_with_inputs_is_judged_on_the_bundle_it_has_baked_in(tmp_path):
    """A runner built with inputs has the bundled program baked in (.bpte: the program and
    its inputs, larger than the .pte): the pre-flight (Run tab, etu run) judges what is
    baked in when it embeds the program's very bytes, and still names another program."""
    from etu.parsers.pte import open_program
    from etu.runner.bundleio import choose_inputs, make_bundled
    from etu.runner.firmware import build_stub_firmware
    from etu.runner.preflight import preflight
    from etu.runner.workspace import load_firmware

    pte = demo_copy(tmp_path / "demo")
    folder = tmp_path / "demo" / "demo_cnn.corstone-300"
    tensors, _ = choose_inputs(pte, "random:7")
    bundle = make_bundled(pte, folder / "program.bpte", tensors=tensors)
    elf = build_stub_firmware(bundle, folder, ops=["quantized_decomposed::quantize_per_tensor.out",
                              "quantized_decomposed::dequantize_per_tensor.out"]).elf  # fmt: skip
    record = {"elf": str(elf), "options": {"bundleio": True, "program": str(pte),
                                           "baked": str(bundle)}}  # fmt: skip
    (folder / "etu_firmware.json").write_text(json.dumps(record))

    def problems() -> list[str]:
        with open_program(pte) as program:
            firmware = load_firmware(elf, program, None, workspace=None)
            return preflight("ethos-u55-128", "ethos-u55-128", program, firmware, elf)

    assert bundle.stat().st_size > pte.stat().st_size
    assert problems() == []
    pte.write_bytes(pte.read_bytes() + bytes(4096))  # the program changed since the build
    assert any("a different program is baked in" in p for p in problems())
