"""What a run amounted to: :class:`LogSummary`, built from the runner-log parser's events.

``etu log --json``, the session's ``summary.json``, the Run tab and the History view all
read this one object; :meth:`LogSummary.to_json` is the ``etu log --json`` contract (fields
are added, never renamed). Pure: events in, a summary out.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, TypedDict

from etu.parsers.runner_events import (
    AssertFailed,
    BundleIOResult,
    EtdumpBlock,
    EtdumpError,
    Event,
    FvpStopped,
    HardFault,
    InferenceFinished,
    InferenceStarted,
    LogLine,
    MemoryReport,
    MethodLoaded,
    MethodSelected,
    MissingKernel,
    NpuInvoke,
    OutputTensor,
    PmuReport,
    ProgramLoaded,
    PteLoaded,
    RunError,
    RunSucceeded,
)
from etu.parsers.status_codes import status_name
from etu.parsers.version_skew import driver_line

__all__ = [
    "CPU_CYCLES_BUG",
    "CPU_CYCLES_UNKNOWN",
    "VERDICTS",
    "LogSummary",
    "SummaryError",
    "cpu_cycles_note",
    "inference_rows",
    "spread",
    "summarize",
]


class SummaryError(TypedDict):
    """One entry of ``errors``: what failed, its ``error.h`` status and the line it is on."""

    status: int | None
    status_name: str | None
    text: str
    kind: str  # run_error, assert, missing_kernel, hard_fault, exit
    line: int


VERDICTS = ("success", "no_model", "error", "hard_fault", "timeout", "incomplete")
NPU_DELEGATES_KEPT = 256  # delegates a summary tells apart (a device prints the indices)


def npu_delegate(entry: dict[str, Any] | None, event: NpuInvoke) -> dict[str, Any]:
    """One delegate's entry of ``npu`` with ``event`` counted: its invokes and failures, the
    figures of its last answered invoke (each invoke runs the same stream), the first error."""
    if entry is None:
        entry = {"delegate": event.delegate, "invokes": 0, "failed": 0, "executor": None,
                 "operations": None, "kinds": None, "macs": None, "bytes_read": None,
                 "bytes_written": None, "fallback": None, "error": None, "operation": None,
                 "command": None, "line": event.line_no}  # fmt: skip
    entry["invokes"] += 1
    if event.executor is not None:
        entry["executor"] = event.executor
    if event.ok:
        entry.update(operations=event.operations, kinds=dict(event.kinds or {}) or None,
                     macs=event.macs, bytes_read=event.bytes_read,
                     bytes_written=event.bytes_written, fallback=event.fallback)  # fmt: skip
    else:
        entry["failed"] += 1
        if entry["error"] is None:
            entry.update(error=event.error, operation=event.operation, command=event.command,
                         line=event.line_no)  # fmt: skip
    return entry


# ExecuTorch PR 21833 (2026-08-14): before it, arm_perf_monitor.cpp read the Cortex-M cycle
# counter under __ARM_ARCH_8_1M_MAIN__, which GCC's Cortex-M55 build does not define, so
# "Inference runtime" was always 0 CPU cycles there.
CPU_CYCLES_BUG = "0 (known runner bug before 2026-08)"
CPU_CYCLES_UNKNOWN = "0 (runners before 2026-08 always print 0)"
CYCLE_COUNTER_CPUS = ("cortex-m55",)  # the CPUs the bug hit


def cpu_cycles_note(
    cpu_cycles: int | None, cpu: str | None, counter_fixed: bool | None
) -> str | None:
    """What a CPU-cycles figure of 0 means, or None when it means what it says.

    ``cpu``: the runner's CPU (``cortex-m55``...), None when unknown; ``counter_fixed``:
    whether the runner's ExecuTorch has PR 21833 (True), predates it (False) or is unknown.
    """
    if cpu_cycles != 0 or (cpu or "").lower() not in CYCLE_COUNTER_CPUS:
        return None
    if counter_fixed is None:
        return CPU_CYCLES_UNKNOWN
    return None if counter_fixed else CPU_CYCLES_BUG


def _per(value: int | None, inferences: int) -> float | None:
    return None if value is None else round(value / inferences, 2)


def inference_rows(reports: Iterable[PmuReport], note: str | None = None) -> list[dict[str, Any]]:
    """One row per PMU report, its figures per inference: the runner prints each report's
    sums over its ``NPU Inferences`` (ET_NUM_INFERENCES), so a report covering N inferences
    gives their mean (``inferences`` N); a log with one report per inference (several runs,
    the semihosting server mode) gives one row each. ``cpu_cycles`` is the runner's timing
    (``Inference runtime``); ``note`` explains a CPU-cycles figure of 0."""
    rows = []
    for n, report in enumerate(reports):
        count = report.npu_inferences if report.npu_inferences and report.npu_inferences > 0 else 1
        rows.append({
            "report": n,
            "line": report.line_no,
            "inferences": count,
            "npu_cycles": _per(report.npu_cycles, count),
            "cpu_cycles": _per(report.cpu_cycles, count),
            "cpu_wait_for_npu_cycles": _per(report.cpu_wait_for_npu_cycles, count),
            "delegations": _per(report.delegations, count),
            "cpu_cycles_note": note if report.cpu_cycles == 0 else None,
        })  # fmt: skip
    return rows


def spread(values: Iterable[float | int | None]) -> dict[str, float] | None:
    """Min, median and max of the figures that are there; None with fewer than two."""
    known = sorted(v for v in values if isinstance(v, int | float) and not isinstance(v, bool))
    if len(known) < 2:
        return None
    middle = len(known) // 2
    median = known[middle] if len(known) % 2 else (known[middle - 1] + known[middle]) / 2
    return {"n": len(known), "min": known[0], "median": median, "max": known[-1]}


# etu's stand-in runner firmware (runner/firmware_src/runner_stub.c) says so on its first
# line: it prints what the runner prints and runs no model, so its "success" is none.
NO_MODEL_BANNER = "etu stand-in runner firmware: runs no model"
NO_MODEL_WITHIN = 256  # lines from the start where the banner counts
DRIVER_LINES_KEPT = 32  # a driver that repeats itself each inference says it once here


@dataclass(slots=True)
class LogSummary:
    """What a run amounted to, built from events (``add`` as they arrive, or ``from_events``).

    The verdict follows what the runner printed, never a wrapper script: a hard fault →
    ``hard_fault``; an error line, failed assert, missing kernel, failed BundleIO test or a
    non-zero ``Application exit code`` → ``error``; the runner's success line or a finished
    inference → ``success`` (even if the FVP then hit its time limit), unless the firmware
    said it runs no model (etu's stand-in runner firmware) → ``no_model``; a time-limit stop
    without that → ``timeout``; nothing conclusive → ``incomplete``.
    """

    lines: int = 0
    pte_size: int | None = None
    methods: int | None = None
    method: str | None = None
    pmu: list[PmuReport] = field(default_factory=list)
    memory: MemoryReport | None = None
    outputs: dict[int, int] = field(default_factory=dict)
    errors: list[SummaryError] = field(default_factory=list)
    bundleio: list[BundleIOResult] = field(default_factory=list)
    etdump: list[EtdumpBlock] = field(default_factory=list)
    etdump_errors: list[EtdumpError] = field(default_factory=list)
    succeeded: bool = False
    failed: bool = False
    faulted: bool = False
    timed_out: bool = False
    no_model_line: int | None = None  # where the firmware said it runs no model
    stops: list[FvpStopped] = field(default_factory=list)
    # the emulated board's NPU, per delegate (None: an invoke that named none), in order
    npu: dict[int | None, dict[str, Any]] = field(default_factory=dict)
    inferences_started: int | None = None  # "Starting running N inferences..."
    inferences_finished: int | None = None  # "N inferences finished"
    # What the runner is, when the caller knows (firmware record, session): explains a
    # CPU-cycles figure of 0 (see cpu_cycles_note).
    runner_cpu: str | None = None
    runner_counter_fixed: bool | None = None
    # what the Ethos-U driver (or a kernel) said of the NPU and of a version skew
    driver: list[dict[str, Any]] = field(default_factory=list)
    _missing_seen: set[str] = field(default_factory=set, repr=False)

    @classmethod
    def from_events(cls, events: Iterable[Event]) -> LogSummary:
        summary = cls()
        for event in events:
            summary.add(event)
        return summary

    def add(self, event: Event) -> None:
        kind = type(event)
        if kind is LogLine:
            if event.line_no + event.lines - 1 > self.lines:
                self.lines = event.line_no + event.lines - 1
            if event.line_no <= NO_MODEL_WITHIN and event.text.startswith(NO_MODEL_BANNER):
                self.no_model_line = event.line_no
            text = event.text
            if "config." in text or "mismatch" in text or "args received" in text:
                says = driver_line(text)
                if (
                    says is not None
                    and len(self.driver) < DRIVER_LINES_KEPT
                    and all(said["text"] != says.text for said in self.driver)
                ):
                    self.driver.append({"kind": says.kind, "text": says.text,
                                        "line": event.line_no})  # fmt: skip
        elif kind is OutputTensor:
            self.outputs[event.index] = event.numel
        elif kind is PteLoaded:
            if event.size is not None:
                self.pte_size = event.size
        elif kind is ProgramLoaded:
            self.methods = event.methods
        elif kind is MethodSelected:
            self.method = event.name
        elif kind is MethodLoaded:
            if event.name and self.method is None:
                self.method = event.name
        elif kind is PmuReport:
            self.pmu.append(event)
        elif kind is MemoryReport:
            self.memory = event
            if self.pte_size is None and event.program_size is not None:
                self.pte_size = event.program_size
        elif kind is RunSucceeded:
            self.succeeded = True
        elif kind is InferenceStarted:
            if event.count is not None:
                self.inferences_started = event.count
        elif kind is InferenceFinished:
            if event.success:
                self.succeeded = True
            if event.count is not None:
                self.inferences_finished = event.count
        elif kind is RunError:
            self.failed = True
            self._error(event, "run_error", event.status, event.text)
        elif kind is AssertFailed:
            self.failed = True
            self._error(event, "assert", event.status, event.text)
        elif kind is MissingKernel:
            self.failed = True
            if event.operator not in self._missing_seen:
                self._missing_seen.add(event.operator)
                self._error(event, "missing_kernel", 0x14, f"missing kernel {event.operator}")
        elif kind is HardFault:
            self.faulted = True
            self._error(event, "hard_fault", None, event.text)
        elif kind is BundleIOResult:
            self.bundleio.append(event)
            if not event.passed:
                self.failed = True
        elif kind is EtdumpBlock:
            self.etdump.append(event)
        elif kind is EtdumpError:
            self.etdump_errors.append(event)
        elif kind is NpuInvoke:
            key = event.delegate
            if key in self.npu or len(self.npu) < NPU_DELEGATES_KEPT:
                self.npu[key] = npu_delegate(self.npu.get(key), event)
        elif kind is FvpStopped:
            self.stops.append(event)
            if event.kind == "time_limit":
                self.timed_out = True
            elif event.kind == "exit" and event.exit_code not in (None, 0):
                self.failed = True
                self._error(event, "exit", None, event.reason)

    def _error(self, event: Event, kind: str, status: int | None, text: str) -> None:
        self.errors.append(
            SummaryError(
                status=status,
                status_name=status_name(status),
                text=text,
                kind=kind,
                line=event.line_no,
            )
        )

    @property
    def verdict(self) -> str:
        if self.faulted:
            return "hard_fault"
        if self.failed:
            return "error"
        if self.succeeded:
            return "success" if self.no_model_line is None else "no_model"
        if self.timed_out:
            return "timeout"
        return "incomplete"

    def cpu_cycles_note(self, cpu_cycles: int | None) -> str | None:
        return cpu_cycles_note(cpu_cycles, self.runner_cpu, self.runner_counter_fixed)

    def to_json(self) -> dict[str, Any]:
        """The ``etu log FILE --json`` object."""
        memory = self.memory
        allocators: dict[str, Any] = {
            "method_allocator": None,
            "planned": None,
            "loaded": None,
            "input": None,
            "executor": None,
            "temp_allocator": None,
        }
        if memory is not None:
            pool = memory.pools.get("method_allocator")
            if pool is not None:
                allocators["method_allocator"] = {"used": pool.used, "size": pool.size}
            allocators["planned"] = memory.planned
            allocators["loaded"] = memory.loaded
            allocators["input"] = memory.input
            allocators["executor"] = memory.executor
            temp = memory.temp_allocator_size
            if temp is None and "temp_allocator" in memory.pools:
                temp = memory.pools["temp_allocator"].size
            if temp is not None:
                allocators["temp_allocator"] = {"size": temp}
        return {
            "lines": self.lines,
            "verdict": self.verdict,
            "model": {"pte_size": self.pte_size, "methods": self.methods, "method": self.method},
            "pmu": [
                {
                    "npu_inferences": r.npu_inferences,
                    "npu_cycles": r.npu_cycles,
                    "cpu_cycles": r.cpu_cycles,
                    "counters": dict(r.counters or {}),
                    "cpu_cycles_note": self.cpu_cycles_note(r.cpu_cycles),
                }
                for r in self.pmu
            ],
            "allocators": allocators,
            "outputs": {str(k): v for k, v in sorted(self.outputs.items())},
            "errors": [dict(e) for e in self.errors],
            "bundleio": [
                {
                    "index": b.index,
                    "passed": b.passed,
                    "mean_absolute_error": b.mean_absolute_error,
                    "max_absolute_error": b.max_absolute_error,
                    "mean_relative_error": b.mean_relative_error,
                    "max_relative_error": b.max_relative_error,
                    "rtol": b.rtol,
                    "atol": b.atol,
                }
                for b in self.bundleio
            ],
            "etdump_blocks": len(self.etdump),
            # the Ethos-U invokes etu answered on the emulated board, per delegate: the
            # functional model's figures per invoke (operations, MACs, bytes), no timing
            "npu": [dict(entry) for entry in self.npu.values()],
            # the line where the firmware said it runs no model (verdict no_model), or null
            "no_model_line": self.no_model_line,
            # per-inference figures, one row per PMU report (issue 25 §6), and how many
            # inferences the runner said it ran (ET_NUM_INFERENCES)
            "inferences": inference_rows(self.pmu, self.cpu_cycles_note(0)),
            "inference_count": self.inferences_finished or self.inferences_started,
            # the NPU the driver found, the command stream's, and each mismatch it refused
            # (kind npu_config / optimizer_config / mismatch; issue 25 §5)
            "version_skew": list(self.driver),
        }


def summarize(events: Iterable[Event]) -> dict[str, Any]:
    """The ``etu log FILE --json`` object for a list of events."""
    return LogSummary.from_events(events).to_json()
