"""Fault triage: Cortex-M fault registers in words, PC/LR symbolised against a real ELF
linked by arm-none-eabi-gcc (the stand-in runner firmware, with and without -g)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from etu.parsers.fault import decode_fault
from etu.parsers.runner_log import parse_log_bytes
from etu.runner.firmware import build_stub_firmware

TRANSCRIPT = Path(__file__).resolve().parent.parent / "data" / "transcripts" / "qemu"
FAULT_LOG = TRANSCRIPT / "qemu_fault_on_start.log"
needs_gcc = pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None, reason="no cross gcc")
OPS = ["quantized_decomposed::quantize_per_tensor.out"]


@pytest.fixture(scope="module")
def debug_elf(tmp_path_factory) -> Path:
    return build_stub_firmware(None, tmp_path_factory.mktemp("fw-g"), ops=OPS, debug=True).elf


def _function(elf: Path, name: str) -> tuple[int, int]:
    with open(elf, "rb") as handle:
        symbol = ELFFile(handle).get_section_by_name(".symtab").get_symbol_by_name(name)[0]
    return symbol["st_value"] & ~1, symbol["st_size"]


def test_the_transcripts_fault_in_words() -> None:
    (fault,) = [
        e for e in parse_log_bytes(FAULT_LOG.read_bytes()) if type(e).__name__ == "HardFault"
    ]
    report = decode_fault(fault.registers)
    assert report.causes == ["precise data bus error at 0xf0000000"]
    assert report.bits == ["PRECISERR", "BFARVALID"]
    assert report.fault_address == 0xF0000000
    assert report.pc.address == 0x100023F8 and report.pc.function is None
    assert report.lr.address == 0x1001BA6C  # the Thumb bit dropped
    assert report.summary().startswith("precise data bus error at 0xf0000000; PC 0x100023f8")


@pytest.mark.parametrize(
    ("registers", "causes"),
    [
        ({"CFSR": 0x82, "MMFAR": 0x20}, ["data access violation at 0x00000020"]),
        ({"cfsr": 0x02, "mmfar": 0x20}, ["data access violation"]),  # MMFAR not valid
        (
            {"cfsr": 0x0400, "bfar": 0x1},
            ["imprecise data bus error (the PC is past the faulting access)"],
        ),
        ({"cfsr": 1 << 25}, ["integer divide by zero"]),
        (
            {"cfsr": 1 << 16, "hfsr": 1 << 30},
            [
                "undefined instruction (a trap, e.g. __builtin_trap() after an abort)",
                "escalated to a hard fault (its own fault handler is disabled or faulted)",
            ],
        ),
        ({"cfsr": 0, "hfsr": 0}, []),
    ],
)
def test_status_bits_in_words(registers: dict, causes: list[str]) -> None:
    report = decode_fault(registers)
    assert report.causes == causes
    if not causes:
        assert report.summary().startswith("fault with no status bits set")


@needs_gcc
def test_pc_and_lr_symbolised_with_source_lines(debug_elf: Path) -> None:
    start, _size = _function(debug_elf, "main")
    report = decode_fault({"cfsr": 0x8200, "bfar": 0, "pc": start + 8, "lr": start + 13}, debug_elf)
    assert report.pc.function == "main" and report.pc.offset == 8
    assert report.pc.file == "runner_stub.c" and report.pc.line > 0
    root = Path(__file__).resolve().parent.parent.parent
    source = root / "runner" / "firmware_src" / "runner_stub.c"
    main_line = next(i for i, text in enumerate(source.read_text().splitlines(), 1)
                     if text.startswith("int main(void)"))  # fmt: skip
    assert main_line <= report.pc.line < main_line + 80
    assert report.lr.function == "main" and report.lr.offset == 12
    assert "in main+0x8 at runner_stub.c:" in report.summary()
    outside = decode_fault({"pc": 0xFFFFFFF0}, debug_elf)
    assert outside.pc.function is None and outside.pc.file is None


@needs_gcc
def test_without_debug_info_function_and_offset_only(tmp_path: Path) -> None:
    elf = build_stub_firmware(None, tmp_path, ops=OPS).elf
    start, _size = _function(elf, "main")
    report = decode_fault({"pc": start + 4}, elf)
    assert report.pc.function == "main" and report.pc.offset == 4 and report.pc.file is None
    missing = decode_fault({"pc": 4}, tmp_path / "gone.elf")
    assert missing.pc.function is None and missing.notes[0].startswith("no symbols: gone.elf")


@needs_gcc
def test_etu_log_shows_the_fault(debug_elf: Path, tmp_path: Path) -> None:
    start, _size = _function(debug_elf, "main")
    log = tmp_path / "fault.log"
    log.write_text(
        f"Hard fault. irq=-13, pc={start + 8:#010x}, lr={start + 13:#010x}, xpsr=0x61000000, "
        "sp=0x3007ffe8\n            cfsr=0x00008200 hfsr=0x40000000 bfar=0xf0000000 "
        "mmfar=0x00000000\n"
    )
    etu = [sys.executable, "-m", "etu.tui.cli", "log"]
    result = subprocess.run([*etu, "--json", str(log), "--elf", str(debug_elf)],
                            capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert result.returncode == 0, result.stderr
    fault = json.loads(result.stdout)["fault"]
    assert fault["causes"][0] == "precise data bus error at 0xf0000000"
    assert "FORCED" in fault["bits"] and fault["pc"]["function"] == "main"
    assert fault["pc"]["file"] == "runner_stub.c"
    plain = subprocess.run([*etu, str(log), "--elf", str(debug_elf)],
                           capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert "  fault:\n    precise data bus error at 0xf0000000\n" in plain.stdout
    assert "in main+0x8 at runner_stub.c:" in plain.stdout
    success = str(FAULT_LOG.with_name("qemu_float_cpu_success.log"))
    clean = subprocess.run([*etu, "--json", success],
                           capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert clean.returncode == 0 and json.loads(clean.stdout)["fault"] is None


@needs_gcc
def test_the_run_banner_shows_the_words(debug_elf: Path) -> None:
    """The console's banner decodes the fault through parsers.fault (one symboliser)."""
    from etu.parsers.runner_events import HardFault
    from etu.tui.widgets.triage import fault_lines

    start, _size = _function(debug_elf, "main")
    fault = HardFault(1, {"cfsr": 0x8200, "bfar": 0xF0000000, "pc": start + 8}, "Hard fault.")
    lines = fault_lines(fault, debug_elf)
    assert lines[0].startswith("hard fault: PC main+0x8")
    assert lines[1] == "precise data bus error at 0xf0000000"
    assert lines[2].startswith("PC ") and "in main+0x8 at runner_stub.c:" in lines[2]
