"""The typed model of a decoded ExecuTorch ``.pte`` program: its values, instructions and
tables, and the :class:`Program` that reads its bulk data when asked.

Decoding and opening a file is :mod:`etu.parsers.pte`, which fills these in: the decoder
depends on the model, never the other way round. The file a large program keeps open for its
segments (:class:`OpenFile`) is here because the :class:`Program` owns it, reads through it
and closes it.
"""

from __future__ import annotations

import contextlib
import mmap
import os
from dataclasses import dataclass, field

from etu.parsers.errors import FormatError, ParseError, TruncatedError
from etu.parsers.files import MiB
from etu.parsers.flatbuffers import BufferLike
from etu.parsers.pte_schema import (
    DATA_LOCATIONS,
    INLINE,
    SCALAR_TYPES,
    SHAPE_DYNAMISM,
    DeviceType,
    device_name,
)

# --------------------------------------------------------------------------- values


@dataclass(frozen=True, slots=True)
class Tensor:
    scalar_type: int
    sizes: tuple[int, ...]
    dim_order: tuple[int, ...]
    shape_dynamism: int = 0
    data_buffer_idx: int = 0
    memory_id: int | None = None
    memory_offset: int | None = None
    storage_offset: int = 0
    requires_grad: bool = False
    layout: int = 0
    external_name: str | None = None
    external: bool = False
    device_type: int = 0  # ExtraTensorInfo.device_type (DeviceType; CPU when absent)
    device_index: int = 0

    kind = "Tensor"

    @property
    def device(self) -> str:
        """``cpu``, ``cuda``, ``cuda:1``: where the program asks for the tensor to live."""
        return device_name(self.device_type, self.device_index)

    @property
    def dtype(self) -> str:
        return SCALAR_TYPES.get(self.scalar_type, (f"ScalarType({self.scalar_type})", 0))[0]

    @property
    def element_size(self) -> int:
        return SCALAR_TYPES.get(self.scalar_type, ("", 0))[1]

    @property
    def numel(self) -> int:
        n = 1
        for s in self.sizes:
            n *= max(s, 0)
        return n

    @property
    def nbytes(self) -> int:
        return self.numel * self.element_size

    @property
    def is_planned(self) -> bool:
        return self.memory_id is not None

    @property
    def is_constant(self) -> bool:
        return self.data_buffer_idx > 0 and self.memory_id is None

    @property
    def storage(self) -> str:
        """Where the data comes from at run time (program.fbs' tensor data rule)."""
        if self.external:
            return "external"
        if self.memory_id is None:
            return "constant" if self.data_buffer_idx else "input"
        return "mutable" if self.data_buffer_idx else "planned"

    @property
    def dynamism(self) -> str:
        return SHAPE_DYNAMISM.get(self.shape_dynamism, str(self.shape_dynamism))


@dataclass(frozen=True, slots=True)
class Value:
    """Any EValue that is not a tensor: Int, Bool, Double, String, the lists, Null."""

    kind: str
    payload: object = None


EValue = Tensor | Value


# ----------------------------------------------------------------------- instructions


@dataclass(frozen=True, slots=True)
class KernelCall:
    op_index: int
    args: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class DelegateCall:
    delegate_index: int
    args: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class MoveCall:
    move_from: int
    move_to: int


@dataclass(frozen=True, slots=True)
class JumpFalseCall:
    cond_value_index: int
    destination_instruction: int


@dataclass(frozen=True, slots=True)
class FreeCall:
    value_index: int


@dataclass(frozen=True, slots=True)
class UnknownInstruction:
    type_code: int


Instruction = KernelCall | DelegateCall | MoveCall | JumpFalseCall | FreeCall | UnknownInstruction


# ------------------------------------------------------------------ plan-level tables


@dataclass(frozen=True, slots=True)
class Operator:
    name: str
    overload: str

    @property
    def qualified_name(self) -> str:
        """The runtime's registry key: ``name.overload``, or ``name`` without overload."""
        return f"{self.name}.{self.overload}" if self.overload else self.name


@dataclass(frozen=True, slots=True)
class CompileSpec:
    key: str
    value: bytes

    @property
    def text(self) -> str:
        """The value as text where it is printable, else as hex."""
        try:
            decoded = self.value.decode("utf-8")
        except UnicodeDecodeError:
            return self.value.hex()
        return decoded if decoded.isprintable() else self.value.hex()


