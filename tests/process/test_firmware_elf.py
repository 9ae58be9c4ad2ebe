"""The firmware memory map against the GNU tools, on firmware linked at test time.

The stand-in runner (runner/firmware_src) is compiled and linked by arm-none-eabi-gcc/ld in a
temporary directory for several memory modes, pool sizes and both Corstone layouts. What
parsers/elf_map.py reads is compared with arm-none-eabi-readelf, -size and -nm; what
parsers/memory_map.py computes as region usage is compared with the report ld itself
printed for the same link (--print-memory-usage), byte for byte.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from etu.parsers.elf_map import ElfImage, decode_elf, read_elf
from etu.parsers.errors import ParseError, TruncatedError, WrongKindError
from etu.parsers.ld_map import parse_ld_map, parse_memory_usage, read_ld_map
from etu.parsers.linker_script import MemoryRegion, parse_linker_script, read_linker_script
from etu.parsers.memory_map import (
    MemoryMap,
    build_memory_map,
    elf_record,
    load_memory_map,
    parse_region_spec,
)
from etu.parsers.memory_presets import PRESETS, get_preset, match_preset
from etu.runner import firmware
from etu.runner.firmware import FirmwareBuild, FirmwareBuildError, build_stub_firmware

ROOT = Path(__file__).resolve().parent.parent.parent
SOURCES = ROOT / "runner" / "firmware_src"
DEMO_PTE = ROOT / "etu_tui" / "demo" / "demo_cnn.pte"
DEMO_FIRMWARE = ROOT / "etu_tui" / "demo" / "firmware"
DEMO_OPS = [
    "quantized_decomposed::quantize_per_tensor.out",
    "quantized_decomposed::dequantize_per_tensor.out",
]
TOOLS = ("arm-none-eabi-gcc", "arm-none-eabi-readelf", "arm-none-eabi-size", "arm-none-eabi-nm")
MIB = 1024 * 1024

_missing = [tool for tool in TOOLS if shutil.which(tool) is None]
pytestmark = pytest.mark.skipif(
    bool(_missing),
    reason=f"needs the Arm GNU toolchain ({', '.join(_missing)} not on PATH)",
)


@dataclass(frozen=True)
class Config:
    """One firmware build: what was asked for, so results can be checked against it."""

    preset: str
    memory_mode: str
    method_pool: int
    temp_pool: int | None
    ops: tuple[str, ...]
    planned_fast_memory: int | None = None
    semihosting_pool: int | None = None
    num_inferences: int = 1


CONFIGS = {
    # The demo's own build: runner defaults (60 MiB method pool, 2 MiB temp pool in SRAM).
    "c300_shared_default": Config("corstone-300", "Shared_Sram", 60 * MIB, None, tuple(DEMO_OPS)),
    # Small pools, semihosting file pool, more kernels.
    "c300_sram_only_small": Config(
        "corstone-300",
        "Sram_Only",
        1 * MIB,
        0x180000,
        ("aten::add.out", "aten::convolution.out", "aten::_softmax.out", *DEMO_OPS),
        semihosting_pool=2 * MIB,
        num_inferences=3,
    ),
    # Temp pool in DDR, fast scratch from the mode's suffix, planned fast pool in SRAM.
    "c300_dedicated_512kb": Config(
        "corstone-300",
        "Dedicated_Sram_512KB",
        8 * MIB,
        0x400000,
        ("cortex_m::quantize_per_tensor.out", "executorch_prim::add.Scalar", "aten::sym_size.int"),
        planned_fast_memory=0x8000,
    ),
    "c320_dedicated_default": Config(
        "corstone-320", "Dedicated_Sram", 16 * MIB, None, tuple(DEMO_OPS)
    ),
}


def _build(config: Config, out_dir: Path, **overrides) -> FirmwareBuild:
    return build_stub_firmware(
        DEMO_PTE,
        out_dir,
        ops=list(config.ops),
        memory_mode=config.memory_mode,
        method_pool=config.method_pool,
        temp_pool=config.temp_pool,
        preset=config.preset,
        planned_fast_memory=config.planned_fast_memory,
        semihosting_pool=config.semihosting_pool,
        num_inferences=config.num_inferences,
        **overrides,
    )


@pytest.fixture(scope="module")
def builds(tmp_path_factory) -> dict[str, FirmwareBuild]:
    root = tmp_path_factory.mktemp("firmware")
    return {name: _build(config, root / name) for name, config in CONFIGS.items()}


@pytest.fixture(scope="module", params=sorted(CONFIGS))
def build(request, builds) -> tuple[Config, FirmwareBuild]:
    return CONFIGS[request.param], builds[request.param]


def run(*argv: str | Path) -> str:
    return subprocess.run(
        [str(a) for a in argv], capture_output=True, text=True, check=True, timeout=60
    ).stdout


def ld_usage(build: FirmwareBuild) -> dict[str, tuple[int, int, float]]:
    rows = parse_memory_usage(build.memory_usage_text)
    assert rows, build.memory_usage_text
    return {row.name: (row.used, row.length, row.percent) for row in rows}


def usage_of(memory_map: MemoryMap) -> dict[str, tuple[int, int, float]]:
    return {r.name: (r.used, r.length, round(r.percent, 2)) for r in memory_map.regions}


def one_line(error: BaseException) -> str:
    message = str(error)
    assert message and "\n" not in message, repr(message)
    return message


# ------------------------------------------------------------------ readelf / size / nm


def readelf_sections(path: Path) -> list[tuple]:
    rows = []
    for line in run("arm-none-eabi-readelf", "-S", "-W", path).splitlines():
        match = re.match(r"\s*\[\s*(\d+)\]\s(.*)$", line)
        if not match or match.group(1) == "0":
            continue
        fields = match.group(2).split()
        name, kind, addr, off, size, _es = fields[:6]
        flags = fields[6] if len(fields) == 10 else ""
        align = fields[-1]
        rows.append(
            (int(match.group(1)), name, kind, int(addr, 16), int(off, 16), int(size, 16), flags,
             int(align))
        )  # fmt: skip
    return rows


def readelf_segments(path: Path) -> tuple[list[tuple], list[set[str]]]:
    text = run("arm-none-eabi-readelf", "-l", "-W", path)
    headers = re.findall(
        r"^\s+(\w+)\s+(0x[0-9a-f]+)\s+(0x[0-9a-f]+)\s+(0x[0-9a-f]+)\s+(0x[0-9a-f]+)\s+"
        r"(0x[0-9a-f]+)\s([R ][W ][E ])\s+(0x[0-9a-f]+)$",
        text,
        re.M,
    )
    segments = [
        (kind, *(int(v, 16) for v in numbers), flags, int(align, 16))
        for kind, *numbers, flags, align in headers
    ]
    mapping_text = text.split("Section to Segment mapping:")[1]
    mapping = [
        set(line.split()[1:]) for line in mapping_text.splitlines() if re.match(r"^\s+\d\d\s", line)
    ]
    return segments, mapping


def readelf_symbols(path: Path) -> list[tuple]:
    rows = []
    for line in run("arm-none-eabi-readelf", "-s", "-W", path).splitlines():
        match = re.match(
            r"\s*(\d+):\s+([0-9a-f]+)\s+(0x[0-9a-f]+|\d+)\s+(\w+)\s+(\w+)\s+(\w+)\s+(\w+)\s?(.*)$",
            line,
        )
        if match:
            _num, value, size, kind, bind, _vis, ndx, name = match.groups()
            rows.append(
                (int(value, 16), int(size, 0), kind, bind,
                 int(ndx) if ndx.isdigit() else ndx, name)
            )  # fmt: skip
    return rows


def size_sections(path: Path) -> dict[str, tuple[int, int]]:
    result = {}
    for line in run("arm-none-eabi-size", "-A", path).splitlines()[2:]:
        fields = line.split()
        if len(fields) == 3 and fields[0] != "Total":
            result[fields[0]] = (int(fields[1]), int(fields[2]))
    return result


def nm_sizes(path: Path) -> dict[str, tuple[int, int]]:
    result = {}
    for line in run("arm-none-eabi-nm", "-S", path).splitlines():
        fields = line.split()
        if len(fields) == 4:
            result[fields[3]] = (int(fields[0], 16), int(fields[1], 16))
    return result


def test_sections_match_readelf(build) -> None:
    _config, fw = build
    with read_elf(fw.elf) as elf:
        ours = [
            (s.index, s.name, s.type, s.address, s.offset, s.size, s.flag_text, s.align)
            for s in elf.sections
            if s.index
        ]
    assert ours == readelf_sections(fw.elf)


def test_segments_match_readelf(build) -> None:
    _config, fw = build
    segments, mapping = readelf_segments(fw.elf)
    with read_elf(fw.elf) as elf:
        ours = [
            (p.type, p.offset, p.vaddr, p.paddr, p.filesz, p.memsz, p.flag_text, p.align)
            for p in elf.segments
        ]
        assert ours == segments
        assert [set(p.sections) for p in elf.segments] == mapping


def test_symbols_match_readelf(build) -> None:
    _config, fw = build
    with read_elf(fw.elf) as elf:
        ours = [(s.value, s.size, s.type, s.bind, s.section_index, s.name) for s in elf.symbols]
        top = elf.symbols_top(5)
    assert ours == readelf_symbols(fw.elf)
    nm = nm_sizes(fw.elf)
    largest = sorted(((size, name) for name, (_a, size) in nm.items()), reverse=True)[:1]
    assert (top[0].size, top[0].name) == largest[0]
    assert [s.size for s in top] == sorted((s.size for s in top), reverse=True)


def test_section_sizes_match_size_A(build) -> None:
    _config, fw = build
    with read_elf(fw.elf) as elf:
        ours = {s.name: (s.size, s.address) for s in elf.sections if s.index and s.name}
    expected = size_sections(fw.elf)
    assert {name: ours[name] for name in expected} == expected


def test_load_addresses_match_ld_map(build) -> None:
    """LMA from the segments' file image = the "load address" ld printed in its map."""
    _config, fw = build
    ld_map = read_ld_map(fw.map_file)
    with read_elf(fw.elf) as elf:
        placed = [s for s in elf.sections if s.alloc and s.size]
        assert placed
        for section in placed:
            listed = ld_map.output_section(section.name)
            assert listed is not None, section.name
            assert (listed.address, listed.size) == (section.address, section.size)
            if section.has_contents:
                assert listed.load_address == section.load_address, section.name
        # The runner's layout has images that run elsewhere than they load.
        assert any(s.load_address != s.address for s in placed if s.has_contents)


