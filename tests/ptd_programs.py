"""Programs whose Vela blocks live in a ``.ptd`` (ExecuTorch's external block placements),
lowered by the real flow (runner/aot.py) and cached like tests/npu_programs.py: the same
CNN as the ``u55`` program with the same seed, so its command stream can be compared with
the inline one's. Also a program re-serialized by ExecuTorch with planned buffers and
tensors placed on a CUDA device (program.fbs' device fields), for the Fit warning.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from etu.runner.aot import LoweringSpec
from tests.real_programs import ROOT, cache_lock, keyed_dir

# name → (example model, spec); both blocks under one tag give one program.ptd
PTD_PROGRAMS: dict[str, tuple[str, LoweringSpec]] = {
    "ext_u55": ("cnn", LoweringSpec(target="ethos-u55-128", external_blocks=("cmd", "weights"))),
    "ext_weights_u55": ("cnn", LoweringSpec(target="ethos-u55-128", external_blocks=("weights",))),
}


def _cache_dir() -> Path:
    return keyed_dir("ptd_programs-", Path(__file__), ROOT / "tests" / "npu_programs.py")


def build(name: str) -> Path:
    """The folder of ``name``: ``program.pte``, ``program.ptd`` and ``vela/``."""
    from tests.npu_programs import lower_into

    folder = _cache_dir() / name
    with cache_lock(f"ptd_programs-{name}"):
        if not (folder / "program.pte").is_file():
            from etu.runner.example_models import EXAMPLES

            model, spec = PTD_PROGRAMS[name]
            factory, shapes = EXAMPLES[model]
            lower_into(folder, factory, shapes, spec)
    return folder


def device_program(source: Path, out: Path) -> Path:
    """``source`` re-serialized by ExecuTorch with planned buffer 1 and every planned
    tensor on ``cuda:1`` (ExecutionPlan.non_const_buffer_device, ExtraTensorInfo)."""
    from executorch.exir._serialize._program import deserialize_pte_binary, serialize_pte_binary
    from executorch.exir.schema import (
        DeviceType,
        ExtraTensorInfo,
        NonConstBufferDevice,
        Tensor,
    )

    pte = deserialize_pte_binary(source.read_bytes())
    plan = pte.program.execution_plan[0]
    plan.non_const_buffer_device = [
        NonConstBufferDevice(buffer_idx=0, device_type=DeviceType.CPU),
        NonConstBufferDevice(buffer_idx=1, device_type=DeviceType.CUDA, device_index=1),
    ]
    for value in plan.values:
        tensor = value.val
        if isinstance(tensor, Tensor) and tensor.allocation_info is not None:
            extra = tensor.extra_tensor_info or ExtraTensorInfo()
            extra.device_type, extra.device_index = DeviceType.CUDA, 1
            tensor.extra_tensor_info = extra
    out.write_bytes(bytes(serialize_pte_binary(pte)))
    return out


def copy_pair(name: str, into: Path) -> Path:
    """A writable copy of ``name``'s program and data file; the copied program's path."""
    folder = build(name)
    into.mkdir(parents=True, exist_ok=True)
    for file in ("program.pte", "program.ptd"):
        shutil.copy(folder / file, into / file)
    return into / "program.pte"
