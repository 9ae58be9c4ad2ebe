"""The NPU tab: Vela's estimate of the program, layer by layer, and reports side by side;
and the operations each delegate's command stream runs on the NPU (decoded, not estimated).

Every number here is Vela's performance-model *estimate* for one Vela version, never a
measurement: the badge says so next to the numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.content import Content
from textual.widgets import Static

from etu.parsers.ethosu_commands import DelegateOperations, NpuOperation
from etu.parsers.vela import LayerRow, VelaReport
from etu.runner.workspace import VelaResult
from etu.tui.safe_text import printable
from etu.tui.screens.open_file import OpenFileScreen
from etu.tui.widgets.error_panel import ProblemBox
from etu.tui.widgets.virtual_table import Column, VirtualTable

MISSING = "–"
TARGET_MARKERS = {"NPU": "◆ NPU", "CPU": "○ CPU"}
TARGET_CLASSES = {"NPU": "layers--npu", "CPU": "layers--cpu"}
BAR_WIDTH = 8
BLOCKS = " ▏▎▍▌▋▊▉█"


# ------------------------------------------------------------------------- numbers


def count(value: float | None) -> str:
    """Cycles, MACs, bytes: whole numbers with thousands separators."""
    return MISSING if value is None else f"{round(value):,}"


def seconds(value: float | None) -> str:
    if value is None:
        return MISSING
    if value < 1e-3:
        return f"{value * 1e6:.4g} µs"
    if value < 1:
        return f"{value * 1e3:.4g} ms"
    return f"{value:.4g} s"


def hertz(value: float | None) -> str:
    if value is None:
        return MISSING
    if value >= 1e6:
        return f"{value / 1e6:g} MHz"
    return f"{value:g} Hz"


def kib(value: float | None) -> str:
    return MISSING if value is None else f"{value:,.2f} KiB"


def percent(value: float | None) -> str:
    return MISSING if value is None else f"{value:.1f}"


def rate(value: float | None) -> str:
    return MISSING if value is None else f"{value:,.0f}"


def bar(percentage: float | None, width: int = BAR_WIDTH) -> str:
    """A share of 0–100 % as a block bar, in eighths of a cell."""
    if percentage is None:
        return ""
    eighths = round(max(0.0, min(percentage, 100.0)) / 100 * width * 8)
    full, part = divmod(eighths, 8)
    return "█" * full + (BLOCKS[part] if part else "")


def badge(report: VelaReport) -> str:
    """``estimate, Vela 5.1.0``: the numbers are a model's, for that Vela version."""
    kind = "estimate" if report.is_estimate else "measured"
    version = f"Vela {report.vela_version}" if report.vela_version else "Vela version unknown"
    return f"{kind}, {version}"


def operators(report: VelaReport) -> str:
    npu, cpu = report.npu_operators, report.cpu_operators
    if npu is None and cpu is None:
        return MISSING
    return f"{MISSING if npu is None else npu} NPU · {MISSING if cpu is None else cpu} CPU"


def operator_text(row: LayerRow) -> str:
    """The network's operator, and Vela's own op when it became something else."""
    original, nng = row.operator or "", row.nng_operator or ""
    if nng and original and nng != original:
        return f"{original} → {nng}"
    return original or nng or MISSING


# ------------------------------------------------------------------------- summary


def _field(label: str, value: str) -> Content:
    return Content.assemble((label, "dim"), " ", (value, "bold"))


