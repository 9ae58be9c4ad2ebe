"""The Run tab's PMU pane: the latest PMU report (NPU cycles next to Vela's estimate,
utilisation, counters) and the history of per-inference NPU cycles; on the emulated board,
what its functional NPU counted instead.

Counter names a device printed go through ``printable``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.widgets import Label, Sparkline, Static

from etu.parsers.log_summary import cpu_cycles_note
from etu.parsers.runner_events import NpuInvoke, PmuReport
from etu.runner.run_model import RunRecord
from etu.runner.runner_facts import RunnerFacts, runner_facts
from etu.runner.runtime_run import NPU_LABEL
from etu.tui.safe_text import printable
from etu.tui.widgets.memory import gauge
from etu.tui.widgets.npu_invoke_lines import VelaCall, count, labelled, npu_lines

GAUGE = 10  # characters of a share's bar
HISTORY = 120  # per-inference cycles kept for the sparkline
PMU_PREFIX = "ETHOSU_PMU_"


def per_inference(report: PmuReport) -> float | None:
    """NPU cycles of one inference (the report sums every inference of the run)."""
    if report.npu_cycles is None:
        return None
    return report.npu_cycles / report.npu_inferences if report.npu_inferences else report.npu_cycles


def utilisation(report: PmuReport) -> tuple[float | None, str]:
    """NPU utilisation in percent: NPU active cycles over all cycles, that is (cycle
    counter − NPU_IDLE) / cycle counter, when the report counts NPU_IDLE; and how."""
    idle = next(
        (v for k, v in (report.counters or {}).items() if k.upper().endswith("NPU_IDLE")), None
    )
    if report.npu_cycles and idle is not None and 0 <= idle <= report.npu_cycles:
        busy = report.npu_cycles - idle
        return 100.0 * busy / report.npu_cycles, "(cycles − NPU_IDLE) / cycles"
    return None, ""


WHY_NO_PMU = {
    "hard_fault": "the core faulted before the runner printed it",
    "runner_error": "the runner stopped on an error before printing it",
    "no_model": "the firmware runs no model",
    "time_limit": "the time limit ended the run before the runner printed it",
    "crash": "the simulator crashed before the runner printed it",
    "killed": "the run was stopped before the runner printed it",
    "incomplete": "the log ended before the runner printed it",
}


# ------------------------------------------------------------------------- PMU


class PmuPane(Vertical):
    """The latest PMU report: NPU cycles next to Vela's estimate, utilisation, counters,
    and the history of per-inference NPU cycles as a sparkline."""

    ALLOW_MAXIMIZE = True  # a key shows it full screen (the panes row is hidden at 80×24)
    can_focus = True
    DEFAULT_CSS = """
    PmuPane {
        border: round $primary;
        border-title-style: bold;
        border-subtitle-color: $text-muted;
        padding: 0 1;
        & > #pmu-text { height: auto; }
        & > Horizontal { height: 1; }
        & Label { color: $text-muted; width: auto; margin-right: 1; }
        & Sparkline { height: 1; width: 1fr; }
        .-simulated { color: $text-warning; text-style: bold; }
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.lines: list[str] = []
        self.history: deque[float] = deque(maxlen=HISTORY)  # the live runs' cycles
        self._runners: dict[str, RunnerFacts] = {}  # session folder → its runner's facts

    def note_live(self, reports: Sequence[PmuReport]) -> None:
        """New reports of the live run: their cycles join the sparkline's history."""
        cycles = (per_inference(report) for report in reports)
        self.history.extend(c for c in cycles if c is not None)

    def compose(self) -> ComposeResult:
        yield Static(id="pmu-text")
        with Horizontal():
            yield Label("history", id="pmu-history-label")
            yield Sparkline([], summary_function=max, id="pmu-history")

    def show_record(
        self,
        record: RunRecord | None,
        vela_cycles: float | None,
        vela_calls: Sequence[VelaCall] = (),
    ) -> None:
        """Show ``record`` (None: no run yet). The live run's sparkline is the history of
        this console's runs; a past run's, its own reports."""
        if record is None:
            self.show([], list(self.history), vela_cycles, False)
            return
        history = (
            list(self.history)
            if record.live
            else [c for c in map(per_inference, record.pmu) if c is not None]
        )
        launch = record.launch
        label = launch.label if launch else ""
        facts = self.runner_of(record)
        self.show(
            record.pmu, history, vela_cycles, launch.simulated if launch else False,
            record.outcome.reason if record.outcome is not None else None,
            npu=record.npu, npu_invokes=record.npu_invokes, vela_calls=vela_calls,
            npu_label=label if label == NPU_LABEL or record.npu else None,
            runner=facts,
        )  # fmt: skip

    def runner_of(self, record: RunRecord) -> RunnerFacts:
        """The CPU and ExecuTorch of the runner a session ran (its meta.json and firmware
        record, read once per session): they explain a CPU-cycles figure of 0."""
        from etu.runner.history import read_meta

        if record.folder is None:
            return RunnerFacts()
        key = str(record.folder)
        if key not in self._runners:
            self._runners[key] = runner_facts(read_meta(record.folder))
        return self._runners[key]

    def show(
        self,
        reports: Sequence[PmuReport],
        history: Sequence[float],
        vela_cycles: float | None,
        simulated: bool,
        ended: str | None = None,
        *,
        npu: dict[int | None, NpuInvoke] | None = None,
        npu_invokes: dict[int | None, int] | None = None,
        vela_calls: Sequence[VelaCall] = (),
        npu_label: str | None = None,
        runner: RunnerFacts | None = None,
    ) -> None:
        """``ended``: the run's end reason when it is over (says why a report is missing).
        ``npu_label``: the run is on the emulated board with etu's NPU (its label): without
        a PMU report the pane shows ``npu`` (the last invoke per delegate) instead.
        ``runner``: its CPU and ExecuTorch, which explain a CPU-cycles figure of 0."""
        text = self.query_one("#pmu-text", Static)
        if not reports:
            history = []  # a run without a PMU report charts none (not other runs' cycles)
        spark = self.query_one("#pmu-history", Sparkline)
        # One value has nothing to compare with: a sparkline of it is a full bar.
        spark.data = list(history) if len(history) > 1 else []
        self.query_one("#pmu-history-label", Label).update(
            f"history ({len(history)})" if history else "history"
        )
        sim = " · SIMULATED" if simulated else ""
        self.border_title = f"PMU · {len(reports)} report{'' if len(reports) == 1 else 's'}{sim}"
        self.border_subtitle = "NPU cycles per inference" if history else ""
        if not reports and (npu or npu_label):
            self.border_title = "PMU · emulated NPU · no cycles"
            self.border_subtitle = "the functional model's counts"
            lines = npu_lines(npu or {}, npu_invokes or {}, vela_calls, npu_label or NPU_LABEL)
            self.lines = [line.plain for line in lines]
            text.update(Content("\n").join(lines))
            return
        if not reports:
            self.lines = []
            why = WHY_NO_PMU.get(ended or "")
            if why:
                lines = [Content.styled(f"No PMU report: {why}", "bold")]
                lines.append(
                    Content.styled("(Ethos-U runners print it after the inferences).", "dim")
                )
            elif ended:
                lines = [Content.styled("No PMU report: this runner build prints none", "dim")]
                lines.append(Content.styled("(it needs the Ethos-U PMU enabled).", "dim"))
            else:
                lines = [Content.styled("No PMU report yet: Ethos-U runners print one", "dim")]
                lines.append(Content.styled("after the inferences.", "dim"))
            if vela_cycles:
                lines.append(labelled("Vela estimate", f"{count(vela_cycles)} cycles"))
            text.update(Content("\n").join(lines))
            return
        report = reports[-1]
        measured = "simulated" if simulated else "measured"
        cycles = per_inference(report)
        inferences = report.npu_inferences
        first = Content.assemble(
            ("NPU cycles ", "dim"),
            (count(report.npu_cycles), "bold"),
            (" simulated" if simulated else "", "$text-warning bold"),
            (f" · {inferences} inference{'' if inferences == 1 else 's'}", "dim")
            if inferences is not None
            else "",
        )
        lines = [first]
        if vela_cycles:
            vela = f"Vela estimate {count(vela_cycles)} cycles · {measured} {count(cycles)}"
            if cycles is not None:
                vela += f" ({(cycles - vela_cycles) / vela_cycles * 100:+.1f}%)"
            lines.append(Content(vela))
        else:
            lines.append(
                Content.styled(f"{measured} {count(cycles)}/inference · no Vela estimate", "dim")
            )
        share, source = utilisation(report)
        if share is not None:
            lines.append(
                Content.assemble(
                    ("NPU utilisation ", "dim"),
                    (gauge(share, GAUGE), "$text-success"),
                    (f" {share:.1f}%", "bold"),
                    (f" {source}", "dim"),
                )
            )
        if report.npu_ratio is not None:
            lines.append(labelled("runner's NPU ratio", f"{report.npu_ratio:.1f}%"))
        runner = runner or RunnerFacts()
        note = cpu_cycles_note(report.cpu_cycles, runner.cpu, runner.counter_fixed)
        cpu = f"CPU cycles {note or count(report.cpu_cycles)}"
        if report.delegations is not None:
            cpu += f" · delegations {report.delegations}"
        lines.append(Content.styled(cpu, "dim"))
        counters = report.counters or {f"cntr{i}": v for i, v in enumerate(report.counter_values)}
        for name, value in counters.items():
            short = printable(name.removeprefix(PMU_PREFIX))
            lines.append(Content.assemble(f"{short[:36]:<36}", (f"{count(value):>14}", "bold")))
        self.lines = [line.plain for line in lines]
        text.update(Content("\n").join(lines))
