"""A plan's instructions in run order, NPU and CPU rows told apart by marker and colour."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from textual.widgets import Static

from etu.parsers.pte import ExecutionPlan
from etu.tui.widgets.formatting import instruction_row
from etu.tui.widgets.virtual_table import Column, VirtualTable

MARKERS = {"NPU": "◆ NPU", "CPU": "○ CPU", "EXT": "◇ EXT"}
ROW_CLASSES = {"NPU": "instructions--npu", "CPU": "instructions--cpu", "EXT": "instructions--ext"}
WHAT_MAX, ARGS_MAX = 60, 48


class InstructionsTable(VirtualTable):
    """Index, target, kind, operator or delegate, argument value indices."""

    COMPONENT_CLASSES: ClassVar[set[str]] = VirtualTable.COMPONENT_CLASSES | set(
        ROW_CLASSES.values()
    )

    DEFAULT_CSS = """
    InstructionsTable {
        & > .instructions--npu { color: $text-success; }
        & > .instructions--cpu { color: $text-warning; }
        & > .instructions--ext { color: $text-secondary; }
    }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._rows: list[tuple[str, str, str, str]] = []

    def show_plan(self, plan: ExecutionPlan | None) -> None:
        # Rows are formatted once: ExecutionPlan.instructions rebuilds its list per call.
        self._rows = [instruction_row(plan, i) for i in plan.instructions] if plan else []
        what = max((len(r[2]) for r in self._rows), default=0)
        args = max((len(r[3]) for r in self._rows), default=0)
        columns = [
            Column("#", max(len(str(len(self._rows) - 1)), 3), "right"),
            Column("target", 6),
            Column("kind", 8),
            Column("operator / delegate", min(max(what, 20), WHAT_MAX), shrink=True),
            Column("args (value indices)", min(max(args, 20), ARGS_MAX), shrink=True),
        ]
        self.reset(len(self._rows), columns)

    def target(self, index: int) -> str:
        """NPU, CPU, EXT or empty, for tests and for colouring."""
        return self._rows[index][0]

    def row_cells(self, index: int) -> Sequence[str]:
        target, kind, what, args = self._rows[index]
        return (str(index), MARKERS.get(target, "· rt"), kind, what, args)

    def row_class(self, index: int) -> str | None:
        return ROW_CLASSES.get(self._rows[index][0])


class InstructionsLegend(Static):
    """The key to the row markers, so the table reads without colour."""

    DEFAULT_CSS = """
    InstructionsLegend { height: 1; color: $text-muted; padding: 0 1; }
    """

    def __init__(self) -> None:
        super().__init__(
            "◆ NPU  Ethos-U delegate call   ○ CPU  kernel call (portable or quantized ops)   "
            "◇ EXT  other backend   · rt  move/jump/free"
        )
