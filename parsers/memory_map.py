"""A firmware's memory map: an ELF joined with its memory regions.

Regions come from, in order of preference: the ld map file ("Memory Configuration"), the
linker script's MEMORY block, regions given explicitly (``--region NAME:ORIGIN:LENGTH``),
or a preset layout of the runner's own scripts. With none of those, a preset is used when
every section fits exactly one of them (with a warning).

``used`` is what GNU ld's ``--print-memory-usage`` prints for the same link. ld advances a
region's fill point past every allocated output section whose run address (VMA) is in it,
NOLOAD ones included, gaps and alignment included; and past a section's load image in the
region of its load address (LMA) only when the section has contents and its load region
was named with ``AT> REGION`` (or inherited from the section before it). A load address
given as ``AT(expr)`` is not counted anywhere. An ELF cannot tell ``AT()`` from ``AT>``,
so that comes from the linker script when given, else from the matching preset (the
runner's ``.data`` on Corstone-300 and ``.sram`` on Corstone-320 use ``AT()``), else the
load image is counted. Used = highest end of what is counted, minus the region's origin
(ld keeps the end of the last section it placed there, which is the highest unless a
script moves the location counter backwards).

Besides usage: the runner's pools by role (by symbol, else from the ld map), the kernel
registry (operator names found in the image's strings, code bytes of the kernels), the
``.got`` check and warnings. Pure: parsed objects in, a map out.
"""

from __future__ import annotations

import array
import os
import re
import struct
import sys
from dataclasses import dataclass, field

from etu.parsers.elf_map import SHF_TLS, ElfImage, Section, Symbol, read_elf
from etu.parsers.errors import FormatError, ParseError
from etu.parsers.ld_map import LdMap, read_ld_map
from etu.parsers.linker_script import LinkerScript, MemoryRegion, parse_size, read_linker_script
from etu.parsers.memory_presets import PRESETS, Preset, get_preset, match_preset

# Runner pools: role → (symbol, input section the runner places it in) — §6.2.
POOL_ROLES: dict[str, tuple[str, str]] = {
    "model_pte": ("model_pte", "network_model_sec"),
    "method_allocator": ("method_allocation_pool", ".bss.method_allocator_sec"),
    "temp_allocator": ("temp_allocation_pool", ".bss.tensor_arena"),
    "fast_scratch": ("dedicated_sram", ".bss.ethosu_scratch"),
    "input_file_allocator": ("input_file_allocation_pool", ".bss.input_file_allocator_sec"),
    "planned_fast_memory": ("planned_fast_memory_pool", ".fast_memory"),
}
MODEL_OUTPUT_SECTIONS = (".ddr.rodata", ".sram.rodata")
KERNEL_CODE_SECTION = ".sram.data"  # Corstone-300: op_*.cpp.obj text runs from BRAM
GOT_SECTIONS = (".got", ".got.plt")

_OPERATOR_NAME = re.compile(rb"([A-Za-z0-9_]+)::[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)?\x00")
_NOT_KERNEL_NAMESPACES = {"std", "__gnu_cxx", "__cxxabiv1"}
# A registered kernel is ``namespace::name.overload`` with a lower-case namespace; the two
# prim ops upstream registers without an overload are the exceptions. Anything else among
# the image's strings is C++ (``Error::Ok``, ``vector::reserve``, ``basic_string::_S_create``).
_KERNEL_NAME = re.compile(r"[a-z][a-z0-9_]*::[A-Za-z_][A-Za-z0-9_]*\.[A-Za-z0-9_]+\Z")
_PRIM_OPS_WITHOUT_OVERLOAD = {"aten::sym_numel", "aten::_local_scalar_dense"}


@dataclass(frozen=True, slots=True)
class Region:
    name: str
    origin: int
    length: int
    used: int
    attributes: str = ""

    @property
    def end(self) -> int:
        return self.origin + self.length

    @property
    def free(self) -> int:
        return max(self.length - self.used, 0)

    @property
    def overflow(self) -> int:
        return max(self.used - self.length, 0)

    @property
    def percent(self) -> float:
        return self.used * 100.0 / self.length if self.length else 0.0

    def contains(self, address: int) -> bool:
        return self.origin <= address < self.end


@dataclass(frozen=True, slots=True)
class PlacedSection:
    """An allocated output section and the regions of its run and load addresses."""

    name: str
    address: int
    load_address: int
    size: int
    type: str
    flags: str
    region: str | None
    load_region: str | None
    load_counted: bool  # ld counts its load image in load_region
    load_rule: str | None = None  # how that was decided: script | preset | inherited | assumed


