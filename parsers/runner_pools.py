"""Where the runner's memory pools are in a firmware image, by role.

The runner (``arm_executor_runner.cpp``) declares each pool as a named array in an input
section of its own. A pool is found by its symbol (plain, in a namespace, or mangled), else
in the ld map by symbol or input section; the Ethos-U fast scratch also through the pointer
and size the runner keeps in ``.data``; the baked-in program, lacking a symbol, as the whole
of its output section.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from etu.parsers.elf_map import ElfImage, Symbol
from etu.parsers.ld_map import LdMap

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

RegionName = Callable[[int], "str | None"]


@dataclass(frozen=True, slots=True)
class Pool:
    role: str
    symbol: str | None
    address: int
    size: int
    region: str | None
    section: str | None = None  # output section
    source: str = "symbol"  # symbol | ld_map | section


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


def find_pools(
    elf: ElfImage, ld_map: LdMap | None, region_name: RegionName, warnings: list[str]
) -> dict[str, Pool]:
    """Every runner pool the image has, by role (see the module docstring for the order);
    ``region_name`` names the memory region of an address."""
    pools: dict[str, Pool] = {}

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
