"""Every operator's kernel placed in the upstream source file that defines it, and a program
of macro-defined kernels built into the real runner, run on the emulated board and checked
against PyTorch.

The placement (runner/kernel_sources.py) reads upstream's YAML and build lists. These tests
check it another way: the placed file must define the kernel function, seen in its text or,
for the kernels upstream writes through a ``DEFINE_…`` macro, in what the C preprocessor
makes of it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from etu.runner.build_plan import RuntimeBuildError, kernel_plan
from etu.runner.kernel_sources import load_index, select_kernels
from tests.real_runner import build, etu, run_qemu

runtime_build = pytest.mark.runtime_build

# The 25 kernels upstream defines through macros (kernels/portable/cpu/op_<name>.cpp).
MACRO_KERNELS = frozenset({
    "acos", "acosh", "asin", "asinh", "atan", "atanh", "ceil", "cos", "cosh", "erf", "exp",
    "expm1", "floor", "log", "log10", "log1p", "log2", "reciprocal", "rsqrt", "sin", "sinh",
    "sqrt", "tan", "tanh", "trunc",
})  # fmt: skip


@pytest.fixture(scope="module")
def executorch_root(runtime_env) -> Path:
    from etu.runner.runtime_source import find_executorch

    saved = dict(os.environ)
    os.environ.update(runtime_env)
    try:
        return find_executorch(online=False).root
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _defines(root: Path, relative: str, function: str) -> bool:
    """``relative`` holds a definition of ``function`` taking a runtime context: in its text,
    or once the preprocessor has expanded upstream's macros."""
    definition = re.compile(
        rf"\b{re.escape(function)}\s*\([^;{{}}]*?RuntimeContext\s*&[^;{{}}]*?\)\s*\{{"
    )
    if definition.search((root / relative).read_text()):
        return True
    compiler = shutil.which("g++") or shutil.which("arm-none-eabi-g++")
    assert compiler, "no C++ compiler to expand the kernel's macros"
    expanded = subprocess.run(
        [compiler, "-std=c++17", "-E", "-P", f"-I{root.parent}",
         f"-I{root / 'runtime/core/portable_type/c10'}", "-DC10_USING_CUSTOM_GENERATED_MACROS",
         str(root / relative)],
        capture_output=True, text=True, check=True, timeout=120,
    ).stdout  # fmt: skip
    return bool(definition.search(expanded))


def test_every_portable_and_quantized_operator_is_placed_in_the_file_defining_it(
    executorch_root,
):
    import yaml

    index = load_index(executorch_root)
    listed = yaml.safe_load((executorch_root / "kernels/portable/functions.yaml").read_text())
    portable = [e for e in listed if "op" in e or "func" in e]
    assert sum("op" in e for e in portable) == 200  # the pinned commit's portable operators
    walked = [op for op, (library, _) in index.operators.items() if library != "cortex_m"]
    assert len(walked) >= len(portable) + 19  # and quantized.yaml's 19
    for op in walked:
        placed = index.place(op)
        assert placed is not None, f"{op}: not placed"
        _, function = index.operators[op]
        assert _defines(executorch_root, placed, function), f"{op}: {placed} lacks {function}"
    for name in MACRO_KERNELS:
        assert index.place(f"aten::{name}.out") == f"kernels/portable/cpu/op_{name}.cpp"


def test_a_macro_kernel_brings_the_pattern_helpers_and_an_unknown_operator_is_one_line(
    executorch_root,
):
    plan = kernel_plan(executorch_root, ["aten::tanh.out", "aten::add.out"])
    assert {"op_tanh.cpp", "op_add.cpp"} <= set(plan.portable_sources)
    assert any(source.startswith("pattern/") for source in plan.portable_sources)
    assert not plan.portable_whole and not plan.notes
    assert plan.libraries["portable"]["operators"]["aten::tanh.out"].endswith("op_tanh.cpp")

    quantized = kernel_plan(executorch_root, ["quantized_decomposed::dequantize_per_tensor.out"])
    assert quantized.libraries["quantized"]["operators"] == {
        "quantized_decomposed::dequantize_per_tensor.out": "kernels/quantized/cpu/op_dequantize.cpp"
    }

    with pytest.raises(RuntimeBuildError) as missing:
        kernel_plan(executorch_root, ["aten::tanh.out", "aten::no_such_op.out"])
    text = str(missing.value)
    assert "\n" not in text and text.startswith("aten::no_such_op.out:")
    assert "functions.yaml" in text and "--select-ops" in text


def test_an_operator_that_cannot_be_placed_builds_the_whole_library(executorch_root, tmp_path):
    """A tree whose build list names no file for a kernel: the whole library, said once."""
    tree = tmp_path / "executorch"
    for part in ("kernels/portable/functions.yaml", "kernels/portable/cpu/op_add.cpp"):
        (tree / part).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(executorch_root / part, tree / part)
    index = load_index(tree)
    selections, unknown = select_kernels(index, ["aten::add.out", "aten::tanh.out"])
    assert not unknown
    portable = selections["portable"]
    assert portable.whole and portable.unplaced == ["aten::tanh.out"]
    plan = kernel_plan(tree, ["aten::add.out", "aten::tanh.out"])
    assert plan.portable_whole and plan.portable_sources == []
    (note,) = plan.notes
    assert "whole portable kernel library" in note and "aten::tanh.out" in note


@runtime_build
def test_macro_kernels_build_run_on_the_emulated_board_and_match_pytorch(
    real_program, runtime_env, tmp_path
):
    import torch

    from etu.runner.example_models import EXAMPLES

    program = real_program("macro_cpu")
    firmware = build(program, tmp_path / "fw", runtime_env)
    needed = {"aten::tanh.out", "aten::exp.out", "aten::erf.out", "aten::rsqrt.out"}
    assert needed <= set(firmware["select_ops"])
    for name in ("tanh", "exp", "erf", "rsqrt"):
        assert f"op_{name}.cpp" in firmware["kernel_sources"]
    status, events, session = run_qemu(Path(firmware["elf"]), tmp_path / "s", runtime_env)
    assert status == 0, events[-1]
    (output,) = [e for e in events if e.get("type") == "OutputTensor"]

    factory, shapes = EXAMPLES["mlp_math"]
    torch.manual_seed(0)  # as tests/real_programs.py lowered it
    expected = factory()(torch.ones(shapes[0])).flatten().tolist()
    assert len(output["values"]) == len(expected) == 8
    for got, want in zip(output["values"], expected, strict=True):
        assert abs(got - want) <= 1e-4, (output["values"], expected)

    compared = etu(["compare", session, "--pte", program, "--json"], runtime_env)
    assert compared.returncode == 0, compared.stderr[-1500:]
    (host,) = json.loads(compared.stdout)["outputs"]
    assert host["passed"]
