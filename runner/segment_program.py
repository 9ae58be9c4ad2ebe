"""A program that runs some of another program's kernel calls, for ExecuTorch's host runtime.

The host reference (:mod:`etu.runner.reference`) runs a delegated program's CPU part with
ExecuTorch's own kernels: each run of kernel calls between two delegate calls becomes a
small program of its own (this module writes it), which the host runtime executes; each
delegate call runs through the TOSA reference model in between. The small program keeps
the original's values (renumbered), memory plan (same memory ids, offsets and buffer sizes)
and operators; every non-constant tensor its calls name is both a method input and a
method output, so the caller copies the planned memory in before and reads it back after,
exactly as the original program's memory would have held it. The constants the calls use
are copied into a constant segment after the FlatBuffer, behind an extended header, as
ExecuTorch's own serializer lays them out (the host runtime refuses the older inline
``constant_buffer``). Pure: a decoded program in, ``.pte`` bytes out (FlatBuffers, with
the ``flatbuffers`` package that tosa-tools brings).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from etu.parsers.pte import ExecutionPlan, KernelCall, Program, Tensor, Value
from etu.parsers.pte_schema import (
    PROGRAM_IDENTIFIER,
    VALUE_KIND_TAGS,
    AllocationDetailsSlot,
    ChainSlot,
    DataSegmentSlot,
    ExecutionPlanSlot,
    InstructionArguments,
    KernelCallSlot,
    ListSlot,
    OperatorSlot,
    ProgramSlot,
    ScalarBoxSlot,
    SubsegmentOffsetsSlot,
    TensorSlot,
)

FILE_IDENTIFIER = PROGRAM_IDENTIFIER.encode()
TENSOR_ALIGNMENT = 16  # a constant's bytes in the constant segment
SEGMENT_ALIGNMENT = 128  # where the segments start (ExecuTorch's default)
EXTENDED_HEADER_LENGTH = 32  # "eh00", length, program_size, segment base, segment data size


class SegmentError(RuntimeError):
    """One line: why these calls cannot run as a program of their own."""


@dataclass(frozen=True, slots=True)
class SegmentProgram:
    data: bytes  # the .pte
    io: tuple[int, ...]  # original value indices of its inputs (= its outputs), in order


_INDEX_LISTS = ("IntList", "TensorList", "OptionalTensorList")  # items are value indices


def referenced_values(plan: ExecutionPlan, calls: Sequence[KernelCall]) -> list[int]:
    """Every value the calls name, directly or through a list, in first-use order."""
    seen: dict[int, None] = {}

    def visit(index: int) -> None:
        if index < 0 or index in seen:  # -1: an absent optional tensor
            return
        if index >= len(plan.values):
            raise SegmentError(f"a kernel call names value {index}; the plan has "
                               f"{len(plan.values)}")  # fmt: skip
        seen[index] = None
        value = plan.values[index]
        if isinstance(value, Value) and value.kind in _INDEX_LISTS:
            for item in value.payload or ():
                visit(int(item))

    for call in calls:
        for index in call.args:
            visit(index)
    return list(seen)


def is_io_tensor(value: object) -> bool:
    """A tensor whose bytes live in planned memory or come from the caller (not a constant)."""
    return isinstance(value, Tensor) and not value.is_constant


def segment_program(
    program: Program, plan: ExecutionPlan, calls: Sequence[KernelCall]
) -> SegmentProgram:
    """The ``.pte`` bytes of a program whose ``forward`` runs ``calls`` alone."""
    import flatbuffers

    values = referenced_values(plan, calls)
    new_index = {old: new for new, old in enumerate(values)}
    ops = list(dict.fromkeys(call.op_index for call in calls))
    new_op = {old: new for new, old in enumerate(ops)}
    io = tuple(i for i in values if is_io_tensor(plan.values[i]))
    for index in io:
        tensor = plan.values[index]
        if tensor.external:
            raise SegmentError(f"value {index}: its data is in a .ptd file, not the program")
        if tensor.is_planned and tensor.data_buffer_idx:
            raise SegmentError(f"value {index}: mutable state (a buffer with initial data) is "
                               "not supported by the host reference yet")  # fmt: skip

    # The constants the calls use, in one segment; constant 0 is the empty placeholder.
    constants = bytearray()
    offsets = [0]
    constant_index: dict[int, int] = {}
    for index in values:
        value = plan.values[index]
        if isinstance(value, Tensor) and value.is_constant:
            data = program.constant_data(value)
            if data is None:
                raise SegmentError(f"value {index}: a constant whose data is not in the program")
            constants += bytes(-len(constants) % TENSOR_ALIGNMENT)
            constant_index[index] = len(offsets)
            offsets.append(len(constants))
            constants += data

    b = flatbuffers.Builder(1024)
    evalues = [_evalue(b, plan.values[i], new_index, constant_index.get(i, 0), i) for i in values]
    operators = []
    for op_index in ops:
        if not 0 <= op_index < len(plan.operators):
            raise SegmentError(f"a kernel call names operator {op_index}; the plan has "
                               f"{len(plan.operators)}")  # fmt: skip
        op = plan.operators[op_index]
        name, overload = b.CreateString(op.name), b.CreateString(op.overload)
        b.StartObject(2)
        b.PrependUOffsetTRelativeSlot(OperatorSlot.NAME, name, 0)
        b.PrependUOffsetTRelativeSlot(OperatorSlot.OVERLOAD, overload, 0)
        operators.append(b.EndObject())
    instructions = []
    for call in calls:
        args = _int_vector(b, [new_index[a] for a in call.args], 4)
        b.StartObject(2)
        b.PrependInt32Slot(KernelCallSlot.OP_INDEX, new_op[call.op_index], 0)
        b.PrependUOffsetTRelativeSlot(KernelCallSlot.ARGS, args, 0)
        kernel_call = b.EndObject()
        b.StartObject(2)
        b.PrependUint8Slot(0, InstructionArguments.KERNEL_CALL, 0)
        b.PrependUOffsetTRelativeSlot(1, kernel_call, 0)
        instructions.append(b.EndObject())
    io_new = [new_index[i] for i in io]
    chain_instructions = _offset_vector(b, instructions)
    chain_inputs, chain_outputs = _int_vector(b, io_new, 4), _int_vector(b, io_new, 4)
    b.StartObject(4)
    b.PrependUOffsetTRelativeSlot(ChainSlot.INPUTS, chain_inputs, 0)
    b.PrependUOffsetTRelativeSlot(ChainSlot.OUTPUTS, chain_outputs, 0)
    b.PrependUOffsetTRelativeSlot(ChainSlot.INSTRUCTIONS, chain_instructions, 0)
    chain = b.EndObject()

    name = b.CreateString("forward")
    values_vector = _offset_vector(b, evalues)
    inputs, outputs = _int_vector(b, io_new, 4), _int_vector(b, io_new, 4)
    chains = _offset_vector(b, [chain])
    operators_vector = _offset_vector(b, operators)
    delegates = _offset_vector(b, [])
    buffer_sizes = _int_vector(b, list(plan.non_const_buffer_sizes), 8)
    b.StartObject(10)
    b.PrependUOffsetTRelativeSlot(ExecutionPlanSlot.NAME, name, 0)
    b.PrependUOffsetTRelativeSlot(ExecutionPlanSlot.VALUES, values_vector, 0)
    b.PrependUOffsetTRelativeSlot(ExecutionPlanSlot.INPUTS, inputs, 0)
    b.PrependUOffsetTRelativeSlot(ExecutionPlanSlot.OUTPUTS, outputs, 0)
    b.PrependUOffsetTRelativeSlot(ExecutionPlanSlot.CHAINS, chains, 0)
    b.PrependUOffsetTRelativeSlot(ExecutionPlanSlot.OPERATORS, operators_vector, 0)
    b.PrependUOffsetTRelativeSlot(ExecutionPlanSlot.DELEGATES, delegates, 0)
    b.PrependUOffsetTRelativeSlot(ExecutionPlanSlot.NON_CONST_BUFFER_SIZES, buffer_sizes, 0)
    execution_plan = b.EndObject()

    plans = _offset_vector(b, [execution_plan])
    b.StartObject(2)
    b.PrependUint64Slot(DataSegmentSlot.OFFSET, 0, 0)
    b.PrependUint64Slot(DataSegmentSlot.SIZE, len(constants), 0)
    segments = _offset_vector(b, [b.EndObject()])
    constant_offsets = _int_vector(b, offsets, 8)
    b.StartObject(2)
    b.PrependUint32Slot(SubsegmentOffsetsSlot.SEGMENT_INDEX, 0, 0)
    b.PrependUOffsetTRelativeSlot(SubsegmentOffsetsSlot.OFFSETS, constant_offsets, 0)
    constant_segment = b.EndObject()
    b.StartObject(8)
    b.PrependUint32Slot(ProgramSlot.VERSION, program.version, 0)
    b.PrependUOffsetTRelativeSlot(ProgramSlot.EXECUTION_PLAN, plans, 0)
    b.PrependUOffsetTRelativeSlot(ProgramSlot.SEGMENTS, segments, 0)
    b.PrependUOffsetTRelativeSlot(ProgramSlot.CONSTANT_SEGMENT, constant_segment, 0)
    root = b.EndObject()
    b.Finish(root, file_identifier=FILE_IDENTIFIER)
    return SegmentProgram(_with_segment(bytes(b.Output()), bytes(constants)), io)


def _with_segment(flatbuffer: bytes, segment: bytes) -> bytes:
    """The FlatBuffer with an extended header after its identifier (the root offset moved
    past it, as ExecuTorch's serializer does), then the segment at an aligned base."""
    root = int.from_bytes(flatbuffer[:4], "little") + EXTENDED_HEADER_LENGTH
    program_size = len(flatbuffer) + EXTENDED_HEADER_LENGTH
    base = program_size + (-program_size % SEGMENT_ALIGNMENT)
    header = (
        b"eh00"
        + EXTENDED_HEADER_LENGTH.to_bytes(4, "little")
        + program_size.to_bytes(8, "little")
        + base.to_bytes(8, "little")
        + len(segment).to_bytes(8, "little")
    )
    head = root.to_bytes(4, "little") + flatbuffer[4:8] + header + flatbuffer[8:]
    return head + bytes(base - program_size) + segment


def _int_vector(b, items: Sequence[int], width: int) -> int:
    b.StartVector(width, len(items), width)
    prepend = {1: b.PrependUint8, 4: b.PrependInt32, 8: b.PrependInt64}[width]
    for item in reversed(items):
        prepend(int(item))
    return b.EndVector()


def _float_vector(b, items: Sequence[float]) -> int:
    b.StartVector(8, len(items), 8)
    for item in reversed(items):
        b.PrependFloat64(float(item))
    return b.EndVector()


def _offset_vector(b, offsets: Sequence[int]) -> int:
    b.StartVector(4, len(offsets), 4)
    for offset in reversed(offsets):
        b.PrependUOffsetTRelative(offset)
    return b.EndVector()


def _evalue(b, value, new_index: dict[int, int], buffer_index: int, old: int) -> int:
    kind = "Tensor" if isinstance(value, Tensor) else value.kind
    if kind not in VALUE_KIND_TAGS:
        raise SegmentError(f"value {old}: a {kind} value cannot be written")
    table = _tensor(b, value, buffer_index) if isinstance(value, Tensor) else None
    if table is None:
        table = _scalar_or_list(b, value, new_index)
    b.StartObject(2)
    b.PrependUint8Slot(0, VALUE_KIND_TAGS[kind], 0)
    b.PrependUOffsetTRelativeSlot(1, table, 0)
    return b.EndObject()


def _tensor(b, tensor: Tensor, buffer_index: int) -> int:
    sizes = _int_vector(b, tensor.sizes, 4)
    dim_order = _int_vector(b, tensor.dim_order, 1)
    allocation = None
    if tensor.is_planned:
        offset = tensor.memory_offset or 0
        b.StartObject(3)
        b.PrependUint32Slot(AllocationDetailsSlot.MEMORY_ID, tensor.memory_id, 0)
        b.PrependUint32Slot(AllocationDetailsSlot.MEMORY_OFFSET_LOW, offset & 0xFFFFFFFF, 0)
        b.PrependUint32Slot(AllocationDetailsSlot.MEMORY_OFFSET_HIGH, offset >> 32, 0)
        allocation = b.EndObject()
    b.StartObject(10)
    b.PrependInt8Slot(TensorSlot.SCALAR_TYPE, tensor.scalar_type, 0)
    b.PrependInt32Slot(TensorSlot.STORAGE_OFFSET, tensor.storage_offset, 0)
    b.PrependUOffsetTRelativeSlot(TensorSlot.SIZES, sizes, 0)
    b.PrependUOffsetTRelativeSlot(TensorSlot.DIM_ORDER, dim_order, 0)
    b.PrependBoolSlot(TensorSlot.REQUIRES_GRAD, tensor.requires_grad, False)
    b.PrependUint32Slot(TensorSlot.DATA_BUFFER_IDX, buffer_index, 0)
    if allocation is not None:
        b.PrependUOffsetTRelativeSlot(TensorSlot.ALLOCATION_INFO, allocation, 0)
    b.PrependInt8Slot(TensorSlot.LAYOUT, tensor.layout, 0)
    b.PrependInt8Slot(TensorSlot.SHAPE_DYNAMISM, tensor.shape_dynamism, 0)
    return b.EndObject()


def _scalar_or_list(b, value: Value, new_index: dict[int, int]) -> int:
    kind, payload = value.kind, value.payload
    if kind == "Null":
        b.StartObject(0)
        return b.EndObject()
    if kind == "String":
        text = b.CreateString(payload or "")
        b.StartObject(1)
        b.PrependUOffsetTRelativeSlot(ScalarBoxSlot.VALUE, text, 0)
        return b.EndObject()
    if kind in ("Int", "Bool", "Double"):
        b.StartObject(1)
        if kind == "Int":
            b.PrependInt64Slot(ScalarBoxSlot.VALUE, int(payload), 0)
        elif kind == "Bool":
            b.PrependBoolSlot(ScalarBoxSlot.VALUE, bool(payload), False)
        else:
            b.PrependFloat64Slot(ScalarBoxSlot.VALUE, float(payload), 0.0)
        return b.EndObject()
    items = list(payload or ())
    if kind == "IntList":
        vector = _int_vector(b, [new_index[int(i)] for i in items], 8)
    elif kind in ("TensorList", "OptionalTensorList"):
        vector = _int_vector(b, [new_index[int(i)] if i >= 0 else -1 for i in items], 4)
    elif kind == "DoubleList":
        vector = _float_vector(b, items)
    else:  # BoolList
        vector = _int_vector(b, [1 if i else 0 for i in items], 1)
    b.StartObject(1)
    b.PrependUOffsetTRelativeSlot(ListSlot.ITEMS, vector, 0)
    return b.EndObject()
