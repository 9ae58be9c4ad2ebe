"""A program with integer IO (``LoweringSpec(int8_io=True)``: ExecuTorch's QuantizeInputs
and QuantizeOutputs), lowered by the real flow from the tests' CNN for the U55-128 and
cached like tests/npu_programs.py: ``program.pte`` and its ``vela/`` folder."""

from __future__ import annotations

from pathlib import Path

from etu.runner.aot import LoweringSpec
from tests.real_programs import ROOT, cache_lock, keyed_dir


def build() -> Path:
    """The int8-IO program (lowered once per cache key)."""
    from etu.runner.example_models import EXAMPLES
    from tests.npu_programs import lower_into

    folder = keyed_dir("int8_io-", Path(__file__), ROOT / "tests" / "npu_programs.py") / "cnn"
    with cache_lock("int8_io-cnn"):
        if not (folder / "program.pte").is_file():
            factory, shapes = EXAMPLES["cnn"]
            lower_into(folder, factory, shapes,
                       LoweringSpec(target="ethos-u55-128", int8_io=True))  # fmt: skip
    return folder / "program.pte"
