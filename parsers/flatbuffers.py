"""A small, bounds-checked FlatBuffers reader.

FlatBuffers are read through vtables: a table starts with an int32 offset back to its
vtable, and the vtable lists where each field slot lives inside the table. This reader
implements exactly that, plus vectors, strings and unions, with every position checked
against the end of the buffer. Scalar kinds are construct's format fields, so a schema
reads as a declaration (``table.scalar(0, Int8sl)``) while each read stays one
``struct.unpack_from`` call: a 100k-value program decodes in a fraction of a second.
"""

from __future__ import annotations

import mmap
import struct
from functools import cache

from construct import FormatField, Int8ul, Int32ul

from etu.parsers.errors import FormatError, TruncatedError

BufferLike = bytes | bytearray | memoryview | mmap.mmap

_U16 = struct.Struct("<H")
_U32 = struct.Struct("<I")
_I32 = struct.Struct("<i")


@cache
def _struct_for(kind: FormatField) -> struct.Struct:
    return struct.Struct(kind.fmtstr)


class FlatBuffer:
    """Bytes holding one FlatBuffer, readable in ``[0, limit)`` only."""

    __slots__ = ("data", "limit")

    def __init__(self, data: BufferLike, limit: int | None = None) -> None:
        self.data = memoryview(data).cast("B") if not isinstance(data, bytes) else data
        size = len(self.data)
        self.limit = size if limit is None else min(limit, size)

    def check(self, position: int, length: int, what: str) -> None:
        if position < 0 or length < 0 or position + length > self.limit:
            raise TruncatedError(
                f"{length} bytes needed but the data ends at {self.limit:#x}",
                field=what,
                offset=position,
            )

    def unpack(self, fmt: struct.Struct, position: int, what: str):
        self.check(position, fmt.size, what)
        return fmt.unpack_from(self.data, position)[0]

    def uoffset_target(self, position: int, what: str) -> int:
        """Follow the uint32 offset stored at ``position`` (relative to itself)."""
        target = position + self.unpack(_U32, position, what)
        if target >= self.limit:
            raise TruncatedError(
                f"offset points to {target:#x}, past the end ({self.limit:#x})",
                field=what,
                offset=position,
            )
        return target

    def root(self, what: str = "root table") -> Table:
        return Table(self, self.uoffset_target(0, what), what)


class Table:
    """One FlatBuffers table: field slots resolved through its vtable."""

    __slots__ = ("buf", "name", "position", "vtable", "vtable_size")

    def __init__(self, buf: FlatBuffer, position: int, name: str) -> None:
        self.buf = buf
        self.name = name
        self.position = position
        vtable = position - buf.unpack(_I32, position, f"{name} vtable offset")
        vtable_size = buf.unpack(_U16, vtable, f"{name} vtable size")
        if vtable_size < 4 or vtable_size % 2:
            raise FormatError(f"vtable size {vtable_size} is invalid", field=name, offset=vtable)
        buf.check(vtable, vtable_size, f"{name} vtable")
        self.vtable = vtable
        self.vtable_size = vtable_size

    def field_position(self, slot: int) -> int | None:
        """Absolute position of slot ``slot``, or None when the field is absent."""
        entry = 4 + 2 * slot
        if entry + 2 > self.vtable_size:
            return None
        relative = _U16.unpack_from(self.buf.data, self.vtable + entry)[0]
        return self.position + relative if relative else None

    def has(self, slot: int) -> bool:
        return self.field_position(slot) is not None

    def scalar(self, slot: int, kind: FormatField, default: int | float | bool = 0, what: str = ""):
        position = self.field_position(slot)
        if position is None:
            return default
        return self.buf.unpack(_struct_for(kind), position, what or f"{self.name} slot {slot}")

    def _target(self, slot: int, what: str) -> int | None:
        position = self.field_position(slot)
        if position is None:
            return None
        return self.buf.uoffset_target(position, what or f"{self.name} slot {slot}")

    def table(self, slot: int, name: str) -> Table | None:
        target = self._target(slot, name)
        return None if target is None else Table(self.buf, target, name)

    def vector_span(self, slot: int, element_size: int, what: str) -> tuple[int, int]:
        """(first element position, count) of a vector field; (0, 0) when absent."""
        target = self._target(slot, what)
        if target is None:
            return 0, 0
        count = self.buf.unpack(_U32, target, f"{what} length")
        self.buf.check(target + 4, count * element_size, f"{what} ({count} elements)")
        return target + 4, count

    def scalar_vector(self, slot: int, kind: FormatField, what: str) -> tuple:
        start, count = self.vector_span(slot, kind.length, what)
        if not count:
            return ()
        return struct.unpack_from(f"<{count}{kind.fmtstr[-1]}", self.buf.data, start)

    def bytes_span(self, slot: int, what: str) -> tuple[int, int]:
        """(position, length) of a ``[ubyte]`` field, without reading its bytes."""
        return self.vector_span(slot, 1, what)

    def table_vector(self, slot: int, name: str) -> list[Table]:
        start, count = self.vector_span(slot, Int32ul.length, f"{name} vector")
        buf = self.buf
        return [
            Table(buf, buf.uoffset_target(start + 4 * i, f"{name}[{i}]"), f"{name}[{i}]")
            for i in range(count)
        ]

    def string(self, slot: int, what: str = "") -> str | None:
        what = what or f"{self.name} slot {slot}"
        start, length = self.vector_span(slot, 1, what)
        if not start:
            return None
        return bytes(self.buf.data[start : start + length]).decode("utf-8", "replace")

    def union(self, type_slot: int, name: str) -> tuple[int, Table | None]:
        """A union is two slots: the type tag, then the table it refers to."""
        tag = self.scalar(type_slot, Int8ul, what=f"{name} type")
        if tag == 0:
            return 0, None
        return tag, self.table(type_slot + 1, name)


__all__ = ["FlatBuffer", "Table"]
