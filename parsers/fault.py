"""Cortex-M fault triage: the fault registers a runner or fault handler prints, in words.

Input is the register dict of a :class:`etu.parsers.runner_events.HardFault` (names as printed,
any case: ``cfsr``, ``hfsr``, ``mmfar``, ``bfar``, ``pc``, ``lr``, ...). The Configurable
Fault Status Register is read as its three parts (Armv7-M/Armv8-M ARM, B3.2.15):
MemManage (MMFSR, bits 0-7), BusFault (BFSR, 8-15) and UsageFault (UFSR, 16-31); HFSR says
whether a configurable fault escalated. A fault address is named only when its VALID bit is
set (MMARVALID, BFARVALID): otherwise BFAR/MMFAR hold stale values.

PC and LR are symbolised against the firmware ELF: the function holding the address with the
offset into it (from ``.symtab``) and, when the ELF carries DWARF line information (built
with ``-g``), the source file and line (pyelftools' line programs). Reading the ELF is the
only file access here; a missing or unreadable ELF leaves the addresses bare.
"""

from __future__ import annotations

import os
from bisect import bisect_right
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# (bit, name, words): what happened; the fault address is added when its VALID bit is set.
MMFSR_BITS = (
    (0, "IACCVIOL", "instruction access violation (fetch from a no-execute or MPU region)"),
    (1, "DACCVIOL", "data access violation"),
    (3, "MUNSTKERR", "MemManage fault while unstacking on exception return"),
    (4, "MSTKERR", "MemManage fault while stacking on exception entry (stack overflow?)"),
    (5, "MLSPERR", "MemManage fault during lazy floating-point state preservation"),
    (7, "MMARVALID", None),
)  # fmt: skip
BFSR_BITS = (
    (8, "IBUSERR", "instruction bus error (fetch from an address nothing answers)"),
    (9, "PRECISERR", "precise data bus error"),
    (10, "IMPRECISERR", "imprecise data bus error (the PC is past the faulting access)"),
    (11, "UNSTKERR", "bus error while unstacking on exception return"),
    (12, "STKERR", "bus error while stacking on exception entry (stack overflow?)"),
    (13, "LSPERR", "bus error during lazy floating-point state preservation"),
    (15, "BFARVALID", None),
)  # fmt: skip
UFSR_BITS = (
    (16, "UNDEFINSTR", "undefined instruction (a trap, e.g. __builtin_trap() after an abort)"),
    (17, "INVSTATE", "invalid state (a branch to an address without the Thumb bit)"),
    (18, "INVPC", "invalid PC on exception return (a corrupt EXC_RETURN or stack)"),
    (19, "NOCP", "coprocessor access with the coprocessor off (FPU/MVE not enabled)"),
    (20, "STKOF", "stack overflow (the stack limit register tripped)"),
    (24, "UNALIGNED", "unaligned access"),
    (25, "DIVBYZERO", "integer divide by zero"),
)  # fmt: skip
HFSR_BITS = (
    (1, "VECTTBL", "bus error reading the vector table"),
    (30, "FORCED", "escalated to a hard fault (its own fault handler is disabled or faulted)"),
    (31, "DEBUGEVT", "debug event with the debugger off"),
)  # fmt: skip
MMARVALID, BFARVALID = 1 << 7, 1 << 15
DACCVIOL, PRECISERR = 1 << 1, 1 << 9


@dataclass(frozen=True, slots=True)
class Location:
    """Where an address is in the firmware."""

    address: int
    function: str | None = None
    offset: int | None = None  # bytes into the function
    file: str | None = None
    line: int | None = None

    def text(self) -> str:
        where = f"{self.address:#010x}"
        if self.function is not None:
            where += f" in {self.function}+{self.offset:#x}"
        if self.file is not None:
            where += f" at {self.file}:{self.line}"
        return where

    def to_json(self) -> dict[str, Any]:
        return {
            "address": self.address,
            "function": self.function,
            "offset": self.offset,
            "file": self.file,
            "line": self.line,
        }


@dataclass(slots=True)
class FaultReport:
    """A fault decoded: what went wrong in words, the bits by name, where."""

    registers: dict[str, int]
    causes: list[str] = field(default_factory=list)  # one sentence per fault bit set
    bits: list[str] = field(default_factory=list)  # e.g. ["PRECISERR", "BFARVALID"]
    fault_address: int | None = None  # BFAR or MMFAR, only when its VALID bit is set
    pc: Location | None = None
    lr: Location | None = None
    elf: str | None = None  # the file symbols came from
    notes: list[str] = field(default_factory=list)  # e.g. why there are no symbols

    def summary(self) -> str:
        """One line: the causes, then where."""
        parts = ["; ".join(self.causes) if self.causes else "fault with no status bits set"]
        if self.pc is not None:
            parts.append(f"PC {self.pc.text()}")
        if self.lr is not None:
            parts.append(f"LR {self.lr.text()}")
        return "; ".join(parts)

    def lines(self) -> list[str]:
        """The readable form: causes, registers by name, PC and LR."""
        out = list(self.causes) or ["fault with no status bits set"]
        status = [f"{n.upper()} {self.registers[n]:#010x}" for n in ("cfsr", "hfsr")
                  if n in self.registers]  # fmt: skip
        if status:
            out.append(", ".join(status) + (f" ({', '.join(self.bits)})" if self.bits else ""))
        if self.pc is not None:
            out.append(f"PC {self.pc.text()}")
        if self.lr is not None:
            out.append(f"LR {self.lr.text()}")
        out.extend(self.notes)
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "summary": self.summary(),
            "causes": list(self.causes),
            "bits": list(self.bits),
            "fault_address": self.fault_address,
            "registers": dict(self.registers),
            "pc": self.pc.to_json() if self.pc else None,
            "lr": self.lr.to_json() if self.lr else None,
            "elf": self.elf,
            "notes": list(self.notes),
        }


