"""Every value of a plan, tensors first-class; formats only the rows on screen."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from etu.parsers.pte import ExecutionPlan, Tensor
from etu.tui.widgets.formatting import nbytes, payload, shape
from etu.tui.widgets.virtual_table import Column, VirtualTable

COLUMNS = (
    Column("#", 7, "right"),
    Column("kind", 11),
    Column("dtype", 9),
    Column("sizes", 16),
    Column("dim order", 11),
    Column("storage", 9),
    Column("mem", 3, "right"),
    Column("offset", 10, "right"),
    Column("bytes", 12, "right"),
    Column("role / value", 30, shrink=True),
)
STORAGE_CLASSES = {
    "constant": "values--constant",
    "input": "values--input",
    "mutable": "values--mutable",
    "external": "values--external",
}


class ValuesTable(VirtualTable):
    """A Line-API table over ``plan.values``: 100k values cost what 40 do."""

    COMPONENT_CLASSES: ClassVar[set[str]] = (
        VirtualTable.COMPONENT_CLASSES | set(STORAGE_CLASSES.values()) | {"values--other"}
    )

    DEFAULT_CSS = """
    ValuesTable {
        & > .values--constant { color: $text-secondary; }
        & > .values--input { color: $text-accent; }
        & > .values--mutable { color: $text-warning; }
        & > .values--external { color: $text-error; }
        & > .values--other { color: $text-muted; }
    }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(COLUMNS, id=id, classes=classes)
        self._plan: ExecutionPlan | None = None
        self._roles: dict[int, str] = {}

    @property
    def plan(self) -> ExecutionPlan | None:
        return self._plan

    def show_plan(self, plan: ExecutionPlan | None) -> None:
        self._plan = plan
        roles: dict[int, list[str]] = {}
        if plan is not None:
            for kind, indices in (("input", plan.inputs), ("output", plan.outputs)):
                for position, index in enumerate(indices):
                    roles.setdefault(index, []).append(f"{kind} {position}")
        self._roles = {index: ", ".join(names) for index, names in roles.items()}
        self.reset(len(plan.values) if plan else 0)

    def row_cells(self, index: int) -> Sequence[str]:
        assert self._plan is not None
        value = self._plan.values[index]
        role = self._roles.get(index, "")
        if isinstance(value, Tensor):
            planned = value.memory_id is not None
            return (
                str(index),
                "Tensor",
                value.dtype,
                shape(value.sizes),
                ",".join(str(d) for d in value.dim_order),
                # ExtraTensorInfo.device_type: a tensor placed off the CPU says where
                f"{value.storage} ({value.device})" if value.device_type else value.storage,
                str(value.memory_id) if planned else "",
                str(value.memory_offset) if planned else "",
                nbytes(value.nbytes),
                role,
            )
        return (str(index), value.kind, "", "", "", "", "", "", "", role or payload(value.payload))

    def row_class(self, index: int) -> str | None:
        assert self._plan is not None
        value = self._plan.values[index]
        if isinstance(value, Tensor):
            return STORAGE_CLASSES.get(value.storage)
        return "values--other"
