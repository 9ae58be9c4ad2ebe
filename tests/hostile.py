"""Hostile inputs built from real artifacts: the same bytes with escape sequences, bidi
controls and invisible characters where names go. Shared by the hostile-text tests and the
benchmarks."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "etu_tui" / "demo"

# Window title (OSC 0), clipboard write (OSC 52), clear screen (CSI), a C1 CSI, a DCS, an
# APC, a right-to-left override, an isolate, a zero-width space and a tag character.
HOSTILE = (
    "\x1b]0;pwned\x07\x1b]52;c;aGk=\x07\x1b[2J\x9b31m\x1bP1$q\x1b\\\x1b_x\x1b\\"
    "\u202e\u2066\u200b\U000e0041\u00ad"
)
# Every character that must never reach a terminal raw.
FORBIDDEN = (
    [chr(c) for c in range(0x20) if c not in (0x09, 0x0A)]
    + [chr(c) for c in range(0x7F, 0xA0)]
    + list("\u00ad\u061c\u200b\u200c\u200d\u200e\u200f\u202a\u202b\u202c\u202d\u202e")
    + list("\u2060\u2061\u2062\u2063\u2064\u2066\u2067\u2068\u2069\ufeff")
    + [chr(0xE0000), chr(0xE0041), chr(0xE007F)]
)
ASCII_HOSTILE = "\x1b]0;pwned\x07\x1b]52;c;aGk=\x07\x1b[2J\x1b[31m\x1bP1$q\x1b\\\x1b_x\x1b\\"


def hostile_bytes(length: int) -> bytes:
    """Exactly ``length`` bytes of valid UTF-8 full of terminal controls."""
    text = ("\u202e" if length >= 8 else "") + ASCII_HOSTILE
    data = text.encode()
    if len(data) >= length:
        return data[:length] if length >= 3 or "\u202e" not in text else b"\x1b" * length
    return data + b"\x1b" * (length - len(data))


def hostile_program(out: Path) -> Path:
    """The demo program with hostile operator names, delegate id, plan name and compile-spec
    values, same lengths so every offset in the flatbuffer stays right."""
    data = (DEMO / "demo_cnn.pte").read_bytes()
    for word in (b"quantized_decomposed", b"EthosUBackend", b"ethos-u55-128", b"Shared_Sram"):
        assert word in data, word
        data = data.replace(word, hostile_bytes(len(word)))
    data = data.replace(b"forward", b"\x1b[2J\x1b[H")
    out.write_bytes(data)
    return out


def hostile_vela(out: Path) -> Path:
    """The demo's Vela folder with hostile layer names and operator names."""
    shutil.copytree(DEMO / "vela", out)
    csv = out / "out_per-layer.csv"
    lines = csv.read_text().splitlines()
    name = ASCII_HOSTILE.replace(",", ";") + "\u202e"
    edited = [lines[0]]
    for line in lines[1:]:
        cells = line.split(",")
        cells[0] = cells[1] = f"Conv{name}"
        cells[-1] = name
        edited.append(",".join(cells))
    csv.write_text("\n".join(edited) + "\n")
    return out


ELF_SOURCE = """
char PLACEHOLDER_SYMBOL_AAAAAAAAAAAAAAAAAAAA[65536] __attribute__((section(".PLACEHOLDERSECT")));
int main(void) { return PLACEHOLDER_SYMBOL_AAAAAAAAAAAAAAAAAAAA[0]; }
"""


def hostile_elf(folder: Path) -> Path:
    """An ELF linked by arm-none-eabi-gcc whose symbol and section names are then made
    hostile in the string tables (same lengths)."""
    folder.mkdir(parents=True, exist_ok=True)
    source, elf = folder / "hostile.c", folder / "hostile.elf"
    source.write_text(ELF_SOURCE)
    subprocess.run(
        ["arm-none-eabi-gcc", "-mcpu=cortex-m4", "-mthumb", "-nostdlib", "-Wl,-e,main",
         "-o", str(elf), str(source)],
        check=True, capture_output=True,
    )  # fmt: skip
    data = elf.read_bytes()
    for word in (b"PLACEHOLDER_SYMBOL_AAAAAAAAAAAAAAAAAAAA", b"PLACEHOLDERSECT"):
        data = data.replace(word, hostile_bytes(len(word)))
    elf.write_bytes(data)
    return elf


def hostile_log(out: Path) -> Path:
    """A runner log whose messages carry escape sequences."""
    text = (
        f"I [executorch:arm_executor_runner.cpp:912 runner_init()] PTE @ 0x70000000 {HOSTILE}\n"
        f"E [executorch:method.cpp:86 init()] Missing operator: {HOSTILE}\n"
        f"E [executorch:arm_executor_runner.cpp:1021 runner_init()] Loading of method "
        f"forward failed with status 0x14 {HOSTILE}\n"
    )
    out.write_text(text)
    return out