# ------------------------------------------------------------------ usage = ld's report


@pytest.mark.parametrize("source", ["ld_map", "linker_script", "map_and_script", "preset", "guess"])
def test_region_usage_equals_ld_report(build, source: str) -> None:
    config, fw = build
    kwargs = {
        "ld_map": {"map_path": fw.map_file},
        "linker_script": {"script_path": fw.linker_script},
        "map_and_script": {"map_path": fw.map_file, "script_path": fw.linker_script},
        "preset": {"preset": config.preset},
        "guess": {},
    }[source]
    memory_map = load_memory_map(fw.elf, **kwargs)
    assert usage_of(memory_map) == ld_usage(fw)
    assert memory_map.preset == config.preset
    assert not [w for w in memory_map.warnings if "overflow" in w or "outside" in w]


def test_load_images_ld_counts_and_does_not(builds) -> None:
    """ld counts an ``AT> REGION`` image there, and an ``AT(expr)`` image nowhere."""
    fw = builds["c300_shared_default"]
    memory_map = load_memory_map(fw.elf, script_path=fw.linker_script)
    by_name = {s.name: s for s in memory_map.sections}
    data, rodata, kernels = by_name[".data"], by_name[".rodata"], by_name[".sram.data"]
    assert (data.region, data.load_region, data.load_counted) == ("DTCM", "ITCM", False)
    assert (rodata.region, rodata.load_region, rodata.load_counted) == ("DTCM", "DDR", True)
    assert (kernels.region, kernels.load_region, kernels.load_counted) == ("BRAM", "DDR", True)
    itcm = memory_map.region_named("ITCM")
    text_end = max(s.address + s.size for s in memory_map.sections if s.region == "ITCM")
    assert itcm.used == text_end - itcm.origin  # .data's image right after is not counted
    assert data.load_address == text_end
    assert usage_of(memory_map) == ld_usage(fw)


