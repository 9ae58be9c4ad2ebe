"""Zephyr images (issue 25 §7): a firmware built like a Zephyr application (its output
sections, its kernel's ``z_`` symbols, a ``zephyr.map`` beside it) gets Fit fixes that name
the Kconfig symbols ExecuTorch's Zephyr module sizes its pools with, not the bare-metal
runner's CMake flags.

The firmware is linked here by arm-none-eabi-gcc: the pools are declared as ExecuTorch's
Zephyr samples declare them (``static unsigned char method_allocation_pool[CONFIG_...]``),
placed in the Alif E8 HP core's memory (the ``alif-e8-hp`` preset's regions).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from etu.parsers.fit import FAIL, METHOD_POOL_FLAG, TEMP_POOL_FLAG, check_fit
from etu.parsers.memory_map import load_memory_map
from etu.parsers.memory_presets import get_preset
from etu.parsers.pte import open_program
from etu.parsers.zephyr_image import METHOD_POOL_KCONFIG, TEMP_POOL_KCONFIG

pytestmark = pytest.mark.skipif(
    shutil.which("arm-none-eabi-gcc") is None, reason="arm-none-eabi-gcc is not installed"
)

DEMO = Path(__file__).resolve().parent.parent.parent / "etu_tui" / "demo"
DEMO_PTE = DEMO / "demo_cnn.pte"  # delegated to the Ethos-U55: it needs a scratch buffer

POOLS = """
static unsigned char method_allocation_pool[CONFIG_EXECUTORCH_METHOD_ALLOCATOR_POOL_SIZE]
    __attribute__((used, section(".bss.method_allocator_sec")));
static unsigned char temp_allocation_pool[CONFIG_EXECUTORCH_TEMP_ALLOCATOR_POOL_SIZE]
    __attribute__((used, section(".bss.tensor_arena")));
int main(void) { return method_allocation_pool[0] + temp_allocation_pool[0]; }
"""
# What Zephyr's linker script and kernel leave in an image (include/zephyr/linker, kernel/).
ZEPHYR_PARTS = """
struct device { const char *name; };
const struct device __device_uart4 __attribute__((used, section("device_area"))) = {"uart4"};
const void *const _sw_isr_table[2] __attribute__((used, section("sw_isr_table"))) = {0, 0};
const int __init_PRE_KERNEL_1 __attribute__((used, section("initlevel"))) = 1;
int z_sys_post_kernel __attribute__((used, section("datas"))) = 1;
void z_prep_c(void) { main(); }
void z_cstart(void) { z_prep_c(); }
"""


def link_script(preset: str) -> str:
    """A MEMORY block from the preset's regions and the sections Zephyr's script places."""
    regions = get_preset(preset).regions
    memory = "\n".join(
        f"  {r.name} ({r.attributes or 'rwx'}) : ORIGIN = {r.origin:#x}, LENGTH = {r.length:#x}"
        for r in regions
    )
    return f"""