@dataclass(frozen=True, slots=True)
class Pool:
    role: str
    symbol: str | None
    address: int
    size: int
    region: str | None
    section: str | None = None  # output section
    source: str = "symbol"  # symbol | ld_map | section


@dataclass(frozen=True, slots=True)
class KernelInfo:
    names: tuple[str, ...]  # registry keys found in the image (``ns::op.overload``)
    code_bytes: int | None  # code of the kernel functions; None when it cannot be told
    functions: tuple[tuple[str, int], ...] = ()
    code_from: str | None = None  # ld_map | symbols


@dataclass(frozen=True, slots=True)
class GotInfo:
    section: str  # the output section holding it
    address: int
    size: int | None
    region: str | None
    entries: int | None
    null_entries: int = 0


@dataclass(slots=True)
class MemoryMap:
    elf: ElfImage = field(repr=False)
    regions: list[Region]
    sections: list[PlacedSection]
    pools: dict[str, Pool]
    kernels: KernelInfo
    got: GotInfo | None
    warnings: list[str]
    regions_from: str | None = None  # ld_map | linker_script | regions | preset | guessed
    regions_source: str | None = None  # the file the regions were read from
    preset: str | None = None  # the preset used, or whose layout the regions are

    @property
    def kernel_names(self) -> set[str]:
        return set(self.kernels.names)

    @property
    def source(self) -> str:
        return self.elf.source

    def region_of(self, address: int) -> Region | None:
        return next((r for r in self.regions if r.contains(address)), None)

    def region_named(self, name: str) -> Region | None:
        return next((r for r in self.regions if r.name == name), None)

    def symbols_top(self, count: int = 20) -> list[Symbol]:
        return self.elf.symbols_top(count)


# ------------------------------------------------------------------------- building


def parse_region_spec(text: str) -> MemoryRegion:
    """``NAME:ORIGIN:LENGTH`` (``--region SRAM:0x31000000:2M``) → a region."""
    parts = text.split(":")
    if len(parts) != 3 or not parts[0].strip():
        raise FormatError(f"{text!r} is not NAME:ORIGIN:LENGTH", field="--region")
    name, origin, length = (p.strip() for p in parts)
    try:
        return MemoryRegion(name, parse_size(origin), parse_size(length))
    except ParseError as error:
        raise FormatError(error.message, field=f"--region {name}") from None


def load_memory_map(
    elf_path: str | os.PathLike[str],
    *,
    map_path: str | os.PathLike[str] | None = None,
    script_path: str | os.PathLike[str] | None = None,
    regions: list[MemoryRegion] | None = None,
    preset: str | None = None,
) -> MemoryMap:
    """Read the files and build the map. Raises ParseError naming the file at fault."""
    ld_map = read_ld_map(map_path) if map_path else None
    script = read_linker_script(script_path) if script_path else None
    elf = read_elf(elf_path)
    try:
        return build_memory_map(elf, ld_map=ld_map, script=script, regions=regions, preset=preset)
    finally:
        elf.close()


def build_memory_map(
    elf: ElfImage,
    *,
    ld_map: LdMap | None = None,
    script: LinkerScript | None = None,
    regions: list[MemoryRegion] | None = None,
    preset: str | Preset | None = None,
) -> MemoryMap:
    """Join an ELF with its regions (see the module docstring for the order)."""
    warnings = list(elf.warnings)
    for extra in (ld_map, script):
        if extra is not None:
            warnings.extend(extra.warnings)
    if ld_map is not None:
        _check_map_matches(elf, ld_map, warnings)
    explicit = get_preset(preset) if isinstance(preset, str) else preset
    declared, regions_from, regions_source = _choose_regions(
        elf, ld_map, script, regions, explicit, warnings
    )
    matched = match_preset(declared) if declared else None
    if explicit is not None and regions_from != "preset" and matched is not explicit:
        warnings.append(
            f"the regions from the {(regions_from or 'ELF').replace('_', ' ')} are not the "
            f"{explicit.name} layout: usage follows the {(regions_from or '').replace('_', ' ')}"
        )
    chosen_preset = explicit or matched

    placed, used = _place_sections(elf, ld_map, declared, script, chosen_preset, warnings)
    region_list = [
        Region(r.name, r.origin, r.length, used.get(r.name, 0), r.attributes) for r in declared
    ]
    memory_map = MemoryMap(
        elf=elf,
        regions=region_list,
        sections=placed,
        pools={},
        kernels=KernelInfo((), None),
        got=None,
        warnings=warnings,
        regions_from=regions_from,
        regions_source=regions_source,
        preset=chosen_preset.name if chosen_preset else None,
    )
    for region in region_list:
        if region.used > region.length:
            warnings.append(
                f"region {region.name} overflows by {region.overflow:,} bytes "
                f"({region.used:,} used of {region.length:,})"
            )
    memory_map.pools = _find_pools(elf, ld_map, memory_map, warnings)
    memory_map.kernels = _find_kernels(elf, ld_map, memory_map.pools)
    memory_map.got = _check_got(elf, ld_map, memory_map, warnings)
    return memory_map