def summary_content(report: VelaReport) -> Content:
    gap = "   "
    head = report.headline()
    tag = Content.assemble(
        (f" {badge(report)} ", "bold $background on $warning"),
        ("  Vela's performance-model numbers, not a measurement", "dim"),
    )
    if report.failed:
        first = report.errors[0] if report.errors else "no summary"
        return Content("\n").join(
            [
                tag,
                Content.styled("✗ Vela failed: it wrote no summary", "$text-error bold"),
                Content.styled(first, "$text-error"),
            ]
        )
    line1 = Content(gap).join(
        [
            _field("accelerator", head["accelerator"] or MISSING),
            _field("system config", head["system_config"] or MISSING),
            _field("memory mode", head["memory_mode"] or MISSING),
            _field("clock", hertz(head["core_clock_hz"])),
        ]
    )
    cycles = count(head["cycles"])
    if head["npu_cycles"] is not None:
        cycles += f" (NPU {count(head['npu_cycles'])})"
    npu, cpu = report.npu_operators, report.cpu_operators
    line2 = Content(gap).join(
        [
            _field("cycles", cycles),
            _field("inference", seconds(head["inference_time_s"])),
            _field("inferences/s", rate(head["inferences_per_second"])),
            _field("MACs", count(head["nn_macs"])),
            Content.assemble(
                ("operators ", "dim"),
                (f"◆ {MISSING if npu is None else npu} NPU", "$text-success bold"),
                " · ",
                (f"○ {MISSING if cpu is None else cpu} CPU", "$text-warning bold"),
            ),
        ]
    )
    sram = _field("SRAM", kib(head["sram_used_kib"]))
    needed, used = head["sram_needed_kib"], head["sram_used_kib"]
    if needed is not None and used is not None and needed != used:
        sram = Content.assemble(sram, (f" (needs {kib(needed)} with read-only data)", "dim"))
    memory = [
        sram,
        _field("on-chip flash", kib(head["on_chip_flash_used_kib"])),
        _field("off-chip flash", kib(head["off_chip_flash_used_kib"])),
        _field("DRAM", kib(head["dram_used_kib"])),
    ]
    line3 = Content.assemble(("memory  ", "dim"), Content(gap).join(memory))
    lines = [tag, line1, line2, line3]
    if len(report.calls) > 1:
        lines[2] = Content.assemble(("last call ", "dim"), line2)
        lines[3] = Content.assemble(("last call ", "dim"), line3)
        lines.extend(calls_content(report))
    return Content("\n").join(lines)


def calls_content(report: VelaReport) -> list[Content]:
    """Several Ethos-U delegates (one Vela call each): the total, then each one's share."""
    total = report.total()
    n = len(report.calls)
    whole = Content("   ").join(
        [
            _field("cycles", count(total["cycles"])),
            _field("inference", seconds(total["inference_time_s"])),
            _field("MACs", count(total["nn_macs"])),
            _field(
                "SRAM", f"{kib(total['sram_used_kib'])} (largest {kib(total['sram_peak_kib'])})"
            ),
            _field("off-chip flash", kib(total["off_chip_flash_used_kib"])),
        ]
    )
    shares = []
    for call in report.calls:
        share = report.share(call)
        shares.append(
            Content.assemble(
                (f"delegate {call.index}", "dim"),
                " ",
                (count(call.cycles), "bold"),
                f" ({share:.1f}%)" if share is not None else "",
            )
        )
    return [
        Content.assemble((f"all {n} delegates ", "bold $accent"), whole),
        Content.assemble(("share of cycles  ", "dim"), Content(" · ").join(shares)),
    ]


class VelaSummary(Static):
    """The headline of the shown report, with the estimate badge first."""

    DEFAULT_CSS = """
    VelaSummary {
        height: auto;
        border: round $primary;
        border-title-style: bold;
        border-subtitle-color: $text-muted;
        padding: 0 1;
    }
    """

    def show(
        self,
        result: VelaResult | None,
        position: str,
        workspace: str,
        unreadable: bool = False,
        label: str | None = None,
        note: str | None = None,
    ) -> None:
        """``position`` says which of the compared reports this is (or is empty);
        ``unreadable``: the workspace has Vela output that failed to read (shown above);
        ``note``: why the Vela output beside the program is not shown for it."""
        if result is None or result.report is None:
            self.border_title = "Vela"
            self.border_subtitle = ""
            if note:
                first = Content.styled(printable(note), "bold")
            elif unreadable:
                first = Content.styled(
                    f"The Vela output beside {workspace or 'the program'} could not be read"
                    " (see above).",
                    "bold",
                )
            elif workspace:
                first = Content.assemble(
                    (f"No Vela output beside {workspace}", "bold"),
                    (" (looked for a vela/ folder and *_summary_*.csv files).", "dim"),
                )
            else:
                first = Content.styled("No Vela report.", "bold")
            hint = Content.styled("Press a to add a Vela output folder to compare.", "dim")
            self.update(Content("\n").join([first, hint]))
            return
        name = label or result.label
        self.border_title = f"Vela · {name}" + (f" · {position}" if position else "")
        self.border_subtitle = ""
        self.update(summary_content(result.report))


