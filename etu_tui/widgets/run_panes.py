"""The Run tab's small panes: allocator gauges, outputs, operators, process and the
banner that says how a run ended (the PMU pane has its own module). Each shows a
RunRecord; the outputs, operators and banner panes also run the worker that fills in what
they show (the host comparison, the ETDump, the fault triage) and keep its result on the
record. Each pane can fill the screen (:func:`zoom_pane`): at 80×24 the panes row is
hidden and that is how they are reached.

Text a device printed (counter names, dtypes, the proof line) goes through ``printable``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

from textual.content import Content
from textual.widget import Widget
from textual.widgets import Static

from etu.parsers.errors import describe_error
from etu.parsers.runner_events import MemoryReport, OutputTensor
from etu.runner.process import ProcessStats
from etu.runner.run_model import REASON_CLASS, RunRecord
from etu.tui.commands import PaletteCommand
from etu.tui.safe_text import printable
from etu.tui.widgets.formatting import shape as shape_text
from etu.tui.widgets.full_screen import fill_screen
from etu.tui.widgets.memory import gauge
from etu.tui.widgets.npu_invoke_lines import (
    MISSING,
    compact,
    count,
    labelled,
    npu_summary,
)
from etu.tui.widgets.pmu_pane import GAUGE, per_inference
from etu.tui.widgets.run_messages import FaultDecoded, OperatorsRead, OutputsCompared
from etu.tui.widgets.triage import fault_lines

REASON_MARK = {"success": "✓", "runner_error": "✗", "hard_fault": "✗", "crash": "✗"}


def mib(value: int) -> str:
    return f"{value / 2**20:,.1f} MiB"


# The panes a key or palette entry brings into view: name → (widget id, what the palette
# calls it). At 80×24 the panes row is hidden; a maximised pane is drawn all the same.
PANES: dict[str, tuple[str, str]] = {
    "pmu": ("run-pmu", "PMU"),
    "allocator": ("run-allocator", "allocator"),
    "outputs": ("run-outputs", "outputs"),
    "operators": ("run-operators", "operators (ETDump)"),
    "process": ("run-process", "process"),
    "past": ("run-past", "past runs"),
}
PALETTE_ONLY = ("operators", "process")  # the others have a key of their own (etu.tui.keys)


def zoom_pane(panel: Widget, name: str, back: Callable[[], None]) -> None:
    """Bring the pane ``name`` (a key of :data:`PANES`) of ``panel`` into view: the
    past-runs list, where the layout shows it, gets the focus; else the pane fills the
    screen (focused, so the panel's keys still work), and the same key or Escape restores
    the layout and calls ``back`` (which focuses the log). A pane with nothing to show says
    so instead."""
    pane_id, what = PANES[name]
    pane = panel.query_one(f"#{pane_id}")
    screen = panel.screen
    if screen.maximized is pane:
        screen.minimize()  # the watch below calls back
        return
    if not pane.display:  # the outputs before any, the operators without an ETDump
        panel.notify(f"The {what} pane has nothing to show yet.")
        return
    if name == "past" and pane.region.area:  # a list in view: Enter opens a run
        pane.focus()
        return
    fill_screen(panel, pane, back)


def pane_entries() -> list[PaletteCommand]:
    """The palette's entries for the panes without a key."""
    return [
        PaletteCommand(f"Run: {PANES[name][1]} pane, full screen / restore",
                       "The pane fills the screen (Escape restores)", f"zoom_pane({name!r})")
        for name in PALETTE_ONLY
    ]  # fmt: skip


def figures_line(record: RunRecord) -> str | None:
    """The run's headline figures in one line, for the banner (it shows at 80×24, where the
    panes do not): NPU cycles per inference from the last PMU report, the method pool's
    use from the runner's memory summary."""
    parts = []
    report = record.pmu[-1] if record.pmu else None
    cycles = per_inference(report) if report is not None else None
    if cycles is not None:
        simulated = record.launch is not None and record.launch.simulated
        parts.append(f"NPU {count(cycles)} cycles" + (" (simulated)" if simulated else ""))
    memory = record.memory
    method = memory.pools.get("method_allocator") if memory is not None else None
    if method is not None and method.used is not None and method.size:
        share = method.used * 100.0 / method.size
        parts.append(f"method pool {compact(method.used, 'B')} of {compact(method.size, 'B')}"
                     f" used ({share:.1f}%)")  # fmt: skip
    return " · ".join(parts) or None


# ------------------------------------------------------------------------- allocator


def pool_line(name: str, used: int | None, size: int | None) -> Content:
    """``used   ██░░░░░░░░   12.5%   29,536 B``: a share of ``size``."""
    share = used * 100.0 / size if used is not None and size else None
    bar = gauge(share, GAUGE) if share is not None else " " * GAUGE
    return Content.assemble(
        (f"{name:<9}", "dim"),
        (bar, "$text-warning" if share is not None and share >= 90 else "$text-success"),
        (f" {share:5.1f}%" if share is not None else f" {MISSING:>6}", ""),
        (f" {count(used):>12} B", "bold"),
    )


class AllocatorPane(Static):
    """The runner's memory summary: one gauge per pool and per phase of the method pool."""

    ALLOW_MAXIMIZE = True  # full screen by its key (see zoom_pane)
    can_focus = True

    DEFAULT_CSS = """
    AllocatorPane {
        border: round $primary;
        border-title-style: bold;
        padding: 0 1;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.lines: list[str] = []

    def show(self, memory: MemoryReport | None) -> None:
        self.border_title = "Allocator"
        if memory is None:
            self.lines = []
            self.update(
                Content.styled("No memory summary yet: the runner prints one at the end.", "dim")
            )
            return
        lines: list[Content] = []
        method = memory.pools.get("method_allocator")
        size = method.size if method is not None else None
        if method is not None:
            lines.append(labelled("method pool", f"{count(size)} B"))
            lines.append(pool_line("used", method.used, size))
        for label, value in (
            ("planned", memory.planned),
            ("loaded", memory.loaded),
            ("input", memory.input),
            ("executor", memory.executor),
        ):
            if value is not None:
                lines.append(pool_line(label, value, size))
        for name, usage in memory.pools.items():
            if name == "method_allocator":
                continue
            short = printable(name.removesuffix("_allocator"))[:8]
            lines.append(pool_line(short, usage.used, usage.size))
        if memory.temp_allocator_size is not None:
            lines.append(labelled("temp allocator", f"{count(memory.temp_allocator_size)} B"))
        self.lines = [line.plain for line in lines]
        self.update(Content("\n").join(lines))


# ------------------------------------------------------------------------- outputs


def values_text(values: Sequence[object], limit: int = 6) -> str:
    shown = [f"{v:.4g}" if isinstance(v, float) else str(v) for v in values[:limit]]
    return " ".join(shown) + (" …" if len(values) > limit else "")


# the stand-in prints made-up values, or the host reference's where the firmware ships them
SIMULATED_OUTPUTS = (
    "SIMULATED: printed by the etu stand-in FVP, no model of the hardware; they prove nothing"
)


class OutputsPane(Static):
    """Each output the runner dumped: index, dtype, element count (shape), first values."""

    ALLOW_MAXIMIZE = True  # full screen by its key (see zoom_pane)
    can_focus = True

    DEFAULT_CSS = """
    OutputsPane {
        height: auto;
        max-height: 20%;
        border: round $primary;
        border-title-style: bold;
        padding: 0 1;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.lines: list[str] = []
        self.record: RunRecord | None = None
        self.shapes: list[tuple[int, ...]] = []

    def show_record(self, record: RunRecord | None, shapes: Sequence[tuple[int, ...]]) -> None:
        """A run's outputs with what is known of their comparison with the host."""
        self.record, self.shapes = record, list(shapes)
        if record is None:
            self.show({}, shapes)
            return
        simulated = record.launch is not None and record.launch.simulated
        self.show(record.outputs, shapes, record.comparison, record.comparison_note,
                  simulated=simulated)  # fmt: skip

    def compare(self, record: RunRecord) -> None:
        """Start the host comparison of a finished run's outputs (once per record)."""
        if not record.outputs or record.running or record.folder is None:
            return
        if record.comparison is not None or record.comparison_note is not None:
            return
        # A simulated run is compared too: its deployment side proves nothing (the pane and
        # the verdict say so), its quantisation side (float model → reference) still holds.
        record.comparison_note = "comparing with the host reference…"
        self.run_worker(partial(self._compare_in_thread, record), thread=True,
                        group="run-compare", exit_on_error=False)  # fmt: skip
        if self.record is record:
            self.show_record(record, self.shapes)

    def _compare_in_thread(self, record: RunRecord) -> None:
        from etu.runner.compare import CompareError, compare_in_child

        folder = record.folder
        try:
            self.post_message(OutputsCompared(record, compare_in_child(folder), None))
        except CompareError as error:
            self.post_message(OutputsCompared(record, None, f"not compared: {error}"))
        except Exception as error:  # a broken reference must never take the console down
            self.post_message(OutputsCompared(record, None, describe_error(error)))

    def on_outputs_compared(self, message: OutputsCompared) -> None:
        for record in {id(r): r for r in (message.run, self.record) if r is not None}.values():
            if record.folder == message.run.folder:
                record.comparison, record.comparison_note = message.record, message.note
        if self.record is not None and self.record.folder == message.run.folder:
            self.show_record(self.record, self.shapes)

    def show(
        self,
        outputs: dict[int, OutputTensor],
        shapes: Sequence[tuple[int, ...]],
        comparison: dict | None = None,
        note: str | None = None,
        *,
        simulated: bool = False,
    ) -> None:
        """The outputs; with ``comparison`` (an `etu compare --json` record) each one's
        error against the host reference, and ``note`` for why there is none (yet);
        ``simulated``: the etu stand-in FVP printed them, and the pane says so."""
        self.border_title = f"Outputs ({len(outputs)})" + (" · SIMULATED" if simulated else "")
        self.set_class(not outputs, "-empty")
        if not outputs:
            self.lines = []
            self.update(Content.styled("None printed yet.", "dim"))
            return
        compared = {row["index"]: row for row in (comparison or {}).get("outputs", [])}
        if comparison is not None:
            verdict = "✓ match the host" if comparison.get("passed") else "✗ differ from the host"
            self.border_title = (f"Outputs ({len(outputs)})" + (" · SIMULATED" if simulated else "")
                                 + f" · {verdict}")  # fmt: skip
        lines: list[Content] = []
        # an output that fails first: the pane's first lines (all that shows at 80×24) carry
        # the worst verdict of a run with several outputs
        for index in sorted(outputs, key=lambda i: (compared.get(i, {}).get("passed", True), i)):
            output = outputs[index]
            shape = output.shape
            if shape is None and index < len(shapes):
                expected = shapes[index]
                numel = 1
                for dim in expected:
                    numel *= dim
                shape = expected if numel == output.numel else None
            dims = f" · {shape_text(shape)}" if shape else ""
            dtype = printable(output.dtype or "untyped")
            lines.append(
                Content.assemble(
                    (f"[{index}] {dtype}", "bold"), (f" · {output.numel:,} el.{dims}", "dim")
                )
            )
            row = compared.get(index)
            if row is not None and row.get("verdict"):
                lines.append(verdict_line(row))
            lines.append(Content("  " + values_text(output.values)))
            if row is not None and row.get("target_integers") and row.get("io_quantization"):
                lines.append(integers_line(row))
            if row is not None:
                lines.append(comparison_line(row))
        if comparison is not None:
            lines.append(comparison_footer(comparison))
        if simulated:  # last, whatever else is known: the target side is made up
            if comparison is not None:
                text = SIMULATED_OUTPUTS.replace("; they prove", ": the deployment side proves")
            else:
                text = SIMULATED_OUTPUTS + (f" ({printable(note)})" if note else "")
            lines.append(Content.styled(f"  {text}", "$text-warning bold"))
        elif note and comparison is None:
            lines.append(Content.styled(f"  {printable(note)}", "dim"))
        self.lines = [line.plain for line in lines]
        self.update(Content("\n").join(lines))


def verdict_line(row: dict) -> Content:
    """The output's verdict first: "✓ deployment exact · quantisation SNR 31.2 dB" (the
    pane's title already says when the target is simulated)."""
    text = printable(str(row["verdict"]).replace(" (target simulated)", ""))
    mark = ("  ✓ ", "$text-success bold") if row.get("passed") else ("  ✗ ", "$text-error bold")
    return Content.assemble(mark, (text, "bold"))


def integers_line(row: dict) -> Content:
    """The integers the target's values were dequantized from, and how: the values above
    are (q - zero point) × scale."""
    from etu.runner.io_quantization import real_formula

    grid = row["io_quantization"]
    integers = values_text([q if q is not None else "?" for q in row["target_integers"]], 8)
    dtype = printable(str(grid.get("integer_dtype") or "int"))
    off = (row.get("deployment") or {}).get("off_grid") or 0
    if off:  # values no dequantization gives: the nearest integers, and how many are off
        return Content.assemble(f"  {dtype} {integers}",
                                (f" · {off} not on the {real_formula(grid)} grid",
                                 "$text-warning"))  # fmt: skip
    return Content.assemble(f"  {dtype} {integers}", (f" = {real_formula(grid)}", "dim"))


def comparison_line(row: dict) -> Content:
    """One output against the host: pass/fail, then the metrics ST Edge AI's validate shows."""
    cosine = row.get("cosine_similarity")
    snr = row.get("snr_db")
    figures = (
        f" max {row['max_abs_error']:.3g} · mean {row['mean_abs_error']:.3g}"
        f" · RMSE {row['rmse']:.3g}"
        f" · cos {'—' if cosine is None else f'{cosine:.4f}'}"
        f" · SNR {'∞' if snr is None else f'{snr:.1f}'} dB"
    )
    head = ("  ✓ host", "$text-success bold") if row["passed"] else ("  ✗ host", "$text-error bold")
    extra = f" · {printable(row['note'])}" if row.get("note") else ""
    return Content.assemble(head, (figures + extra, "dim" if row["passed"] else ""))


def comparison_footer(comparison: dict) -> Content:
    """What the outputs were compared on: the run's inputs (bundled ones, or all ones, the
    fallback; an older record without ``inputs`` was all ones) and the tolerances."""
    from etu.runner.compare import ONES_INPUTS

    inputs = comparison.get("inputs") if isinstance(comparison.get("inputs"), dict) else None
    used = printable(str((inputs or ONES_INPUTS).get("source")))
    tolerances = f"rtol {comparison['rtol']:g}, atol {comparison['atol']:g}"
    missing = comparison.get("missing_outputs") or []
    gone = f" · outputs {missing} not printed" if missing else ""
    return Content.styled(f"  vs host reference, inputs {used}, {tolerances}{gone}", "dim")


class OperatorsPane(Static):
    """The run's ETDump, read by ExecuTorch's Inspector: each operator call, where it ran
    (CPU or a delegate) and its time in the runner's ticks. Hidden without an ETDump."""

    ALLOW_MAXIMIZE = True  # full screen by its key (see zoom_pane)
    can_focus = True

    DEFAULT_CSS = """
    OperatorsPane {
        display: none;
        height: auto;
        max-height: 10;
        border: round $primary;
        border-title-style: bold;
        border-subtitle-color: $text-muted;
        padding: 0 1;
    }
    OperatorsPane.-shown { display: block; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.lines: list[str] = []
        self.record: RunRecord | None = None

    def show_record(self, record: RunRecord | None) -> None:
        self.record = record
        if record is None:
            self.show(None, None)
        else:
            self.show(record.operators, record.operators_note)

    def read(self, record: RunRecord) -> None:
        """Read a finished run's ETDump, if it left one (once per record)."""
        if record.running or record.folder is None:
            return
        if record.operators is not None or record.operators_note is not None:
            return
        if not any(record.folder.glob("etdump-*.bin")):
            return
        record.operators_note = "reading the ETDump with ExecuTorch's Inspector…"
        self.run_worker(partial(self._read_in_thread, record), thread=True, group="run-etdump",
                        exit_on_error=False)  # fmt: skip
        if self.record is record:
            self.show_record(record)

    def _read_in_thread(self, record: RunRecord) -> None:
        from etu.runner.etdump import operators_in_child

        try:
            self.post_message(OperatorsRead(record, operators_in_child(record.folder), None))
        except Exception as error:  # a device-sent ETDump must never take the console down
            self.post_message(OperatorsRead(record, None, f"ETDump not read: {error}"))

    def on_operators_read(self, message: OperatorsRead) -> None:
        for record in {id(r): r for r in (message.run, self.record) if r is not None}.values():
            if record.folder == message.run.folder:
                record.operators, record.operators_note = message.table, message.note
        if self.record is not None and self.record.folder == message.run.folder:
            self.show_record(self.record)

    def show(self, table: dict | None, note: str | None) -> None:
        self.set_class(table is not None or note is not None, "-shown")
        rows = (table or {}).get("rows") or []
        self.border_title = f"Operators (ETDump, {len(rows):,} calls)" if rows else "Operators"
        self.border_subtitle = (table or {}).get("time_note") or ""
        if not rows:
            self.lines = [note or "the ETDump holds no operator calls"]
            self.update(Content.styled(printable(self.lines[0]), "dim"))
            return
        width = max(len(printable(str(row["operator"]))) for row in rows)
        lines = []
        for row in rows:
            time = "—" if row.get("time") is None else f"{row['time']:,}"
            lines.append(
                f"{printable(str(row['operator'])):<{width}}  {printable(str(row['where'])):<8}"
                f"  {time:>12}  {printable(str(row['block']))}"
            )
        self.lines = lines
        self.update(Content("\n".join(lines)))


# ------------------------------------------------------------------------- process


class ProcessPane(Static):
    """The simulator process as psutil last sampled it (once a second)."""

    ALLOW_MAXIMIZE = True  # full screen by its key (see zoom_pane)
    can_focus = True

    DEFAULT_CSS = """
    ProcessPane {
        height: 4;
        border: round $primary;
        border-title-style: bold;
        padding: 0 1;
    }
    """

    def show(self, record: RunRecord | None, stable: bool = False) -> None:
        self.border_title = "Process"
        if record is None or not record.live:
            self.update(Content.styled("Sampled during live runs only.", "dim"))
            return
        stats: ProcessStats | None = record.stats
        if stable:
            # Screenshots: samples differ on every run (and may not have arrived at all).
            self.update(Content.styled("CPU –% · RSS – MiB\nthreads – · children – · – s", "dim"))
            return
        if stats is None:
            if record.failure is not None:
                text = "The run did not start: no process to sample."
            elif record.outcome is not None:
                text = "Ended before the first sample (psutil samples once a second)."
            else:
                text = "No sample yet (psutil samples once a second)."
            self.update(Content.styled(text, "dim"))
            return
        first = Content.assemble(
            ("CPU ", "dim"), (f"{stats.cpu_percent:.1f}%", "bold"),
            (" · RSS ", "dim"), (mib(stats.rss_bytes), "bold"),
        )  # fmt: skip
        second = Content.assemble(
            ("threads ", "dim"), (str(stats.threads), "bold"),
            (" · children ", "dim"), (str(stats.children), "bold"),
            (" · ", "dim"), (f"{stats.elapsed_s:.1f} s", "bold"),
        )  # fmt: skip
        self.update(Content("\n").join([first, second]))


# ------------------------------------------------------------------------- banner


class RunBanner(Static):
    """How the shown run ended (reason and the line that proves it), or that it runs."""

    DEFAULT_CSS = """
    RunBanner {
        height: auto;
        padding: 0 1;
        background: $panel;
        &.-success { background: $success 35%; }
        &.-error { background: $error 45%; }
        &.-warning { background: $warning 40%; }
        &.-running { background: $primary 30%; }
    }
    """

    STATES = ("-success", "-error", "-warning", "-running", "-idle")

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.state = "-idle"
        self.text = ""
        self._last: tuple | None = None  # show()'s arguments, to redraw when triage is in

    def set_state(self, state: str, content: Content) -> None:
        for name in self.STATES:
            self.set_class(name == state, name)
        self.state = state
        self.text = content.plain
        self.update(content)

    def show(
        self,
        record: RunRecord | None,
        hint: str,
        session: str,
        stable: bool,
        triage: Sequence[str] = (),
        elf: Path | None = None,
    ) -> None:
        """``session`` names the record's folder as it may be shown (masked in screenshots);
        ``triage``: lines under the ending (a missing operator's fix); a fault's lines come
        first, decoded in a worker with PC and LR symbolised against ``elf``."""
        self._last = (record, hint, session, stable, tuple(triage), elf)
        if record is not None and record.outcome is not None and record.faults:
            triage = [*self._fault_lines(record, elf), *triage]
        if record is None:
            self.set_state("-idle", Content.styled(hint, "dim"))
            return
        where = (
            Content.assemble(("Past run ", ""), (session, "bold"), (" · read-only · ", ""))
            if not record.live
            else Content("")
        )
        if record.failure is not None:
            self.set_state(
                "-error",
                Content.assemble(where, ("✗ could not start: ", "bold"), printable(record.failure)),
            )
            return
        outcome = record.outcome
        if outcome is None:
            # Not redrawn per batch (a banner resize is a layout): the log's title counts.
            target = record.launch.target if record.launch and record.launch.target else ""
            self.set_state(
                "-running",
                Content.assemble(
                    ("● running", "bold"), (f" on {target}" if target else "", ""),
                    (" · s stops it", "dim"),
                ),
            )  # fmt: skip
            return
        state = REASON_CLASS.get(outcome.reason, "-warning")
        mark = REASON_MARK.get(outcome.reason, "■")
        line = f" · line {outcome.proof_line}" if outcome.proof_line else ""
        took = ""
        if record.started is not None and record.ended is not None and not stable:
            took = f" · {record.ended - record.started:.1f} s"
        # The ending's line stays short enough for 120 columns; the figures and the live
        # session's name go on the next line.
        figures = [text for text in (npu_summary(record.npu), figures_line(record)) if text]
        if record.live and record.folder is not None:
            figures.append(f"session {session}")
        if figures:
            triage = [" · ".join(figures), *triage]
        self.set_state(
            state,
            Content.assemble(
                where,
                (f"{mark} {outcome.reason}", "bold"),
                (line, ""),
                ": ",
                (printable(outcome.proof), "bold"),
                (took, "dim"),
                *[("\n  " + printable(line), "") for line in triage],
            ),
        )

    def _fault_lines(self, record: RunRecord, elf: Path | None) -> list[str]:
        """The decoded fault when it is in; else the decoding starts (once per ELF)."""
        decoded = record.fault_triage
        if decoded is not None and decoded[0] == elf:
            return decoded[1] or ["hard fault: decoding the registers…"]
        record.fault_triage = (elf, None)
        fault = record.faults[-1]
        self.run_worker(partial(self._decode_in_thread, record, fault, elf), thread=True,
                        group="run-triage", exit_on_error=False)  # fmt: skip
        return ["hard fault: decoding the registers…"]

    def _decode_in_thread(self, record: RunRecord, fault, elf: Path | None) -> None:
        try:
            lines = fault_lines(fault, elf)
        except Exception as error:  # triage is a help; the ending still shows
            lines = [f"hard fault: not decoded: {describe_error(error)}"]
        self.post_message(FaultDecoded(record, elf, lines))

    def on_fault_decoded(self, message: FaultDecoded) -> None:
        if message.run.fault_triage == (message.elf, None):
            message.run.fault_triage = (message.elf, message.lines)
        if self._last is not None and self._last[0] is message.run:
            self.show(*self._last)


# ------------------------------------------------------------------------- past runs


def session_name(name: str, stable: bool) -> str:
    """A session folder's name; in screenshots its date and time are masked."""
    if not stable:
        return name
    return "".join("#" if c.isdigit() else c for c in name[:15]) + name[15:]