def _check_map_matches(elf: ElfImage, ld_map: LdMap, warnings: list[str]) -> None:
    """Say so when the map describes another link than this ELF's."""
    for section in elf.sections:
        if not section.alloc or not section.size:
            continue
        listed = ld_map.output_section(section.name)
        if listed is None or (listed.address, listed.size) != (section.address, section.size):
            found = "absent" if listed is None else f"{listed.size} bytes at {listed.address:#x}"
            warnings.append(
                f"{ld_map.source} is not the map of this ELF: {section.name} is "
                f"{section.size} bytes at {section.address:#x} in the ELF, {found} in the map"
            )
            return


def _choose_regions(elf, ld_map, script, regions, preset, warnings):
    if regions and ((ld_map is not None and ld_map.regions) or script is not None):
        warnings.append("the given regions are not used: the map or linker script declares them")
    if ld_map is not None and ld_map.regions:
        return list(ld_map.regions), "ld_map", ld_map.source
    if ld_map is not None:
        warnings.append(f"{ld_map.source}: the map declares no MEMORY regions")
    if script is not None:
        return list(script.regions), "linker_script", script.source
    if regions:
        return list(regions), "regions", None
    if preset is not None:
        return list(preset.regions), "preset", None
    if not elf.is_arm:
        return [], None, None
    fitting = [p for p in PRESETS.values() if _all_sections_fit(elf, p.regions)]
    if len(fitting) == 1:
        warnings.append(
            f"no map, linker script or regions given: using the {fitting[0].name} layout, "
            "which every section fits"
        )
        return list(fitting[0].regions), "guessed", None
    warnings.append(
        "no memory regions: give the ld map, the linker script, --region or --preset "
        "to see region usage"
    )
    return [], None, None


def _all_sections_fit(elf: ElfImage, regions) -> bool:
    placed = [s for s in elf.sections if s.alloc and s.size]
    return bool(placed) and all(
        any(r.origin <= s.address and s.end <= r.end for r in regions) for s in placed
    )


def _region_for(regions: list[MemoryRegion], address: int, size: int) -> MemoryRegion | None:
    for region in regions:
        if region.contains(address):
            return region
    if size == 0:  # an empty section may sit exactly at a region's end
        return next((r for r in regions if address == r.end), None)
    return None


def _load_opinion(section: Section, script, preset) -> tuple[bool | None, str | None]:
    """Whether ld counts this section's load image where it loads, and why."""
    if script is not None and (statement := script.section(section.name)) is not None:
        return statement.charges_load_image, "script"
    if preset is not None and section.name in preset.load_base_sections:
        return False, "preset"
    return None, None


def _link_order(elf: ElfImage, ld_map: LdMap | None) -> list[Section]:
    """Allocated sections in the order ld laid them out: the map's order when there is a
    map (ELF section headers can be in another order), else the section header order."""
    sections = [s for s in elf.sections if s.alloc and s.index]
    if ld_map is None or not ld_map.output_sections:
        return sections
    rank = {item.name: i for i, item in reversed(list(enumerate(ld_map.output_sections)))}
    return sorted(sections, key=lambda s: (rank.get(s.name, len(rank)), s.index))


