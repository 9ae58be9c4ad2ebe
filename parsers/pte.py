"""The ExecuTorch ``.pte`` container: a FlatBuffer ``Program`` plus optional segments.

What the file holds is declared in :mod:`etu.parsers.pte_schema` (slots, union tags, scalar
types); the typed result is :mod:`etu.parsers.pte_model`; this module is the decoding and
opening, and re-exports the model so callers import it from here as before. Opening a file
maps it and decodes the FlatBuffer part only: constant data, delegate payloads and segments
stay on disk until asked for, and every offset is checked against the file before it is used.
"""

from __future__ import annotations

import os
import re

from construct import Float64l, Int8sl, Int8ul, Int32sl, Int32ul, Int64sl, Int64ul

from etu.parsers.errors import (
    FormatError,
    ParseError,
    TruncatedError,
    WrongKindError,
    as_parse_errors,
)
from etu.parsers.files import GiB, MiB, open_regular
from etu.parsers.flatbuffers import BufferLike, FlatBuffer, Table
from etu.parsers.pte_model import (
    CHANGED,
    BackendDelegate,
    BufferDevice,
    Chain,
    CompileSpec,
    DataSegment,
    DelegateCall,
    EValue,
    ExecutionPlan,
    ExtendedHeader,
    FreeCall,
    Instruction,
    JumpFalseCall,
    KernelCall,
    MoveCall,
    NamedData,
    OpenFile,
    Operator,
    Program,
    Span,
    SubsegmentOffsets,
    Tensor,
    UnknownInstruction,
    Value,
    file_changed,
)
from etu.parsers.pte_schema import (
    BUNDLED_IDENTIFIER_PREFIX,
    EXTENDED_HEADER,
    EXTENDED_HEADER_MIN_LENGTH,
    EXTENDED_HEADER_OFFSET,
    INLINE,
    OTHER_IDENTIFIERS,
    PROGRAM_IDENTIFIER,
    SEGMENT,
    VALUE_KINDS,
    AllocationDetailsSlot,
    BackendDelegateDataReferenceSlot,
    BackendDelegateInlineDataSlot,
    BackendDelegateSlot,
    BufferSlot,
    BundledProgramSlot,
    ChainSlot,
    CompileSpecSlot,
    DataSegmentSlot,
    DelegateCallSlot,
    EValueSlot,
    ExecutionPlanSlot,
    ExtraTensorInfoSlot,
    FreeCallSlot,
    InstructionArguments,
    InstructionSlot,
    JumpFalseCallSlot,
    KernelCallSlot,
    KernelTypes,
    ListSlot,
    MoveCallSlot,
    NamedDataSlot,
    NonConstBufferDeviceSlot,
    OperatorSlot,
    ProgramSlot,
    ScalarBoxSlot,
    SubsegmentOffsetsSlot,
    TensorDataLocation,
    TensorSlot,
)
from etu.parsers.pte_schema import SCALAR_TYPES as SCALAR_TYPES  # re-exported

# --------------------------------------------------------------------------- decoding


# Programs below this size are read into memory: nothing another process does to the file
# afterwards can reach them. Larger ones are not mapped (a file cut short under a mapping is
# a SIGBUS on the missing pages, which no check can close): an ``ET12`` file with an extended
# header has its FlatBuffer part read and its segments read on demand with ``pread``, which
# simply comes back short when the file shrank ("file changed while read"); anything else
# has no smaller part to decode and is read whole.
MAP_THRESHOLD = 64 * MiB
HEAD_LIMIT = 256 * MiB  # a large program's FlatBuffer part up to this size is read


