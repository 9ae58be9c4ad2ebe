"""The kernel registry a firmware image holds: operator names and the kernels' code size.

The runtime registers each kernel under its name, ``namespace::op.overload``
(``aten::add.out``); the names are NUL-ended strings in the image, each pointed at by the
registry's table. Other ``A::B`` strings are C++ (``Error::Ok``, ``ScalarType::Int``,
``vector::reserve``, ``basic_string::_S_create``) and are not kernels. Code bytes come from
the ld map (the ``op_*`` objects' text) or, without one, from the symbols.
"""

from __future__ import annotations

import array
import re
import struct
import sys
from collections.abc import Iterator
from dataclasses import dataclass

from etu.parsers.elf_map import ElfImage
from etu.parsers.ld_map import LdMap

KERNEL_CODE_SECTION = ".sram.data"  # Corstone-300: op_*.cpp.obj text runs from BRAM

_OPERATOR_NAME = re.compile(rb"([A-Za-z0-9_]+)::[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)?\x00")
_NOT_KERNEL_NAMESPACES = {"std", "__gnu_cxx", "__cxxabiv1"}
# A registered kernel is ``namespace::name.overload`` with a lower-case namespace; the two
# prim ops upstream registers without an overload are the exceptions. Anything else among
# the image's strings is C++ (``Error::Ok``, ``vector::reserve``, ``basic_string::_S_create``).
_KERNEL_NAME = re.compile(r"[a-z][a-z0-9_]*::[A-Za-z_][A-Za-z0-9_]*\.[A-Za-z0-9_]+\Z")
_PRIM_OPS_WITHOUT_OVERLOAD = {"aten::sym_numel", "aten::_local_scalar_dense"}


@dataclass(frozen=True, slots=True)
class KernelInfo:
    names: tuple[str, ...]  # registry keys found in the image (``ns::op.overload``)
    code_bytes: int | None  # code of the kernel functions; None when it cannot be told
    functions: tuple[tuple[str, int], ...] = ()
    code_from: str | None = None  # ld_map | symbols


def find_kernels(elf: ElfImage, ld_map: LdMap | None, skip: list[tuple[int, int]]) -> KernelInfo:
    """The registry's names and the kernels' code; ``skip`` are address ranges not to scan
    for names (the runner's pools and the baked-in program)."""
    names = registry_names(elf, skip)
    functions: list[tuple[str, int]] = []
    code_from = None
    if ld_map is not None:
        for item in ld_map.input_sections:
            if item.member.startswith("op_") and item.name.startswith(".text") and item.size:
                functions.append((item.name.removeprefix(".text."), item.size))
        code_from = "ld_map" if functions else None
    if not functions and elf.symbols:
        kernel_section = elf.section(KERNEL_CODE_SECTION)
        seen: set[int] = set()
        ordered = sorted(elf.symbols, key=lambda s: (s.bind == "LOCAL", "." in s.name))
        for symbol in ordered:
            if symbol.type != "FUNC" or not symbol.size or symbol.section_index == "UND":
                continue
            in_kernel_area = (
                kernel_section is not None
                and kernel_section.executable
                and symbol.section == KERNEL_CODE_SECTION
            )
            # GCC's ``.localalias`` twins share an address: count each function once.
            if (in_kernel_area or symbol.name.startswith("op_")) and symbol.address not in seen:
                seen.add(symbol.address)
                functions.append((symbol.name, symbol.size))
        code_from = "symbols" if functions else None
    functions.sort(key=lambda item: (-item[1], item[0]))
    return KernelInfo(
        names=tuple(sorted(names)),
        code_bytes=sum(size for _name, size in functions) if functions else None,
        functions=tuple(functions),
        code_from=code_from,
    )


def is_kernel_name(name: str) -> bool:
    """Whether an ``A::B`` string of the image is a registered kernel's name."""
    if name.split("::", 1)[0] in _NOT_KERNEL_NAMESPACES:
        return False
    return bool(_KERNEL_NAME.match(name)) or name in _PRIM_OPS_WITHOUT_OVERLOAD


def registry_names(elf: ElfImage, skip: list[tuple[int, int]]) -> set[str]:
    """Operator names (``ns::op.overload``) among the image's NUL-ended strings.

    Bytes just before a string may be letters of unrelated data, so where a name starts
    is settled by a pointer to it (the registry table points at each name) when one
    exists; else the name starts after the last byte that cannot be part of it."""
    candidates: dict[int, list[int]] = {}  # match start → possible start addresses
    texts: dict[int, bytes] = {}
    for address, data in _loaded_views(elf, skip, 1):
        for match in _OPERATOR_NAME.finditer(data):
            base = address + match.start()
            prefix = match.group(1)
            starts = [
                base + i for i, byte in enumerate(prefix) if chr(byte).isalpha() or byte == 0x5F
            ]
            if not starts:
                continue
            candidates[base] = starts
            texts[base] = match.group(0)[:-1]
    if not candidates:
        return set()
    wanted = {address for starts in candidates.values() for address in starts}
    pointed = _pointed_at(elf, wanted, skip)
    names: set[str] = set()
    for base, starts in candidates.items():
        chosen = [a for a in starts if a in pointed] or starts[:1]
        for address in chosen:
            name = texts[base][address - base :].decode("ascii")
            if is_kernel_name(name):
                names.add(name)
    return names


def _loaded_views(
    elf: ElfImage, skip: list[tuple[int, int]], minimum: int
) -> Iterator[tuple[int, memoryview]]:
    """(address, bytes) of every loaded section's contents outside the ``skip`` ranges.

    The skipped ranges are the runner's pools and the baked-in model: scanning a 150 MB
    program for kernel names would cost seconds and find only the program's own strings."""
    for section in elf.sections:
        if not section.alloc or not section.has_contents or section.size < minimum:
            continue
        pieces = [(section.address, section.address + section.size)]
        for skip_start, skip_end in skip:
            pieces = [
                part
                for start, end in pieces
                for part in ((start, min(end, skip_start)), (max(start, skip_end), end))
                if part[1] - part[0] >= minimum
            ]
        for start, end in pieces:  # only these are read: the skipped model stays on disk
            data = elf.section_part(section, start - section.address, end - start)
            if data is not None:
                yield start, data


def _pointed_at(elf: ElfImage, wanted: set[int], skip: list[tuple[int, int]]) -> set[int]:
    """Which of ``wanted`` appear as aligned pointer-sized words in the loaded image."""
    width = 4 if elf.elf_class == 32 else 8
    code = ("<" if elf.little_endian else ">") + ("I" if width == 4 else "Q")
    found: set[int] = set()
    for address, data in _loaded_views(elf, skip, width):
        shift = -address % width
        words = array.array("I" if width == 4 else "Q")
        if words.itemsize != width:  # no native type of that width: decode word by word
            usable = data[shift : shift + (len(data) - shift) // width * width]
            found.update(wanted.intersection(w for (w,) in struct.iter_unpack(code, usable)))
            continue
        words.frombytes(data[shift : shift + (len(data) - shift) // width * width])
        if (sys.byteorder == "little") != elf.little_endian:
            words.byteswap()
        found.update(wanted.intersection(words))
    return found