def _place_sections(elf, ld_map, declared, script, preset, warnings):
    ends: dict[str, int] = {}
    placed: dict[int, PlacedSection] = {}
    outside = []
    previous: tuple[MemoryRegion | None, bool | None] = (None, None)
    for section in _link_order(elf, ld_map):
        tls_bss = section.flags & SHF_TLS and not section.has_contents
        in_memory = 0 if tls_bss else section.size
        region = _region_for(declared, section.address, in_memory)
        if region is not None:
            ends[region.name] = max(
                ends.get(region.name, region.origin), section.address + in_memory
            )
        elif section.size and declared:
            outside.append(section)
        load_region = region
        counted = False
        decision: bool | None = None
        rule: str | None = None
        if section.has_contents and section.size and section.load_address != section.address:
            load_region = _region_for(declared, section.load_address, section.size)
            decision, rule = _load_opinion(section, script, preset)
            if decision is None:
                # ld hands a section the previous one's AT> region when both run in the
                # same region (orphans placed after it included); else assume AT>.
                same = previous[0] is not None and previous[0] is region
                if same and previous[1] is not None:
                    decision, rule = previous[1], "inherited"
                else:
                    decision, rule = True, "assumed"
            if load_region is not None and load_region is not region and decision:
                counted = True
                ends[load_region.name] = max(
                    ends.get(load_region.name, load_region.origin), section.load_end
                )
        if section.size:
            previous = (region, decision)
        placed[section.index] = PlacedSection(
            name=section.name,
            address=section.address,
            load_address=section.load_address,
            size=section.size,
            type=section.type,
            flags=section.flag_text,
            region=region.name if region else None,
            load_region=load_region.name if load_region else None,
            load_counted=counted,
            load_rule=rule,
        )
    for section in outside:
        warnings.append(
            f"section {section.name} ({section.size:,} bytes at {section.address:#x}) is "
            "outside every memory region"
        )
    origins = {r.name: r.origin for r in declared}
    used = {name: end - origins[name] for name, end in ends.items()}
    return [placed[i] for i in sorted(placed)], used


# --------------------------------------------------------------------------- pools


def _named(name: str, wanted: str) -> bool:
    """A symbol called ``wanted``: plain, C++-mangled in a namespace, or demangled."""
    if name == wanted or name.endswith("::" + wanted):
        return True
    return name.startswith("_ZN") and name.endswith(f"{len(wanted)}{wanted}E")


def _elf_symbol(elf: ElfImage, wanted: str) -> Symbol | None:
    exact = elf.symbol(wanted)
    if exact is not None:
        return exact
    return next(
        (s for s in elf.symbols if s.section_index != "UND" and _named(s.name, wanted)), None
    )


def _find_pools(elf: ElfImage, ld_map: LdMap | None, mm: MemoryMap, warnings) -> dict[str, Pool]:
    pools: dict[str, Pool] = {}

    def region_name(address: int) -> str | None:
        region = mm.region_of(address)
        return region.name if region else None

    def output_section(address: int) -> str | None:
        section = elf.section_at(address)
        return section.name if section else None

    for role, (symbol_name, input_section) in POOL_ROLES.items():
        symbol = _elf_symbol(elf, symbol_name)
        if symbol is not None:
            pools[role] = Pool(
                role, symbol.name, symbol.address, symbol.size, region_name(symbol.address),
                symbol.section, "symbol",
            )  # fmt: skip
            continue
        if role == "fast_scratch":
            pool = _fast_scratch_by_pointer(elf, region_name, output_section)
            if pool is not None:
                pools[role] = pool
                continue
        if ld_map is not None:
            pool = _pool_from_map(ld_map, role, symbol_name, input_section, region_name)
            if pool is not None:
                pools[role] = pool
                continue
        if role == "model_pte":
            section = next((elf.section(n) for n in MODEL_OUTPUT_SECTIONS if elf.section(n)), None)
            if section is not None and section.size:
                pools[role] = Pool(
                    role, None, section.address, section.size, region_name(section.address),
                    section.name, "section",
                )  # fmt: skip
                warnings.append(
                    f"no model_pte symbol: the program is taken to be all of {section.name} "
                    f"({section.size:,} bytes, may include alignment padding)"
                )
    return pools


def _fast_scratch_by_pointer(elf: ElfImage, region_name, output_section) -> Pool | None:
    """``ethosu_fast_scratch`` (a pointer) and ``ethosu_fast_scratch_size``, read from .data."""
    pointer = _elf_symbol(elf, "ethosu_fast_scratch")
    size_symbol = _elf_symbol(elf, "ethosu_fast_scratch_size")
    if pointer is None or size_symbol is None:
        return None
    address = elf.read_word(pointer.address)
    size = elf.read_word(size_symbol.address)
    if address is None or size is None:
        return None
    return Pool(
        "fast_scratch", pointer.name, address, size, region_name(address),
        output_section(address), "symbol",
    )  # fmt: skip