def decode_fault(
    registers: dict[str, int], elf: str | os.PathLike[str] | None = None
) -> FaultReport:
    """The fault registers in words; PC/LR symbolised against ``elf`` when given."""
    regs = {str(k).lower(): int(v) & 0xFFFFFFFF for k, v in registers.items() if _is_int(v)}
    report = FaultReport(regs)
    cfsr, hfsr = regs.get("cfsr"), regs.get("hfsr")
    if cfsr is not None:
        for bit, name, words in (*MMFSR_BITS, *BFSR_BITS, *UFSR_BITS):
            if not cfsr >> bit & 1:
                continue
            report.bits.append(name)
            if words is None:
                continue
            if bit == 1 and cfsr & MMARVALID and "mmfar" in regs:
                words += f" at {regs['mmfar']:#010x}"
                report.fault_address = regs["mmfar"]
            elif bit == 9 and cfsr & BFARVALID and "bfar" in regs:
                words += f" at {regs['bfar']:#010x}"
                report.fault_address = regs["bfar"]
            report.causes.append(words)
    if hfsr is not None:
        for bit, name, words in HFSR_BITS:
            if hfsr >> bit & 1:
                report.bits.append(name)
                report.causes.append(words)
    symbols = None
    if elf is not None:
        report.elf = str(elf)
        try:
            symbols = ElfSymbols.load(elf)
        except Exception as error:  # a missing or foreign ELF: addresses stay bare
            from etu.parsers.errors import describe_error

            report.notes.append(f"no symbols: {describe_error(error, Path(elf).name)}")
    for name in ("pc", "lr"):
        if name in regs:
            address = regs[name]
            location = symbols.locate(address) if symbols else Location(address & ~1)
            setattr(report, name, location)
    return report


def describe_fault(
    registers: dict[str, int], elf: str | os.PathLike[str] | None = None
) -> list[str]:
    """The words for the console's fault banner (which prints the registers itself): what
    went wrong, then PC and LR with function, offset and source line where known."""
    report = decode_fault(registers, elf)
    lines = list(report.causes) or ["fault with no status bits set"]
    lines += [f"{name} {where.text()}" for name, where in (("PC", report.pc), ("LR", report.lr))
              if where is not None]  # fmt: skip
    return lines + report.notes


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class ElfSymbols:
    """Function symbols and DWARF line rows of one ELF, for address lookups."""

    def __init__(self, functions: list[tuple[int, int, str]], rows: list[tuple[int, str, int]]):
        self._functions = sorted(functions)  # (start, size, name)
        self._starts = [f[0] for f in self._functions]
        self._rows = sorted(rows)  # (address, file, line); a row with line 0 ends a sequence
        self._row_starts = [r[0] for r in self._rows]

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> ElfSymbols:
        from elftools.elf.elffile import ELFFile

        from etu.parsers.files import GiB, check_regular

        check_regular(path, "an ELF file", 2 * GiB)
        functions: list[tuple[int, int, str]] = []
        rows: list[tuple[int, str, int]] = []
        with open(path, "rb") as handle:
            elf = ELFFile(handle)
            symtab = elf.get_section_by_name(".symtab")
            if symtab is not None:
                for symbol in symtab.iter_symbols():
                    if symbol["st_info"]["type"] == "STT_FUNC" and symbol["st_size"]:
                        functions.append((symbol["st_value"] & ~1, symbol["st_size"], symbol.name))
            if elf.has_dwarf_info():
                rows = _line_rows(elf.get_dwarf_info())
        return cls(functions, rows)

    def locate(self, address: int) -> Location:
        """Function + offset and file:line of ``address`` (the Thumb bit ignored)."""
        address &= ~1
        function = offset = None
        index = bisect_right(self._starts, address) - 1
        if index >= 0:
            start, size, name = self._functions[index]
            if start <= address < start + size:
                function, offset = name, address - start
        file = line = None
        index = bisect_right(self._row_starts, address) - 1
        if index >= 0 and self._rows[index][2] > 0:
            file, line = self._rows[index][1], self._rows[index][2]
        return Location(address, function, offset, file, line)


def _line_rows(dwarf) -> list[tuple[int, str, int]]:
    """(address, file name, line) for every row of every line program; an end of sequence
    is a row with line 0, so an address past a sequence finds no line."""
    rows: list[tuple[int, str, int]] = []
    for unit in dwarf.iter_CUs():
        program = dwarf.line_program_for_CU(unit)
        if program is None:
            continue
        files = program["file_entry"]
        version = program["version"]
        for entry in program.get_entries():
            state = entry.state
            if state is None:
                continue
            if state.end_sequence:
                rows.append((state.address, "", 0))
                continue
            index = state.file if version >= 5 else state.file - 1
            name = "?"
            if 0 <= index < len(files):
                raw = files[index].name
                name = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
            rows.append((state.address, name, state.line))
    return rows


__all__ = ["ElfSymbols", "FaultReport", "Location", "decode_fault", "describe_fault"]
