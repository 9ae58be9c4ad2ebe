"""The memory layouts of the runner's own linker scripts, for ELFs that come without one,
and of the boards people bring up (issue 25 §7), for ``etu fit`` against their firmware.

Runner regions are those of ExecuTorch's ``examples/arm/executor_runner/Corstone-300.ld``
and ``Corstone-320.ld`` (runtime_formats.md §6.1). ``load_base_sections`` names the output
sections those scripts place with ``AT(expr)``: GNU ld does not count such a load image in
any region, so matching ld's ``--print-memory-usage`` needs to know them. Board layouts
(``kind="board"``) come from the public devicetree or vendor header each one names in
``linker_script``; their firmware is usually a Zephyr build, whose ``zephyr.map`` beside the
ELF names the regions better still.
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
    linker_script: str  # the runner's script this layout comes from (a board's: its source)
    kind: str = "runner"  # runner: the runner's own script; board: a board's memory map

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

# Board layouts: the application core's view (the core that drives the Ethos-U), from the
# public sources named in each; "rx" marks the non-volatile code memory.
_BOARD_PRESETS = (
    Preset(
        name="alif-e7-hp",
        board="Alif Ensemble E7 DevKit, RTSS-HP core (AE722F80F55D5)",
        cpu="cortex-m55",
        npus=("ethos-u55",),
        regions=(
            MemoryRegion("ITCM", 0x00000000, 256 * KIB, "rwx"),
            MemoryRegion("SRAM0", 0x02000000, 4 * MIB, "rw"),
            MemoryRegion("SRAM1", 0x08000000, 0x280000, "rw"),
            MemoryRegion("DTCM", 0x20000000, 1 * MIB, "rw"),
            MemoryRegion("MRAM", 0x80000000, 0x580000, "rx"),
        ),
        load_base_sections=frozenset(),
        stack_size=0x2000,
        heap_size=0x18000,
        linker_script=(
            "alifsemi/alif_ensemble-cmsis-dfp Device/common/include/AE722F80F55D5XX.h (sizes), "
            "regions_AE722F80F55D5LS_M55_HP.h (bases), zephyr ensemble_rtss_hp.dtsi (TCMs)"
        ),
        kind="board",
    ),
    Preset(
        name="alif-e8-hp",
        board="Alif Ensemble E8 DevKit, RTSS-HP core (AE822FA0E5597LS0)",
        cpu="cortex-m55",
        npus=("ethos-u55", "ethos-u85"),
        regions=(
            MemoryRegion("ITCM", 0x00000000, 256 * KIB, "rwx"),
            MemoryRegion("SRAM0", 0x02000000, 4 * MIB, "rw"),
            MemoryRegion("SRAM1", 0x02400000, 4 * MIB, "rw"),
            MemoryRegion("DTCM", 0x20000000, 1 * MIB, "rw"),
            MemoryRegion("MRAM", 0x80000000, 5632 * KIB, "rx"),
        ),
        load_base_sections=frozenset(),
        stack_size=0x2000,
        heap_size=0x8000,
        linker_script=(
            "zephyr dts/arm/alif/ensemble/ae822fa0e5597ls0.dtsi, common/ensemble_rtss_hp.dtsi"
        ),
        kind="board",
    ),
    Preset(
        name="renesas-ra8p1",
        board="Renesas EK-RA8P1, Cortex-M85 core (R7KA8P1KFLCAC)",
        cpu="cortex-m85",
        npus=("ethos-u55",),
        regions=(
            MemoryRegion("MRAM", 0x02000000, 1 * MIB, "rx"),
            MemoryRegion("SRAM", 0x22000000, 0x1D4000, "rw"),
        ),
        load_base_sections=frozenset(),
        stack_size=0x1000,
        heap_size=0x8000,
        linker_script=(
            "zephyr dts/arm/renesas/ra/ra8/r7ka8p1kflcac.dtsi (SRAM), boards/renesas/ek_ra8p1 "
            "(1 MB MRAM at the RA8 code-flash base)"
        ),
        kind="board",
    ),
    Preset(
        name="infineon-pse84-m55",
        board="Infineon PSOC Edge E84 Evaluation Kit, Cortex-M55 core (PSE846GPS2DBZC4A)",
        cpu="cortex-m55",
        npus=("ethos-u55",),
        regions=(
            MemoryRegion("SOCMEM", 0x26040000, 0x2BC000, "rw"),
            MemoryRegion("ITCM", 0x48000000, 256 * KIB, "rwx"),
            MemoryRegion("DTCM", 0x48040000, 256 * KIB, "rw"),
            MemoryRegion("XIP", 0x60500000, 3 * MIB, "rx"),
        ),
        load_base_sections=frozenset(),
        stack_size=0x1000,
        heap_size=0x8000,
        linker_script="zephyr boards/infineon/kit_pse84_eval/doc/memory_map.md (no TF-M)",
        kind="board",
    ),
    Preset(
        name="nuvoton-m55m1",
        board="Nuvoton NuMaker-M55M1 (M55M1H2LJAE)",
        cpu="cortex-m55",
        npus=("ethos-u55",),
        regions=(
            MemoryRegion("ITCM", 0x00000000, 64 * KIB, "rwx"),
            MemoryRegion("FLASH", 0x00100000, 2 * MIB, "rx"),
            MemoryRegion("DTCM", 0x20000000, 128 * KIB, "rw"),
            MemoryRegion("SRAM", 0x20100000, 1344 * KIB, "rw"),
        ),
        load_base_sections=frozenset(),
        stack_size=0x1000,
        heap_size=0x8000,
        linker_script="zephyr dts/arm/nuvoton/m55m1h2l.dtsi, boards/nuvoton/numaker_m55m1",
        kind="board",
    ),
)
PRESETS.update({preset.name: preset for preset in _BOARD_PRESETS})


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