@dataclass(frozen=True, slots=True)
class BackendDelegate:
    id: str
    location: int
    index: int
    compile_specs: tuple[CompileSpec, ...]

    @property
    def location_name(self) -> str:
        return DATA_LOCATIONS.get(self.location, f"unknown({self.location})")

    def spec(self, key: str) -> str | None:
        for spec in self.compile_specs:
            if spec.key == key:
                return spec.text
        return None


@dataclass(frozen=True, slots=True)
class Chain:
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    instructions: tuple[Instruction, ...]


@dataclass(frozen=True, slots=True)
class BufferDevice:
    """``NonConstBufferDevice``: the device a planned buffer (``buffer_idx`` indexes
    ``non_const_buffer_sizes``) is to be allocated on."""

    buffer_idx: int
    device_type: int = 0
    device_index: int = 0

    @property
    def device(self) -> str:
        return device_name(self.device_type, self.device_index)

    @property
    def is_cpu(self) -> bool:
        return self.device_type == DeviceType.CPU


@dataclass(slots=True)
class ExecutionPlan:
    name: str
    values: list[EValue]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    chains: list[Chain]
    operators: list[Operator]
    delegates: list[BackendDelegate]
    non_const_buffer_sizes: tuple[int, ...]
    # absent (empty) in CPU-only programs and in every program before ExecuTorch 2026-05
    non_const_buffer_device: tuple[BufferDevice, ...] = ()
    instructions: list[Instruction] = field(init=False)

    def __post_init__(self) -> None:
        # Every chain's instructions in order; computed once, views iterate it a lot.
        self.instructions = [instr for chain in self.chains for instr in chain.instructions]


# --------------------------------------------------------------- program-level tables


@dataclass(frozen=True, slots=True)
class ExtendedHeader:
    length: int
    program_size: int
    segment_base_offset: int
    segment_data_size: int


@dataclass(frozen=True, slots=True)
class Span:
    """A byte range of the file: ``offset`` is absolute."""

    offset: int
    size: int


@dataclass(frozen=True, slots=True)
class DataSegment:
    offset: int  # relative to the segment base, as stored
    size: int


@dataclass(frozen=True, slots=True)
class SubsegmentOffsets:
    segment_index: int
    offsets: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class NamedData:
    key: str
    segment_index: int