def test_at_region_variant_and_orphan_got(builds, tmp_path) -> None:
    """Two edits of the script: .data with AT> ITCM (now counted in ITCM), and no .got*
    line (ld makes .got an orphan after .data; its image is not counted, and it warns)."""
    base = (SOURCES / "corstone300.ld").read_text()
    at_region = base.replace(".data : AT(__etext)", ".data :").replace(
        "} > DTCM :rom_exec", "} > DTCM AT> ITCM :rom_exec"
    )
    no_got = base.replace("*(.got*)", "")
    assert at_region != base and no_got != base
    config = CONFIGS["c300_sram_only_small"]
    for name, text in (("at_region", at_region), ("no_got", no_got)):
        script = tmp_path / f"{name}.ld"
        script.write_text(text)
        fw = _build(config, tmp_path / name, linker_script=script)
        expected = ld_usage(fw)
        for kwargs in ({"script_path": fw.linker_script},
                       {"map_path": fw.map_file, "script_path": fw.linker_script}):  # fmt: skip
            assert usage_of(load_memory_map(fw.elf, **kwargs)) == expected, (name, kwargs)
        if name == "at_region":
            # Without the script, the Corstone-300 preset's AT() for .data is assumed: the
            # one case a map alone cannot tell (ld's map looks the same for AT and AT>).
            from_map = load_memory_map(fw.elf, map_path=fw.map_file)
            data = next(s for s in from_map.sections if s.name == ".data")
            assert data.load_rule == "preset"
            assert usage_of(from_map)["ITCM"][0] == expected["ITCM"][0] - data.size
        else:
            from_map = load_memory_map(fw.elf, map_path=fw.map_file)
            assert usage_of(from_map) == expected
            got = from_map.got
            assert got is not None and got.section == ".got" and got.region == "DTCM"
            assert any(
                w.startswith(".got (") and "does not place .got" in w for w in from_map.warnings
            )


# ------------------------------------------------------------------ pools, kernels, GOT