def open_program(path: str | os.PathLike[str]) -> Program:
    """Read ``path`` (or its FlatBuffer part) and decode its program. Raises ParseError
    naming the file."""
    source = str(path)
    fd, size = open_regular(path, "an ExecuTorch program", 4 * GiB)  # a FIFO would block
    opened: OpenFile | None = None
    try:
        if size == 0:
            raise WrongKindError("empty file (0 bytes), not an ExecuTorch program", source=source)
        before = os.fstat(fd)
        head = None
        if size >= MAP_THRESHOLD:
            opened = OpenFile(fd, before)
            head = _flatbuffer_head(opened, size, source)
        if head is None:
            opened = None
            data: BufferLike = _read_exactly(fd, size, source)
            if file_changed(before, os.fstat(fd)):
                raise ParseError(CHANGED, source=source)
    except OSError as error:
        os.close(fd)
        raise ParseError(error.strerror or str(error), source=source) from None
    except BaseException:
        os.close(fd)
        raise
    if opened is None:
        os.close(fd)
        return decode_program(data, source)
    try:
        # The FlatBuffer part is in memory: a file cut short while it is decoded cannot
        # reach the decoder; segments are read with pread when asked for (Program.read).
        with as_parse_errors(source):
            program = _decode_program(memoryview(head), source, file_size=size)
        opened.check(source)
    except BaseException:
        opened.close()
        raise
    program._closer = opened
    return program


def _flatbuffer_head(opened: OpenFile, size: int, source: str) -> bytes | None:
    """The first ``program_size`` bytes of an ``ET12`` file whose extended header says where
    its FlatBuffer ends; None for anything else (read whole)."""
    first = os.pread(opened.fd, 64, 0)
    if len(first) < 40 or first[4:8] != PROGRAM_IDENTIFIER.encode() or first[8:12] != b"eh00":
        return None
    program_size = int.from_bytes(first[16:24], "little")
    if not 40 <= program_size <= size or program_size > HEAD_LIMIT:
        return None
    head = os.pread(opened.fd, program_size, 0)
    if len(head) != program_size:
        raise ParseError(f"{CHANGED} (shrank below {program_size:,} bytes)", source=source)
    return head


def _read_exactly(fd: int, size: int, source: str) -> bytes:
    """``size`` bytes of ``fd``; a file that is shorter or longer now has changed."""
    chunks: list[bytes] = []
    total = 0
    while total < size:
        chunk = os.read(fd, min(size - total, 8 * MiB))
        if not chunk:
            raise ParseError(f"{CHANGED} (shrank to {total:,} bytes)", source=source)
        chunks.append(chunk)
        total += len(chunk)
    if os.read(fd, 1):
        raise ParseError(f"{CHANGED} (grew past {size:,} bytes)", source=source)
    return b"".join(chunks)


def decode_program(data: BufferLike, source: str = "<bytes>") -> Program:
    """Decode a program from bytes (or an mmap). Raises ParseError naming ``source``."""
    with as_parse_errors(source):
        return _decode_container(data, source)


def identify(head: bytes) -> str:
    """A short description of what a file is, from its first bytes."""
    if head[:4] == b"\x7fELF":
        return "an ELF file (firmware?), not an ExecuTorch program"
    if len(head) >= 8:
        ident = head[4:8].decode("latin-1")
        if ident in OTHER_IDENTIFIERS:
            return f"{OTHER_IDENTIFIERS[ident]} (identifier {ident!r}), not a program"
    if head and all(32 <= b < 127 or b in (9, 10, 13) for b in head[:64]):
        return "a text file, not an ExecuTorch program"
    return f"not an ExecuTorch program (file identifier {head[4:8]!r}, expected b'ET12')"


def _decode_container(data: BufferLike, source: str) -> Program:
    view = memoryview(data)
    size = len(view)
    if size == 0:
        raise WrongKindError("empty file (0 bytes), not an ExecuTorch program")
    head = bytes(view[:64])
    if size < 8:
        raise TruncatedError(
            f"file is {size} bytes; a program starts with 8 bytes of root offset and "
            "file identifier",
            field="file identifier",
            offset=0,
        )
    ident_bytes = head[4:8]
    if ident_bytes.startswith(BUNDLED_IDENTIFIER_PREFIX.encode()) and ident_bytes[2:].isdigit():
        return _decode_bundled(view, source, ident_bytes.decode())
    if not re.fullmatch(rb"ET[0-9A-Za-z]{2}", ident_bytes):
        raise WrongKindError(identify(head), field="file identifier", offset=4)
    return _decode_program(view, source)