# ------------------------------------------------------------------------- per layer


class LayerTable(VirtualTable):
    """Vela's per-layer rows; ``s`` toggles cycles-descending and Vela's own order."""

    COMPONENT_CLASSES: ClassVar[set[str]] = VirtualTable.COMPONENT_CLASSES | set(
        TARGET_CLASSES.values()
    )

    DEFAULT_CSS = """
    LayerTable {
        & > .layers--npu { color: $text-success; }
        & > .layers--cpu { color: $text-warning; }
    }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._rows: list[LayerRow] = []
        self._order: list[int] = []
        self.by_cycles = False

    def show_report(self, report: VelaReport | None) -> None:
        self._rows = list(report.per_layer) if report is not None else []
        operator = max((len(operator_text(r)) for r in self._rows), default=0)
        name = max((len(r.name or "") for r in self._rows), default=0)
        columns = [
            Column("#", max(len(str(len(self._rows) - 1)), 3), "right"),
            Column("target", 6),
            Column("operator", min(max(operator, 10), 34), shrink=True),
            Column("name", min(max(name, 10), 36), shrink=True),
            Column("op cycles", 10, "right"),
            Column("% cycles", 8, "right"),
            Column("", BAR_WIDTH),
            Column("NPU cycles", 10, "right"),
            Column("MACs", 11, "right"),
            Column("util %", 6, "right"),
            Column("staging B", 10, "right"),
        ]
        self._sort()
        self.reset(len(self._rows), columns)

    def _sort(self) -> None:
        order = list(range(len(self._rows)))
        if self.by_cycles:
            order.sort(key=lambda i: -(self._rows[i].cycles or 0))  # stable: ties keep order
        self._order = order

    def set_sort(self, by_cycles: bool) -> None:
        self.by_cycles = by_cycles
        self._sort()
        self.reset(len(self._rows))

    def layer(self, index: int) -> LayerRow:
        """The row shown at ``index``, for tests and scripts."""
        return self._rows[self._order[index]]

    def row_cells(self, index: int) -> Sequence[str]:
        original = self._order[index]
        row = self._rows[original]
        util = row.util_percent
        return (
            str(original),
            TARGET_MARKERS.get(row.target or "", "· " + (row.target or "?")),
            operator_text(row),
            row.name or MISSING,
            count(row.cycles),
            percent(row.cycles_percent),
            bar(row.cycles_percent),
            count(row.npu_cycles),
            count(row.macs),
            percent(util),
            count(row.staging_bytes),
        )

    def row_class(self, index: int) -> str | None:
        return TARGET_CLASSES.get(self.layer(index).target or "")


# ------------------------------------------------------------------------- NPU operations


def kernel_text(op: NpuOperation) -> str:
    """``3×3/2`` (height×width/stride), ``d2`` when dilated; empty for DMA and elementwise."""
    k = op.kernel
    if k is None or op.kind == "elementwise":
        return ""
    stride = f"{k.stride_x}" if k.stride_x == k.stride_y else f"{k.stride_y},{k.stride_x}"
    dilation = f" d{k.dilation_x}" if max(k.dilation_x, k.dilation_y) > 1 else ""
    return f"{k.height}×{k.width}/{stride}{dilation}"


def operation_cells(op: NpuOperation) -> tuple[str, str, str, str, str, str]:
    """(operation, kernel, input, output, weights, activation) for one row."""
    name = op.kind.replace("_", " ") + (f" {op.mode}" if op.mode else "")
    if op.dma is not None:
        src, dst = op.dma.source, op.dma.destination
        where = "internal" if op.dma.destination_internal else f"r{dst.region}"
        return (name, "", f"r{src.region}+{src.offset:#x}", f"{where}+{dst.offset:#x}",
                f"{src.length:,}", "")  # fmt: skip
    if op.ofm is None:
        return (name + ("" if op.wait is None else f" {op.wait}"), "", "", "", "", "")
    inputs = op.ifm.shape_text if op.ifm else MISSING
    if op.ifm2 is not None:
        inputs += f", {op.ifm2.shape_text}"
    elif op.ifm2_scalar is not None:
        inputs += f", {op.ifm2_scalar}"
    activation = ""
    if op.activation is not None and op.activation.function != "none":
        lut = op.activation.lut_index
        activation = f"LUT {lut}" if lut is not None else op.activation.function
    weights = f"{op.weight_bytes:,}" if op.weights else ""
    return (name, kernel_text(op), inputs, op.ofm.shape_text, weights, activation)


def operations_title(decoded: list[DelegateOperations]) -> str:
    """``48 operations: 4 conv, 36 pool, …`` over every delegate, or why there are none."""
    ops = [op for d in decoded if d.stream for op in d.stream.operations]
    if not ops:
        reasons = [d.error or (d.stream.note if d.stream else None) for d in decoded]
        reason = next((r for r in reasons if r), None)
        return "NPU operations · none" + (f": {reason}" if reason else "")
    counts: dict[str, int] = {}
    for op in ops:
        key = op.kind.replace("_", " ")
        counts[key] = counts.get(key, 0) + 1
    kinds = ", ".join(f"{n} {kind}" for kind, n in counts.items())
    return f"NPU operations · {len(ops)}: {kinds}"


class OperationTable(VirtualTable):
    """Each Ethos-U delegate's command stream, one NPU operation per row, in stream order;
    a delegate column when the program has several."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._rows: list[tuple[int, NpuOperation]] = []
        self._several = False
        self.problems: list[str] = []  # one line per delegate without operations

    def show_operations(self, decoded: list[DelegateOperations]) -> None:
        self._rows = [(d.index, op) for d in decoded if d.stream for op in d.stream.operations]
        self._several = len(decoded) > 1
        self.problems = [
            (f"delegate {d.index}: " if d.index >= 0 else "")
            + (d.error or (d.stream.note if d.stream else ""))
            for d in decoded
            if d.error or (d.stream is not None and d.stream.note)
        ]
        columns = [Column("#", max(len(str(len(self._rows))), 3), "right")]
        if self._several:
            columns.append(Column("dlg", 3, "right"))
        columns += [
            Column("operation", 15, shrink=True),
            Column("kernel", 8),
            Column("input", 14, shrink=True),
            Column("output", 11, shrink=True),
            Column("weights B", 9, "right"),
            Column("act", 7),
        ]
        self.reset(len(self._rows), columns)

    def operation(self, index: int) -> NpuOperation:
        """The operation shown at row ``index``, for tests and scripts."""
        return self._rows[index][1]

    def row_cells(self, index: int) -> Sequence[str]:
        delegate, op = self._rows[index]
        head = (str(op.index), str(delegate)) if self._several else (str(op.index),)
        return (*head, *operation_cells(op))


