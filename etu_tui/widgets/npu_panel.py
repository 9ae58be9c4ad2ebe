"""The NPU tab as one panel: it owns the Vela reports it compares and the keys that act on
them (add, sort, next, drop). The App hands it the workspace's own report; reports added
with ``a`` are read by the panel's worker, which posts :class:`VelaAdded`. The App also
hands it the program: a worker decodes each delegate's command stream and posts
:class:`OperationsDecoded`; ``v`` shows those NPU operations in place of the per-layer table,
then (when an FVP session of the program kept a PMU trace, read by another worker that posts
:class:`MeasuredRead` whenever the tab is shown) the measured cycles per layer.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import ContentSwitcher

from etu.parsers.errors import describe_error
from etu.parsers.ethosu_commands import DelegateOperations, program_operations
from etu.parsers.external_blocks import data_files_beside, resolve_program
from etu.parsers.program_facts import DelegateInfo
from etu.parsers.pte import Program
from etu.runner.workspace import VelaResult, load_vela, vela_label
from etu.tui.keys import bindings
from etu.tui.safe_text import printable
from etu.tui.widgets.npu import (
    AddReportScreen,
    CompareTable,
    LayerTable,
    OperationTable,
    VelaError,
    VelaMessages,
    VelaSummary,
    operations_title,
)
from etu.tui.widgets.npu_measured import MeasuredRead, MeasuredTable, measured_title


@dataclass
class VelaAdded(Message):
    """A report the user added for comparison was read (or failed: ``result.error``);
    ``order`` is the add request's number, so reports keep the order they were asked for."""

    result: VelaResult
    order: int = 0


@dataclass
class OperationsDecoded(Message):
    """The program's delegates' NPU operations (``request`` tells a stale decode apart)."""

    decoded: list[DelegateOperations]
    request: int


def report_label(result: VelaResult) -> str:
    """A label that tells two reports apart: every compile job writes Vela's output into
    a ``vela/`` folder, so the folder above it (the job or workspace) names it, and the
    configuration (accelerator, memory mode) follows."""
    label = printable((result.label or "Vela report").rstrip("/"))
    path = result.path
    if path is not None:
        folder = path if path.is_dir() else path.parent
        if folder.name == "vela" and folder.parent.name:
            inside = "" if folder == path else f"/{path.name}"
            label = printable(f"{folder.parent.name}/vela{inside}")
    config = ""
    if result.report is not None:
        head = result.report.headline()
        config = " ".join(str(p) for p in (head["accelerator"], head["memory_mode"]) if p)
    return f"{label} · {config}" if config else label