def _decode_bundled(view: memoryview, source: str, ident: str) -> Program:
    """A bundled program (``.bpte``) embeds a whole program in slot 2 of its root."""
    root = FlatBuffer(view).root("BundledProgram")
    start, length = root.bytes_span(BundledProgramSlot.PROGRAM, "BundledProgram.program")
    if not length:
        raise FormatError("bundled program holds no program", field="BundledProgram.program")
    inner = view[start : start + length]
    if bytes(inner[4:8]).startswith(BUNDLED_IDENTIFIER_PREFIX.encode()):
        raise FormatError("bundled program nests another bundle", field="BundledProgram")
    try:
        program = _decode_program(inner, source)
    except ParseError as error:
        if error.offset is not None:
            error.offset += start
        error.field = f"embedded program: {error.field or ''}".rstrip(": ")
        raise
    program.file_identifier = ident
    program.bundled = True
    program.program_offset = start
    program.file_size = len(view)
    program.data = view
    program.delegate_data = [Span(s.offset + start, s.size) for s in program.delegate_data]
    program.constant_buffers = [Span(s.offset + start, s.size) for s in program.constant_buffers]
    return program


def _decode_extended_header(view: memoryview) -> ExtendedHeader | None:
    head = bytes(view[EXTENDED_HEADER_OFFSET : EXTENDED_HEADER_OFFSET + 32])
    if head[:4] != b"eh00":
        return None
    if len(head) < EXTENDED_HEADER_MIN_LENGTH:
        raise TruncatedError("extended header is cut short", field="extended header", offset=8)
    parsed = EXTENDED_HEADER.parse(head)
    if parsed.length < EXTENDED_HEADER_MIN_LENGTH:
        return None  # not a valid header: the runtime ignores it, and so do we
    return ExtendedHeader(
        length=parsed.length,
        program_size=parsed.program_size,
        segment_base_offset=parsed.segment_base_offset,
        segment_data_size=parsed.segment_data_size or 0,
    )