def test_pools(build) -> None:
    config, fw = build
    memory_map = load_memory_map(fw.elf, map_path=fw.map_file)
    pools = memory_map.pools
    nm = nm_sizes(fw.elf)
    dedicated = config.memory_mode.startswith("Dedicated_Sram")
    _arena, default_temp, default_fast = firmware.memory_mode_layout(config.memory_mode)

    model = pools["model_pte"]
    assert (model.symbol, model.size, model.region) == ("model_pte", DEMO_PTE.stat().st_size, "DDR")
    assert model.address % 16 == 0
    with read_elf(fw.elf) as elf:
        assert elf.read_bytes(model.address, model.size) == DEMO_PTE.read_bytes()

    method = pools["method_allocator"]
    assert (method.size, method.region) == (config.method_pool, "DDR")
    temp = pools["temp_allocator"]
    assert temp.size == (config.temp_pool or default_temp)
    assert temp.region == ("DDR" if dedicated else "SRAM")
    if dedicated:
        fast = pools["fast_scratch"]
        assert (fast.size, fast.region) == (default_fast, "SRAM")
    else:
        assert "fast_scratch" not in pools
    if config.planned_fast_memory:
        assert pools["planned_fast_memory"].size == config.planned_fast_memory
        assert pools["planned_fast_memory"].region == "SRAM"
    if config.semihosting_pool:
        assert pools["input_file_allocator"].size == config.semihosting_pool
        assert pools["input_file_allocator"].region == "DDR"
    else:
        assert "input_file_allocator" not in pools
    for pool in pools.values():
        assert pool.source == "symbol"
        assert nm[pool.symbol] == (pool.address, pool.size)
        assert memory_map.region_of(pool.address).name == pool.region


def test_pools_by_pointer_and_by_mangled_name(builds, tmp_path) -> None:
    """Without ``dedicated_sram`` the fast scratch is read through the driver's pointer and
    size variables; a pool in a C++ anonymous namespace is found by its mangled name."""
    if shutil.which("arm-none-eabi-objcopy") is None:
        pytest.skip("arm-none-eabi-objcopy not on PATH")
    fw = builds["c300_dedicated_512kb"]
    mangled = "_ZN12_GLOBAL__N_122method_allocation_poolE"
    edited = tmp_path / "edited.elf"
    run(
        "arm-none-eabi-objcopy", "--strip-symbol=dedicated_sram",
        f"--redefine-sym=method_allocation_pool={mangled}", fw.elf, edited,
    )  # fmt: skip
    before = load_memory_map(fw.elf).pools
    after = load_memory_map(edited).pools
    fast, method = after["fast_scratch"], after["method_allocator"]
    assert fast.symbol == "ethosu_fast_scratch" and method.symbol == mangled
    for role in ("fast_scratch", "method_allocator"):
        assert (after[role].address, after[role].size, after[role].region) == (
            before[role].address, before[role].size, before[role].region,
        )  # fmt: skip


def test_kernels(build) -> None:
    config, fw = build
    from_map = load_memory_map(fw.elf, map_path=fw.map_file)
    from_symbols = load_memory_map(fw.elf)
    assert from_map.kernel_names == set(config.ops) == from_symbols.kernel_names
    nm = nm_sizes(fw.elf)
    expected = sum(size for name, (_a, size) in nm.items() if name.startswith("op_"))
    assert from_map.kernels.code_from == "ld_map"
    assert from_symbols.kernels.code_from == "symbols"
    assert from_map.kernels.code_bytes == expected == from_symbols.kernels.code_bytes
    assert len(from_symbols.kernels.functions) == len(config.ops)


def test_got_is_in_ddr(build) -> None:
    _config, fw = build
    memory_map = load_memory_map(fw.elf, map_path=fw.map_file)
    got = memory_map.got
    assert got is not None
    assert (got.section, got.region) == (".ddr", "DDR")
    assert got.entries and got.null_entries == 0
    assert not [w for w in memory_map.warnings if ".got" in w]


def test_link_warnings_reproduce_the_runner(builds) -> None:
    """Like the real runner's script, ld cannot fit .data, .sram.data and .rodata in their
    segments; the startup copy table copies them, so elf_map does not warn (issue 24 §10;
    tests/process/test_polish_cli.py zeroes the table and the warning is back)."""
    fw = builds["c300_shared_default"]
    assert any("can't be allocated in segment" in w for w in fw.link_warnings)
    with read_elf(fw.elf) as elf:
        flagged = {w.split()[1] for w in elf.warnings if "can't be allocated" in w}
        copied = {s.name for s in elf.sections if s.name in (".data", ".sram.data", ".rodata")}
    assert copied == {".data", ".sram.data", ".rodata"} and not flagged


# -------------------------------------------------------------------- record (contract)


