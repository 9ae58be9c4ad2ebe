"""Every compiled test program with an Ethos-U delegate, with Vela's files kept (the TOSA
graph of each delegate), so a test can have Vela print the register command stream it
generates and compare it with etu's decoding. tests/real_programs.py's delegated programs
are copied with the files their lowering kept; the others are lowered here. Cached like
tests/real_programs.py.
"""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

from etu.runner.aot import LoweringSpec
from tests import real_programs
from tests.real_programs import PROGRAMS, ROOT, cache_lock, keyed_dir

MIX_MODEL = ROOT / "tests" / "data" / "models" / "npu_mix.py"
# name → (model: an EXAMPLES name or MIX_MODEL, input shapes or None for EXAMPLES', spec)
NPU_PROGRAMS: dict[str, tuple[str, LoweringSpec]] = {
    **{name: (model, spec) for name, (model, spec) in PROGRAMS.items() if spec.delegate},
    "mix_u55": (
        "npu_mix",
        LoweringSpec(target="ethos-u55-128", extra_vela_flags=("--enable-debug-db",)),
    ),
    "mix_u65": ("npu_mix", LoweringSpec(target="ethos-u65-256")),
}
MIX_SHAPES = [(1, 3, 16, 16)]


def _cache_dir() -> Path:
    return keyed_dir(
        "npu_programs-", Path(__file__), MIX_MODEL, ROOT / "tests" / "real_programs.py"
    )


def build(name: str) -> Path:
    """The folder of program ``name``: ``program.pte`` and its ``vela/`` (TOSA graphs)."""
    folder = _cache_dir() / name
    with cache_lock(f"npu_programs-{name}"):
        if not (folder / "program.pte").is_file():
            _lower(name, folder)
    return folder


def _lower(name: str, folder: Path) -> None:
    from etu.runner.example_models import EXAMPLES

    if name in PROGRAMS:  # lowered by tests/real_programs.py already, Vela's files kept
        program = real_programs.build(name)
        work = _partial(folder)
        shutil.copy2(program, work / "program.pte")
        shutil.copytree(real_programs.vela_folder(name), work / "vela")
        _finish(work, folder)
        return
    model_name, spec = NPU_PROGRAMS[name]
    if model_name == "npu_mix":
        factory, shapes = mix_model(), MIX_SHAPES
    else:
        factory, shapes = EXAMPLES[model_name]
    lower_into(folder, factory, shapes, spec)


def mix_model():
    """tests/data/models/npu_mix.py's NpuMix class."""
    module_spec = importlib.util.spec_from_file_location("npu_mix", MIX_MODEL)
    assert module_spec is not None and module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module.NpuMix


def lower_into(folder: Path, factory, shapes, spec: LoweringSpec) -> None:
    """``folder/program.pte`` with its ``vela/`` folder, lowered from seed 0; written whole
    (a partial folder renamed) so a worker that waited on the lock finds it complete."""
    import torch

    from etu.runner.aot import example_inputs_for, lower_to_pte

    work = _partial(folder)
    torch.manual_seed(0)
    lower_to_pte(
        factory(), example_inputs_for(shapes), spec, work / "program.pte", vela_dir=work / "vela"
    )
    _finish(work, folder)


def _partial(folder: Path) -> Path:
    work = folder.with_name(folder.name + ".partial")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    return work


def _finish(work: Path, folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)
    work.rename(folder)
