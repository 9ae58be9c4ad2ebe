"""Bring-up triage for the Run tab's ending banner: a hard fault in words with PC and LR
symbolised against the firmware ELF, and a missing operator linked to the Fit fix line.

The decoding and the symbols are :mod:`etu.parsers.fault`'s (one symboliser for the CLI and
the console). :func:`fault_lines` reads the ELF, so the banner calls it in a worker.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from etu.parsers.fault import Location, decode_fault
from etu.parsers.runner_events import HardFault

REGISTER_ORDER = ("pc", "lr", "cfsr", "hfsr", "mmfar", "bfar", "sp", "xpsr", "irq")


def function_text(location: Location | None, address: int) -> str:
    """``function+0x12`` (``function`` at its start) where known, else the hex address."""
    if location is None or location.function is None:
        return f"{address:#010x}"
    return f"{location.function}+{location.offset:#x}" if location.offset else location.function


def fault_lines(fault: HardFault, elf: str | os.PathLike[str] | None) -> list[str]:
    """One line of registers (PC/LR symbolised), then the fault in words, PC and LR with
    their source lines, and why symbols are missing. Blocking: it reads ``elf``."""
    report = decode_fault(fault.registers, elf)
    regs = report.registers
    parts = []
    for name in REGISTER_ORDER:
        if name not in regs:
            continue
        value = regs[name]
        if name in ("pc", "lr"):
            where = function_text(getattr(report, name), value)
            parts.append(f"{name.upper()} {where} ({value:#010x})")
        elif name == "irq":
            parts.append(f"irq {value}")
        else:
            parts.append(f"{name.upper()} {value:#010x}")
    lines = ["hard fault: " + " · ".join(parts)] if parts else ["hard fault"]
    lines += report.causes or ["fault with no status bits set"]
    lines += [f"{name} {where.text()}" for name, where in (("PC", report.pc), ("LR", report.lr))
              if where is not None]  # fmt: skip
    return lines + report.notes


def missing_fix(firmware, select_ops: str) -> str | None:
    """The build setting that adds the missing kernels: the Fit tab's fix for the firmware
    shown (``firmware``: a FirmwareResult), else the program's own operator list."""
    fix = None
    for verdict in (firmware.verdicts if firmware is not None else None) or []:
        if verdict.check == "cpu_kernels" and verdict.fix:
            fix = verdict.fix
    if fix is None and select_ops:
        fix = f"rebuild with -DEXECUTORCH_SELECT_OPS_LIST={select_ops}"
    return fix


def missing_operator_lines(missing: Sequence[str], fix: str | None) -> list[str]:
    """The missing operators and the exact build setting that adds them (Fit's fix)."""
    if not missing:
        return []
    names = ", ".join(dict.fromkeys(missing))
    line = f"missing operator: {names}"
    if fix:
        return [line, f"fix (Fit tab, f): {fix}"]
    return [line]