def _decode_program(view: memoryview, source: str, file_size: int | None = None) -> Program:
    """``view`` is the whole file, or (``file_size`` given) only its FlatBuffer part, the
    first ``program_size`` bytes: the caller then gives the program the whole file's data."""
    file_size = len(view) if file_size is None else file_size
    warnings: list[str] = []
    header = _decode_extended_header(view)
    program_size = file_size
    if header is not None:
        if not 8 <= header.program_size <= file_size:
            raise TruncatedError(
                f"program_size {header.program_size} does not fit the {file_size}-byte file",
                field="extended header program_size",
                offset=16,
            )
        expected = header.segment_base_offset + header.segment_data_size
        if header.segment_base_offset and header.segment_base_offset < header.program_size:
            raise FormatError(
                f"segment_base_offset {header.segment_base_offset:#x} lies inside the "
                f"program data (program_size {header.program_size:#x})",
                field="extended header segment_base_offset",
                offset=24,
            )
        if expected > file_size:
            raise TruncatedError(
                f"file is too small: the extended header expects {expected} bytes, "
                f"the file has {file_size}",
                field="extended header",
                offset=8,
            )
        program_size = header.program_size

    ident = bytes(view[4:8]).decode("latin-1")
    if ident != PROGRAM_IDENTIFIER:
        warnings.append(
            f"file identifier {ident!r}: the runtime only loads {PROGRAM_IDENTIFIER!r} "
            "(IncompatibleVersion)"
        )

    buf = FlatBuffer(view, program_size)
    root = buf.root("Program")
    plans = [
        _decode_plan(t) for t in root.table_vector(ProgramSlot.EXECUTION_PLAN, "execution_plan")
    ]
    constant_buffers = [
        Span(*t.bytes_span(BufferSlot.STORAGE, "Buffer.storage"))
        for t in root.table_vector(ProgramSlot.CONSTANT_BUFFER, "constant_buffer")
    ]
    delegate_data = [
        Span(*t.bytes_span(BackendDelegateInlineDataSlot.DATA, "BackendDelegateInlineData.data"))
        for t in root.table_vector(ProgramSlot.BACKEND_DELEGATE_DATA, "backend_delegate_data")
    ]
    segments = [
        DataSegment(
            t.scalar(DataSegmentSlot.OFFSET, Int64ul, what="DataSegment.offset"),
            t.scalar(DataSegmentSlot.SIZE, Int64ul, what="DataSegment.size"),
        )
        for t in root.table_vector(ProgramSlot.SEGMENTS, "segments")
    ]
    constant_segment_table = root.table(ProgramSlot.CONSTANT_SEGMENT, "constant_segment")
    program = Program(
        source=source,
        file_size=file_size,
        file_identifier=ident,
        extended_header=header,
        version=root.scalar(ProgramSlot.VERSION, Int32ul, what="Program.version"),
        plans=plans,
        segments=segments,
        constant_segment=(
            _decode_subsegments(constant_segment_table) if constant_segment_table else None
        ),
        constant_buffers=constant_buffers,
        delegate_data=delegate_data,
        mutable_data_segments=[
            _decode_subsegments(t)
            for t in root.table_vector(ProgramSlot.MUTABLE_DATA_SEGMENTS, "mutable_data_segments")
        ],
        named_data=[
            NamedData(
                t.string(NamedDataSlot.KEY, "NamedData.key") or "",
                t.scalar(NamedDataSlot.SEGMENT_INDEX, Int32ul),
            )
            for t in root.table_vector(ProgramSlot.NAMED_DATA, "named_data")
        ],
        data=view,
        warnings=warnings,
    )
    _check_references(program)
    return program


def _decode_subsegments(table: Table) -> SubsegmentOffsets:
    return SubsegmentOffsets(
        table.scalar(
            SubsegmentOffsetsSlot.SEGMENT_INDEX, Int32ul, what="SubsegmentOffsets.segment_index"
        ),
        table.scalar_vector(SubsegmentOffsetsSlot.OFFSETS, Int64ul, "SubsegmentOffsets.offsets"),
    )


def _check_references(program: Program) -> None:
    """Check every segment and delegate reference against the file, without reading data."""
    base = program.segment_base
    if base is not None:
        for index, segment in enumerate(program.segments):
            end = base + segment.offset + segment.size
            if end > program.file_size:
                raise TruncatedError(
                    f"segment {index} ({segment.size} bytes at base+{segment.offset:#x}) "
                    f"ends at {end:#x}, past the end of the file ({program.file_size:#x})",
                    field=f"segments[{index}]",
                    offset=base + segment.offset,
                )
    for plan in program.plans:
        for delegate in plan.delegates:
            what = f"{plan.name} delegate {delegate.id!r}"
            if delegate.location == INLINE:
                if delegate.index >= len(program.delegate_data):
                    raise FormatError(
                        f"{what} points at inline data {delegate.index}, but there are "
                        f"{len(program.delegate_data)}",
                        field="BackendDelegateDataReference.index",
                    )
            elif delegate.location == SEGMENT:
                if base is None or delegate.index >= len(program.segments):
                    raise FormatError(
                        f"{what} points at segment {delegate.index}, but the file has "
                        f"{len(program.segments) if base is not None else 'no'} segments",
                        field="BackendDelegateDataReference.index",
                    )
            else:
                raise FormatError(
                    f"{what} has unknown data location {delegate.location}",
                    field="BackendDelegateDataReference.location",
                )


