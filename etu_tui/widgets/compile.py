"""The Compile tab: compile a model for an Ethos-U target, watch the stages and the worker's
log, open the result; sweep targets and memory modes into a comparison table.

Threading (as everywhere in the console): ``CompileJob`` calls its listener on the worker
process's reader threads; :class:`CompileBridge` only posts messages from there. The panel's
handlers own every piece of state and update the widgets. Nothing here imports torch: the
worker process does.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.widgets import Button, DataTable, Input, Label, RichLog, Select, Static

from etu.parsers.errors import describe_error, first_line
from etu.runner.compile_job import (
    CompileJob,
    CompileListener,
    comparison_row,
    run_sweep,
    sweep_requests,
)
from etu.runner.compile_request import (
    DEFAULTS,
    MEMORY_MODES,
    SYSTEM_CONFIGS,
    TARGETS,
    CompileRequest,
    InputSpec,
    RequestError,
)
from etu.runner.compile_worker import STAGES
from etu.runner.workspace import compile_root, workspace_of
from etu.tui.keys import bindings
from etu.tui.numbers import number
from etu.tui.safe_text import printable
from etu.tui.widgets.compile_messages import (
    CompileDone,
    CompileLog,
    CompileStage,
    CompileStarted,
    OpenCompiled,
    SweepDone,
    SweepRow,
)
from etu.tui.widgets.first_shown import FirstShown

DEFAULT_SOURCE = "cnn"
DEFAULT_TARGET = "ethos-u55-128"
DEFAULT_CHOICE = ""  # the Select value for "ExecuTorch's default for the target"
LOG_LINES = 2000  # the worker's log is bounded: torch can be chatty
QUANTIZE = (("per-channel", "per-channel"), ("per-tensor", "per-tensor"), ("off", "off"))
SWEEP_COLUMNS = (
    "Target", "System config", "Memory mode", "Cycles", "µs", "SRAM KiB", "Flash KiB",
    "DRAM KiB", "CPU ops", "Program B", "Scratch B", "Message",
)  # fmt: skip


class CompileBridge(CompileListener):
    """Called on the job's reader threads: posts messages, touches nothing else."""

    def __init__(self, target, job_id: int) -> None:
        self._target = target  # anything with a thread-safe post_message (a widget)
        self.job_id = job_id

    def on_stage(self, stage: str, state: str, seconds: float | None) -> None:
        self._target.post_message(CompileStage(self.job_id, stage, state, seconds))

    def on_log(self, text: str) -> None:
        self._target.post_message(CompileLog(self.job_id, text))


@dataclass
class CompileState:
    """One compile as the panel knows it."""

    job_id: int
    request: CompileRequest
    stages: dict[str, tuple[str, float | None]] = field(default_factory=dict)
    job: CompileJob | None = None
    cancel: threading.Event = field(default_factory=threading.Event)
    result: object | None = None  # runner.compile_job.CompileResult once done

    @property
    def running(self) -> bool:
        return self.result is None


def _fmt(value: float | None, scale: float = 1.0, digits: int = 0) -> str:
    return number(value, digits=digits, scale=scale, missing="–")


def sweep_cells(row: dict) -> tuple[str, ...]:
    """A comparison row as table cells (failed rows keep their message)."""
    return (
        row["target"],
        row.get("system_config") or "default",
        row.get("memory_mode") or "default",
        _fmt(row.get("cycles")),
        _fmt(row.get("inference_time_s"), 1e6, 1),
        _fmt(row.get("sram_kib"), digits=1),
        _fmt(row.get("flash_kib"), digits=1),
        _fmt(row.get("dram_kib"), digits=1),
        _fmt(row.get("cpu_operators")),
        _fmt(row.get("program_bytes")),
        _fmt(row.get("scratch_bytes")),
        printable((row.get("message") or "" if row.get("status") != "ok" else "")[:200]),
    )


