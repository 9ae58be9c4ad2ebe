"""A program with integer IO (`etu compile --int8-io`: ExecuTorch's QuantizeInputs and
QuantizeOutputs, lowered by the real flow): its scale and zero point are read from the
program's config methods, which ExecuTorch's own runtime executes here as the oracle; the
reference gives its integers and the float side compares in real units."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import etu

pytestmark = pytest.mark.aot
CONFIG = ("scale", "zp", "quant_min", "quant_max")


@pytest.fixture(scope="module")
def int8_program() -> Path:
    from tests.int8_programs import build

    return build()


def config_values(program: Path) -> dict[str, float | int]:
    """Each config method's value, as ExecuTorch's runtime executes it."""
    from executorch.runtime import Runtime

    loaded = Runtime.get().load_program(program)
    return {name: loaded.load_method(name).execute([])[0] for name in loaded.method_names
            if name != "forward"}  # fmt: skip


def test_the_integer_io_figures_are_the_programs_config_methods(int8_program: Path) -> None:
    done = etu("inspect", "--json", int8_program)
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert record["cpu_operators"] == []  # no quantize/dequantize left on the CPU
    values = config_values(int8_program)
    found = {(q["kind"], q["index"]): q for q in record["io_quantization"]}
    assert set(found) == {("input", 0), ("output", 0)}
    for (kind, index), q in found.items():
        assert q["dtype"] == q["integer_dtype"] == "int8"
        assert q["source"].startswith("the program's config methods")
        assert q["scale"] == values[f"{kind}{index}_scale"]
        assert q["zero_point"] == values[f"{kind}{index}_zp"]
        assert (q["quant_min"], q["quant_max"]) == (values[f"{kind}{index}_quant_min"],
                                                    values[f"{kind}{index}_quant_max"])  # fmt: skip
    text = etu("inspect", int8_program).stdout
    assert f"input 0: int8, scale {found['input', 0]['scale']:.4g}, zero point " in text
    # the ten one-constant plans are one line of the text (the JSON keeps each plan)
    assert "config methods (10, one constant each): input0_scale, input0_zp," in text
    assert "plan 'input0_scale'" not in text and len(record["plans"]) == 11


def test_the_reference_gives_integers_and_the_float_side_compares_in_real_units(
    int8_program: Path,
) -> None:
    from etu.runner.compare import quantization_comparison

    done = etu("reference", "--json", int8_program)
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    output = record["outputs"][0]
    assert output["dtype"] == "Char"
    assert all(float(v).is_integer() and -128 <= v <= 127 for v in output["values"])
    assert "integers dequantized" in record["float_outputs_note"]
    floats = record["float_outputs"][0]["values"]
    grid = next(q for q in json.loads(etu("inspect", "--json", int8_program).stdout)[
        "io_quantization"] if q["kind"] == "output")  # fmt: skip
    side = quantization_comparison(0, output["values"], floats, "Char", grid, rtol=1e-3,
                                   atol=1e-5)  # fmt: skip
    # real units: the reference's integers dequantized are near the float model's values
    assert side["cosine_similarity"] > 0.98 and side["snr_db"] > 15, side
    assert side["integer_dtype"] == "int8" and side["max_lsb"] <= 8, side