def test_elf_record_contract(builds) -> None:
    fw = builds["c300_dedicated_512kb"]
    record = elf_record(load_memory_map(fw.elf, map_path=fw.map_file))
    json.dumps(record)
    assert {"regions", "sections", "symbols_top", "pools", "warnings"} <= set(record)
    assert set(record["regions"][0]) >= {"name", "origin", "length", "used", "free", "percent"}
    assert set(record["sections"][0]) >= {"name", "address", "load_address", "size", "region"}
    assert set(record["symbols_top"][0]) == {"name", "address", "size", "section"}
    for pool in record["pools"].values():
        assert set(pool) >= {"symbol", "address", "size", "region"}
    assert set(record["pools"]) == {
        "model_pte", "method_allocator", "temp_allocator", "fast_scratch", "planned_fast_memory",
    }  # fmt: skip
    assert record["regions_from"] == "ld_map" and record["preset"] == "corstone-300"
    assert sorted(record["kernels"]["names"]) == sorted(CONFIGS["c300_dedicated_512kb"].ops)


# ------------------------------------------------------------- map and script parsers


def test_ld_map_on_real_maps(build) -> None:
    config, fw = build
    ld_map = read_ld_map(fw.map_file)
    script = read_linker_script(fw.linker_script)

    def layout(regions):  # ld's map prints the attribute letters in its own order
        return [(r.name, r.origin, r.length, sorted(r.attributes)) for r in regions]

    assert layout(ld_map.regions) == layout(script.regions)
    assert match_preset(ld_map.regions) is get_preset(config.preset)
    names = {s.name for s in ld_map.symbols}
    assert {"model_pte", "method_allocation_pool", "temp_allocation_pool"} <= names
    kernel_code = [
        s
        for s in ld_map.input_sections
        if s.member == "op_kernels.o" and s.name.startswith(".text")
    ]
    assert [s.name for s in kernel_code] == [
        ".text." + firmware.kernel_identifier(op) for op in config.ops
    ]
    # Corstone-300 runs kernel objects from BRAM (.sram.data), Corstone-320 from .text.
    expected_output = ".sram.data" if config.preset == "corstone-300" else ".text"
    assert {s.output for s in kernel_code} == {expected_output}


@pytest.mark.parametrize("name", ["corstone300.ld", "corstone320.ld"])
def test_raw_linker_scripts_match_presets(name: str) -> None:
    """The unpreprocessed scripts (``#ifndef`` outside MEMORY) read, and their regions are
    the presets' (runtime_formats.md §6.1)."""
    script = read_linker_script(SOURCES / name)
    preset = match_preset(script.regions)
    assert preset is not None and preset.name == name.replace("corstone", "corstone-")[:-3]
    load_base = {s.name for s in script.sections if s.load_base}
    assert load_base == set(preset.load_base_sections)


def test_presets_are_the_runner_layouts() -> None:
    c300, c320 = PRESETS["corstone-300"], PRESETS["corstone-320"]
    assert [(r.name, r.origin, r.length) for r in c300.regions] == [
        ("ITCM", 0x10000000, 0x80000), ("BRAM", 0x11000000, 0x100000),
        ("DTCM", 0x30000000, 0x80000), ("SRAM", 0x31000000, 0x200000),
        ("QSPI", 0x38000000, 0x800000), ("DDR", 0x70000000, 0x60000000),
    ]  # fmt: skip
    assert [(r.name, r.origin, r.length) for r in c320.regions] == [
        ("ITCM", 0x10000000, 0x8000), ("BROM", 0x11000000, 0x20000),
        ("BRAM", 0x12000000, 0x200000), ("DTCM", 0x30000000, 0x8000),
        ("SRAM", 0x31000000, 0x400000), ("DDR", 0x70000000, 0x10000000),
    ]  # fmt: skip
    assert get_preset("Corstone300") is c300 and get_preset("corstone_320") is c320
    with pytest.raises(ParseError, match="unknown memory preset"):
        get_preset("corstone-310")
    assert match_preset([MemoryRegion("RAM", 0, 1024)]) is None


