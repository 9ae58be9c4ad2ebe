"""The program's planned memory on the host, and tensors into and out of it.

The host reference (:mod:`etu.runner.reference`) keeps one buffer per memory id, each
tensor at its offset in its dim order, as the runtime lays them out; these are the
conversions between those bytes and torch tensors, and the inputs a run starts from.
torch is imported inside the functions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from io import BytesIO
from pathlib import Path

from etu.parsers.pte import ExecutionPlan, Program, Tensor

# ExecuTorch ScalarType name → torch dtype name
TORCH_DTYPES = {
    "Byte": "uint8", "Char": "int8", "Short": "int16", "Int": "int32", "Long": "int64",
    "Half": "float16", "Float": "float32", "Double": "float64", "Bool": "bool",
    "BFloat16": "bfloat16", "UInt16": "uint16", "UInt32": "uint32", "UInt64": "uint64",
}  # fmt: skip


class ReferenceError(RuntimeError):
    """One line: why there is no reference for this program."""


@dataclass
class Memory:
    """The program's planned memory on the host, and the bytes of its unplanned tensors."""

    program: Program
    plan: ExecutionPlan
    arenas: list[bytearray] = field(init=False)
    unplanned: dict[int, bytes] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.arenas = [bytearray(int(n)) for n in self.plan.non_const_buffer_sizes]

    def _span(self, index: int) -> tuple[bytearray, int, int] | None:
        tensor = self.plan.values[index]
        if not tensor.is_planned:
            return None
        if not 0 <= tensor.memory_id < len(self.arenas):
            raise ReferenceError(f"value {index}: memory id {tensor.memory_id}, the plan has "
                                 f"{len(self.arenas)} buffers")  # fmt: skip
        start = tensor.memory_offset or 0
        end = start + tensor.nbytes
        if end > len(self.arenas[tensor.memory_id]):
            raise ReferenceError(f"value {index}: bytes {start}..{end} run past memory id "
                                 f"{tensor.memory_id}")  # fmt: skip
        return self.arenas[tensor.memory_id], start, end

    def constant(self, index: int) -> memoryview:
        data = self.program.constant_data(self.plan.values[index])
        if data is None:
            raise ReferenceError(f"value {index}: a constant whose data is not in the program")
        return data

    def read(self, index: int) -> bytes:
        """The tensor's bytes in its dim order, as the runtime holds them."""
        span = self._span(index)
        if span is None:
            return self.unplanned.get(index, bytes(self.plan.values[index].nbytes))
        arena, start, end = span
        return bytes(arena[start:end])

    def write(self, index: int, data: bytes) -> None:
        tensor = self.plan.values[index]
        if len(data) != tensor.nbytes:
            raise ReferenceError(f"value {index}: {len(data)} bytes for a {tensor.nbytes}-byte "
                                 "tensor")  # fmt: skip
        span = self._span(index)
        if span is None:
            self.unplanned[index] = bytes(data)
            return
        arena, start, end = span
        arena[start:end] = data


def physical_shape(tensor: Tensor) -> list[int]:
    """The shape of the tensor's bytes: its sizes in its dim order."""
    return [tensor.sizes[d] for d in tensor.dim_order] if tensor.dim_order else list(tensor.sizes)


def torch_dtype(tensor: Tensor, index: int):
    import torch

    name = TORCH_DTYPES.get(tensor.dtype)
    if name is None or not hasattr(torch, name):
        raise ReferenceError(f"value {index}: dtype {tensor.dtype} is not supported")
    return getattr(torch, name)


def to_torch(tensor: Tensor, data: bytes, index: int = -1):
    """A torch tensor of the tensor's sizes whose memory is ``data`` in its dim order."""
    import torch

    dtype = torch_dtype(tensor, index)
    physical = physical_shape(tensor)
    flat = (torch.frombuffer(bytearray(data), dtype=dtype) if data
            else torch.empty(0, dtype=dtype))  # fmt: skip
    order = list(tensor.dim_order) or list(range(len(physical)))
    inverse = sorted(range(len(order)), key=order.__getitem__)
    return flat.reshape(physical).permute(inverse)


def in_memory_order(value, tensor: Tensor) -> list[float]:
    """``value`` (of ``tensor``'s sizes) flattened in ``tensor``'s dim order."""
    order = list(tensor.dim_order)
    if order and len(order) == value.dim() and order != sorted(order):
        value = value.permute(order)
    return [float(v) for v in value.reshape(-1).tolist()]


def from_torch(tensor: Tensor, value) -> bytes:
    """The bytes of a torch tensor laid out in the tensor's dim order."""
    import torch

    order = list(tensor.dim_order) or list(range(value.dim()))
    physical = value.permute(order).contiguous().reshape(-1)
    return physical.view(torch.uint8).numpy().tobytes()


def default_inputs(plan: ExecutionPlan) -> list:
    """Every input filled with ones, as the runner and ``etu compare`` do."""
    import torch

    inputs = []
    for index in plan.inputs:
        tensor = plan.values[index]
        if not isinstance(tensor, Tensor):
            raise ReferenceError(f"input value {index} is a {tensor.kind}, not a tensor")
        inputs.append(torch.ones(tensor.sizes, dtype=torch_dtype(tensor, index)))
    return inputs


def load_inputs(plan: ExecutionPlan, path: Path) -> list:
    """The inputs from a .npy (one input) or .npz (one array per input, in order), cast to
    the program's dtypes (integers only when every value survives the cast)."""
    import numpy
    import torch

    from etu.parsers.files import GiB, read_regular

    data = read_regular(path, "an inputs file", 4 * GiB)
    try:
        loaded = numpy.load(BytesIO(data), allow_pickle=False)
    except Exception as error:
        raise ReferenceError(f"{path}: not a .npy or .npz file ({error})") from None
    if isinstance(loaded, numpy.ndarray):
        arrays = [loaded]
    else:
        with loaded:
            arrays = [loaded[name] for name in loaded.files]
    if len(arrays) != len(plan.inputs):
        raise ReferenceError(f"{path}: {len(arrays)} arrays for the program's "
                             f"{len(plan.inputs)} inputs")  # fmt: skip
    inputs = []
    for k, (array, index) in enumerate(zip(arrays, plan.inputs, strict=True)):
        tensor = plan.values[index]
        if tuple(array.shape) != tuple(tensor.sizes):
            raise ReferenceError(f"{path}: array {k} has shape {list(array.shape)}, input {k} "
                                 f"is {list(tensor.sizes)}")  # fmt: skip
        dtype = torch_dtype(tensor, index)
        value = torch.from_numpy(numpy.ascontiguousarray(array)).to(dtype)
        if not dtype.is_floating_point and not torch.equal(
            value.to(torch.float64), torch.from_numpy(array.astype("float64"))
        ):
            raise ReferenceError(f"{path}: array {k} ({array.dtype}) does not fit input {k}'s "
                                 f"{tensor.dtype}")  # fmt: skip
        inputs.append(value)
    return inputs