# ------------------------------------------------------------------------- compare


def _delta(value: float | None, base: float | None) -> str:
    if value is None or base is None or not base:
        return ""
    change = (value - base) / base * 100
    return f" ({change:+.0f}%)" if round(change) else " (=)"


METRICS: tuple[tuple[str, bool], ...] = (  # label, show the change against the first report
    ("accelerator", False),
    ("system config", False),
    ("memory mode", False),
    ("clock", False),
    ("cycles", True),
    ("NPU cycles", True),
    ("inference", True),
    ("inferences/s", False),
    ("MACs", False),
    ("SRAM", True),
    ("flash", True),
    ("DRAM", True),
    ("operators", False),
    ("Vela", False),
)


def metric_values(report: VelaReport) -> list[tuple[str, float | None]]:
    """The compare column of one report: (text, number for the change), in METRICS order."""
    head = report.headline()
    if report.failed:
        return (
            [("✗ Vela failed", None)]
            + [(MISSING, None)] * (len(METRICS) - 2)
            + [(badge(report), None)]
        )
    return [
        (head["accelerator"] or MISSING, None),
        (head["system_config"] or MISSING, None),
        (head["memory_mode"] or MISSING, None),
        (hertz(head["core_clock_hz"]), None),
        (count(head["cycles"]), head["cycles"]),
        (count(head["npu_cycles"]), head["npu_cycles"]),
        (seconds(head["inference_time_s"]), head["inference_time_s"]),
        (rate(head["inferences_per_second"]), None),
        (count(head["nn_macs"]), None),
        (kib(head["sram_used_kib"]), head["sram_used_kib"]),
        (kib(head["flash_used_kib"]), head["flash_used_kib"]),
        (kib(head["dram_used_kib"]), head["dram_used_kib"]),
        (operators(report), None),
        (badge(report), None),
    ]