def test_linker_script_expressions() -> None:
    script = parse_linker_script(
        """
        _flash_size = 256K;  /* constants before MEMORY may size regions */
        MEMORY
        {
          FLASH (rx)  : ORIGIN = 0x08000000, LENGTH = _flash_size
          RAM (rwx)   : org = 0x20000000, len = 128K - 0x100
          RAM2 (!rx)  : ORIGIN = ORIGIN(RAM) + LENGTH(RAM), LENGTH = (2 * 1M) / 4
          ROM         : o = 010, l = 4k
        }
        MEMORY { OTHER : ORIGIN = 0x60000000, LENGTH = 1M }
        SECTIONS
        {
          .text : { *(.text*) } > FLASH
          .data : { *(.data*) } > RAM AT> FLASH
          .more : { *(.more) } > RAM
          .init_ram : AT(0x08010000) { *(.ramfunc) } > RAM2
          .bss (NOLOAD) : { *(.bss*) } > RAM
        }
        """,
        "inline.ld",
    )
    assert [(r.name, r.origin, r.length, r.attributes) for r in script.regions] == [
        ("FLASH", 0x08000000, 256 * 1024, "rx"),
        ("RAM", 0x20000000, 128 * 1024 - 0x100, "rwx"),
        ("RAM2", 0x20000000 + 128 * 1024 - 0x100, 512 * 1024, "!rx"),
        ("ROM", 8, 4096, ""),
        ("OTHER", 0x60000000, 1024 * 1024, ""),
    ]
    charges = {s.name: s.charges_load_image for s in script.sections}
    # .more inherits .data's AT> FLASH (same region); .init_ram uses AT(): not counted;
    # .bss follows .init_ram (another region), so it inherits nothing.
    assert charges == {
        ".text": False, ".data": True, ".more": True, ".init_ram": False, ".bss": False,
    }  # fmt: skip


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("MEMORY\n{\n#if FOO\n  RAM : ORIGIN = 0, LENGTH = 4K\n#endif\n}\n", "line 3"),
        ("MEMORY\n{\n  RAM (rwx) : ORIGIN = 0x20000000 LENGTH = 4K\n}\n", "line 3"),
        ("MEMORY\n{\n  RAM : ORIGIN = 0, LENGTH = 4K\n  ROM : ORIGIN = BASE, LENGTH = 1M\n}\n",
         "line 4"),
        ("MEMORY\n{\n  RAM (rwq) : ORIGIN = 0, LENGTH = 4K\n}\n", "line 3"),
        ("MEMORY\n{\n  RAM : ORIGIN = 0, LENGTH = 4G + (\n}\n", "line 3"),
        ("MEMORY\n{\n  RAM : ORIGIN = 0, LENGTH = 4K\n  RAM : ORIGIN = 0, LENGTH = 4K\n}\n",
         "line 4"),
        ("MEMORY\n{\n  RAM : ORIGIN = 0, LENGTH = 4K\n", "not closed"),
        ("SECTIONS { .text : { *(.text) } }\n", "no MEMORY"),
        ("MEMORY { }\n", "declares no region"),
        ("MEMORY\n{\n  RAM : ORIGIN = 09, LENGTH = 1\n}\n", "line 3"),
    ],
)  # fmt: skip
def test_linker_script_not_understood(text: str, expected: str) -> None:
    with pytest.raises(ParseError) as caught:
        parse_linker_script(text, "bad.ld")
    message = one_line(caught.value)
    assert message.startswith("bad.ld: ") and expected in message


def test_linker_script_sections_it_cannot_follow_warn(tmp_path) -> None:
    script = parse_linker_script(
        "MEMORY { RAM : ORIGIN = 0, LENGTH = 1K }\n"
        "SECTIONS { .a : { *(.a) } > RAM\n WEIRD STUFF { x } .b : { *(.b) } > RAM }\n",
        "odd.ld",
    )
    assert [r.name for r in script.regions] == ["RAM"]
    assert ".a" in {s.name for s in script.sections}
    assert any("cannot follow" in w for w in script.warnings)
    binary = tmp_path / "bin.ld"
    binary.write_bytes(b"\x7fELF\x01\x01")
    with pytest.raises(WrongKindError):
        read_linker_script(binary)


def test_ld_map_bad_input(builds, tmp_path) -> None:
    with pytest.raises(WrongKindError) as caught:
        parse_ld_map("hello\nworld\n", "notes.txt")
    assert "not a GNU ld map" in one_line(caught.value)
    real = builds["c300_shared_default"].map_file.read_text()
    damaged = real.replace("DTCM             0x30000000", "DTCM             0xZZ", 1)
    assert damaged != real
    with pytest.raises(ParseError) as caught:
        parse_ld_map(damaged, "damaged.map")
    assert re.search(r"^damaged\.map: line \d+: cannot read", one_line(caught.value))
    elf_as_map = tmp_path / "x.map"
    elf_as_map.write_bytes(builds["c300_shared_default"].elf.read_bytes())
    with pytest.raises(WrongKindError):
        read_ld_map(elf_as_map)


def test_memory_usage_report_parser(builds) -> None:
    rows = parse_memory_usage(builds["c300_shared_default"].memory_usage_text)
    assert [r.name for r in rows] == ["ITCM", "BRAM", "DTCM", "SRAM", "QSPI", "DDR"]
    assert rows[2].used == rows[2].length == 512 * 1024 and rows[2].percent == 100.0
    with pytest.raises(WrongKindError):
        parse_memory_usage("nothing here")


