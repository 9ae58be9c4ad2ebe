"""Where a firmware's global offset table is, and whether the runner's startup can use it.

Static firmware built with ``-fPIC`` code still reads addresses from the GOT. The runner's
linker script links ``.got*`` into ``.ddr`` (loaded in place); a GOT left as an orphan, not
loaded, or loaded elsewhere than it runs gives null function pointers at run time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from etu.parsers.elf_map import ElfImage, Section
from etu.parsers.ld_map import LdMap

GOT_SECTIONS = (".got", ".got.plt")


@dataclass(frozen=True, slots=True)
class GotInfo:
    section: str  # the output section holding it
    address: int
    size: int | None
    region: str | None
    entries: int | None
    null_entries: int = 0


def check_got(
    elf: ElfImage,
    ld_map: LdMap | None,
    region_name: Callable[[int], str | None],
    has_regions: bool,
    warnings: list[str],
) -> GotInfo | None:
    """Where the GOT is, with a warning for each way it would hand out null addresses (a
    hang at the first kernel call). ``region_name`` names the memory region of an address;
    ``has_regions`` says whether any region is known (else "outside every region" is moot)."""
    info: GotInfo | None = None
    if ld_map is not None:
        pieces = [s for s in ld_map.input_sections if s.name in GOT_SECTIONS and s.size]
        if pieces:
            start = min(p.address for p in pieces)
            got_only = [p for p in pieces if p.name == ".got"]
            entries, nulls = _got_entries(elf, got_only)
            info = GotInfo(
                pieces[0].output, start, sum(p.size for p in pieces), region_name(start),
                entries, nulls,
            )  # fmt: skip
    own = [s for s in elf.sections if s.name in GOT_SECTIONS and s.alloc and s.size]
    for section in own:
        where = region_name(section.address)
        problems = []
        if where is None and has_regions:
            problems.append("outside every memory region")
        if not section.has_contents:
            problems.append("not loaded (NOBITS)")
        elif section.load_address != section.address:
            problems.append(
                f"loaded at {section.load_address:#x}, which the runner's startup code does "
                "not copy"
            )
        if section.has_contents and not any(
            section.name in seg.sections for seg in elf.segments if seg.type == "LOAD"
        ):
            problems.append("in no PT_LOAD segment")
        if problems:
            warnings.append(
                f"{section.name} ({section.size} bytes at {section.address:#x}) is "
                f"{'; '.join(problems)}: the linker script does not place .got* (the runner's "
                "puts it in .ddr); code built with -fPIC will read null addresses from it"
            )
        if info is None:
            entries, nulls = (
                _got_entries_of_section(elf, section) if section.name == ".got" else (None, 0)
            )
            info = GotInfo(
                section.name, section.address, section.size,
                where, entries, nulls,
            )  # fmt: skip
    if info is None:
        marker = elf.symbol("_GLOBAL_OFFSET_TABLE_")
        if marker is not None and marker.section is not None:
            info = GotInfo(marker.section, marker.address, None, region_name(marker.address), None)
    if info is not None and info.null_entries:
        warnings.append(
            f"{info.null_entries} of {info.entries} .got entries are 0: those references "
            "(undefined weak symbols?) are null at run time"
        )
    return info


def _got_entries(elf: ElfImage, pieces: list) -> tuple[int | None, int]:
    if not pieces:
        return None, 0
    entries = nulls = 0
    for piece in pieces:
        for offset in range(0, piece.size - piece.size % 4, 4):
            word = elf.read_word(piece.address + offset)
            if word is None:
                return None, 0
            entries += 1
            nulls += word == 0
    return entries, nulls


def _got_entries_of_section(elf: ElfImage, section: Section) -> tuple[int | None, int]:
    data = elf.section_bytes(section)
    if data is None:
        return None, 0
    words = [
        int.from_bytes(data[i : i + 4], "little" if elf.little_endian else "big")
        for i in range(0, len(data) - len(data) % 4, 4)
    ]
    return len(words), sum(word == 0 for word in words)
