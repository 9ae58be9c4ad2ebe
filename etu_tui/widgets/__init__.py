"""The console's widgets: each shows one part of a decoded program and owns no loading."""

from etu.runner.run_model import LogStore, RunRecord
from etu.tui.widgets.compile import CompileBridge, CompilePanel
from etu.tui.widgets.cpu_ops import CpuOpsView, SelectOps
from etu.tui.widgets.delegates import DelegatesView
from etu.tui.widgets.error_panel import ErrorPanel
from etu.tui.widgets.fit import FitChecks, FitHeadline, VerdictRow
from etu.tui.widgets.instructions import InstructionsLegend, InstructionsTable
from etu.tui.widgets.log_box import LogBox
from etu.tui.widgets.memory import (
    FirmwareError,
    KernelsView,
    MemoryWarnings,
    PickElfScreen,
    PoolGauges,
    RegionBars,
    SectionsTable,
    SymbolsTable,
)
from etu.tui.widgets.npu import (
    AddReportScreen,
    CompareTable,
    LayerTable,
    VelaError,
    VelaMessages,
    VelaSummary,
)
from etu.tui.widgets.past_runs import PastRunsList
from etu.tui.widgets.plan import PlanFacts
from etu.tui.widgets.pmu_pane import PmuPane
from etu.tui.widgets.run import RunPanel
from etu.tui.widgets.run_launch import RunBridge, RunElfScreen
from etu.tui.widgets.run_log import HexView, LogView
from etu.tui.widgets.run_panes import (
    AllocatorPane,
    OperatorsPane,
    OutputsPane,
    ProcessPane,
    RunBanner,
)
from etu.tui.widgets.summary import ProgramSummary
from etu.tui.widgets.values import ValuesTable
from etu.tui.widgets.virtual_table import Column, VirtualTable

__all__ = [
    "AddReportScreen",
    "AllocatorPane",
    "Column",
    "CompareTable",
    "CompileBridge",
    "CompilePanel",
    "CpuOpsView",
    "DelegatesView",
    "ErrorPanel",
    "FirmwareError",
    "FitChecks",
    "FitHeadline",
    "HexView",
    "InstructionsLegend",
    "InstructionsTable",
    "KernelsView",
    "LayerTable",
    "LogBox",
    "LogStore",
    "LogView",
    "MemoryWarnings",
    "OperatorsPane",
    "OutputsPane",
    "PastRunsList",
    "PickElfScreen",
    "PlanFacts",
    "PmuPane",
    "PoolGauges",
    "ProcessPane",
    "ProgramSummary",
    "RegionBars",
    "RunBanner",
    "RunBridge",
    "RunElfScreen",
    "RunPanel",
    "RunRecord",
    "SectionsTable",
    "SelectOps",
    "SymbolsTable",
    "ValuesTable",
    "VelaError",
    "VelaMessages",
    "VelaSummary",
    "VerdictRow",
    "VirtualTable",
]