def _pool_from_map(ld_map: LdMap, role, symbol_name, input_section, region_name) -> Pool | None:
    symbol = next((s for s in ld_map.symbols if _named(s.name, symbol_name)), None)
    if symbol is not None:
        holder = ld_map.input_section_at(symbol.address, symbol.section)
        size = holder.size if holder is not None else 0
        return Pool(
            role, symbol.name, symbol.address, size, region_name(symbol.address), symbol.output,
            "ld_map",
        )  # fmt: skip
    holders = [s for s in ld_map.input_sections if s.name == input_section and s.size]
    if holders:
        first = holders[0]
        return Pool(
            role, None, first.address, sum(h.size for h in holders), region_name(first.address),
            first.output, "ld_map",
        )  # fmt: skip
    return None


# ------------------------------------------------------------------------- kernels


def _find_kernels(elf: ElfImage, ld_map: LdMap | None, pools: dict[str, Pool]) -> KernelInfo:
    skip = [
        (pool.address, pool.address + pool.size)
        for role, pool in pools.items()
        if role == "model_pte" or pool.size
    ]
    names = _registry_names(elf, skip)
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


def _registry_names(elf: ElfImage, skip: list[tuple[int, int]]) -> set[str]:
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
            if name.split("::", 1)[0] in _NOT_KERNEL_NAMESPACES:
                continue
            if _KERNEL_NAME.match(name) or name in _PRIM_OPS_WITHOUT_OVERLOAD:
                names.add(name)
    return names


def _loaded_views(elf: ElfImage, skip: list[tuple[int, int]], minimum: int):
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


# ----------------------------------------------------------------------------- GOT


def _check_got(elf: ElfImage, ld_map: LdMap | None, mm: MemoryMap, warnings) -> GotInfo | None:
    """Where the GOT is. Static firmware built with -fPIC code still reads addresses from
    it; the runner's script links ``.got*`` into ``.ddr`` (DDR, loaded in place). A GOT
    left as an orphan output section, not loaded, or loaded elsewhere than it runs, gives
    null function pointers at run time (a hang at the first kernel call)."""
    info: GotInfo | None = None

    def region_name(address: int) -> str | None:
        region = mm.region_of(address)
        return region.name if region else None

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
        where = mm.region_of(section.address)
        problems = []
        if where is None and mm.regions:
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
                where.name if where else None, entries, nulls,
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


def _got_entries(elf: ElfImage, pieces) -> tuple[int | None, int]:
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


# ------------------------------------------------------------------------------ JSON


def elf_record(memory_map: MemoryMap, *, top: int = 20) -> dict:
    """The ``etu elf --json`` object (field names are a contract)."""
    mm = memory_map
    elf = mm.elf
    return {
        "source": elf.source,
        "machine": elf.machine_name,
        "elf_class": elf.elf_class,
        "entry": elf.entry,
        "regions_from": mm.regions_from,
        "regions_source": mm.regions_source,
        "preset": mm.preset,
        "regions": [
            {
                "name": r.name,
                "origin": r.origin,
                "length": r.length,
                "used": r.used,
                "free": r.free,
                "percent": round(r.percent, 2),
                "attributes": r.attributes,
            }
            for r in mm.regions
        ],
        "sections": [
            {
                "name": s.name,
                "address": s.address,
                "load_address": s.load_address,
                "size": s.size,
                "region": s.region,
                "load_region": s.load_region,
                "load_counted": s.load_counted,
                "load_rule": s.load_rule,
                "type": s.type,
                "flags": s.flags,
            }
            for s in mm.sections
        ],
        "segments": [
            {
                "type": p.type,
                "offset": p.offset,
                "vaddr": p.vaddr,
                "paddr": p.paddr,
                "filesz": p.filesz,
                "memsz": p.memsz,
                "flags": p.flag_text.replace(" ", ""),
                "sections": list(p.sections),
            }
            for p in elf.segments
        ],
        "symbols_top": [
            {"name": s.name, "address": s.address, "size": s.size, "section": s.section}
            for s in mm.symbols_top(top)
        ],
        "pools": {
            role: {
                "symbol": p.symbol,
                "address": p.address,
                "size": p.size,
                "region": p.region,
                "section": p.section,
                "source": p.source,
            }
            for role, p in mm.pools.items()
        },
        "kernels": {
            "names": list(mm.kernels.names),
            "code_bytes": mm.kernels.code_bytes,
            "code_from": mm.kernels.code_from,
            "functions": [{"name": n, "size": s} for n, s in mm.kernels.functions],
        },
        "got": None
        if mm.got is None
        else {
            "section": mm.got.section,
            "address": mm.got.address,
            "size": mm.got.size,
            "region": mm.got.region,
            "entries": mm.got.entries,
            "null_entries": mm.got.null_entries,
        },
        "warnings": list(mm.warnings),
    }
