"""Bundled programs (.bpte) for the runner's BundleIO check: the user's inputs (or seeded
random ones) and the host runtime's outputs on them as the expected outputs.

torch and executorch are imported inside the functions (the compile/host-reference path).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from etu.runner.compare import _TORCH_DTYPES, input_specs


class BundleError(RuntimeError):
    """One line: why the bundle cannot be made."""


def load_inputs(pte: Path, files: Sequence[Path], seed: int) -> list:
    """Tensors for the program's inputs: from .npy/.pt files in order, else seeded random."""
    import torch

    specs = input_specs(pte)
    if files:
        if len(files) != len(specs):
            raise BundleError(f"{pte}: the program has {len(specs)} inputs, {len(files)} given")
        tensors = []
        for path, (shape, _dtype) in zip(files, specs, strict=True):
            if Path(path).suffix == ".npy":
                import numpy

                tensor = torch.from_numpy(numpy.load(path))
            else:
                tensor = torch.load(path, weights_only=True)
            if tuple(tensor.shape) != tuple(shape):
                raise BundleError(f"{path}: shape {tuple(tensor.shape)}, the program wants {shape}")
            tensors.append(tensor)
        return tensors
    generator = torch.Generator().manual_seed(seed)
    tensors = []
    for shape, dtype in specs:
        torch_dtype = getattr(torch, _TORCH_DTYPES.get(dtype, "float32"))
        if torch_dtype.is_floating_point:
            tensors.append(torch.rand(shape, generator=generator).to(torch_dtype))
        else:
            tensors.append(torch.randint(0, 8, shape, generator=generator).to(torch_dtype))
    return tensors


def make_bundled(
    pte: Path,
    out: Path,
    *,
    inputs: Sequence[Path] = (),
    seed: int = 0,
    expected: Sequence[Path] = (),
) -> Path:
    """Write ``out`` (.bpte): inputs + expected outputs (the host runtime's unless given)."""
    import torch
    from executorch.devtools import BundledProgram
    from executorch.devtools.bundled_program.config import MethodTestCase, MethodTestSuite
    from executorch.devtools.bundled_program.serialize import (
        serialize_from_bundled_program_to_flatbuffer,
    )
    from executorch.runtime import Runtime

    tensors = load_inputs(Path(pte), list(inputs), seed)
    if expected:
        import numpy

        outputs = [torch.from_numpy(numpy.load(path)) for path in expected]
    else:
        method = Runtime.get().load_program(Path(pte)).load_method("forward")
        outputs = [o.clone() for o in method.execute(tensors)]
    case = MethodTestCase(inputs=tensors, expected_outputs=outputs)
    suite = MethodTestSuite(method_name="forward", test_cases=[case])
    bundled = BundledProgram(None, [suite], pte_file_path=str(pte))
    data = serialize_from_bundled_program_to_flatbuffer(bundled)
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + ".partial")
    partial.write_bytes(data)
    partial.replace(out)
    return out