@dataclass(slots=True)
class Program:
    """A decoded program. Bulk data stays in ``data`` (or, for a large file, on disk) until
    asked for."""

    source: str
    file_size: int
    file_identifier: str
    extended_header: ExtendedHeader | None
    version: int
    plans: list[ExecutionPlan]
    segments: list[DataSegment]
    constant_segment: SubsegmentOffsets | None
    constant_buffers: list[Span]
    delegate_data: list[Span]
    mutable_data_segments: list[SubsegmentOffsets]
    named_data: list[NamedData]
    data: BufferLike = field(repr=False)
    bundled: bool = False
    program_offset: int = 0
    warnings: list[str] = field(default_factory=list)
    _closer: object = field(default=None, repr=False)
    _closed: bool = field(default=False, repr=False)
    # what is worked out from the decoded program once (its delegates' payloads, decoded
    # by parsers.program_facts.delegates), for the several views of one file
    derived: dict = field(default_factory=dict, repr=False, compare=False)

    # -- segments and bulk data (read only when asked) -------------------------------

    @property
    def segment_base(self) -> int | None:
        header = self.extended_header
        return header.segment_base_offset if header and header.segment_base_offset else None

    def segment_span(self, index: int) -> Span:
        """Absolute file range of segment ``index`` (segments need an extended header)."""
        base = self.segment_base
        if base is None:
            raise FormatError(
                f"segment {index} requested but the file has no extended header",
                field="segments",
                source=self.source,
            )
        if not 0 <= index < len(self.segments):
            raise FormatError(
                f"segment {index} requested but the program has {len(self.segments)}",
                field="segments",
                source=self.source,
            )
        segment = self.segments[index]
        return Span(self.program_offset + base + segment.offset, segment.size)

    @property
    def segment_spans(self) -> list[Span]:
        """Segments as absolute file ranges; empty when there is no extended header."""
        if self.segment_base is None:
            return []
        return [self.segment_span(i) for i in range(len(self.segments))]

    def read(self, span: Span) -> memoryview:
        """Bytes of ``span`` (already bounds-checked when the program was opened)."""
        if self._closed:
            raise ParseError("the program was closed; reopen it to read data", source=self.source)
        if isinstance(self._closer, OpenFile):  # a large program: its segments, read now
            return memoryview(self._closer.pread(span.offset, span.size, self.source))
        return memoryview(self.data)[span.offset : span.offset + span.size]

    def delegate_span(self, delegate: BackendDelegate) -> Span:
        if delegate.location == INLINE:
            return self.delegate_data[delegate.index]
        return self.segment_span(delegate.index)

    def delegate_payload(self, delegate: BackendDelegate) -> memoryview:
        return self.read(self.delegate_span(delegate))

    def constant_span(self, tensor: Tensor) -> Span | None:
        """Where a constant tensor's bytes are in the file, or None if not in this file."""
        if not tensor.is_constant or tensor.external:
            return None
        index = tensor.data_buffer_idx
        segment = self.constant_segment
        if segment is not None and self.segment_base is not None:
            if index >= len(segment.offsets):
                raise FormatError(
                    f"constant {index} is past the {len(segment.offsets)} offsets",
                    field="constant_segment.offsets",
                    source=self.source,
                )
            whole = self.segment_span(segment.segment_index)
            start = whole.offset + segment.offsets[index]
            if start + tensor.nbytes > whole.offset + whole.size:
                raise TruncatedError(
                    f"constant {index} ({tensor.nbytes} bytes) runs past its segment",
                    field="constant_segment",
                    offset=start,
                    source=self.source,
                )
            return Span(start, tensor.nbytes)
        if index < len(self.constant_buffers):
            return self.constant_buffers[index]
        raise FormatError(
            f"constant {index} is past the {len(self.constant_buffers)} constant buffers",
            field="constant_buffer",
            source=self.source,
        )

    def constant_data(self, tensor: Tensor) -> memoryview | None:
        span = self.constant_span(tensor)
        return None if span is None else self.read(span)

    # -- totals --------------------------------------------------------------------

    @property
    def constant_segment_size(self) -> int:
        segment = self.constant_segment
        if segment is None or self.segment_base is None:
            return 0
        if segment.segment_index >= len(self.segments):
            return 0
        return self.segments[segment.segment_index].size

    @property
    def constant_buffer_size(self) -> int:
        return sum(span.size for span in self.constant_buffers)

    @property
    def constant_data_size(self) -> int:
        return self.constant_segment_size + self.constant_buffer_size

    def close(self) -> None:
        """Unmap the file; views the caller still holds keep it mapped until dropped."""
        closer, self._closer = self._closer, None
        data, self.data = self.data, b""
        self._closed = True
        if isinstance(data, memoryview):
            data.release()
        if isinstance(closer, OpenFile):
            closer.close()
        elif closer is not None:
            close_mapping(closer)

    def __enter__(self) -> Program:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# ------------------------------------------------------------ the file a program reads

CHANGED = "file changed while read"


def file_changed(before: os.stat_result, after: os.stat_result) -> bool:
    """Whether the file's size or mtime moved between two looks: a read saw two files."""
    return (before.st_size, before.st_mtime_ns) != (after.st_size, after.st_mtime_ns)


class OpenFile:
    """A large program file kept open for its segments, with the size/mtime it had."""

    def __init__(self, fd: int, info: os.stat_result) -> None:
        self.fd = fd
        self.info = info

    def check(self, source: str) -> None:
        """Raise ParseError if the file no longer has the size and mtime it was read with."""
        try:
            now = os.fstat(self.fd)
        except OSError:
            raise ParseError(CHANGED, source=source) from None
        if file_changed(self.info, now):
            raise ParseError(
                f"{CHANGED} (was {self.info.st_size:,} bytes, now {now.st_size:,})", source=source
            )

    def pread(self, offset: int, size: int, source: str) -> bytes:
        """``size`` bytes at ``offset``, or ParseError when the file changed or came back
        short (a read past a shrunk file's end returns less; it never faults)."""
        self.check(source)
        chunks: list[bytes] = []
        done = 0
        while done < size:
            try:
                chunk = os.pread(self.fd, min(size - done, 64 * MiB), offset + done)
            except OSError as error:
                raise ParseError(error.strerror or str(error), source=source) from None
            if not chunk:
                raise ParseError(f"{CHANGED} (shrank below {offset + done:,} bytes)", source=source)
            chunks.append(chunk)
            done += len(chunk)
        self.check(source)
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.fd)


def close_mapping(mapped: mmap.mmap) -> None:
    # A view may still be alive (an exception's frames, a caller's slice): GC unmaps it.
    with contextlib.suppress(BufferError):
        mapped.close()