def _decode_plan(table: Table) -> ExecutionPlan:
    name = table.string(ExecutionPlanSlot.NAME, "ExecutionPlan.name") or ""
    values = [_decode_value(t) for t in table.table_vector(ExecutionPlanSlot.VALUES, "values")]
    operators = [
        Operator(
            t.string(OperatorSlot.NAME, "Operator.name") or "",
            t.string(OperatorSlot.OVERLOAD, "Operator.overload") or "",
        )
        for t in table.table_vector(ExecutionPlanSlot.OPERATORS, "operators")
    ]
    delegates = [
        _decode_delegate(t) for t in table.table_vector(ExecutionPlanSlot.DELEGATES, "delegates")
    ]
    chains = [_decode_chain(t) for t in table.table_vector(ExecutionPlanSlot.CHAINS, "chains")]
    plan = ExecutionPlan(
        name=name,
        values=values,
        inputs=table.scalar_vector(ExecutionPlanSlot.INPUTS, Int32sl, "ExecutionPlan.inputs"),
        outputs=table.scalar_vector(ExecutionPlanSlot.OUTPUTS, Int32sl, "ExecutionPlan.outputs"),
        chains=chains,
        operators=operators,
        delegates=delegates,
        non_const_buffer_sizes=table.scalar_vector(
            ExecutionPlanSlot.NON_CONST_BUFFER_SIZES, Int64sl, "non_const_buffer_sizes"
        ),
        non_const_buffer_device=_decode_buffer_devices(table),
    )
    _check_indices(plan, table)
    return plan


def _decode_buffer_devices(table: Table) -> tuple[BufferDevice, ...]:
    """``ExecutionPlan.non_const_buffer_device`` (absent before ExecuTorch 2026-05)."""
    return tuple(
        BufferDevice(
            t.scalar(NonConstBufferDeviceSlot.BUFFER_IDX, Int32sl, what="buffer_idx"),
            t.scalar(NonConstBufferDeviceSlot.DEVICE_TYPE, Int8sl, what="device_type"),
            t.scalar(NonConstBufferDeviceSlot.DEVICE_INDEX, Int8sl, what="device_index"),
        )
        for t in table.table_vector(
            ExecutionPlanSlot.NON_CONST_BUFFER_DEVICE, "NonConstBufferDevice"
        )
    )


def _check_indices(plan: ExecutionPlan, table: Table) -> None:
    """Value, operator and delegate indices must point inside the plan."""
    n_values = len(plan.values)

    def bad(what: str, index: int, limit: int) -> FormatError:
        return FormatError(
            f"plan {plan.name!r}: {what} {index} is out of range (0..{limit - 1})",
            field=f"{plan.name} {what}",
            offset=table.position,
        )

    for index in (*plan.inputs, *plan.outputs):
        if not 0 <= index < n_values:
            raise bad("input/output value", index, n_values)
    for entry in plan.non_const_buffer_device:
        if not 0 <= entry.buffer_idx < len(plan.non_const_buffer_sizes):
            raise bad("non_const_buffer_device buffer_idx", entry.buffer_idx,
                      len(plan.non_const_buffer_sizes))  # fmt: skip
    for instr in plan.instructions:
        if isinstance(instr, KernelCall):
            if not 0 <= instr.op_index < len(plan.operators):
                raise bad("operator", instr.op_index, len(plan.operators))
            args = instr.args
        elif isinstance(instr, DelegateCall):
            if not 0 <= instr.delegate_index < len(plan.delegates):
                raise bad("delegate", instr.delegate_index, len(plan.delegates))
            args = instr.args
        else:
            continue
        for index in args:
            if not 0 <= index < n_values:
                raise bad("argument value", index, n_values)


