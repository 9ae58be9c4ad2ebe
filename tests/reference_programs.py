"""The reference tests' networks (issue 22), lowered with Vela's files kept for each NPU
target the issue names: tests/data/models/npu_families.py (every operator family, fully
delegated) on each target, and cpu_between.py (two delegates around a CPU top-k) on the
Ethos-U85 (etu compile's two-delegate program covers the Ethos-U55). Cached like
tests/real_programs.py, in a folder of their own so adding one relowers nothing else."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from etu.runner.aot import LoweringSpec
from tests.npu_programs import lower_into
from tests.real_programs import ROOT, cache_lock, keyed_dir

MODELS = ROOT / "tests" / "data" / "models"
FAMILIES = MODELS / "npu_families.py"
CPU_BETWEEN = MODELS / "cpu_between.py"
SHAPES = [(1, 3, 16, 16)]
TARGETS = ("ethos-u55-128", "ethos-u65-256", "ethos-u85-256")
# name → (model file, class, target)
REFERENCE_PROGRAMS: dict[str, tuple[Path, str, str]] = {
    **{f"families-{target}": (FAMILIES, "NpuFamilies", target) for target in TARGETS},
    "cpu_between-ethos-u85-256": (CPU_BETWEEN, "CpuBetween", "ethos-u85-256"),
}


def build(name: str) -> Path:
    """``program.pte`` of program ``name``, with its ``vela/`` folder beside it, lowered once."""
    model, cls, target = REFERENCE_PROGRAMS[name]
    folder = keyed_dir("reference_programs-", Path(__file__), model) / name
    with cache_lock(f"reference_programs-{name}"):
        if not (folder / "program.pte").is_file():
            lower_into(folder, model_class(model, cls), SHAPES, LoweringSpec(target=target))
    return folder / "program.pte"


def model_class(path: Path, name: str):
    """Class ``name`` of the model file ``path``."""
    module_spec = importlib.util.spec_from_file_location(path.stem, path)
    assert module_spec is not None and module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return getattr(module, name)
