"""The console's widgets: each shows one part of a decoded program and owns no loading."""

from etu_tui.widgets.cpu_ops import CpuOpsView, SelectOps
from etu_tui.widgets.delegates import DelegatesView
from etu_tui.widgets.error_panel import ErrorPanel
from etu_tui.widgets.instructions import InstructionsLegend, InstructionsTable
from etu_tui.widgets.plan import PlanFacts
from etu_tui.widgets.summary import ProgramSummary
from etu_tui.widgets.values import ValuesTable
from etu_tui.widgets.virtual_table import Column, VirtualTable

__all__ = [
    "Column",
    "CpuOpsView",
    "DelegatesView",
    "ErrorPanel",
    "InstructionsLegend",
    "InstructionsTable",
    "PlanFacts",
    "ProgramSummary",
    "SelectOps",
    "ValuesTable",
    "VirtualTable",
]
