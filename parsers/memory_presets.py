"""The memory layouts of the runner's own linker scripts, for ELFs that come without one.

Regions are those of ExecuTorch's ``examples/arm/executor_runner/Corstone-300.ld`` and
``Corstone-320.ld`` (runtime_formats.md §6.1). ``load_base_sections`` names the output
sections those scripts place with ``AT(expr)``: GNU ld does not count such a load image in
any region, so matching ld's ``--print-memory-usage`` needs to know them.
"""

from __future__ import annotations

from dataclasses import dataclass

from etu.parsers.errors import ParseError
from etu.parsers.linker_script import MemoryRegion

KIB = 1024
MIB = 1024 * KIB


@dataclass(frozen=True, slots=True)
class Preset:
    name: str
    board: str
    cpu: str
    npus: tuple[str, ...]
    regions: tuple[MemoryRegion, ...]
    load_base_sections: frozenset[str]
    stack_size: int
    heap_size: int
    linker_script: str  # the runner's script this layout comes from

    def region(self, name: str) -> MemoryRegion | None:
        return next((r for r in self.regions if r.name == name), None)


PRESETS: dict[str, Preset] = {
    "corstone-300": Preset(
        name="corstone-300",
        board="Arm Corstone-300 (SSE-300) FVP",
        cpu="cortex-m55",
        npus=("ethos-u55", "ethos-u65"),
        regions=(
            MemoryRegion("ITCM", 0x10000000, 512 * KIB, "rx"),
            MemoryRegion("BRAM", 0x11000000, 1 * MIB, "rw"),
            MemoryRegion("DTCM", 0x30000000, 512 * KIB, "rw"),
            MemoryRegion("SRAM", 0x31000000, 2 * MIB, "rw"),
            MemoryRegion("QSPI", 0x38000000, 8 * MIB, "rw"),
            MemoryRegion("DDR", 0x70000000, 0x60000000, "rwx"),
        ),
        load_base_sections=frozenset({".data"}),  # .data : AT(__etext), image in ITCM
        stack_size=0x8000,
        heap_size=0x8000,
        linker_script="examples/arm/executor_runner/Corstone-300.ld",
    ),
    "corstone-320": Preset(
        name="corstone-320",
        board="Arm Corstone-320 (SSE-320) FVP",
        cpu="cortex-m85",
        npus=("ethos-u85",),
        regions=(
            MemoryRegion("ITCM", 0x10000000, 32 * KIB, "rwx"),
            MemoryRegion("BROM", 0x11000000, 128 * KIB, "rx"),
            MemoryRegion("BRAM", 0x12000000, 2 * MIB, "rwx"),
            MemoryRegion("DTCM", 0x30000000, 32 * KIB, "rw"),
            MemoryRegion("SRAM", 0x31000000, 4 * MIB, "rw"),
            MemoryRegion("DDR", 0x70000000, 256 * MIB, "rw"),
        ),
        load_base_sections=frozenset({".sram"}),  # .sram : AT(__etext), image in DDR
        stack_size=0x8000,
        heap_size=0x10000,
        linker_script="examples/arm/executor_runner/Corstone-320.ld",
    ),
}


def get_preset(name: str) -> Preset:
    """The preset called ``name`` (``corstone-300``, ``corstone300``, ``Corstone-320``, ...)."""
    key = name.strip().lower().replace("_", "-")
    if key.startswith("corstone") and "-" not in key:
        key = key.replace("corstone", "corstone-")
    if key not in PRESETS:
        raise ParseError(
            f"unknown memory preset {name!r} (known: {', '.join(PRESETS)})", field="preset"
        )
    return PRESETS[key]


def match_preset(regions: list[MemoryRegion] | tuple[MemoryRegion, ...]) -> Preset | None:
    """The preset whose regions are exactly these (names, origins and lengths)."""
    layout = sorted((r.name, r.origin, r.length) for r in regions)
    for preset in PRESETS.values():
        if layout == sorted((r.name, r.origin, r.length) for r in preset.regions):
            return preset
    return None