class CompilePanel(FirstShown, Vertical):
    """The form, the stage list, the log / error pane and the sweep table."""

    DEFAULT_CSS = """
    CompilePanel { height: 1fr; }
    CompilePanel .form-row { height: 1; margin: 0 1 1 1; }
    CompilePanel .form-row Label { padding: 0 1 0 0; color: $text-muted; }
    CompilePanel .form-row Input { width: 1fr; margin: 0 2 0 0; }
    CompilePanel .form-row Select { width: 1fr; margin: 0 2 0 0; }
    /* one line: a long choice ends in an ellipsis instead of wrapping out of view */
    CompilePanel .form-row SelectCurrent #label { text-wrap: nowrap; text-overflow: ellipsis; }
    CompilePanel .form-row #compile-cpu-backend { width: 13; margin: 0; }
    CompilePanel .form-row Button { margin: 0 1 0 0; min-width: 10; }
    CompilePanel #compile-reason { height: 1; margin: 0 1; }
    CompilePanel #compile-reason.-refused { color: $error; }
    CompilePanel #compile-body { height: 1fr; min-height: 10; }
    CompilePanel #compile-stages {
        width: 32; height: 100%; border: round $primary; border-title-style: bold;
        padding: 0 1;
    }
    CompilePanel #compile-right { width: 1fr; height: 100%; }
    CompilePanel #compile-error {
        height: 1fr; border: round $error; border-title-style: bold; display: none;
        padding: 0 1;
    }
    CompilePanel #compile-log {
        height: 1fr; border: round $primary; border-title-style: bold;
        &:focus { border: round $accent; }
    }
    CompilePanel #sweep-table {
        height: 9; border: round $primary; border-title-style: bold;
        &:focus { border: round $accent; }
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = bindings("compile")

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.workspace: Path | None = None
        self.current: CompileState | None = None
        self.reason: str | None = None  # why the form's request is refused, or None
        self._jobs = 0  # increases per compile and sweep; stale messages are dropped
        self._log_tail = ""  # a log line still being written
        self.sweep_rows: list[dict] = []
        self.sweeping = False
        self._sweep_id = 0
        self.sort_by_cycles = False
        self.pending_target = DEFAULT_TARGET  # the form's, until the form exists (FirstShown)

    # -- layout ------------------------------------------------------------------------

    def compose_shown(self) -> ComposeResult:
        target = self.pending_target
        with Horizontal(classes="form-row"):
            yield Label("Source")
            yield Input(DEFAULT_SOURCE, id="compile-source", compact=True,
                        placeholder="model.py:Class, file.pt2 or a built-in")  # fmt: skip
            yield Label("Inputs")
            inputs = Input(id="compile-inputs", compact=True, placeholder="1x3x32x32[:float32] …")
            inputs.tooltip = "Example inputs, SHAPE[:DTYPE] each; none for a built-in model"
            yield inputs
            yield Label("Target")
            yield Select(((t, t) for t in TARGETS), value=target, allow_blank=False,
                         id="compile-target", compact=True)  # fmt: skip
        with Horizontal(classes="form-row"):
            yield Label("System config")
            yield Select(self._config_options(target), value=DEFAULT_CHOICE,
                         allow_blank=False, id="compile-config", compact=True)  # fmt: skip
            yield Label("Memory mode")
            yield Select(self._mode_options(target), value=DEFAULT_CHOICE,
                         allow_blank=False, id="compile-mode", compact=True)  # fmt: skip
            # what runs the operators the NPU does not take (etu compile --cpu-backend)
            yield Label("CPU")
            yield Select((("portable", "portable"), ("CMSIS-NN", "cortex-m")), value="portable",
                         allow_blank=False, id="compile-cpu-backend", compact=True)  # fmt: skip
        with Horizontal(classes="form-row"):
            yield Label("Quantize")
            yield Select(QUANTIZE, value="per-channel", allow_blank=False,
                         id="compile-quantize", compact=True)  # fmt: skip
            yield Label("Delegate")
            yield Select((("on", "on"), ("off", "off")), value="on", allow_blank=False,
                         id="compile-delegate", compact=True)  # fmt: skip
            yield Label("Payload")
            # ptd: Vela's command stream and weights in NAME.ptd (etu compile --external-blocks)
            yield Select((("inline", "inline"), ("segment", "segment"), ("ptd", "ptd")),
                         value="inline", allow_blank=False, id="compile-payload",
                         compact=True)  # fmt: skip
            yield Button("Compile", id="compile-start", variant="primary", compact=True)
            yield Button("Cancel", id="compile-cancel", variant="error", compact=True)
            yield Button("Open result", id="compile-open", compact=True)
        with Horizontal(classes="form-row"):
            yield Label("Sweep targets")
            yield Input(id="sweep-targets", compact=True,
                        placeholder="ethos-u55-128,ethos-u85-256")  # fmt: skip
            yield Label("Memory modes")
            yield Input(id="sweep-modes", compact=True, placeholder="default per target")
            yield Button("Sweep", id="sweep-start", compact=True)
        yield Static(id="compile-reason")
        with Horizontal(id="compile-body"):
            yield Static(id="compile-stages")
            with Vertical(id="compile-right"):
                with VerticalScroll(id="compile-error"):
                    yield Static(id="compile-error-text")
                yield RichLog(id="compile-log", max_lines=LOG_LINES, markup=False,
                              highlight=False, wrap=False)  # fmt: skip
        yield DataTable(id="sweep-table", cursor_type="row", zebra_stripes=True)

    def on_shown(self) -> None:
        table = self.query_one("#sweep-table", DataTable)
        table.add_columns(*SWEEP_COLUMNS)
        self.query_one("#compile-log", RichLog).border_title = "Worker log"
        self._show_stages()
        self._show_controls()
        self._title_sweep()
        self.check_form()

    # -- the form ----------------------------------------------------------------------

    @staticmethod
    def _config_options(target: str) -> list[tuple[str, str]]:
        config, _ = DEFAULTS[target.rsplit("-", 1)[0]]
        return [(f"{config} (default)", DEFAULT_CHOICE), *((c, c) for c in SYSTEM_CONFIGS)]

    @staticmethod
    def _mode_options(target: str) -> list[tuple[str, str]]:
        _, mode = DEFAULTS[target.rsplit("-", 1)[0]]
        return [(f"{mode} (default)", DEFAULT_CHOICE), *((m, m) for m in MEMORY_MODES)]

    def _value(self, selector: str) -> str:
        value = self.query_one(selector, Select).value
        return value if isinstance(value, str) else ""

    def set_program(self, program: Path, target: str | None, workspace: Path | None = None) -> None:
        """A program was opened: output goes under ``workspace`` (the App's, else the one
        :func:`workspace_of` finds for the program); its target is the form's."""
        self.workspace = workspace if workspace is not None else workspace_of(program)
        if target in TARGETS:
            self._set_target(target)
        if self.shown:
            self._show_controls()

    @property
    def out_dir(self) -> Path | None:
        return compile_root(self.workspace) if self.workspace is not None else None

    def form_request(self) -> CompileRequest:
        """The request the form describes (not resolved). Raises RequestError."""
        source = self.query_one("#compile-source", Input).value.strip()
        if not source:
            raise RequestError("give a source: model.py:Class, a .pt2 file or a built-in name")
        inputs = tuple(
            InputSpec.parse(text) for text in self.query_one("#compile-inputs", Input).value.split()
        )
        quantize = self._value("#compile-quantize")
        return CompileRequest(
            source=source,
            inputs=inputs,
            target=self._value("#compile-target") or DEFAULT_TARGET,
            system_config=self._value("#compile-config") or None,
            memory_mode=self._value("#compile-mode") or None,
            quantize=quantize != "off",
            per_channel=quantize != "per-tensor",
            delegate=self._value("#compile-delegate") != "off",
            delegate_segments=self._value("#compile-payload") == "segment",
            external_blocks=("cmd", "weights") if self._value("#compile-payload") == "ptd" else (),
            cpu_backend=self._value("#compile-cpu-backend") or "portable",
        )

    def check_form(self) -> CompileRequest | None:
        """Resolve the form's request; show its one-line reason when refused."""
        line = self.query_one("#compile-reason", Static)
        try:
            request = self.form_request().resolved()
        except RequestError as error:
            self.reason = first_line(str(error)) or "refused"
            line.update(Content(f"✗ {printable(self.reason)}"))
            line.add_class("-refused")
            return None
        self.reason = None
        line.remove_class("-refused")
        line.update(
            Content(
                f"→ {request.model_name} for {request.target} · {request.system_config} · "
                f"{request.memory_mode} · output in .etu/compile/"
            )
        )
        return request

    def set_default_target(self, target: str) -> None:
        """The ``target`` setting: the form's target until the user picks another."""
        if target in TARGETS:
            self._set_target(target)

    def _set_target(self, target: str) -> None:
        """The form's target: in its field, or kept for the form composed later."""
        self.pending_target = target
        if self.shown:
            self.query_one("#compile-target", Select).value = target

    @on(Select.Changed, "#compile-target")
    def _target_changed(self) -> None:
        target = self._value("#compile-target") or DEFAULT_TARGET
        for selector, options in (
            ("#compile-config", self._config_options(target)),
            ("#compile-mode", self._mode_options(target)),
        ):
            select = self.query_one(selector, Select)
            kept = select.value
            select.set_options(options)
            select.value = kept if any(v == kept for _, v in options) else DEFAULT_CHOICE
        self.check_form()

    @on(Select.Changed)
    @on(Input.Changed, "#compile-source, #compile-inputs")
    def _form_changed(self) -> None:
        self.check_form()

    @on(Input.Submitted, "#compile-source, #compile-inputs")
    def _submitted(self) -> None:
        self.start_compile()

    @on(Input.Submitted, "#sweep-targets, #sweep-modes")
    def _sweep_submitted(self) -> None:
        self.start_sweep()

    @on(Button.Pressed, "#compile-start")
    def _start_pressed(self) -> None:
        self.start_compile()

    @on(Button.Pressed, "#compile-cancel")
    def _cancel_pressed(self) -> None:
        self.cancel_compile()

    @on(Button.Pressed, "#compile-open")
    def _open_pressed(self) -> None:
        self.open_result()

    @on(Button.Pressed, "#sweep-start")
    def _sweep_pressed(self) -> None:
        self.start_sweep()

    # -- one compile -------------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self.current is not None and self.current.running

    @property
    def busy(self) -> bool:
        """A compile or a sweep is under way."""
        return self.running or self.sweeping

    @property
    def result(self):
        return self.current.result if self.current is not None else None

    def start_compile(self) -> bool:
        """Start the form's request; False (and the reason shown) when it cannot start."""
        if self.busy:
            self.app.notify("A compile is under way.", severity="warning")
            return False
        request = self.check_form()
        if request is None or self.out_dir is None:
            if self.out_dir is None:
                self.app.notify("Open a program first: output goes in its workspace.")
            return False
        self._jobs += 1
        self.current = CompileState(self._jobs, request)
        self._log_tail = ""
        self.query_one("#compile-log", RichLog).clear()
        self.query_one("#compile-error").display = False
        self._show_stages()
        self._show_controls()
        self._compile(self.current, self.out_dir)
        self.app.refresh_bindings()
        return True

    @work(thread=True, group="compile", exit_on_error=False)
    def _compile(self, state: CompileState, out_dir: Path) -> None:
        from etu.runner.compile_job import CompileResult

        try:
            job = CompileJob(state.request, out_dir, CompileBridge(self, state.job_id))
        except (RequestError, OSError) as error:
            text = first_line(str(error)) or describe_error(error)
            result = CompileResult(state.request, "failed", None, failed_stage="load",
                                   message=text)  # fmt: skip
            self.post_message(CompileDone(state.job_id, result))
            return
        if state.cancel.is_set():
            job.cancel()
        self.post_message(CompileStarted(state.job_id, job))
        try:
            result = job.run()
        except Exception as error:  # a broken job must end as a message, never a hang
            text = describe_error(error)
            result = CompileResult(state.request, "failed", None, message=text,
                                   failed_stage=None)  # fmt: skip
        self.post_message(CompileDone(state.job_id, result))

    def cancel_compile(self) -> bool:
        state = self.current
        if state is None or not state.running:
            return False
        state.cancel.set()
        if state.job is not None:
            self._cancel_job(state.job)
        self.query_one("#compile-reason", Static).update("Cancelling…")
        return True

    @work(thread=True, group="compile-cancel", exit_on_error=False)
    def _cancel_job(self, job: CompileJob) -> None:
        job.cancel()  # stops the worker's process group; blocks up to its grace

    def on_compile_started(self, message: CompileStarted) -> None:
        state = self.current
        if state is None or state.job_id != message.job_id:
            return
        state.job = message.job
        if state.cancel.is_set():
            self._cancel_job(message.job)

    def on_compile_stage(self, message: CompileStage) -> None:
        state = self.current
        if state is None or state.job_id != message.job_id or not state.running:
            return
        state.stages[message.stage] = (message.state, message.seconds)
        self._show_stages()

    def on_compile_log(self, message: CompileLog) -> None:
        state = self.current
        if state is None or state.job_id != message.job_id:
            return
        text = self._log_tail + message.text
        *lines, self._log_tail = text.split("\n")
        log = self.query_one("#compile-log", RichLog)
        for line in lines:
            log.write(printable(line.rstrip("\r")), scroll_end=True)

    def on_compile_done(self, message: CompileDone) -> None:
        state = self.current
        if state is None or state.job_id != message.job_id:
            return
        result = message.result
        state.result = result
        if self._log_tail:
            self.query_one("#compile-log", RichLog).write(printable(self._log_tail))
            self._log_tail = ""
        for stage, seconds in result.stages.items():
            state.stages[stage] = ("done", seconds)
        if result.status != "ok" and result.failed_stage:
            state.stages[result.failed_stage] = (result.status, None)
        self._show_stages()
        self._show_controls()
        line = self.query_one("#compile-reason", Static)
        if result.status == "ok":
            how = "cached" if result.cached else f"compiled in {result.seconds:.1f} s"
            name = result.pte.name if result.pte else "?"
            line.update(Content(f"✓ {printable(name)} {how} · opening it"))
            self.open_result()
        else:
            self._show_error(result)
            text = printable(result.message or result.status)
            line.update(Content(f"✗ {result.status}: {text}"))
            self.app.notify(
                text, title=f"Compile {result.status}", markup=False,
                severity="warning" if result.status == "cancelled" else "error",
            )  # fmt: skip
        self.app.refresh_bindings()

    def _show_error(self, result) -> None:
        pane = self.query_one("#compile-error")
        if result.status == "cancelled":
            pane.display = False
            return
        pane.border_title = f"Failed at {result.failed_stage or 'start'}"
        lines = [printable(result.message or "failed"), ""]
        if result.where:  # where in the user's model; the whole traceback stays in the log
            lines.append(f"at {printable(result.where)}")
        short = result.short_traceback or "\n".join((result.traceback or "").splitlines()[-6:])
        lines += [printable(line) for line in short.splitlines()]
        if result.traceback_file:
            lines += ["", f"full traceback: {printable(str(result.traceback_file))}"]
        self.query_one("#compile-error-text", Static).update(Content("\n".join(lines)))
        pane.display = True

    def open_result(self) -> bool:
        """Open the last compile's program in the console (Program, NPU tabs)."""
        result = self.result
        if result is None or result.status != "ok" or result.pte is None:
            return False
        self.post_message(OpenCompiled(result.pte))
        return True

    def _show_stages(self) -> None:
        state = self.current
        stages = state.stages if state is not None else {}
        lines = []
        for stage in STAGES:
            what, seconds = stages.get(stage, ("pending", None))
            if what == "done":
                lines.append(Content.styled(f"✓ {stage:<10}{_secs(seconds)}", "$success"))
            elif what == "start":
                lines.append(Content.styled(f"▶ {stage:<10}running", "bold $accent"))
            elif what in ("failed", "cancelled"):
                lines.append(Content.styled(f"✗ {stage:<10}{what}", "bold $error"))
            else:
                lines.append(Content.styled(f"· {stage:<10}pending", "$text-muted"))
        widget = self.query_one("#compile-stages", Static)
        widget.update(Content("\n").join(lines))
        result = state.result if state is not None else None
        if result is not None and result.status == "ok":
            widget.border_title = "Stages · cached" if result.cached else "Stages · ok"
        elif result is not None:
            widget.border_title = f"Stages · {result.status}"
        else:
            widget.border_title = "Stages · running" if state is not None else "Stages"
        widget.border_subtitle = "r compile · x cancel · g open"

    def _show_controls(self) -> None:
        done = self.result is not None and self.result.status == "ok"
        self.query_one("#compile-start", Button).disabled = self.busy
        self.query_one("#compile-cancel", Button).disabled = not self.running
        self.query_one("#compile-open", Button).disabled = not done
        self.query_one("#sweep-start", Button).disabled = self.busy

    # -- sweeps ------------------------------------------------------------------------

    def sweep_request_list(self) -> list[CompileRequest]:
        """The sweep the form describes. Raises RequestError."""
        base = self.form_request()
        targets = [t.strip() for t in self.query_one("#sweep-targets", Input).value.split(",")]
        modes = [m.strip() for m in self.query_one("#sweep-modes", Input).value.split(",")]
        targets, modes = [t for t in targets if t], [m for m in modes if m]
        for target in targets:
            if target not in TARGETS:
                raise RequestError(f"unknown target {target!r}; one of {', '.join(TARGETS)}")
        for mode in modes:
            if mode not in MEMORY_MODES:
                known = ", ".join(MEMORY_MODES)
                raise RequestError(f"unknown memory mode {mode!r}; one of {known}")
        return sweep_requests(base, targets=targets, memory_modes=modes)

    def start_sweep(self) -> bool:
        if self.busy:
            self.app.notify("A compile is under way.", severity="warning")
            return False
        line = self.query_one("#compile-reason", Static)
        try:
            requests = self.sweep_request_list()
        except RequestError as error:
            line.update(Content(f"✗ {printable(first_line(str(error)))}"))
            line.add_class("-refused")
            return False
        if self.out_dir is None:
            self.app.notify("Open a program first: output goes in its workspace.")
            return False
        line.remove_class("-refused")
        line.update(Content(f"Sweeping {len(requests)} configurations…"))
        self._jobs += 1
        self._sweep_id = self._jobs
        self.sweeping = True
        self.sweep_rows = []
        self._show_sweep()
        self._show_controls()
        self._sweep(requests, self.out_dir, self._sweep_id)
        self.app.refresh_bindings()
        return True

    @work(thread=True, group="sweep", exit_on_error=False)
    def _sweep(self, requests: list[CompileRequest], out_dir: Path, sweep_id: int) -> None:
        def posted(result) -> None:
            try:
                row = comparison_row(result)
            except Exception as error:  # one unreadable result must not end the sweep
                row = {"target": result.request.target, "status": "failed",
                       "system_config": result.request.system_config,
                       "memory_mode": result.request.memory_mode,
                       "message": describe_error(error)}  # fmt: skip
            self.post_message(SweepRow(sweep_id, row))

        error = None
        try:
            run_sweep(requests, out_dir, workers=1, on_result=posted)
        except Exception as exc:
            error = describe_error(exc)
        self.post_message(SweepDone(sweep_id, error))

    def on_sweep_row(self, message: SweepRow) -> None:
        if message.sweep_id != self._sweep_id:
            return
        self.sweep_rows.append(message.row)
        self._show_sweep()

    def on_sweep_done(self, message: SweepDone) -> None:
        if message.sweep_id != self._sweep_id:
            return
        self.sweeping = False
        ok = sum(row.get("status") == "ok" for row in self.sweep_rows)
        text = f"Sweep done: {ok} of {len(self.sweep_rows)} compiled"
        if message.error:
            text += f" · {printable(message.error)}"
        self.query_one("#compile-reason", Static).update(Content(text))
        self._show_controls()
        self._title_sweep()
        self.app.refresh_bindings()

    def toggle_sort(self) -> None:
        self.sort_by_cycles = not self.sort_by_cycles
        self._show_sweep()

    def sorted_rows(self) -> list[dict]:
        if not self.sort_by_cycles:
            return list(self.sweep_rows)
        return sorted(
            self.sweep_rows,
            key=lambda row: (row.get("cycles") is None, row.get("cycles") or 0),
        )

    def _show_sweep(self) -> None:
        table = self.query_one("#sweep-table", DataTable)
        table.clear()
        for row in self.sorted_rows():
            table.add_row(*sweep_cells(row))
        self._title_sweep()

    def _title_sweep(self) -> None:
        table = self.query_one("#sweep-table", DataTable)
        order = "by cycles ↑" if self.sort_by_cycles else "in sweep order"
        running = " · running" if self.sweeping else ""
        table.border_title = f"Sweep ({len(self.sweep_rows)}){running} · {order}"
        table.border_subtitle = "w sweep · s sort"

    # -- keys --------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("start_compile", "start_sweep"):
            return (self.workspace is not None and not self.busy) or None
        if action == "cancel_compile":
            return self.running or None
        if action == "open_compiled":
            result = self.result
            return (result is not None and result.status == "ok") or None
        if action == "sort_sweep":
            return bool(self.sweep_rows) or None
        return True

    def action_start_compile(self) -> None:
        self.start_compile()
        self.app.refresh_bindings()

    def action_cancel_compile(self) -> None:
        self.cancel_compile()

    def action_open_compiled(self) -> None:
        self.open_result()

    def action_start_sweep(self) -> None:
        self.start_sweep()
        self.app.refresh_bindings()

    def action_sort_sweep(self) -> None:
        self.toggle_sort()

    # -- focus -------------------------------------------------------------------------

    def focus_main(self) -> None:
        self.focus_start()

    def focus_start(self) -> None:
        button = self.query_one("#compile-start", Button)
        if button.disabled:
            self.query_one("#compile-log", RichLog).focus()
        else:
            button.focus()


def _secs(seconds: float | None) -> str:
    return f"{seconds:6.1f} s" if seconds is not None else "done"
