"""What the runtime's ``ET_LOG`` messages mean: one handler per message's first word.

:class:`RuntimeMessages` is a part of :class:`etu.parsers.runner_log.RunnerLogParser` (its
base class): the parser finds a runtime message (ExecuTorch's prefix, a platform's, or a
bare recognised message), looks its first word up in :meth:`RuntimeMessages._message_handlers`
and calls the handler, which reads the message with a ``startswith`` chain and one small
regex at most, and appends the events it means. A handler returns True when it recognised
the message; otherwise :meth:`RuntimeMessages._runtime_rest` decides whether the line is an
error. The reports spread over several lines (PMU, memory, planned buffers, output dumps) are
kept by the collectors of :mod:`etu.parsers.runner_reports`; which lines belong to them is
decided here. A message without ExecuTorch's prefix at the start of its line (behind a
timestamp, a Zephyr prefix, or bare) is read by :meth:`RuntimeMessages._unprefixed`.

The handlers read and change the parser's state, set by ``RunnerLogParser.__init__`` (listed
on the class below), and close an open report with the parser's ``_settle``.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from etu.parsers.log_prefix import foreign_prefix, runtime_inside
from etu.parsers.log_values import after, leading_float, leading_int, status_in
from etu.parsers.npu_log import PREFIX as NPU_PREFIX
from etu.parsers.npu_log import npu_invoke
from etu.parsers.runner_events import (
    AssertFailed,
    BundleIOResult,
    Event,
    InferenceFinished,
    InferenceStarted,
    InputsPrepared,
    MethodAllocatorSetUp,
    MethodLoaded,
    MethodSelected,
    MissingKernel,
    OutputTensor,
    ProgramLoaded,
    PteLoaded,
    RunError,
    RunSucceeded,
    new_log_line,
)
from etu.parsers.runner_reports import (
    MEMORY_KEYS,
    MemoryCollector,
    OutputCollector,
    PlannedCollector,
    PmuCollector,
    Report,
)
from etu.parsers.status_codes import status_name

# A handler: (line number, level, message, events out) -> the message was recognised.
Handler = Callable[[int, str, str, list[Event]], bool]

# First characters of the first words _runtime_rest still tries when no handler has the word.
FALLBACK_FIRST = frozenset("e0123456789o[")
_OUTPUT = re.compile(r"Output\[(\d{1,9})\]\[(\d{1,15})\]: (?:\((\w+)\) *)?(\S*)")
_OUTPUT_NOT_TENSOR = re.compile(r"Output\[(\d{1,9})\]: Not Tensor")
_ZEPHYR_OUTPUT = re.compile(
    r"output\[(\d{1,9})\]: (\w+)(?: scalar_type=(\w+))?(?: numel=(\d{1,15}))?"
)
_ZEPHYR_VALUE = re.compile(r"\[(\d{1,15})\] = (\S+)")
_ADDRESS = re.compile(r"(?:@|in|at) (?:0x)?([0-9A-Fa-f]+)")
_SIZE = re.compile(r"Size: (\w+)")
_IDENT = re.compile(r"\[----(.{4})\]")
_PLANNED = re.compile(r"planned buffer (?:with mem_id=)?(\w+), size (\w+)")
_KERNEL = re.compile(r"kernel '([^']*)' not found")
_MISSING_OP = re.compile(r"Missing operator: \[(\w+)\] ?(\S+)?")


_ASSERT_HEAD = "In function "
_ASSERT_MARK = "(), assert failed"


def _assert_parts(body: str) -> tuple[str, str | None, str | None, str | None] | None:
    """(function, condition, message, bare) of ``In function F(), assert failed (C): M`` or
    ``In function F(), assert failed: M``, split where the lazy regex this replaces split it
    (the first "assert failed" that either form follows), in one pass: that regex rescanned the
    rest of the line for ``): `` at every "assert failed" (quadratic; issue 20)."""
    if not body.startswith(_ASSERT_HEAD):
        return None
    start = len(_ASSERT_HEAD)
    last_close = body.rfind("): ")
    at = body.find(_ASSERT_MARK, start)
    while at != -1:
        tail = at + len(_ASSERT_MARK)
        if body.startswith(" (", tail) and last_close >= tail + 2:
            close = body.find("): ", tail + 2)
            return body[start:at], body[tail + 2 : close], body[close + 3 :], None
        if body.startswith(": ", tail):
            return body[start:at], None, None, body[tail + 2 :]
        at = body.find(_ASSERT_MARK, at + 1)
    return None


class RuntimeMessages:
    """The runtime-message handlers of :class:`~etu.parsers.runner_log.RunnerLogParser`."""

    # The parser's state they use (RunnerLogParser.__init__ sets it).
    _group: Report | None  # the multi-line report being collected
    _npu: str | None
    _max_values: int
    _pte_address: int | None
    _pte_identifier: str | None
    _method: str | None
    _load_status: int | None
    _load_failed: bool
    _bundle: dict[str, float | None]
    _stream: str | None  # copied onto every LogLine
    _runtime_handlers: dict[str, Handler]  # _message_handlers(), bound

    def _settle(self, kind: str | None, out: list[Event]) -> Report | None:
        raise NotImplementedError  # RunnerLogParser's

    def _message_handlers(self) -> dict[str, Handler]:
        """The handler of each first word of a runtime message (bound to this parser)."""
        handlers: dict[str, Handler] = {
            "PTE": self._h_pte,
            "Model": self._h_model,
            "Running": self._h_running,
            "Setup": self._h_setup,
            "Setting": self._h_planned,
            "Method": self._h_method,
            "Loading": self._h_loading,
            "Input": self._h_input,
            "Starting": self._h_starting,
            "Program": self._h_program,
            "SUCCESS:": self._h_program,
            "In": self._h_assert,
            "kernel": self._h_kernel,
            "Missing": self._h_kernel,
            "There": self._h_there,
            "TEST:": self._h_bundle_result,
            "===": self._h_bundle_stats,
            "mean_absolute_error:": self._h_bundle_stats,
            "max_absolute_error:": self._h_bundle_stats,
            "mean_relative_error:": self._h_bundle_stats,
            "max_relative_error:": self._h_bundle_stats,
            "NPU": self._h_pmu,
            "Profiler": self._h_pmu,
            "ethos-u": self._h_pmu,
            "Operator(s)": self._h_pmu,
            "Inference": self._h_pmu,
            "NOTE:": self._h_pmu,
            "cpu_wait_for_npu_cntr": self._h_pmu,
            "Ethos-U": self._h_pmu,
            "ethosu_pmu_cycle_cntr": self._h_pmu,
            NPU_PREFIX: self._h_npu,
        }
        for key in MEMORY_KEYS:
            handlers[key] = self._h_memory
        return handlers

    def _runtime_rest(
        self, n: int, level: str, body: str, key: str, tried: bool, out: list[Event]
    ) -> None:
        """A runtime line whose first word has no handler (or whose handler declined it)."""
        if not tried:
            handler = None
            c = key[:1]
            if c in FALLBACK_FIRST:
                if key.startswith("ethosu_pmu_cntr"):
                    handler = self._h_pmu
                elif c.isdigit():
                    handler = self._h_counted
                elif key.startswith("output["):
                    handler = self._h_zephyr_output
                elif c == "[" and self._group is not None and self._group.kind == "output":
                    handler = self._h_zephyr_value
            if handler is not None:
                if handler(n, level, body, out):
                    return
            else:
                if self._group is not None:
                    self._settle(None, out)
                if body.endswith("Demo Complete"):
                    out.append(RunSucceeded(n, body))
                    return
        if level in "EF":
            status = status_in(body)
            out.append(RunError(n, status, status_name(status), body, "runtime"))
        elif "ail" in body and ("fail" in body or "Fail" in body):
            status = status_in(body)
            if status is not None:
                out.append(RunError(n, status, status_name(status), body, "runtime"))

    # Messages without ExecuTorch's prefix at the start of the line (the parser's other
    # lines hand them here): behind a foreign prefix, or bare.

    def _unprefixed(self, n: int, raw: bytes, end: bytes, text: str, out: list[Event]) -> bool:
        """A line the known formats did not claim, read by what it says whatever is in
        front: ExecuTorch's prefix after a foreign one (a timestamp, a trace tag), a
        platform's own prefix (Zephyr's ``[time] <inf> module:``), or none at all (a plain
        printf PAL). True when it was recognised (its LogLine and events are out)."""
        found = runtime_inside(text)
        if found is not None:
            inner, close, m = found
            level, file, line_no, function = (m[1], m[2], int(m[3]) if m[3] else None, m[4])
            begins = close + 2 if inner[close + 1 : close + 2] == " " else close + 1
            message = inner[begins:]
            out.append(
                new_log_line(
                    n, raw, end, text, level, file, line_no, function, message,
                    "runtime", False, self._stream,
                )
            )  # fmt: skip
            body = message.lstrip(" ")
            sp = body.find(" ")
            key = body if sp < 0 else body[:sp]
            handler = self._runtime_handlers.get(key)
            if handler is None or not handler(n, level, message, out):
                self._runtime_rest(n, level, message, key, handler is not None, out)
            return True
        stripped, level = foreign_prefix(text)
        message = text[stripped:]
        if self._message(n, raw, end, text, level, message, out):
            return True
        if stripped and level is None:
            # A trace tag between a report's lines does not end the report.
            out.append(
                new_log_line(n, raw, end, text, None, None, None, None, message, None, False,
                             self._stream)
            )  # fmt: skip
            return True
        return False

    def _message(
        self, n: int, raw: bytes, end: bytes, text: str, level: str | None, message: str,
        out: list[Event],
    ) -> bool:  # fmt: skip
        """Dispatch a bare message to the runtime handlers by its first word. With an
        explicit ``level`` (from a platform prefix) it is a runtime line whatever it says
        (an error level makes it an error); without one, only a recognised message is."""
        body = message.lstrip(" ")
        key = body.partition(" ")[0]
        handler = self._runtime_handlers.get(key)
        if handler is None:
            c = key[:1]
            if c == "e" and key.startswith("ethosu_pmu_cntr"):
                handler = self._h_pmu
            elif c == "o" and key.startswith("output["):
                handler = self._h_zephyr_output
            elif c == "[" and self._group is not None and self._group.kind == "output":
                handler = self._h_zephyr_value
            elif level is None:
                pass
            elif c.isdigit():
                handler = self._h_counted
            elif c == "O" and body.startswith("Output["):
                self._output_line(n, body, out)
                return True
        failure = level is None and (
            ("ail" in body and ("fail" in body or "Fail" in body))
            or ("!=" in body and "!= expected" in body)
        )  # without a level, what the message says is all there is
        if handler is None and level is None and not failure:
            return False
        at = len(out)
        handled = handler is not None and handler(n, level or "I", body, out)
        if not handled and level is None:
            if not failure:
                return False
            out.insert(
                at,
                new_log_line(n, raw, end, text, None, None, None, None, message, "runtime",
                             False, self._stream),
            )  # fmt: skip
            if self._group is not None:
                self._settle(None, out)
            status = status_in(body)
            out.append(RunError(n, status, status_name(status), body, "runtime"))
            return True
        out.insert(
            at,
            new_log_line(n, raw, end, text, level, None, None, None, message, "runtime", False,
                         self._stream),
        )  # fmt: skip
        if not handled:
            self._runtime_rest(n, level or "I", body, key, handler is not None, out)
        return True

    # Each handler returns True when it recognised the line (no generic error then).

    def _h_pte(self, n: int, level: str, body: str, out: list[Event]) -> bool:
        if self._group is not None:
            self._settle(None, out)
        if body.startswith(("PTE @", "PTE in", "PTE at")):
            m = _ADDRESS.search(body)
            self._pte_address = int(m.group(1), 16) if m else None
            ident = _IDENT.search(body)
            self._pte_identifier = ident.group(1) if ident else None
            return True
        if body.startswith("PTE Model data loaded"):
            self._emit_pte(n, body, out)
            return True
        return False

    def _emit_pte(self, n: int, body: str, out: list[Event]) -> None:
        m = _SIZE.search(body)
        size = leading_int(m.group(1)) if m else None
        out.append(PteLoaded(n, self._pte_address, self._pte_identifier, size))
        self._pte_address = self._pte_identifier = None

    def _h_model(self, n: int, level: str, body: str, out: list[Event]) -> bool:
        if self._group is not None:
            self._settle(None, out)
        if body.startswith("Model in "):  # 0.4-0.5: "Model in 0x70000000 $"
            m = _ADDRESS.search(body)
            self._pte_address = int(m.group(1), 16) if m else None
            self._pte_identifier = None
            return True
        if body.startswith("Model PTE file loaded"):
            self._emit_pte(n, body, out)
            return True
        if body.startswith("Model PTE at "):  # Zephyr mv2 sample: address and size at once
            m = _ADDRESS.search(body)
            s = _SIZE.search(body)
            out.append(
                PteLoaded(
                    n,
                    int(m.group(1), 16) if m else None,
                    None,
                    leading_int(s.group(1)) if s else None,
                )
            )
            return True
        if body.startswith(("Model buffer loaded", "Model loaded, has")):
            out.append(ProgramLoaded(n, leading_int(after(body, "has "))))
            return True
        if body.startswith("Model executed successfully"):
            out.append(InferenceFinished(n, None, True))
            return True
        if body.startswith("Model run:"):
            if leading_int(after(body, ":")) == 0:
                out.append(RunError(n, None, None, body, "runtime"))
            return True
        if body.startswith("Model output match expected"):
            return True
        if body.startswith("Model output don't match"):
            self._bundle["rtol"] = leading_float(after(body, "rtol="))
            self._bundle["atol"] = leading_float(after(body, "atol="))
            return True
        return False

    def _h_running(self, n: int, level: str, body: str, out: list[Event]) -> bool:
        if self._group is not None:
            self._settle(None, out)
        if body.startswith("Running method"):
            name = body[len("Running method") :].lstrip(": ").strip()
            if name:
                self._method = name
                self._load_status = None
                self._load_failed = False
                out.append(MethodSelected(n, name))
            return True
        if body.startswith("Running inference number"):
            out.append(InferenceStarted(n, None, leading_int(after(body, "number"))))
            return True
        return False

    def _h_setup(self, n: int, level: str, body: str, out: list[Event]) -> bool:
        if self._group is not None:
            self._settle(None, out)
        if body.startswith("Setup Method allocator pool"):
            m = _SIZE.search(body)
            out.append(MethodAllocatorSetUp(n, leading_int(m.group(1)) if m else None, "method"))
            return True
        if body.startswith("Setup planned FAST_MEMORY_REGION pool"):
            m = _SIZE.search(body)
            out.append(
                MethodAllocatorSetUp(n, leading_int(m.group(1)) if m else None, "planned_fast")
            )
            return True
        return False

    def _h_method(self, n: int, level: str, body: str, out: list[Event]) -> bool:
        if self._group is not None:
            self._settle(None, out)
        if body.startswith("Method allocator pool size:"):  # Zephyr mv2 sample
            out.append(MethodAllocatorSetUp(n, leading_int(after(body, ":")), "method"))
            return True
        if body.startswith("Method loaded") or (body.startswith("Method '") and " loaded" in body):
            name = body.split("'")[1] if body.startswith("Method '") else self._method
            failed = self._load_failed
            out.append(MethodLoaded(n, name, not failed, self._load_status))
            self._load_failed = False
            self._load_status = None
            return True
        return False

    def _h_loading(self, n: int, level: str, body: str, out: list[Event]) -> bool:
        if self._group is not None:
            self._settle(None, out)
        if body.startswith("Loading of method") and "failed" in body:
            status = status_in(body)
            self._load_failed = True
            self._load_status = status
            out.append(RunError(n, status, status_name(status), body, "runtime"))
            return True
        return False

    def _h_input(self, n: int, level: str, body: str, out: list[Event]) -> bool:
        if self._group is not None:
            self._settle(None, out)
        if body.startswith("Input prepared"):
            out.append(InputsPrepared(n))
            return True
        return False

    def _h_starting(self, n: int, level: str, body: str, out: list[Event]) -> bool:
        if self._group is not None:
            self._settle(None, out)
        if body.startswith("Starting running"):
            out.append(InferenceStarted(n, leading_int(after(body, "running")), None))
            return True
        if body.startswith("Starting the model execution"):
            out.append(InferenceStarted(n, None, None))
            return True
        return False

    def _h_counted(self, n: int, level: str, body: str, out: list[Event]) -> bool:
        if self._group is not None:
            self._settle(None, out)
        if body.endswith("inferences finished"):
            out.append(InferenceFinished(n, leading_int(body), True))
            return True
        return False

    def _h_program(self, n: int, level: str, body: str, out: list[Event]) -> bool:
        if self._group is not None:
            self._settle(None, out)
        if "Program complete" in body:
            out.append(RunSucceeded(n, body))
            return True
        return False

    def _h_assert(self, n: int, level: str, body: str, out: list[Event]) -> bool:
        if self._group is not None:
            self._settle(None, out)
        parts = _assert_parts(body)
        if parts is None:
            return False
        function, condition, message, bare = parts
        if bare is not None:
            condition, message = bare, None
        status = status_in(message) if message else None
        out.append(AssertFailed(n, function, condition, message, status, status_name(status), body))
        return True

    def _h_kernel(self, n: int, level: str, body: str, out: list[Event]) -> bool:
        if self._group is not None:
            self._settle(None, out)
        m = _KERNEL.match(body)
        if m is not None:
            out.append(MissingKernel(n, m.group(1), None))
            return True
        m = _MISSING_OP.match(body)
        if m is not None:
            if m.group(2) is None:
                # A newlib without C99 formats prints "[%zd] %s" as "[zd] " and drops the
                # name; the registry's "kernel '...' not found." line before it named it.
                return True
            out.append(MissingKernel(n, m.group(2), leading_int(m.group(1))))
            return True
        return False

    def _h_there(self, n: int, level: str, body: str, out: list[Event]) -> bool:
        if self._group is not None:
            self._settle(None, out)
        if "corresponding operator registered" in body:
            out.append(RunError(n, 0x14, status_name(0x14), body, "runtime"))
            return True
        return False

    def _h_bundle_stats(self, n: int, level: str, body: str, out: list[Event]) -> bool:
        if self._group is not None:
            self._settle(None, out)
        if body.startswith("=== Error stats for testset"):
            self._bundle = {}
            return True
        if body.startswith("===") or ":" not in body:
            return False
        name, _, value = body.partition(":")
        self._bundle[name.strip()] = leading_float(value)
        return True

    def _h_bundle_result(self, n: int, level: str, body: str, out: list[Event]) -> bool:
        if self._group is not None:
            self._settle(None, out)
        if "Test_result:" not in body:
            return False
        passed = "PASS" in after(body, "Test_result:")
        stats = self._bundle
        self._bundle = {}
        out.append(
            BundleIOResult(
                n,
                leading_int(after(body, "index[")),
                passed,
                stats.get("mean_absolute_error"),
                stats.get("max_absolute_error"),
                stats.get("mean_relative_error"),
                stats.get("max_relative_error"),
                stats.get("rtol"),
                stats.get("atol"),
            )
        )
        return True

    # Reports over several lines: which lines belong is decided here, the collectors of
    # etu.parsers.runner_reports keep what they say.

    def _h_pmu(self, n: int, level: str, body: str, out: list[Event]) -> bool:
        if body.startswith("Inference completed in"):  # Zephyr mv2 sample
            if self._group is not None:
                self._settle(None, out)
            ms = leading_int(after(body, " in "))
            out.append(InferenceFinished(n, None, True, ms))
            return True
        if body.startswith("NPU Inferences"):
            if self._group is not None:  # a new report closes any earlier one
                self._settle(None, out)
            group = self._group = PmuCollector(n, self._npu)
        else:
            group = self._settle("pmu", out)
            if group is None:
                if not body.startswith(("ethosu_pmu_", "Ethos-U PMU", "Inference runtime")):
                    return False
                group = self._group = PmuCollector(n, self._npu)  # its first line was cut
        if group.add(body):  # the event list: the report's last line
            self._group = None
            out.append(group.finish())
        return True

    def _h_npu(self, n: int, level: str, body: str, out: list[Event]) -> bool:
        """An Ethos-U invoke etu answered on the emulated board; a failed one is also the
        run's error (its line names the operation)."""
        if self._group is not None:
            self._settle(None, out)
        event = npu_invoke(n, level, body)
        if event is None:
            return False
        out.append(event)
        if not event.ok:
            out.append(RunError(n, None, None, body, "runtime"))
        return True

    def _h_memory(self, n: int, level: str, body: str, out: list[Event]) -> bool:
        group = self._settle("memory", out)
        if group is None:
            group = self._group = MemoryCollector(n)
        return group.add(body)

    def _h_planned(self, n: int, level: str, body: str, out: list[Event]) -> bool:
        m = _PLANNED.search(body)
        if m is None:
            if self._group is not None:
                self._settle(None, out)
            return False
        group = self._settle("planned", out)
        if group is None:
            group = self._group = PlannedCollector(n)
        ident = leading_int(m.group(1))
        if "mem_id=" not in body and ident is not None:
            ident += 1  # ≤1.4: 0-based buffer index; mem_id = index + 1
        group.add(ident, leading_int(m.group(2)))
        return True

    # Output dumps: printf "Output[i][j]: (float) v" or the Zephyr sample's ET_LOG lines.

    def _output_line(self, n: int, text: str, out: list[Event]) -> None:
        m = _OUTPUT.match(text)
        if m is None:
            if self._group is not None:
                self._settle(None, out)
            m2 = _OUTPUT_NOT_TENSOR.match(text)
            if m2 is not None:
                out.append(OutputTensor(n, int(m2.group(1)), None, None, (), 0, 0, False))
            return
        index_s, elem_s, dtype, token = m.groups()
        index = int(index_s)
        group = self._group
        if group is not None and (group.kind != "output" or group.index != index):
            self._settle(None, out)  # another report ends, or the next output starts
            group = None
        if group is None:
            group = self._group = OutputCollector(n, index, dtype, self._max_values)
        group.add(int(elem_s), token, dtype)

    def _h_zephyr_output(self, n: int, level: str, body: str, out: list[Event]) -> bool:
        if self._group is not None:
            self._settle(None, out)
        m = _ZEPHYR_OUTPUT.match(body.lstrip())
        if m is None:
            return False
        index_s, kind, dtype, numel = m.groups()
        self._group = OutputCollector(
            n, int(index_s), dtype, self._max_values, leading_int(numel) or 0, kind == "tensor"
        )
        return True

    def _h_zephyr_value(self, n: int, level: str, body: str, out: list[Event]) -> bool:
        group = self._settle("output", out)
        m = _ZEPHYR_VALUE.match(body.lstrip())
        if group is None or m is None:
            return False
        group.add(int(m.group(1)), m.group(2), group.dtype)
        return True
