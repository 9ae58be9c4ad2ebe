"""GNU ld map files (``-Wl,-Map=...``): regions, output sections, input sections, symbols.

The "Memory Configuration" table is what the regions come from (it is the linker script's
MEMORY block after evaluation). The "Linker script and memory map" part adds what an
ELF cannot tell once stripped: each output section's load address as ld set it, the input
sections with the file they came from, and the symbols ld placed (ld prints C++ names
demangled). Nothing here is guessed: a line of the memory table that does not read is a
ParseError naming the line; lines of the memory map that are not sections or symbols
(assignments, fills, wildcards, LONG data) are skipped.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from etu.parsers.errors import FormatError, WrongKindError
from etu.parsers.files import MiB, read_regular
from etu.parsers.linker_script import MemoryRegion

MEMORY_HEADER = "Memory Configuration"
MAP_HEADER = "Linker script and memory map"
DEFAULT_REGION = "*default*"
MAX_MAP_BYTES = 256 * MiB  # a big firmware's map is tens of MiB


@dataclass(frozen=True, slots=True)
class MapOutputSection:
    name: str
    address: int
    size: int
    load_address: int  # equals ``address`` when ld printed no "load address"
    line: int


@dataclass(frozen=True, slots=True)
class MapInputSection:
    output: str  # the output section it was placed in
    name: str
    address: int
    size: int
    file: str  # as ld printed it: ``obj.o``, ``lib.a(member.o)``, ``linker stubs``
    line: int

    @property
    def member(self) -> str:
        """The object file's own name (the archive member when there is one)."""
        match = re.search(r"\(([^()]+)\)$", self.file)
        return os.path.basename(match.group(1) if match else self.file)


@dataclass(frozen=True, slots=True)
class MapSymbol:
    name: str
    address: int
    section: str  # input section it is defined in
    output: str  # output section


@dataclass(slots=True)
class LdMap:
    source: str
    regions: list[MemoryRegion]
    output_sections: list[MapOutputSection] = field(default_factory=list)
    input_sections: list[MapInputSection] = field(default_factory=list)
    symbols: list[MapSymbol] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def output_section(self, name: str) -> MapOutputSection | None:
        return next((s for s in self.output_sections if s.name == name), None)

    def symbol(self, name: str) -> MapSymbol | None:
        return next((s for s in self.symbols if s.name == name), None)

    def input_section_at(self, address: int, name: str | None = None) -> MapInputSection | None:
        """The input section starting at ``address`` (with that name, if given)."""
        for item in self.input_sections:
            if item.address == address and item.size and (name is None or item.name == name):
                return item
        return None


_HEX = r"0x[0-9a-fA-F]+"
_REGION_ROW = re.compile(
    rf"(?P<name>\S+)\s+(?P<origin>{_HEX})\s+(?P<length>{_HEX})(?:\s+(?P<attr>\S+))?"
)
_ADDR_SIZE = re.compile(
    rf"\s*(?P<address>{_HEX})\s+(?P<size>{_HEX})(?:\s+load address (?P<load>{_HEX}))?\s*$"
)
# Rows are matched whole (fullmatch) on right-stripped lines: the file or symbol name is the
# rest of the row, ``\S.*``, right-stripped in Python. A lazy ``\S.*?\s*$`` retried ``\s*$`` at
# every character, quadratic on a row with a long run of spaces inside (issue 20).
_INPUT_ROW = re.compile(rf"\s*+(?P<address>{_HEX})\s++(?P<size>{_HEX})\s++(?P<file>\S.*)")
_SYMBOL_ROW = re.compile(rf"\s++(?P<address>{_HEX})\s++(?P<name>\S.*)")
_ASSIGNMENT = re.compile(r"^(?:[\w.$]+\s*=|PROVIDE|ASSERT|\.\s*=|\[!provide\])")
_NOT_SECTIONS = ("LOAD ", "OUTPUT(", "START GROUP", "END GROUP", "OUTPUT_FORMAT", "TARGET(")


def parse_ld_map(text: str, source: str = "<ld map>") -> LdMap:
    """Parse a GNU ld map file. Raises ParseError (naming the line) on a bad memory table."""
    if "\x00" in text:
        raise WrongKindError("binary data, not a GNU ld map file", source=source)
    lines = text.split("\n")
    start = next((i for i, line in enumerate(lines) if line.strip() == MEMORY_HEADER), None)
    if start is None:
        raise WrongKindError(
            f"no {MEMORY_HEADER!r} table: not a GNU ld map file (link with -Wl,-Map=FILE)",
            source=source,
        )
    ld_map = LdMap(source=source, regions=[])
    index = start + 1
    while index < len(lines) and not lines[index].strip():
        index += 1
    if index >= len(lines) or not lines[index].split()[:2] == ["Name", "Origin"]:
        raise FormatError(
            "the memory table has no 'Name Origin Length Attributes' header",
            field=f"line {index + 1}",
            source=source,
        )
    index += 1
    while index < len(lines) and lines[index].strip():
        row = _REGION_ROW.fullmatch(lines[index].strip())
        if row is None:
            raise FormatError(
                f"cannot read memory table row {lines[index].strip()!r}",
                field=f"line {index + 1}",
                source=source,
            )
        if row.group("name") != DEFAULT_REGION:
            ld_map.regions.append(
                MemoryRegion(
                    row.group("name"),
                    int(row.group("origin"), 16),
                    int(row.group("length"), 16),
                    row.group("attr") or "",
                )
            )
        index += 1
    body = next((i for i in range(index, len(lines)) if lines[i].strip() == MAP_HEADER), None)
    if body is None:
        ld_map.warnings.append(f"{source}: no {MAP_HEADER!r} part: regions only")
        return ld_map
    _parse_body(ld_map, lines, body + 1)
    return ld_map


