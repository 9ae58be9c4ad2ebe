"""A plan's interface and memory: what the runner must feed it and allocate for it."""

from __future__ import annotations

from collections import Counter

from textual.content import Content
from textual.widgets import Static

from etu.parsers.program_facts import planned_memory
from etu.parsers.pte import ExecutionPlan, Tensor
from etu.tui.widgets.formatting import nbytes, shape

LABEL_WIDTH = 10
MAX_IO_LINES = 4


def _value_text(plan: ExecutionPlan, index: int) -> str:
    value = plan.values[index]
    if not isinstance(value, Tensor):
        return f"{index}: {value.kind}"
    where = (
        f"mem {value.memory_id} @ {value.memory_offset}"
        if value.memory_id is not None
        else value.storage
    )
    return f"{index}: {value.dtype} {shape(value.sizes)} · {nbytes(value.nbytes)} · {where}"


def _rows(label: str, texts: list[str]) -> list[Content]:
    if not texts:
        texts = ["none"]
    if len(texts) > MAX_IO_LINES:
        texts = [*texts[: MAX_IO_LINES - 1], f"… {len(texts) - MAX_IO_LINES + 1} more (t)"]
    return [
        Content.assemble((f"{label if i == 0 else '':<{LABEL_WIDTH}}", "dim"), text)
        for i, text in enumerate(texts)
    ]


def plan_content(plan: ExecutionPlan) -> Content:
    kinds = Counter(value.kind for value in plan.values)
    memory = planned_memory(plan)
    lines = [
        *_rows("inputs", [_value_text(plan, i) for i in plan.inputs]),
        *_rows("outputs", [_value_text(plan, i) for i in plan.outputs]),
        *_rows(
            "planned",
            [f"mem {mem_id}: {nbytes(size)}" for mem_id, size in memory.items()],
        ),
        *_rows(
            "values",
            [f"{len(plan.values)}: " + " · ".join(f"{k} {n}" for k, n in sorted(kinds.items()))],
        ),
    ]
    return Content("\n").join(lines)


class PlanFacts(Static):
    """Inputs, outputs, planned memory per mem id, and value counts of the shown plan."""

    DEFAULT_CSS = """
    PlanFacts {
        height: auto;
        border: round $primary;
        border-title-style: bold;
        padding: 0 1;
    }
    """

    def show(self, plan: ExecutionPlan | None) -> None:
        self.border_title = f"Plan {plan.name!r}" if plan else "No plan"
        self.update(plan_content(plan) if plan else "")