def test_explicit_regions_and_overflow(builds) -> None:
    fw = builds["c300_shared_default"]
    regions = [parse_region_spec("SRAM:0x31000000:1M"), parse_region_spec("DDR:0x70000000:1536M")]
    memory_map = load_memory_map(fw.elf, regions=regions)
    assert memory_map.regions_from == "regions"
    sram = memory_map.region_named("SRAM")
    assert (sram.used, sram.length, sram.overflow, sram.free) == (2 * MIB, MIB, MIB, 0)
    assert any("SRAM overflows by 1,048,576 bytes" in w for w in memory_map.warnings)
    assert any("outside every memory region" in w for w in memory_map.warnings)
    assert memory_map.pools["temp_allocator"].region == "SRAM"
    with pytest.raises(ParseError) as caught:
        parse_region_spec("SRAM:0x31000000")
    assert "NAME:ORIGIN:LENGTH" in one_line(caught.value)
    with pytest.raises(ParseError):
        parse_region_spec("SRAM:0x31000000:lots")


# -------------------------------------------------------------------------- bad input


def test_not_an_elf(tmp_path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("just some text\n")
    empty = tmp_path / "empty.elf"
    empty.write_bytes(b"")
    cases = {
        text: "a text file, not an ELF file",
        DEMO_PTE: "an ExecuTorch program (.pte), not an ELF file",
        empty: "empty file",
        tmp_path: "is a directory",
    }
    for path, expected in cases.items():
        with pytest.raises(WrongKindError) as caught:
            read_elf(path)
        message = one_line(caught.value)
        assert message.startswith(f"{path}: ") and expected in message
        with pytest.raises(ParseError):
            load_memory_map(path)


def test_truncated_elf(builds, tmp_path) -> None:
    data = builds["c300_shared_default"].elf.read_bytes()
    with pytest.raises(TruncatedError) as caught:
        decode_elf(data[:40], "cut.elf")
    assert "cut.elf: ELF header at offset 0x0: " in one_line(caught.value)
    # Cut before the section header table (at the end): segments are still shown.
    cut = tmp_path / "cut.elf"
    cut.write_bytes(data[: len(data) - 600])
    with read_elf(cut) as elf:
        assert not elf.sections and elf.segments
        assert any("truncated" in w and "section header table" in w for w in elf.warnings)
        memory_map = build_memory_map(elf, preset="corstone-300")
        assert memory_map.regions and not memory_map.pools
    # Every cut is a one-line ParseError or an image whose warnings say it is truncated.
    for size in range(0, len(data), max(len(data) // 300, 1)):
        try:
            elf = decode_elf(data[:size], "cut.elf")
        except ParseError as error:
            assert one_line(error).startswith("cut.elf: ")
            continue
        assert any("truncated" in w for w in elf.warnings), size
        build_memory_map(elf)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_byte_flips(builds, data) -> None:
    original = builds["c300_sram_only_small"].elf.read_bytes()
    mutated = bytearray(original)
    header_or_tables = data.draw(st.booleans())
    for _ in range(data.draw(st.integers(1, 8))):
        limit = 64 if header_or_tables else len(mutated) - 1
        position = data.draw(st.integers(0, limit))
        mutated[position] = data.draw(st.integers(0, 255))
    try:
        elf = decode_elf(bytes(mutated), "flipped.elf")
    except ParseError as error:
        assert one_line(error).startswith("flipped.elf: ")
        return
    try:
        elf_record(build_memory_map(elf))
    except ParseError as error:
        one_line(error)


def test_stripped_elf(builds, tmp_path) -> None:
    if shutil.which("arm-none-eabi-strip") is None:
        pytest.skip("arm-none-eabi-strip not on PATH")
    fw = builds["c300_sram_only_small"]
    stripped = tmp_path / "stripped.elf"
    run("arm-none-eabi-strip", "-o", stripped, fw.elf)
    with read_elf(stripped) as elf:
        assert not elf.symbols and not elf.has_symbol_table
        assert any("no symbol table (stripped)" in w for w in elf.warnings)
    full = load_memory_map(fw.elf, map_path=fw.map_file)
    with_map = load_memory_map(stripped, map_path=fw.map_file)
    assert usage_of(with_map) == ld_usage(fw)
    assert {r: (p.address, p.size, p.region) for r, p in with_map.pools.items()} == {
        r: (p.address, p.size, p.region) for r, p in full.pools.items()
    }
    assert all(p.source == "ld_map" for p in with_map.pools.values())
    assert with_map.kernel_names == set(CONFIGS["c300_sram_only_small"].ops)
    assert with_map.kernels.code_bytes == full.kernels.code_bytes
    alone = load_memory_map(stripped)
    assert usage_of(alone) == ld_usage(fw)
    assert alone.kernel_names == set(CONFIGS["c300_sram_only_small"].ops)
    assert alone.kernels.code_bytes is None and alone.symbols_top() == []
    model = alone.pools["model_pte"]
    assert (model.source, model.section, model.region) == ("section", ".ddr.rodata", "DDR")
    assert set(alone.pools) == {"model_pte"}
    assert any("no model_pte symbol" in w for w in alone.warnings)


def test_x86_elf_is_read_with_a_warning() -> None:
    host = Path("/bin/ls")
    if not host.is_file():
        pytest.skip("no /bin/ls")
    with read_elf(host) as elf:
        assert not elf.is_arm
        assert any("not an Arm firmware" in w for w in elf.warnings)
        ours = [
            (s.index, s.name, s.type, s.address, s.offset, s.size, s.flag_text, s.align)
            for s in elf.sections
            if s.index
        ]
        loads = [(p.offset, p.vaddr, p.filesz, p.memsz) for p in elf.segments if p.type == "LOAD"]
        memory_map = build_memory_map(elf)
    assert ours == readelf_sections(host)
    segments, _mapping = readelf_segments(host)
    assert loads == [(s[1], s[2], s[4], s[5]) for s in segments if s[0] == "LOAD"]
    assert memory_map.regions == [] and memory_map.pools == {}
    assert any("not an Arm firmware" in w for w in memory_map.warnings)
    json.dumps(elf_record(memory_map))


def test_map_of_another_link_is_flagged(builds) -> None:
    one, other = builds["c300_shared_default"], builds["c300_sram_only_small"]
    memory_map = load_memory_map(one.elf, map_path=other.map_file)
    assert any("is not the map of this ELF" in w for w in memory_map.warnings)


# ---------------------------------------------------------------------- build errors


def test_firmware_build_errors(tmp_path, monkeypatch) -> None:
    with pytest.raises(FirmwareBuildError) as caught:  # 3 MiB temp pool in a 2 MiB SRAM
        build_stub_firmware(DEMO_PTE, tmp_path / "overflow", ops=DEMO_OPS, temp_pool=3 * MIB)
    message = one_line(caught.value)
    assert message.startswith("arm-none-eabi-gcc (link) failed for ") and "SRAM" in message
    with pytest.raises(FirmwareBuildError, match="memory mode 'Fast_Sram'"):
        build_stub_firmware(DEMO_PTE, tmp_path / "x", ops=DEMO_OPS, memory_mode="Fast_Sram")
    with pytest.raises(FirmwareBuildError, match="operator 'add'"):
        build_stub_firmware(DEMO_PTE, tmp_path / "x", ops=["add"])
    with pytest.raises(FirmwareBuildError, match="method_pool=0"):
        build_stub_firmware(DEMO_PTE, tmp_path / "x", ops=DEMO_OPS, method_pool=0)
    with pytest.raises(FirmwareBuildError, match="no such program file"):
        build_stub_firmware(tmp_path / "missing.pte", tmp_path / "x", ops=DEMO_OPS)
    monkeypatch.setattr(firmware.shutil, "which", lambda name: None)
    with pytest.raises(FirmwareBuildError) as caught:
        build_stub_firmware(DEMO_PTE, tmp_path / "x", ops=DEMO_OPS)
    assert one_line(caught.value).startswith("arm-none-eabi-gcc: not found on PATH")


def test_selected_ops_source() -> None:
    text = firmware.selected_ops_source(["aten::add.out", "aten::add_out", "a::b.c"])
    assert 'ET_KERNEL(op_aten_add_out, "aten::add.out")' in text
    assert 'ET_KERNEL(op_aten_add_out_2, "aten::add_out")' in text
    assert firmware.memory_mode_layout("Dedicated_Sram_2MB") == (1, 0x4000000, 2 * MIB)
    assert firmware.memory_mode_layout("Shared_Sram") == (0, 0x200000, None)


# ------------------------------------------------------------------------ demo files


def test_demo_firmware(tmp_path) -> None:
    """The committed demo firmware reads, matches ld's committed report, and is what the
    sources build today (when this machine's compiler is the one that built it)."""
    elf_path = DEMO_FIRMWARE / "arm_executor_runner.elf"
    map_path = DEMO_FIRMWARE / "arm_executor_runner.map"
    usage = (DEMO_FIRMWARE / "memory_usage.txt").read_text()
    memory_map = load_memory_map(elf_path, map_path=map_path)
    expected = {r.name: (r.used, r.length, r.percent) for r in parse_memory_usage(usage)}
    assert usage_of(memory_map) == expected
    assert memory_map.kernel_names == set(DEMO_OPS)
    assert memory_map.pools["model_pte"].size == DEMO_PTE.stat().st_size
    assert memory_map.pools["temp_allocator"].region == "SRAM"
    assert memory_map.pools["method_allocator"].size == 60 * MIB
    rebuilt = build_stub_firmware(DEMO_PTE, tmp_path, ops=DEMO_OPS)
    with read_elf(elf_path) as old, read_elf(rebuilt.elf) as new:
        same_compiler = _comment(old) == _comment(new)
    if not same_compiler:
        pytest.skip("the committed demo firmware was built by another compiler version")
    assert rebuilt.elf.read_bytes() == elf_path.read_bytes(), "run etu_tui/demo/build_firmware.py"
    assert rebuilt.memory_usage_text == usage


def _comment(elf: ElfImage) -> bytes | None:
    section = elf.section(".comment")
    return elf.section_bytes(section) if section else None