MEMORY
{{
{memory}
}}
SECTIONS
{{
  text : {{ *(.text*) }} > MRAM
  initlevel : {{ KEEP(*(initlevel)) }} > MRAM
  device_area : {{ KEEP(*(device_area)) }} > MRAM
  sw_isr_table : {{ KEEP(*(sw_isr_table)) }} > MRAM
  rodata : {{ *(.rodata*) }} > MRAM
  datas : {{ *(datas) *(.data*) }} > SRAM0 AT> MRAM
  bss (NOLOAD) : {{ *(.bss*) *(COMMON) }} > SRAM0
}}
"""


def build_firmware(
    folder: Path, *, method_pool: int, temp_pool: int, zephyr_parts: bool = True,
    map_name: str = "zephyr.map",
) -> Path:  # fmt: skip
    """``folder/zephyr.elf`` (and its map) from the pools and, optionally, Zephyr's parts."""
    folder.mkdir(parents=True, exist_ok=True)
    source = folder / "main.c"
    source.write_text(POOLS + (ZEPHYR_PARTS if zephyr_parts else ""))
    script = folder / "link.ld"
    script.write_text(link_script("alif-e8-hp"))
    elf = folder / "zephyr.elf"
    subprocess.run(
        ["arm-none-eabi-gcc", "-mcpu=cortex-m55", "-mthumb", "-O1", "-nostdlib",
         "-nostartfiles", f"-DCONFIG_EXECUTORCH_METHOD_ALLOCATOR_POOL_SIZE={method_pool}",
         f"-DCONFIG_EXECUTORCH_TEMP_ALLOCATOR_POOL_SIZE={temp_pool}", "-e", "main",
         "-T", str(script), f"-Wl,-Map={folder / map_name}", str(source), "-o", str(elf)],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    return elf


def fixes(elf: Path, map_path: Path | None) -> dict[str, str | None]:
    memory_map = load_memory_map(elf, map_path=map_path)
    with open_program(DEMO_PTE) as program:
        verdicts = check_fit(program, memory_map)
    return {v.check: v.fix for v in verdicts if v.status == FAIL}


def test_a_zephyr_image_is_recognised_by_its_sections_symbols_and_map(tmp_path: Path) -> None:
    elf = build_firmware(tmp_path / "zephyr", method_pool=1024, temp_pool=16)
    memory_map = load_memory_map(elf, map_path=elf.with_suffix(".map"))
    evidence = " · ".join(memory_map.zephyr)
    assert "device_area" in evidence and "sw_isr_table" in evidence and "datas" in evidence
    assert "z_cstart" in evidence and "z_prep_c" in evidence
    assert "its map is zephyr.map" in evidence
    assert memory_map.regions_from == "ld_map"
    assert memory_map.preset == "alif-e8-hp"  # the map's MEMORY is the board preset's layout
    assert memory_map.pools["method_allocator"].size == 1024
    assert memory_map.pools["temp_allocator"].size == 16


def test_fit_names_the_kconfig_symbols_for_a_zephyr_image(tmp_path: Path) -> None:
    elf = build_firmware(tmp_path / "zephyr", method_pool=1024, temp_pool=16)
    failing = fixes(elf, elf.with_suffix(".map"))
    method, scratch = failing["method_allocator"], failing["ethosu_scratch"]
    assert method is not None and METHOD_POOL_KCONFIG in method and "prj.conf" in method
    assert scratch is not None and TEMP_POOL_KCONFIG in scratch and "prj.conf" in scratch
    assert "-D" not in method + scratch and "ET_ARM_BAREMETAL" not in method + scratch


def test_a_bare_metal_image_keeps_the_cmake_flags(tmp_path: Path) -> None:
    """The same pools without Zephyr's parts, its map named as the runner names its own."""
    elf = build_firmware(tmp_path / "runner", method_pool=1024, temp_pool=16,
                         zephyr_parts=False, map_name="arm_executor_runner.map")  # fmt: skip
    memory_map = load_memory_map(elf, map_path=elf.parent / "arm_executor_runner.map")
    assert memory_map.zephyr == ()
    failing = fixes(elf, elf.parent / "arm_executor_runner.map")
    assert f"-D{METHOD_POOL_FLAG}=" in (failing["method_allocator"] or "")
    assert f"-D{TEMP_POOL_FLAG}=" in (failing["ethosu_scratch"] or "")


def test_the_map_alone_makes_it_a_zephyr_image(tmp_path: Path) -> None:
    """A Zephyr build whose symbols were stripped still comes with its zephyr.map."""
    elf = build_firmware(tmp_path / "map-only", method_pool=1024, temp_pool=16,
                         zephyr_parts=False)  # fmt: skip
    memory_map = load_memory_map(elf, map_path=elf.with_suffix(".map"))
    assert memory_map.zephyr == ("its map is zephyr.map",)
    assert METHOD_POOL_KCONFIG in (fixes(elf, elf.with_suffix(".map"))["method_allocator"] or "")


def test_etu_fit_finds_zephyr_map_beside_the_elf(tmp_path: Path) -> None:
    """``etu fit`` with no --map reads the zephyr.map beside zephyr.elf, as a Zephyr build
    leaves them (build/zephyr/), and prints the Kconfig fix."""
    elf = build_firmware(tmp_path / "build" / "zephyr", method_pool=1024, temp_pool=16)
    run = [sys.executable, "-m", "etu.tui.cli", "fit", "--pte", str(DEMO_PTE), "--elf", str(elf)]
    done = subprocess.run([*run, "--json"], capture_output=True, text=True, check=False)
    assert done.returncode == 1, done.stderr
    record = json.loads(done.stdout)
    fixes_printed = [v["fix"] for v in record["verdicts"] if v["status"] == "fail"]
    assert any(METHOD_POOL_KCONFIG in (fix or "") for fix in fixes_printed)
    assert any(TEMP_POOL_KCONFIG in (fix or "") for fix in fixes_printed)
    text = subprocess.run(run, capture_output=True, text=True, check=False)
    assert text.returncode == 1 and f"{TEMP_POOL_KCONFIG}=" in text.stdout
    elf_json = subprocess.run([sys.executable, "-m", "etu.tui.cli", "elf", "--json", str(elf)],
                              capture_output=True, text=True, check=True)  # fmt: skip
    record = json.loads(elf_json.stdout)
    assert record["preset"] == "alif-e8-hp" and "its map is zephyr.map" in record["zephyr"]