def _decode_chain(table: Table) -> Chain:
    return Chain(
        inputs=table.scalar_vector(ChainSlot.INPUTS, Int32sl, "Chain.inputs"),
        outputs=table.scalar_vector(ChainSlot.OUTPUTS, Int32sl, "Chain.outputs"),
        instructions=tuple(
            _decode_instruction(t)
            for t in table.table_vector(ChainSlot.INSTRUCTIONS, "instructions")
        ),
    )


def _decode_instruction(table: Table) -> Instruction:
    tag, args = table.union(InstructionSlot.INSTR_ARGS, "instr_args")
    if args is None:
        return UnknownInstruction(tag)
    if tag == InstructionArguments.KERNEL_CALL:
        return KernelCall(
            args.scalar(KernelCallSlot.OP_INDEX, Int32sl, what="KernelCall.op_index"),
            args.scalar_vector(KernelCallSlot.ARGS, Int32sl, "KernelCall.args"),
        )
    if tag == InstructionArguments.DELEGATE_CALL:
        return DelegateCall(
            args.scalar(
                DelegateCallSlot.DELEGATE_INDEX, Int32sl, what="DelegateCall.delegate_index"
            ),
            args.scalar_vector(DelegateCallSlot.ARGS, Int32sl, "DelegateCall.args"),
        )
    if tag == InstructionArguments.MOVE_CALL:
        return MoveCall(
            args.scalar(MoveCallSlot.MOVE_FROM, Int32sl), args.scalar(MoveCallSlot.MOVE_TO, Int32sl)
        )
    if tag == InstructionArguments.JUMP_FALSE_CALL:
        return JumpFalseCall(
            args.scalar(JumpFalseCallSlot.COND_VALUE_INDEX, Int32sl),
            args.scalar(JumpFalseCallSlot.DESTINATION_INSTRUCTION, Int32sl),
        )
    if tag == InstructionArguments.FREE_CALL:
        return FreeCall(args.scalar(FreeCallSlot.VALUE_INDEX, Int32sl))
    return UnknownInstruction(tag)


def _decode_delegate(table: Table) -> BackendDelegate:
    processed = table.table(BackendDelegateSlot.PROCESSED, "BackendDelegate.processed")
    location = index = 0
    if processed:
        location = processed.scalar(
            BackendDelegateDataReferenceSlot.LOCATION, Int8sl, what="DataReference.location"
        )
        index = processed.scalar(
            BackendDelegateDataReferenceSlot.INDEX, Int32ul, what="DataReference.index"
        )
    specs = []
    for spec in table.table_vector(BackendDelegateSlot.COMPILE_SPECS, "compile_specs"):
        start, length = spec.bytes_span(CompileSpecSlot.VALUE, "CompileSpec.value")
        key = spec.string(CompileSpecSlot.KEY, "CompileSpec.key") or ""
        specs.append(CompileSpec(key, bytes(spec.buf.data[start : start + length])))
    return BackendDelegate(
        id=table.string(BackendDelegateSlot.ID, "BackendDelegate.id") or "",
        location=location,
        index=index,
        compile_specs=tuple(specs),
    )