def read_ld_map(path: str | os.PathLike[str]) -> LdMap:
    source = str(path)
    raw = read_regular(path, "a map file", MAX_MAP_BYTES)
    if raw.startswith(b"\x7fELF"):
        raise WrongKindError("an ELF file, not a GNU ld map file", source=source)
    return parse_ld_map(raw.decode("utf-8", errors="replace"), source)


def _parse_body(ld_map: LdMap, lines: list[str], index: int) -> None:
    output: str | None = None
    current_input: MapInputSection | None = None
    pending: tuple[str, bool, int] | None = None  # a name printed alone; its numbers follow
    while index < len(lines):
        line = lines[index].rstrip()
        index += 1
        if not line.strip():
            continue
        if pending is not None:
            name, is_output, line_no = pending
            pending = None
            if is_output:
                numbers = _ADDR_SIZE.fullmatch(line)
                if numbers:
                    output = name
                    current_input = None
                    ld_map.output_sections.append(_output(name, numbers, line_no))
                    continue
            else:
                row = _INPUT_ROW.fullmatch(line)
                if row and output is not None:
                    current_input = _input(output, name, row, line_no)
                    ld_map.input_sections.append(current_input)
                    continue
        if not line[0].isspace():
            if line.startswith(_NOT_SECTIONS):
                output = current_input = None
                continue
            head, _, tail = line.partition(" ")
            numbers = _ADDR_SIZE.fullmatch(" " + tail) if tail.strip() else None
            if numbers:
                output, current_input = head, None
                ld_map.output_sections.append(_output(head, numbers, index))
            elif not tail.strip():
                pending = (head, True, index)
            continue
        stripped = line.strip()
        if stripped.startswith("*"):  # wildcard statements, *fill*
            continue
        if line.startswith(" ") and not line.startswith("  ") and not stripped.startswith("0x"):
            head, _, tail = stripped.partition(" ")
            row = _INPUT_ROW.fullmatch(tail) if tail.strip() else None
            if row and output is not None:
                current_input = _input(output, head, row, index)
                ld_map.input_sections.append(current_input)
            elif not tail.strip():
                pending = (head, False, index)
            continue
        symbol = _SYMBOL_ROW.fullmatch(line)
        if symbol and current_input is not None and output is not None:
            name = symbol.group("name").rstrip()
            if name.startswith(("0x", "(size before relaxing)")) or _ASSIGNMENT.match(name):
                continue
            if " = " in name:
                continue
            ld_map.symbols.append(
                MapSymbol(name, int(symbol.group("address"), 16), current_input.name, output)
            )


def _output(name: str, numbers: re.Match[str], line: int) -> MapOutputSection:
    address = int(numbers.group("address"), 16)
    load = numbers.group("load")
    return MapOutputSection(
        name, address, int(numbers.group("size"), 16), int(load, 16) if load else address, line
    )


def _input(output: str, name: str, row: re.Match[str], line: int) -> MapInputSection:
    return MapInputSection(
        output, name, int(row.group("address"), 16), int(row.group("size"), 16),
        row.group("file").rstrip(), line,
    )  # fmt: skip


# ------------------------------------------------------- ld --print-memory-usage report

_USAGE_ROW = re.compile(
    r"\s*(?P<name>\S+):\s+(?P<used>\d+)\s+(?P<used_unit>B|KB|MB|GB)"
    r"\s+(?P<size>\d+)\s+(?P<size_unit>B|KB|MB|GB)\s+(?P<percent>[\d.]+)%\s*"
)
_UNITS = {"B": 1, "KB": 1024, "MB": 1024**2, "GB": 1024**3}


@dataclass(frozen=True, slots=True)
class RegionUsage:
    """One row of ld's report. ld prints a size in KB/MB/GB only when it is an exact
    multiple, so the byte counts here are exact."""

    name: str
    used: int
    length: int
    percent: float


def parse_memory_usage(text: str, source: str = "<memory usage>") -> list[RegionUsage]:
    """Parse the table ``ld --print-memory-usage`` prints (other lines are ignored)."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("Memory region")), None)
    if start is None:
        raise WrongKindError(
            "no 'Memory region  Used Size  Region Size  %age Used' table: not ld's "
            "--print-memory-usage output",
            source=source,
        )
    rows = []
    for index in range(start + 1, len(lines)):
        line = lines[index]
        if not line.strip():
            continue
        row = _USAGE_ROW.fullmatch(line)
        if row is None:
            if ":" in line and line.startswith(" "):
                raise FormatError(
                    f"cannot read {line.strip()!r}", field=f"line {index + 1}", source=source
                )
            break
        rows.append(
            RegionUsage(
                row.group("name"),
                int(row.group("used")) * _UNITS[row.group("used_unit")],
                int(row.group("size")) * _UNITS[row.group("size_unit")],
                float(row.group("percent")),
            )
        )
    return rows
