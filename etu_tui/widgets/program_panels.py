"""The Program, Tensors and Delegates tabs: one plan of the open program each.

Each panel owns its keys (from :mod:`etu.tui.keys`). The plan shown is the App's (it loads
the program); ``p`` asks for the next one with a :class:`PlanStep` message.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.message import Message
from textual.widgets import Static

from etu.parsers.program_facts import ProgramFacts
from etu.parsers.pte import ExecutionPlan, Tensor
from etu.tui.keys import bindings
from etu.tui.widgets.cpu_ops import CpuOpsView
from etu.tui.widgets.delegates import DelegatesView, one_line
from etu.tui.widgets.formatting import plural
from etu.tui.widgets.instructions import InstructionsLegend, InstructionsTable
from etu.tui.widgets.plan import PlanFacts
from etu.tui.widgets.summary import ProgramSummary
from etu.tui.widgets.values import ValuesTable


@dataclass
class PlanStep(Message):
    """The user asked for the next plan (``p``); the App, which holds the plan, answers."""


def plan_place(facts: ProgramFacts, plan: ExecutionPlan | None, index: int) -> str:
    n_plans = len(facts.program.plans)
    where = f"plan {plan.name!r} ({index + 1} of {n_plans})" if plan else "no plans"
    return where + (" · p next" if n_plans > 1 else "")


class PlanPanel(Vertical):
    """A tab that shows one plan: ``p`` steps the plan when there is more than one."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.plans = 0

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "next_plan":
            return self.plans > 1 or None
        return True

    def action_next_plan(self) -> None:
        self.post_message(PlanStep())

    def show_plan(self, facts: ProgramFacts, plan: ExecutionPlan | None, index: int) -> None:
        self.plans = len(facts.program.plans)

    def focus_main(self) -> None:
        """Focus the panel's main widget (when its tab opens)."""


class ProgramPanel(PlanPanel):
    """Summary, instructions, plan facts, delegates in brief, CPU operators."""

    BINDINGS: ClassVar[list[BindingType]] = bindings("program")

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.facts: ProgramFacts | None = None

    def compose(self) -> ComposeResult:
        yield ProgramSummary(id="summary")
        with Vertical(id="instructions-box"):
            yield InstructionsTable(id="instructions")
            yield InstructionsLegend()
        with Horizontal(id="details"):
            with Vertical(id="plan-side"):
                yield PlanFacts(id="plan")
                yield Static(id="delegates-brief")
            yield CpuOpsView(id="cpu")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "copy_select_ops":
            return self.facts is not None or None
        return super().check_action(action, parameters)

    def show_program(self, facts: ProgramFacts) -> None:
        self.facts = facts
        self.query_one(ProgramSummary).show(facts)
        self.query_one(CpuOpsView).show(facts.cpu_ops, facts.select_ops)

    def show_plan(self, facts: ProgramFacts, plan: ExecutionPlan | None, index: int) -> None:
        super().show_plan(facts, plan, index)
        self.query_one(PlanFacts).show(plan)
        instructions = self.query_one(InstructionsTable)
        instructions.show_plan(plan)
        box = self.query_one("#instructions-box")
        box.border_title = (
            f"Instructions · {plan_place(facts, plan, index)} · {instructions.row_count}"
        )
        infos = [info for info in facts.delegates if info.plan is plan]
        brief = self.query_one("#delegates-brief", Static)
        brief.border_title = f"Delegates ({len(infos)})"
        brief.border_subtitle = "d details"
        if infos:
            brief.update(Content("\n").join(one_line(facts.program, info) for info in infos))
        else:
            brief.update("none: this plan runs on the CPU only")

    def focus_main(self) -> None:
        self.query_one(InstructionsTable).focus()

    def action_copy_select_ops(self) -> None:
        if self.facts is None:
            return
        value = self.facts.select_ops
        if not value:
            self.notify(
                "No CPU operators: EXECUTORCH_SELECT_OPS_LIST would be empty.", severity="warning"
            )
            return
        self.app.copy_to_clipboard(value)
        ops = plural(value.count(",") + 1, "operator")
        self.notify(f"Copied EXECUTORCH_SELECT_OPS_LIST ({ops}).", markup=False)


class TensorsPanel(PlanPanel):
    """Every value of the plan."""

    BINDINGS: ClassVar[list[BindingType]] = bindings("tensors")

    def compose(self) -> ComposeResult:
        yield ValuesTable(id="values")

    def show_plan(self, facts: ProgramFacts, plan: ExecutionPlan | None, index: int) -> None:
        super().show_plan(facts, plan, index)
        values = self.query_one(ValuesTable)
        values.show_plan(plan)
        tensors = sum(isinstance(v, Tensor) for v in plan.values) if plan else 0
        values.border_title = (
            f"Tensors and values · {plan_place(facts, plan, index)} · "
            f"{plural(values.row_count, 'value')}, {plural(tensors, 'tensor')}"
        )

    def focus_main(self) -> None:
        self.query_one(ValuesTable).focus()


class DelegatesPanel(PlanPanel):
    """The plan's Ethos-U payloads and compile specs."""

    BINDINGS: ClassVar[list[BindingType]] = bindings("delegates")

    def compose(self) -> ComposeResult:
        yield DelegatesView(id="delegates-view")

    async def show_delegates(
        self, facts: ProgramFacts, plan: ExecutionPlan | None, index: int
    ) -> None:
        self.show_plan(facts, plan, index)
        infos = [info for info in facts.delegates if info.plan is plan]
        await self.query_one(DelegatesView).show(facts.program, infos)

    def focus_main(self) -> None:
        self.query_one(DelegatesView).focus()