def _decode_value(table: Table) -> EValue:
    tag, val = table.union(EValueSlot.VAL, "EValue.val")
    kind = VALUE_KINDS.get(tag, f"Unknown({tag})")
    if val is None:
        return Value(kind if tag else "None")
    if tag == KernelTypes.TENSOR:
        return _decode_tensor(val)
    if tag == KernelTypes.INT:
        return Value(kind, val.scalar(ScalarBoxSlot.VALUE, Int64sl, what="Int.int_val"))
    if tag == KernelTypes.BOOL:
        return Value(kind, bool(val.scalar(ScalarBoxSlot.VALUE, Int8ul, what="Bool.bool_val")))
    if tag == KernelTypes.DOUBLE:
        return Value(kind, val.scalar(ScalarBoxSlot.VALUE, Float64l, what="Double.double_val"))
    if tag == KernelTypes.STRING:
        return Value(kind, val.string(ScalarBoxSlot.VALUE, "String.string_val") or "")
    if tag == KernelTypes.INT_LIST:
        return Value(kind, val.scalar_vector(ListSlot.ITEMS, Int64sl, "IntList.items"))
    if tag == KernelTypes.DOUBLE_LIST:
        return Value(kind, val.scalar_vector(ListSlot.ITEMS, Float64l, "DoubleList.items"))
    if tag == KernelTypes.BOOL_LIST:
        items = val.scalar_vector(ListSlot.ITEMS, Int8ul, "BoolList.items")
        return Value(kind, tuple(bool(b) for b in items))
    if tag in (KernelTypes.TENSOR_LIST, KernelTypes.OPTIONAL_TENSOR_LIST):
        return Value(kind, val.scalar_vector(ListSlot.ITEMS, Int32sl, f"{kind}.items"))
    return Value(kind)


def _decode_tensor(t: Table) -> Tensor:
    memory_id = memory_offset = None
    alloc = t.table(TensorSlot.ALLOCATION_INFO, "Tensor.allocation_info")
    if alloc is not None:
        memory_id = alloc.scalar(
            AllocationDetailsSlot.MEMORY_ID, Int32ul, what="AllocationDetails.memory_id"
        )
        low = alloc.scalar(
            AllocationDetailsSlot.MEMORY_OFFSET_LOW,
            Int32ul,
            what="AllocationDetails.memory_offset_low",
        )
        high = alloc.scalar(
            AllocationDetailsSlot.MEMORY_OFFSET_HIGH,
            Int32ul,
            what="AllocationDetails.memory_offset_high",
        )
        memory_offset = low | (high << 32)
    external_name = None
    external = False
    device_type = device_index = 0
    extra = t.table(TensorSlot.EXTRA_TENSOR_INFO, "Tensor.extra_tensor_info")
    if extra is not None:
        device_type = extra.scalar(
            ExtraTensorInfoSlot.DEVICE_TYPE, Int8sl, what="ExtraTensorInfo.device_type"
        )
        device_index = extra.scalar(
            ExtraTensorInfoSlot.DEVICE_INDEX, Int8sl, what="ExtraTensorInfo.device_index"
        )
        external_name = extra.string(
            ExtraTensorInfoSlot.FULLY_QUALIFIED_NAME, "ExtraTensorInfo.fully_qualified_name"
        )
        external = (
            extra.scalar(ExtraTensorInfoSlot.LOCATION, Int8sl, what="ExtraTensorInfo.location")
            == TensorDataLocation.EXTERNAL
        )
    return Tensor(
        scalar_type=t.scalar(TensorSlot.SCALAR_TYPE, Int8sl, what="Tensor.scalar_type"),
        storage_offset=t.scalar(TensorSlot.STORAGE_OFFSET, Int32sl, what="Tensor.storage_offset"),
        sizes=t.scalar_vector(TensorSlot.SIZES, Int32sl, "Tensor.sizes"),
        dim_order=t.scalar_vector(TensorSlot.DIM_ORDER, Int8ul, "Tensor.dim_order"),
        requires_grad=bool(t.scalar(TensorSlot.REQUIRES_GRAD, Int8ul, what="Tensor.requires_grad")),
        data_buffer_idx=t.scalar(
            TensorSlot.DATA_BUFFER_IDX, Int32ul, what="Tensor.data_buffer_idx"
        ),
        memory_id=memory_id,
        memory_offset=memory_offset,
        layout=t.scalar(TensorSlot.LAYOUT, Int8sl, what="Tensor.layout"),
        shape_dynamism=t.scalar(TensorSlot.SHAPE_DYNAMISM, Int8sl, what="Tensor.shape_dynamism"),
        external_name=external_name,
        external=external,
        device_type=device_type,
        device_index=device_index,
    )
