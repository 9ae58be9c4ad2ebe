"""ExecuTorch's external data file (``.ptd``, FlatTensor): named blobs a program refers to by
key, such as the Ethos-U command stream and weights an external-block lowering moved out of
the ``.pte``.

Layout (``extension/flat_tensor/serialize/{flat_tensor.fbs,serialize.py}``): a FlatBuffer
(root offset, identifier ``FT01``) with a 40-byte header at offset 8 (magic ``FH01``,
length, flatbuffer offset and size, segment base offset, segment data size), then the
segments. The root ``FlatTensor`` lists the segments and the named data (key, segment
index, optional tensor layout). Like :mod:`etu.parsers.pte`, every offset is checked against
the file before it is used, and segment bytes are read only when asked for.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from enum import IntEnum
from pathlib import Path

from construct import Bytes, Int8sl, Int8ul, Int32sl, Int32ul, Int64ul, Struct

from etu.parsers.errors import (
    FormatError,
    ParseError,
    TruncatedError,
    WrongKindError,
    as_parse_errors,
)
from etu.parsers.files import GiB, MiB, open_regular
from etu.parsers.flatbuffers import BufferLike, FlatBuffer, Table
from etu.parsers.pte_schema import SCALAR_TYPES, DataSegmentSlot

DATA_FILE_IDENTIFIER = "FT01"
DATA_FILE_SUFFIX = ".ptd"
HEADER_MAGIC = b"FH01"
HEADER = Struct(
    "magic" / Bytes(4),
    "length" / Int32ul,
    "flatbuffer_offset" / Int64ul,
    "flatbuffer_size" / Int64ul,
    "segment_base_offset" / Int64ul,
    "segment_data_size" / Int64ul,
)
HEADER_OFFSET = 8
HEADER_LENGTH = HEADER.sizeof()  # 40
FLAT_TENSOR_VERSION = 0  # what ExecuTorch 1.5 writes; a newer file is read, with a warning
WHAT = "an ExecuTorch data file (.ptd)"
READ_WHOLE_BELOW = 64 * MiB  # larger files keep their segments on disk until asked for
HEAD_LIMIT = 256 * MiB


class FlatTensorSlot(IntEnum):
    VERSION = 0
    SEGMENTS = 1
    NAMED_DATA = 2


class FlatTensorNamedDataSlot(IntEnum):
    KEY = 0
    SEGMENT_INDEX = 1
    TENSOR_LAYOUT = 2


class TensorLayoutSlot(IntEnum):
    SCALAR_TYPE = 0
    SIZES = 1
    DIM_ORDER = 2


@dataclass(frozen=True, slots=True)
class DataHeader:
    length: int
    flatbuffer_offset: int
    flatbuffer_size: int
    segment_base_offset: int
    segment_data_size: int


@dataclass(frozen=True, slots=True)
class TensorLayout:
    scalar_type: int
    sizes: tuple[int, ...]
    dim_order: tuple[int, ...]

    @property
    def dtype(self) -> str:
        return SCALAR_TYPES.get(self.scalar_type, (f"ScalarType({self.scalar_type})", 0))[0]

    def to_json(self) -> dict:
        return {"dtype": self.dtype, "sizes": list(self.sizes), "dim_order": list(self.dim_order)}


@dataclass(frozen=True, slots=True)
class DataEntry:
    """One named blob: ``offset`` is absolute in the file, ``size`` its bytes."""

    key: str
    segment_index: int
    offset: int
    size: int
    layout: TensorLayout | None = None

    def to_json(self) -> dict:
        return {
            "key": self.key,
            "segment_index": self.segment_index,
            "offset": self.offset,
            "size": self.size,
            "tensor_layout": self.layout.to_json() if self.layout else None,
        }


@dataclass(slots=True)
class DataFile:
    """A decoded ``.ptd``. Segment bytes are in ``data`` for a small file, else read from
    ``source`` when asked for (the file must still have the size it was decoded with)."""

    source: str
    file_size: int
    header: DataHeader
    version: int
    segments: list[tuple[int, int]]  # (absolute offset, size)
    entries: list[DataEntry]
    data: BufferLike | None = field(default=None, repr=False)
    warnings: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return Path(self.source).name

    @property
    def tag(self) -> str:
        """The placement tag ExecuTorch names the file after (``TAG.ptd``)."""
        return Path(self.source).stem

    def entry(self, key: str) -> DataEntry | None:
        for entry in self.entries:
            if entry.key == key:
                return entry
        return None

    def read(self, entry: DataEntry) -> bytes:
        """The blob's bytes (bounds were checked when the file was decoded)."""
        if self.data is not None:
            return bytes(memoryview(self.data)[entry.offset : entry.offset + entry.size])
        fd, size = open_regular(self.source, WHAT, 64 * GiB)
        try:
            if size != self.file_size:
                raise ParseError(
                    f"file changed while read (was {self.file_size:,} bytes, now {size:,})",
                    source=self.source,
                )
            chunk = os.pread(fd, entry.size, entry.offset)
        except OSError as error:
            raise ParseError(error.strerror or str(error), source=self.source) from None
        finally:
            os.close(fd)
        if len(chunk) != entry.size:
            raise ParseError("file changed while read (came back short)", source=self.source)
        return chunk

    def to_json(self) -> dict:
        """The ``etu inspect --json`` record of a ``.ptd`` (field names are a contract)."""
        header = self.header
        return {
            "file": self.source,
            "file_size": self.file_size,
            "file_identifier": DATA_FILE_IDENTIFIER,
            "kind": "data",
            "version": self.version,
            "header": {
                "length": header.length,
                "flatbuffer_offset": header.flatbuffer_offset,
                "flatbuffer_size": header.flatbuffer_size,
                "segment_base_offset": header.segment_base_offset,
                "segment_data_size": header.segment_data_size,
            },
            "segments": [{"offset": o, "size": s} for o, s in self.segments],
            "named_data": [entry.to_json() for entry in self.entries],
            "warnings": list(self.warnings),
        }