class CompareTable(VirtualTable):
    """One column per report, one row per headline number; changes are against column 1."""

    LABEL_WIDTH = 14

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._cells: list[list[str]] = []
        self.labels: list[str] = []

    def show(self, results: list[VelaResult], shown: int, labels: list[str] | None = None) -> None:
        columns = [Column("", self.LABEL_WIDTH)]
        values = [metric_values(r.report) if r.report is not None else [] for r in results]
        self.labels = labels if labels is not None else [r.label or "" for r in results]
        texts: list[list[str]] = []
        for index, column in enumerate(values):
            base = values[0] if index else None
            texts.append(
                [
                    text + (_delta(number, base[row][1]) if base and METRICS[row][1] else "")
                    for row, (text, number) in enumerate(column)
                ]
            )
        for index, (label, column) in enumerate(zip(self.labels, texts, strict=True)):
            header = ("▸ " if index == shown else "  ") + label
            width = max([len(header), *(len(t) for t in column)])
            columns.append(Column(header, min(width, 48)))
        self._cells = [
            [label, *(column[row] for column in texts)] for row, (label, _) in enumerate(METRICS)
        ]
        self.reset(len(METRICS) if results else 0, columns)

    def row_cells(self, index: int) -> Sequence[str]:
        return self._cells[index]

    def column_texts(self, index: int) -> list[str]:
        """Every value of report ``index`` (0-based), for tests."""
        return [row[index + 1] for row in self._cells]


# ------------------------------------------------------------------------- messages


def messages_content(result: VelaResult | None) -> Content:
    report = result.report if result else None
    if result is None or report is None:
        return Content.styled("No report shown.", "dim")
    lines: list[Content] = []
    lines += [
        Content.assemble(("✗ ", "$text-error bold"), (result.relative(e), "$text-error"))
        for e in report.errors
    ]
    lines += [
        Content.assemble(("⚠ ", "$text-warning bold"), result.relative(w))
        for w in report.vela_warnings
    ]
    lines += [
        Content.assemble(("ℹ ", "$text-primary"), result.relative(i)) for i in report.vela_info
    ]
    lines += [Content.assemble(("· ", "dim"), (result.relative(w), "dim")) for w in report.warnings]
    if not lines:
        return Content.styled("No warnings or errors from Vela.", "$text-success")
    return Content("\n").join(lines)


class VelaMessages(VerticalScroll):
    """Vela's errors (✗), warnings (⚠) and info (ℹ), then etu's notes on reading the files."""

    DEFAULT_CSS = """
    VelaMessages {
        border: round $primary;
        border-title-style: bold;
        & > Static { height: auto; padding: 0 1; }
    }
    """

    def compose(self) -> ComposeResult:
        yield Static(id="vela-messages-text")

    def show(self, result: VelaResult | None) -> None:
        report = result.report if result else None
        total = (
            len(report.errors)
            + len(report.vela_warnings)
            + len(report.vela_info)
            + len(report.warnings)
            if report
            else 0
        )
        self.border_title = f"Vela messages ({total})"
        self.query_one("#vela-messages-text", Static).update(messages_content(result))


class VelaError(ProblemBox):
    """A Vela report that could not be read, in one line; the rest of the console is fine."""

    def show_errors(self, lines: list[str]) -> None:
        self.show_lines("Vela report not read", lines)


class AddReportScreen(OpenFileScreen):
    """The open-file modal, asking for a Vela output folder (or one Vela file) instead."""

    DIALOG_TITLE = "Add a Vela report to compare"
    PLACEHOLDER = "path/to/vela_output/"
    HINT = "Enter add · Tab complete · Escape cancel · a Vela output folder, summary CSV or stdout"
