"""Small text formatters of the views: shapes, lists, values, instructions, paths. Numbers
are etu.tui.numbers' (``nbytes`` and ``plural`` are re-exported here for the widgets)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from etu.parsers.ethosu import is_ethosu_delegate
from etu.parsers.pte import (
    DelegateCall,
    ExecutionPlan,
    FreeCall,
    Instruction,
    JumpFalseCall,
    KernelCall,
    MoveCall,
)
from etu.tui.numbers import nbytes as nbytes
from etu.tui.numbers import plural as plural


def shape(sizes: Sequence[int]) -> str:
    return "×".join(str(s) for s in sizes) if sizes else "scalar"


def int_list(items: Sequence[int], limit: int = 16) -> str:
    shown = ", ".join(str(i) for i in items[:limit])
    return shown + (f", … (+{len(items) - limit})" if len(items) > limit else "")


def payload(value: object) -> str:
    """A non-tensor value in one short line."""
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, tuple | list):
        items = [payload(v) for v in value[:8]]
        more = f", … (+{len(value) - 8})" if len(value) > 8 else ""
        return "[" + ", ".join(items) + more + "]"
    return str(value)


def instruction_row(plan: ExecutionPlan, instr: Instruction) -> tuple[str, str, str, str]:
    """(target, kind, what, args) of one instruction, as the runtime will run it.

    Target is NPU for an Ethos-U delegate, EXT for any other backend, CPU for a kernel.
    """
    if isinstance(instr, DelegateCall):
        delegate = plan.delegates[instr.delegate_index]
        target = "NPU" if is_ethosu_delegate(delegate.id) else "EXT"
        return target, "delegate", f"{delegate.id} #{instr.delegate_index}", int_list(instr.args)
    if isinstance(instr, KernelCall):
        operator = plan.operators[instr.op_index]
        return "CPU", "kernel", operator.qualified_name, int_list(instr.args)
    if isinstance(instr, MoveCall):
        return "", "move", "", f"{instr.move_from} → {instr.move_to}"
    if isinstance(instr, JumpFalseCall):
        return (
            "",
            "jump_false",
            "",
            f"if not {instr.cond_value_index} → {instr.destination_instruction}",
        )
    if isinstance(instr, FreeCall):
        return "", "free", "", str(instr.value_index)
    return "", f"unknown({instr.type_code})", "", ""


def short_path(path: Path) -> str:
    """``path`` relative to the working folder when it is inside it, else as given: the
    start text of a path dialog, short to read and edit."""
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except (OSError, ValueError):
        return str(path)
