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

Besides usage, the map holds what other modules find in the same image: the runner's pools
by role (:mod:`etu.parsers.runner_pools`), the kernel registry
(:mod:`etu.parsers.kernel_registry`) and the ``.got`` check (:mod:`etu.parsers.got_check`),
with their warnings. Pure: parsed objects in, a map out.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from etu.parsers.elf_map import SHF_TLS, ElfImage, Section, Symbol, read_elf
from etu.parsers.errors import FormatError, ParseError
from etu.parsers.got_check import GOT_SECTIONS, GotInfo, check_got
from etu.parsers.kernel_registry import KERNEL_CODE_SECTION, KernelInfo, find_kernels
from etu.parsers.ld_map import LdMap, read_ld_map
from etu.parsers.linker_script import LinkerScript, MemoryRegion, parse_size, read_linker_script
from etu.parsers.memory_presets import PRESETS, Preset, get_preset, match_preset
from etu.parsers.runner_pools import MODEL_OUTPUT_SECTIONS, POOL_ROLES, Pool, find_pools
from etu.parsers.zephyr_image import zephyr_evidence

# Re-exported: the map's parts were defined here before they had modules of their own.
__all__ = [
    "GOT_SECTIONS",
    "KERNEL_CODE_SECTION",
    "MODEL_OUTPUT_SECTIONS",
    "POOL_ROLES",
    "GotInfo",
    "KernelInfo",
    "MemoryMap",
    "PlacedSection",
    "Pool",
    "Region",
    "build_memory_map",
    "elf_record",
    "load_memory_map",
    "parse_region_spec",
]


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
    zephyr: tuple[str, ...] = ()  # why it is a Zephyr build (parsers.zephyr_image); ()

    @property
    def kernel_names(self) -> set[str]:
        return set(self.kernels.names)

    @property
    def source(self) -> str:
        return self.elf.source

    def region_of(self, address: int) -> Region | None:
        return next((r for r in self.regions if r.contains(address)), None)

    def region_name(self, address: int) -> str | None:
        """The name of the region holding ``address``, or None."""
        region = self.region_of(address)
        return region.name if region else None

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
    memory_map.pools = find_pools(elf, ld_map, memory_map.region_name, warnings)
    not_code = [
        (pool.address, pool.address + pool.size)
        for role, pool in memory_map.pools.items()
        if role == "model_pte" or pool.size
    ]
    memory_map.kernels = find_kernels(elf, ld_map, not_code)
    memory_map.got = check_got(elf, ld_map, memory_map.region_name, bool(region_list), warnings)
    memory_map.zephyr = zephyr_evidence(elf, ld_map)
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
    # Only the runner's own layouts are guessed: a board's is named (--preset, its profile).
    runner_presets = [p for p in PRESETS.values() if p.kind == "runner"]
    fitting = [p for p in runner_presets if _all_sections_fit(elf, p.regions)]
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
        "zephyr": list(mm.zephyr),
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
