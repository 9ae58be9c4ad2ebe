"""Is this firmware a Zephyr build? Then the runner's pools are sized in Kconfig, not CMake.

ExecuTorch's Zephyr module sizes its pools with ``CONFIG_EXECUTORCH_METHOD_ALLOCATOR_POOL_SIZE``
and ``CONFIG_EXECUTORCH_TEMP_ALLOCATOR_POOL_SIZE`` (in ``prj.conf``, a board ``.conf`` or an
``OVERLAY_CONFIG``), where the bare-metal runner takes ``-DET_ARM_BAREMETAL_..._POOL_SIZE``:
Fit's fixes name the one the firmware was built with (pytorch/executorch
``docs/source/zephyr_alif_tutorial.md``, ``zephyr/samples``).

A Zephyr image is recognised by what Zephyr's linker script and kernel leave in it: output
sections no other runtime names (``device_area``, ``sw_isr_table``, ``initlevel``, ``datas``,
...), kernel symbols (``z_cstart``, ``z_prep_c``, ...), or a map written as ``zephyr.map`` or
linking ``libzephyr.a``. Pure: parsed objects in, the evidence out.
"""

from __future__ import annotations

from etu.parsers.elf_map import ElfImage
from etu.parsers.ld_map import LdMap

# Output sections of Zephyr's common linker scripts (include/zephyr/linker/*.ld).
ZEPHYR_SECTIONS = frozenset({
    "device_area", "sw_isr_table", "initlevel", "datas", "device_states", "rom_start",
    "log_const_area", "k_heap_area", "k_mutex_area", "k_sem_area", "k_timer_area",
})  # fmt: skip
# The kernel's own start-up symbols (kernel/init.c, arch/arm/core/cortex_m).
ZEPHYR_SYMBOLS = ("z_cstart", "z_prep_c", "z_arm_reset", "z_bss_zero", "z_main_thread")
ZEPHYR_MAP_NAME = "zephyr.map"
ZEPHYR_LIBRARY = "libzephyr.a"
MIN_SECTIONS = 2  # one Zephyr-like section name alone could be anybody's

# What Fit names for a Zephyr build, per pool flag of the bare-metal runner.
METHOD_POOL_KCONFIG = "CONFIG_EXECUTORCH_METHOD_ALLOCATOR_POOL_SIZE"
TEMP_POOL_KCONFIG = "CONFIG_EXECUTORCH_TEMP_ALLOCATOR_POOL_SIZE"
KCONFIG_FOR_FLAG = {
    "ET_ARM_BAREMETAL_METHOD_ALLOCATOR_POOL_SIZE": METHOD_POOL_KCONFIG,
    "ET_ARM_BAREMETAL_SCRATCH_TEMP_ALLOCATOR_POOL_SIZE": TEMP_POOL_KCONFIG,
}


def zephyr_evidence(elf: ElfImage, ld_map: LdMap | None = None) -> tuple[str, ...]:
    """Why ``elf`` is a Zephyr image, one phrase per kind of sign; () when it is not."""
    evidence = []
    sections = sorted({s.name for s in elf.sections} & ZEPHYR_SECTIONS)
    if len(sections) >= MIN_SECTIONS:
        evidence.append("Zephyr sections " + ", ".join(sections))
    symbols = [name for name in ZEPHYR_SYMBOLS if elf.symbol(name) is not None]
    if symbols:
        evidence.append("Zephyr kernel symbols " + ", ".join(symbols))
    if ld_map is not None:
        name = ld_map.source.replace("\\", "/").rsplit("/", 1)[-1]
        if name == ZEPHYR_MAP_NAME:
            evidence.append(f"its map is {ZEPHYR_MAP_NAME}")
        elif any(ZEPHYR_LIBRARY in section.file for section in ld_map.input_sections):
            evidence.append(f"its map links {ZEPHYR_LIBRARY}")
    return tuple(evidence)


def kconfig_fix(flag: str, size: int) -> str | None:
    """The Kconfig line that sets the pool ``flag`` sizes in a bare-metal build, or None
    when Zephyr has no Kconfig symbol for it."""
    symbol = KCONFIG_FOR_FLAG.get(flag)
    if symbol is None:
        return None
    return (
        f"set {symbol}={size} ({size:#x} bytes) or more in prj.conf (or the board's .conf, "
        "an OVERLAY_CONFIG) and rebuild"
    )