class NpuPanel(Vertical):
    """Vela's summary, per-layer table, the compare table and Vela's messages."""

    BINDINGS: ClassVar[list[BindingType]] = bindings("npu")

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.vela: VelaResult | None = None  # the workspace's report (or why it is not)
        self._added: list[tuple[int, VelaResult]] = []  # (order asked, report)
        self._adds = 0
        self.add_error: str | None = None
        self.shown_index = 0  # index into compared_reports
        self.pending = 0  # add-report and command-stream workers still reading
        self.program_name = ""
        self.start_folder = ""
        self.operations: list[DelegateOperations] = []
        self.showing_operations = False
        self.showing_measured = False
        self._program_request = 0
        self.program_path: Path | None = None
        self.measured = None  # (session folder, runner.npu_layers.SessionLayers) or None
        self._measured_request = 0

    def compose(self) -> ComposeResult:
        yield VelaError(id="vela-error")
        yield VelaSummary(id="vela-summary")
        with Vertical(id="layers-box"), ContentSwitcher(initial="layers", id="layers-switcher"):
            yield LayerTable(id="layers")
            yield OperationTable(id="npu-operations")
            yield MeasuredTable(id="npu-measured")
        with Horizontal(id="npu-details"):
            yield CompareTable(id="compare")
            yield VelaMessages(id="vela-messages")

    # -- state -------------------------------------------------------------------------

    @property
    def compared_reports(self) -> list[VelaResult]:
        """The workspace's report (when it read) first, then the added ones."""
        own = [self.vela] if self.vela is not None and self.vela.report is not None else []
        return own + self.added

    @property
    def added(self) -> list[VelaResult]:
        return [result for _, result in self._added]

    @property
    def shown_report(self) -> VelaResult | None:
        reports = self.compared_reports
        return reports[self.shown_index] if 0 <= self.shown_index < len(reports) else None

    @property
    def own_report(self) -> VelaResult | None:
        """The workspace's report when it was read (for Fit and Run)."""
        return self.vela if self.vela is not None and self.vela.report is not None else None

    def set_own(self, vela: VelaResult, program_name: str, start_folder: str) -> None:
        """A program opened with ``vela`` beside it (or none, or an unreadable one)."""
        self.vela, self.shown_index = vela, 0
        self.program_name, self.start_folder = program_name, start_folder
        if vela.error:
            self.notify(vela.error, title="Vela report not read", severity="warning", markup=False)
        self.show()

    def is_added(self, result: VelaResult | None) -> bool:
        return any(r is result for r in self.added)

    # -- keys --------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        shown = self.shown_report
        if action == "sort_layers":
            has_layers = shown is not None and bool(shown.report and shown.report.per_layer)
            return (has_layers and not self.showing_operations) or None
        if action == "next_report":
            return len(self.compared_reports) > 1 or None
        if action == "drop_report":
            return self.is_added(shown) or None
        return True

    def action_add_vela_report(self) -> None:
        start = f"{self.start_folder}{os.sep}" if self.start_folder else ""
        self.app.push_screen(AddReportScreen(start), callback=self._add_chosen)

    def _add_chosen(self, path: Path | None) -> None:
        if path is not None:
            self.add_report(path)

    def action_toggle_operations(self) -> None:
        """Vela's per-layer table → the NPU operations of the command streams → the
        measured cycles per layer (when a session kept a PMU trace) → back."""
        if self.showing_operations and self.measured is not None:
            self.showing_operations, self.showing_measured = False, True
        elif self.showing_operations or self.showing_measured:
            self.showing_operations = self.showing_measured = False
        else:
            self.showing_operations = True
        current = (
            "npu-operations" if self.showing_operations
            else "npu-measured" if self.showing_measured
            else "layers"
        )  # fmt: skip
        self.query_one(ContentSwitcher).current = current
        self._title_layers()
        self.focus_main()
        self.app.refresh_bindings()

    def action_sort_layers(self) -> None:
        layers = self.query_one(LayerTable)
        layers.set_sort(not layers.by_cycles)
        self._title_layers()

    def action_next_report(self) -> None:
        reports = self.compared_reports
        if reports:
            self.shown_index = (self.shown_index + 1) % len(reports)
            self.show()
            self.app.refresh_bindings()

    def action_drop_report(self) -> None:
        shown = self.shown_report
        if shown is not None and self.is_added(shown):
            self._added = [item for item in self._added if item[1] is not shown]
            self.show()
            self.app.refresh_bindings()
            self.notify(f"Dropped {report_label(shown)} from the comparison.", markup=False)

    def dismiss_error(self) -> bool:
        if not self.add_error:
            return False
        self.add_error = None
        self.show()
        return True

    def focus_main(self) -> None:
        if self.showing_measured:
            self.query_one(MeasuredTable).focus()
        elif self.showing_operations:
            self.query_one(OperationTable).focus()
        else:
            self.query_one(LayerTable).focus()

    # -- the program's operations --------------------------------------------------------

    def set_program(self, program: Program, infos: list[DelegateInfo]) -> None:
        """A program opened (``infos``: its delegates, payloads decoded): decode their
        command streams in a thread."""
        self._program_request += 1
        self.pending += 1  # until OperationsDecoded (the worker posts it whatever happens)
        self.operations = []
        self._show_operations()
        self._decode(program, infos, self._program_request)
        source = getattr(program, "source", None)
        self.program_path = Path(source) if isinstance(source, str) and source else None
        self.refresh_measured()

    @work(thread=True, group="npu-operations", exit_on_error=False)
    def _decode(self, program: Program, infos: list[DelegateInfo], request: int) -> None:
        try:
            payloads = {}
            if any(info.payload and info.payload.external_blocks for info in infos):
                resolved = resolve_program(infos, data_files_beside(program))  # in a .ptd
                payloads = {key: found for key, (_blocks, found) in resolved.items()}
            decoded = program_operations(program, infos, payloads)
        except Exception as error:  # a closed or unreadable program: one line, no crash
            decoded = [DelegateOperations("", -1, None, describe_error(error))]
        self.post_message(OperationsDecoded(decoded, request))

    @on(OperationsDecoded)
    def _operations_decoded(self, message: OperationsDecoded) -> None:
        message.stop()
        self.pending = max(self.pending - 1, 0)
        if message.request != self._program_request:
            return
        self.operations = message.decoded
        self._show_operations()

    def _show_operations(self) -> None:
        self.query_one(OperationTable).show_operations(self.operations)
        self._title_layers()

    # -- measured per layer (an FVP session's PMU trace) ---------------------------------

    def on_show(self) -> None:
        """A run may have ended since: the newest traced session is read again."""
        self.refresh_measured()

    def refresh_measured(self) -> None:
        if self.program_path is None:
            return
        self._measured_request += 1
        self._read_measured(self.program_path, self._measured_request)

    @work(thread=True, group="npu-measured", exit_on_error=False)
    def _read_measured(self, program: Path, request: int) -> None:
        from etu.runner.npu_layers import latest_measured

        try:
            found = latest_measured(program)
        except Exception:  # a session being written: the next show reads it again
            found = None
        self.post_message(MeasuredRead(found, request))

    @on(MeasuredRead)
    def _measured_read(self, message: MeasuredRead) -> None:
        message.stop()
        if message.request != self._measured_request:
            return
        self.measured = message.found
        self.query_one(MeasuredTable).show_layers(self.measured[1] if self.measured else None)
        if self.showing_measured and self.measured is None:
            self.showing_measured = False
            self.query_one(ContentSwitcher).current = "layers"
        self._title_layers()

    # -- adding ------------------------------------------------------------------------

    def add_report(self, path: Path) -> None:
        """Read ``path`` (a Vela output folder or file) in a thread and add it."""
        self.pending += 1
        self._adds += 1
        self._add_vela(path, self._adds)

    @work(thread=True, group="vela-add", exit_on_error=False)
    def _add_vela(self, path: Path, order: int) -> None:
        try:
            result = load_vela(path, vela_label(path))
        except Exception as error:  # load_vela never raises; belt and braces
            result = VelaResult("Vela report", error=describe_error(error))
        self.post_message(VelaAdded(result, order))

    @on(VelaAdded)
    def _vela_added(self, message: VelaAdded) -> None:
        message.stop()
        self.pending = max(self.pending - 1, 0)
        result = message.result
        if result.report is None:
            self.add_error = result.error or "not read"
            self.notify(
                self.add_error, title="Vela report not added", severity="error", markup=False
            )
        else:
            self.add_error = None
            self._added.append((message.order, result))
            self._added.sort(key=lambda item: item[0])  # workers may finish out of order
            self.notify(f"Added {report_label(result)} to the comparison.", markup=False)
        self.show()
        self.app.refresh_bindings()

    # -- views -------------------------------------------------------------------------

    def show(self) -> None:
        reports = self.compared_reports
        self.shown_index = max(0, min(self.shown_index, len(reports) - 1))
        shown = self.shown_report
        errors = [e for e in (self.vela.error if self.vela else None, self.add_error) if e]
        self.query_one(VelaError).show_errors(errors)
        position = f"{self.shown_index + 1} of {len(reports)} · r next" if len(reports) > 1 else ""
        unreadable = self.vela is not None and self.vela.error is not None
        label = report_label(shown) if shown is not None else None
        note = self.vela.note if self.vela is not None else None
        self.query_one(VelaSummary).show(shown, position, self.program_name, unreadable, label,
                                         note)  # fmt: skip
        self.query_one(LayerTable).show_report(shown.report if shown else None)
        self._title_layers()
        compare = self.query_one(CompareTable)
        compare.show(reports, self.shown_index, [report_label(r) for r in reports])
        compare.border_title = f"Compare ({len(reports)})"
        compare.border_subtitle = "a add · x drop shown" if self.added else "a add"
        self.query_one(VelaMessages).show(shown)

    def _title_layers(self) -> None:
        layers = self.query_one(LayerTable)
        shown = self.shown_report
        box = self.query_one("#layers-box")
        if self.showing_measured:
            box.border_title = printable(measured_title(self.measured))
            box.border_subtitle = "measured / Vela estimate per inference · v per-layer"
            return
        if self.showing_operations:
            table = self.query_one(OperationTable)
            box.border_title = printable(operations_title(self.operations))
            back = "v measured" if self.measured is not None else "v per-layer"
            box.border_subtitle = printable("; ".join(table.problems)) or back
            return
        self._title_per_layer(layers, shown, box)
        hint = "v NPU ops"
        box.border_subtitle = f"{box.border_subtitle} · {hint}" if box.border_subtitle else hint

    def _title_per_layer(self, layers: LayerTable, shown: VelaResult | None, box) -> None:
        order = "by op cycles ↓" if layers.by_cycles else "in Vela's order"
        if shown is None or shown.report is None:
            box.border_title = "Per-layer"
            box.border_subtitle = ""
            return
        if not layers.row_count:
            box.border_title = (
                "Per-layer · none: Vela failed"
                if shown.report.failed
                else "Per-layer · none: Vela writes it with --verbose-performance"
            )
            box.border_subtitle = ""
            return
        source = {"stdout": " (from Vela's stdout)"}.get(shown.report.per_layer_from or "", "")
        calls = len(shown.report.calls)
        if calls > 1 and shown.report.per_layer_from == "csv":
            # Vela rewrites its per-layer CSV on each call: only the last delegate's remain.
            source += f" (delegate {calls - 1} of 0-{calls - 1}: the last Vela call)"
        box.border_title = f"Per-layer · {layers.row_count} rows{source} · {order}"
        box.border_subtitle = "◆ NPU  ○ CPU · s sort"
