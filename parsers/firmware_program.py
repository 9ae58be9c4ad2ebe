"""The program baked into a firmware ELF (the runner's ``model_pte``), found and decoded.

The runner links the ``.pte`` bytes into its image as the ``model_pte`` array. It is found
by that symbol (the memory map's ``model_pte`` pool), else by scanning the ELF's allocated
sections with file contents for a FlatBuffer whose identifier is ``ET12`` (a program) or
``BPxx`` (a bundled program). Every offset is checked against the section it is in; the bytes
are copied out, so the ELF can be closed at once.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass

from etu.parsers.errors import ParseError, WrongKindError
from etu.parsers.pte import Program, decode_program

_IDENTIFIER = re.compile(rb"ET12|BP\d\d")
MAX_CANDIDATES = 64  # identifiers tried per ELF before giving up (a hostile ELF has many)


@dataclass(frozen=True, slots=True)
class EmbeddedProgram:
    """Where the program is in the firmware and its bytes."""

    section: str
    address: int  # its load address
    file_offset: int  # where its bytes are in the ELF file
    data: bytes
    found_by: str  # "model_pte" (the symbol) or "scan"

    def to_json(self) -> dict:
        """The ``firmware`` field of ``etu inspect --json FIRMWARE.elf``."""
        return {
            "section": self.section,
            "address": self.address,
            "file_offset": self.file_offset,
            "size": len(self.data),
            "found_by": self.found_by,
        }


def is_elf(path: str | os.PathLike[str]) -> bool:
    """True when ``path`` is a regular file starting with the ELF magic. Never blocks: a
    FIFO or a device is not opened for reading (the caller's reader refuses it)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        return os.pread(fd, 4, 0) == b"\x7fELF"
    except OSError:
        return False
    finally:
        os.close(fd)


def find_embedded_program(path: str | os.PathLike[str]) -> EmbeddedProgram | None:
    """The program baked into the ELF at ``path``; None when there is none.
    Raises ParseError when the ELF itself cannot be read."""
    from etu.parsers.elf_map import read_elf
    from etu.parsers.memory_map import build_memory_map

    with read_elf(path) as image:
        try:
            pool = build_memory_map(image).pools.get("model_pte")
        except ParseError:
            pool = None
        if pool is not None and pool.size:
            data = image.read_bytes(pool.address, pool.size)
            section = image.section_at(pool.address)
            if data and section is not None and _decodes(data):
                offset = section.offset + (pool.address - section.address)
                return EmbeddedProgram(section.name, pool.address, offset, data, "model_pte")
        tried = 0
        for section in image.sections:
            if section.type == "NOBITS" or not section.alloc or not section.size:
                continue
            view = image.section_view(section)
            if view is None:
                continue
            blob = bytes(view)
            for match in _IDENTIFIER.finditer(blob):
                start = match.start() - 4  # the root offset comes first
                if start < 0:
                    continue
                tried += 1
                if tried > MAX_CANDIDATES:
                    return None
                candidate = _program_bytes(blob[start:])
                if candidate is not None:
                    return EmbeddedProgram(
                        section.name, section.address + start, section.offset + start,
                        candidate, "scan",
                    )  # fmt: skip
    return None


def open_embedded_program(path: str | os.PathLike[str]) -> Program:
    """Decode the program baked into the firmware; a WrongKindError when there is none."""
    return decode_embedded_program(path, find_embedded_program(path))


def decode_embedded_program(path: str | os.PathLike[str], found: EmbeddedProgram | None) -> Program:
    """Decode what :func:`find_embedded_program` found in ``path``."""
    if found is None:
        raise WrongKindError(
            "a firmware ELF with no program baked in (no model_pte, no ET12 image in its sections)",
            source=str(path),
        )
    try:
        program = decode_program(found.data, str(path))
    except ParseError as error:
        error.field = f"embedded program in {found.section}: {error.field or ''}".rstrip(": ")
        raise
    return program


def _decodes(data: bytes) -> bool:
    try:
        decode_program(data, "model_pte").close()
    except ParseError:
        return False
    return True


def _program_bytes(blob: bytes) -> bytes | None:
    """``blob`` cut to the program at its start when it decodes; None when it does not.
    With an extended header, the program ends at its segments' end; without, at the end of
    what the FlatBuffer references is unknown, so the rest of the section is kept."""
    try:
        program = decode_program(blob, "scan")
    except ParseError:
        return None
    header = program.extended_header
    end = len(blob)
    if header is not None and header.segment_base_offset:
        end = min(end, header.segment_base_offset + header.segment_data_size)
    elif header is not None:
        end = min(end, header.program_size)
    program.close()
    return blob[:end]


__all__ = [
    "EmbeddedProgram",
    "decode_embedded_program",
    "find_embedded_program",
    "is_elf",
    "open_embedded_program",
]