def is_data_file(head: bytes) -> bool:
    """Whether the first bytes of a file are a ``.ptd``'s (identifier ``FT01``)."""
    return head[4:8] == DATA_FILE_IDENTIFIER.encode()


def open_data_file(path: str | os.PathLike[str]) -> DataFile:
    """Read and decode the ``.ptd`` at ``path``. Raises ParseError naming the file."""
    source = os.fsdecode(path)
    fd, size = open_regular(path, WHAT, 64 * GiB)
    try:
        if size == 0:
            raise WrongKindError(f"empty file (0 bytes), not {WHAT}", source=source)
        whole = size < READ_WHOLE_BELOW
        if whole:
            data = _pread_exactly(fd, size, 0, source)
        else:
            first = _pread_exactly(fd, min(size, HEADER_OFFSET + HEADER_LENGTH), 0, source)
            with as_parse_errors(source):
                header = _decode_header(first, size)
            head_size = header.flatbuffer_offset + header.flatbuffer_size
            if head_size > HEAD_LIMIT:
                raise FormatError(
                    f"flatbuffer of {head_size:,} bytes is larger than etu reads",
                    field="header flatbuffer_size",
                    offset=HEADER_OFFSET + 16,
                    source=source,
                )
            data = _pread_exactly(fd, head_size, 0, source)
    except OSError as error:
        raise ParseError(error.strerror or str(error), source=source) from None
    finally:
        os.close(fd)
    decoded = decode_data_file(data, source, file_size=size)
    if not whole:
        decoded.data = None
    return decoded


def decode_data_file(data: BufferLike, source: str = "<bytes>", *, file_size: int | None = None
                     ) -> DataFile:  # fmt: skip
    """Decode a ``.ptd`` from bytes: the whole file, or (``file_size`` given) its first
    ``flatbuffer_offset + flatbuffer_size`` bytes. Raises ParseError naming ``source``."""
    with as_parse_errors(source):
        return _decode(memoryview(data), source, len(data) if file_size is None else file_size)


def _pread_exactly(fd: int, size: int, offset: int, source: str) -> bytes:
    chunks, done = [], 0
    while done < size:
        chunk = os.pread(fd, min(size - done, 8 * MiB), offset + done)
        if not chunk:
            raise ParseError(f"file changed while read (shrank to {offset + done:,} bytes)",
                             source=source)  # fmt: skip
        chunks.append(chunk)
        done += len(chunk)
    return b"".join(chunks)


