"""Bring-up triage for the Run tab's ending banner: a hard fault's registers with PC and LR
symbolised against the firmware ELF, and a missing operator linked to the Fit fix line.

The fault decoding proper (CFSR/HFSR bits into words) is ``parsers/fault.py``'s job; until
that module is there, this shows the registers as printed and symbolises PC/LR itself
(:func:`decode_with_parsers` is the seam).
"""

from __future__ import annotations

from collections.abc import Sequence

from etu.parsers.elf_map import ElfImage, Symbol
from etu.parsers.runner_events import HardFault

REGISTER_ORDER = ("pc", "lr", "cfsr", "hfsr", "mmfar", "bfar", "sp", "xpsr", "irq")


def symbolise(address: int, elf: ElfImage | None) -> str:
    """``function+0x12`` for a code address (Thumb bit ignored), else the hex address."""
    if elf is None:
        return f"{address:#010x}"
    target = address & ~1
    best: Symbol | None = None
    for symbol in elf.symbols:
        if symbol.type != "FUNC" or symbol.section_index == "UND":
            continue
        start = symbol.address
        if start <= target < start + max(symbol.size, 1) and (best is None or start > best.address):
            best = symbol
    if best is None:
        return f"{address:#010x}"
    offset = target - best.address
    return f"{best.name}+{offset:#x}" if offset else best.name


def decode_with_parsers(fault: HardFault, elf_path) -> list[str] | None:
    """The words of ``etu.parsers.fault`` for this fault, when that module is there."""
    try:
        from etu.parsers import fault as fault_module  # type: ignore[attr-defined]
    except ImportError:
        return None
    describe = getattr(fault_module, "describe_fault", None)
    if describe is None:
        return None
    try:
        return [str(line) for line in describe(fault.registers, elf_path)]
    except Exception:
        return None


def fault_lines(fault: HardFault, elf: ElfImage | None, elf_path=None) -> list[str]:
    """One line of registers (PC/LR symbolised), then the decoded words when available."""
    regs = fault.registers
    parts = []
    for name in REGISTER_ORDER:
        if name not in regs:
            continue
        value = regs[name]
        if name in ("pc", "lr"):
            parts.append(f"{name.upper()} {symbolise(value, elf)} ({value:#010x})")
        elif name == "irq":
            parts.append(f"irq {value}")
        else:
            parts.append(f"{name.upper()} {value:#010x}")
    lines = ["hard fault: " + " · ".join(parts)] if parts else ["hard fault"]
    decoded = decode_with_parsers(fault, elf_path)
    if decoded:
        lines += decoded
    return lines


def missing_operator_lines(missing: Sequence[str], fix: str | None) -> list[str]:
    """The missing operators and the exact build setting that adds them (Fit's fix)."""
    if not missing:
        return []
    names = ", ".join(dict.fromkeys(missing))
    line = f"missing operator: {names}"
    if fix:
        return [line, f"fix (Fit tab, f): {fix}"]
    return [line]