def _decode_header(view: BufferLike, file_size: int) -> DataHeader:
    available = len(view)
    if available < 8:
        raise TruncatedError(
            f"file is {available} bytes; a .ptd starts with 8 bytes of root offset and "
            "file identifier",
            field="file identifier",
            offset=0,
        )
    ident = bytes(view[4:8])
    if ident != DATA_FILE_IDENTIFIER.encode():
        raise WrongKindError(
            f"file identifier {ident!r}, expected b'FT01': not {WHAT}",
            field="file identifier",
            offset=4,
        )
    raw = bytes(view[HEADER_OFFSET : HEADER_OFFSET + HEADER_LENGTH])
    if len(raw) < HEADER_LENGTH:
        raise TruncatedError(
            f"the FH01 header needs {HEADER_LENGTH} bytes, {len(raw)} are left",
            field="header",
            offset=HEADER_OFFSET,
        )
    parsed = HEADER.parse(raw)
    if parsed.magic != HEADER_MAGIC:
        raise FormatError(
            f"header magic {parsed.magic!r}, expected {HEADER_MAGIC!r}",
            field="header magic",
            offset=HEADER_OFFSET,
        )
    if parsed.length < HEADER_LENGTH:
        raise FormatError(
            f"header length {parsed.length}, expected at least {HEADER_LENGTH}",
            field="header length",
            offset=HEADER_OFFSET + 4,
        )
    header = DataHeader(
        parsed.length,
        parsed.flatbuffer_offset,
        parsed.flatbuffer_size,
        parsed.segment_base_offset,
        parsed.segment_data_size,
    )
    flat_end = header.flatbuffer_offset + header.flatbuffer_size
    if header.flatbuffer_offset < HEADER_OFFSET + HEADER_LENGTH or flat_end > file_size:
        raise TruncatedError(
            f"flatbuffer at {header.flatbuffer_offset:#x}+{header.flatbuffer_size:,} does not "
            f"fit the {file_size:,}-byte file",
            field="header flatbuffer_offset",
            offset=HEADER_OFFSET + 8,
        )
    if header.segment_base_offset and header.segment_base_offset < flat_end:
        raise FormatError(
            f"segment_base_offset {header.segment_base_offset:#x} lies inside the flatbuffer "
            f"(which ends at {flat_end:#x})",
            field="header segment_base_offset",
            offset=HEADER_OFFSET + 24,
        )
    segments_end = header.segment_base_offset + header.segment_data_size
    if segments_end > file_size:
        raise TruncatedError(
            f"file is too small: the header expects {segments_end:,} bytes, the file has "
            f"{file_size:,}",
            field="header segment_data_size",
            offset=HEADER_OFFSET + 32,
        )
    return header


def _decode(view: memoryview, source: str, file_size: int) -> DataFile:
    header = _decode_header(view, file_size)
    flat_end = header.flatbuffer_offset + header.flatbuffer_size
    if len(view) < flat_end:
        raise TruncatedError(
            f"flatbuffer ends at {flat_end:#x}, past the {len(view):,} bytes read",
            field="header flatbuffer_size",
            offset=HEADER_OFFSET + 16,
        )
    buf = FlatBuffer(view, flat_end)
    root = buf.root("FlatTensor")
    version = root.scalar(FlatTensorSlot.VERSION, Int32ul, what="FlatTensor.version")
    base, data_size = header.segment_base_offset, header.segment_data_size
    segments: list[tuple[int, int]] = []
    for index, table in enumerate(root.table_vector(FlatTensorSlot.SEGMENTS, "segments")):
        offset = table.scalar(DataSegmentSlot.OFFSET, Int64ul, what="DataSegment.offset")
        size = table.scalar(DataSegmentSlot.SIZE, Int64ul, what="DataSegment.size")
        if offset + size > data_size:
            raise TruncatedError(
                f"segment {index} ({size:,} bytes at base+{offset:#x}) ends past the "
                f"{data_size:,} bytes of segment data",
                field=f"segments[{index}]",
                offset=base + offset,
            )
        segments.append((base + offset, size))
    entries = []
    seen: set[str] = set()
    warnings = []
    if version > FLAT_TENSOR_VERSION:
        warnings.append(f"FlatTensor version {version} is newer than ExecuTorch 1.5 writes "
                        f"({FLAT_TENSOR_VERSION})")  # fmt: skip
    for index, table in enumerate(root.table_vector(FlatTensorSlot.NAMED_DATA, "named_data")):
        key = table.string(FlatTensorNamedDataSlot.KEY, f"named_data[{index}].key") or ""
        segment = table.scalar(FlatTensorNamedDataSlot.SEGMENT_INDEX, Int32ul,
                               what=f"named_data[{index}].segment_index")  # fmt: skip
        if segment >= len(segments):
            raise FormatError(
                f"named_data[{index}] {key[:80]!r} points at segment {segment}, but the file "
                f"has {len(segments)}",
                field=f"named_data[{index}].segment_index",
                offset=table.position,
            )
        if key in seen:
            warnings.append(f"key {key[:80]!r} appears more than once (the first is used)")
        seen.add(key)
        layout_table = table.table(FlatTensorNamedDataSlot.TENSOR_LAYOUT, "TensorLayout")
        offset, size = segments[segment]
        entries.append(DataEntry(key, segment, offset, size, _layout(layout_table)))
    return DataFile(
        source=source,
        file_size=file_size,
        header=header,
        version=version,
        segments=segments,
        entries=entries,
        data=view,
        warnings=warnings,
    )


def _layout(table: Table | None) -> TensorLayout | None:
    if table is None:
        return None
    return TensorLayout(
        table.scalar(TensorLayoutSlot.SCALAR_TYPE, Int8sl, what="TensorLayout.scalar_type"),
        table.scalar_vector(TensorLayoutSlot.SIZES, Int32sl, "TensorLayout.sizes"),
        table.scalar_vector(TensorLayoutSlot.DIM_ORDER, Int8ul, "TensorLayout.dim_order"),
    )


__all__ = [
    "DataEntry",
    "DataFile",
    "TensorLayout",
    "decode_data_file",
    "is_data_file",
    "open_data_file",
]
