"""Reports the runner prints over several lines, each gathered by a small collector.

The parser (:mod:`etu.parsers.runner_log`) decides which lines belong to which report; a
collector keeps what those lines say and makes the one event at the end: the PMU report
(``arm_perf_monitor.cpp``), the memory summary (``log_mem_status``), the planned buffers,
an output tensor dump, a hard fault's register lines, and an ETDump block (base64 that the
run script would have piped to a file; decoded here, never run). Every collector is bounded,
so a looping device cannot grow the parser.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import ClassVar

from etu.parsers.log_values import after, leading_float, leading_int
from etu.parsers.runner_events import (
    EtdumpBlock,
    EtdumpError,
    Event,
    HardFault,
    MemoryReport,
    OutputTensor,
    PlannedBuffers,
    PmuReport,
    PoolUsage,
)

# Ethos-U PMU event lists the runner configures (arm_perf_monitor.cpp), for a report whose
# "Ethos-U PMU Events:[...]" line is missing (cut transcript, older runner).
U55_EVENTS = (
    "ETHOSU_PMU_AXI0_RD_DATA_BEAT_RECEIVED",
    "ETHOSU_PMU_AXI1_RD_DATA_BEAT_RECEIVED",
    "ETHOSU_PMU_AXI0_WR_DATA_BEAT_WRITTEN",
    "ETHOSU_PMU_NPU_IDLE",
)
U85_EVENTS_5 = (
    "ETHOSU_PMU_SRAM_RD_DATA_BEAT_RECEIVED",
    "ETHOSU_PMU_SRAM_WR_DATA_BEAT_WRITTEN",
    "ETHOSU_PMU_EXT_RD_DATA_BEAT_RECEIVED",
    "ETHOSU_PMU_EXT_WR_DATA_BEAT_WRITTEN",
    "ETHOSU_PMU_NPU_IDLE",
)
U85_EVENTS_7 = (*U85_EVENTS_5, "ETHOSU_PMU_MAC_ACTIVE", "ETHOSU_PMU_WD_ACTIVE")

# Bounds on what one report may collect.
MAX_COUNTERS = 64
MAX_PLANNED = 4096
MAX_REGISTERS = 64

# The memory summary's lines: first word → (kind, field); a "pool" line is "used / size".
MEMORY_KEYS: dict[str, tuple[str, str]] = {
    "model_pte_program_size:": ("value", "program_size"),
    "model_pte_loaded_size:": ("value", "loaded_size"),
    "method_allocator_used:": ("pool", "method_allocator"),
    "input_file_allocator_used:": ("pool", "input_file_allocator"),
    "planned_fast_allocator:": ("pool", "planned_fast_allocator"),
    "temp_allocator_used:": ("pool", "temp_allocator"),
    "peak_temp_allocator:": ("pool", "temp_allocator"),
    "ETDump_outputs_buffer:": ("pool", "etdump_outputs_buffer"),
    "method_allocator_planned:": ("value", "planned"),
    "method_allocator_loaded:": ("value", "loaded"),
    "method_allocator_input:": ("value", "input"),
    "method_allocator_executor:": ("value", "executor"),
    "planned_fast_used:": ("value", "planned_fast_used"),
    "temp_allocator:": ("value", "temp_allocator_size"),
}

# Searched patterns start only where a word starts ((?<!\w)): a match inside a run of word
# characters would end where one from the run's start ends, so it is never the leftmost, and
# trying it from every position of a long run is quadratic (issue 20).
_POOL = re.compile(r"(?<!\w)(\w++) / (\w+)\s+free: (\w+) \( used: (\w+) %")
# A register is named from the first ASCII letter of a run of word characters: the match
# starts at the run (its leading digits, "_" or other letters skipped), never inside it.
_REGISTER = re.compile(
    r"(?<!\w)[^\WA-Za-z]*+([A-Za-z]\w*+(?:/\w++)?+)[=:]\s*+(-?0x[0-9A-Fa-f]+|-?\d+)\b"
)
_ECHO = re.compile(r'echo "([^"]*)" *\| *base64 +-d *>\s*(\S+)')
_HEREDOC_END = re.compile(r'" *>\s*(\S+)')
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]")


def npu_generation(npu: str | None) -> str | None:
    """``"u55"`` or ``"u85"`` for an NPU name (``"ethos-u55-128"``, ``"U85"``), else None."""
    if not npu:
        return None
    low = npu.lower()
    if "85" in low:
        return "u85"
    if "55" in low or "65" in low:
        return "u55"
    return None


class Report:
    """A report being collected: where it starts, and the event it becomes."""

    kind: ClassVar[str]
    __slots__ = ("line_no",)

    def __init__(self, line_no: int) -> None:
        self.line_no = line_no

    def finish(self) -> Event:
        raise NotImplementedError


# --------------------------------------------------------------------------- PMU


class PmuCollector(Report):
    """``arm_perf_monitor.cpp``'s report: counters, cycles, ratios, the event list last."""

    kind = "pmu"
    __slots__ = ("event_names", "events_cut", "fields", "npu", "operators", "values")

    def __init__(self, line_no: int, npu: str | None) -> None:
        super().__init__(line_no)
        self.npu = npu  # "u55", "u85" or None: names counters when the log lists no events
        self.values: list[int | None] = []
        self.fields: dict[str, int | float | None] = {}
        self.operators: dict[str, int | None] = {}
        self.event_names: list[str] = []
        self.events_cut = False

    def add(self, body: str) -> bool:
        """Read one of the report's lines; True when it was the last (the event list)."""
        fields = self.fields
        if body.startswith("ethosu_pmu_cntr"):
            if len(self.values) < MAX_COUNTERS:
                self.values.append(leading_int(after(body, ":")))
        elif body.startswith("ethosu_pmu_cycle_cntr"):
            fields["npu_cycles"] = leading_int(after(body, ":"))
        elif body.startswith("NPU delegations"):
            fields["delegations"] = leading_int(after(body, ":"))
        elif body.startswith("Inference runtime"):
            fields["cpu_cycles"] = leading_int(after(body, ":"))
        elif body.startswith("Inference CPU ratio"):
            fields["cpu_ratio"] = leading_float(after(body, ":"))
        elif body.startswith("Inference NPU ratio"):
            fields["npu_ratio"] = leading_float(after(body, ":"))
        elif body.startswith("cpu_wait_for_npu_cntr"):
            fields["cpu_wait"] = leading_int(after(body, ":"))
        elif body.startswith("Operator(s) total"):
            fields["operators_total"] = leading_int(after(body, ":"))
        elif " : cycle_cnt :" in body:
            name, _, rest = body.partition(" : cycle_cnt :")
            self.operators[name.strip()] = leading_int(rest)
        elif body.startswith("NPU Inferences"):
            fields["npu_inferences"] = leading_int(after(body, ":"))
        elif body.startswith("Ethos-U PMU Events:"):
            listed = after(body, "[")
            self.events_cut = not listed.endswith("]")
            self.event_names = [s.strip() for s in listed.rstrip("]").split(",") if s.strip()]
            return True
        return False

    def _names(self) -> tuple[list[str], str]:
        """The counters' event names and where they came from (log, default or index)."""
        count = len(self.values)
        names = list(self.event_names)
        if names:
            if self.events_cut:
                # An event list cut by the 255-byte log limit: complete the last name if a
                # known list has exactly one name that starts with the fragment.
                known = {e for e in (*U55_EVENTS, *U85_EVENTS_7) if e.startswith(names[-1])}
                if len(known) == 1:
                    names[-1] = known.pop()
            return names, "log"
        default: tuple[str, ...] = ()
        if self.npu == "u85" or (self.npu is None and count in (5, 7)):
            default = U85_EVENTS_5 if count <= 5 else U85_EVENTS_7
        elif self.npu == "u55" or (self.npu is None and count == 4):
            default = U55_EVENTS
        if count and count <= len(default):
            return list(default[:count]), "default"
        return [], "index"

    def finish(self) -> PmuReport:
        values = tuple(self.values)
        names, names_from = self._names()
        counters: dict[str, int | None] = {}
        for i, value in enumerate(values):
            counters[names[i] if i < len(names) else f"ethosu_pmu_cntr{i}"] = value
        fields = self.fields
        return PmuReport(
            self.line_no,
            npu_inferences=fields.get("npu_inferences"),
            delegations=fields.get("delegations"),
            npu_cycles=fields.get("npu_cycles"),
            counters=counters,
            counter_values=values,
            event_names=tuple(names),
            names_from=names_from,
            cpu_cycles=fields.get("cpu_cycles"),
            operator_cycles=self.operators,
            operators_total=fields.get("operators_total"),
            cpu_wait_for_npu_cycles=fields.get("cpu_wait"),
            cpu_ratio=fields.get("cpu_ratio"),
            npu_ratio=fields.get("npu_ratio"),
        )


# --------------------------------------------------------------------------- memory


class MemoryCollector(Report):
    """``log_mem_status``'s summary: pool usage and the method allocator's parts."""

    kind = "memory"
    __slots__ = ("fields", "pools")

    def __init__(self, line_no: int) -> None:
        super().__init__(line_no)
        self.pools: dict[str, PoolUsage] = {}
        self.fields: dict[str, int | None] = {}

    def add(self, body: str) -> bool:
        """Read one summary line; False when its key is not one of the summary's."""
        key, _, rest = body.partition(":")
        target = MEMORY_KEYS.get(key + ":")
        if target is None:
            return False
        kind, name = target
        if kind == "pool":
            m = _POOL.search(rest)
            if m is not None:
                used, size, free, percent = map(leading_int, m.groups())
                self.pools[name] = PoolUsage(used, size, free, percent)
            else:
                self.pools[name] = PoolUsage(leading_int(rest), None)
        else:
            self.fields[name] = leading_int(rest)
        return True

    def finish(self) -> MemoryReport:
        get = self.fields.get
        return MemoryReport(
            self.line_no,
            pools=self.pools,
            program_size=get("program_size"),
            loaded_size=get("loaded_size"),
            planned=get("planned"),
            loaded=get("loaded"),
            input=get("input"),
            executor=get("executor"),
            temp_allocator_size=get("temp_allocator_size"),
            planned_fast_used=get("planned_fast_used"),
        )


# --------------------------------------------------------------------------- planned buffers


class PlannedCollector(Report):
    """The runner's "Setting up planned buffer" lines: one per memory id."""

    kind = "planned"
    __slots__ = ("buffers",)

    def __init__(self, line_no: int) -> None:
        super().__init__(line_no)
        self.buffers: list[tuple[int | None, int | None]] = []

    def add(self, mem_id: int | None, size: int | None) -> None:
        if len(self.buffers) < MAX_PLANNED:
            self.buffers.append((mem_id, size))

    def finish(self) -> PlannedBuffers:
        ids, sizes = zip(*self.buffers, strict=True) if self.buffers else ((), ())
        return PlannedBuffers(self.line_no, len(self.buffers), sizes, ids)


# --------------------------------------------------------------------------- output dumps


def output_value(dtype: str | None, token: str) -> int | float | bool | None:
    """One printed element as its type says (guessed from the text without one)."""
    try:
        if dtype is None:
            return int(token) if token.lstrip("-").isdigit() else float(token)
        if dtype in ("int", "char", "Int", "Char", "Long", "Short", "Byte"):
            return int(token)
        if dtype in ("bool", "Bool"):
            return token.startswith(("true", "1"))
        return float(token)
    except ValueError:
        return None


class OutputCollector(Report):
    """An output tensor printed element by element (``Output[i][j]: (float) v`` or the
    Zephyr sample's ``output[i]: tensor`` then ``[j] = v``); values past the cap are
    counted, not kept."""

    kind = "output"
    __slots__ = ("dropped", "dtype", "index", "is_tensor", "max_values", "numel", "values")

    def __init__(
        self,
        line_no: int,
        index: int,
        dtype: str | None,
        max_values: int,
        numel: int = 0,
        is_tensor: bool = True,
    ) -> None:
        super().__init__(line_no)
        self.index = index
        self.dtype = dtype
        self.numel = numel
        self.values: list[int | float | bool | None] = []
        self.dropped = 0
        self.is_tensor = is_tensor
        self.max_values = max_values

    def add(self, element: int, token: str, dtype: str | None) -> None:
        """Element ``element`` printed as ``token``; ``dtype`` is the type its own line
        names (a dump can change type midway), else the tensor's."""
        if element >= self.numel:
            self.numel = element + 1
        if len(self.values) < self.max_values:
            self.values.append(output_value(dtype, token))
        else:
            self.dropped += 1

    def finish(self) -> OutputTensor:
        values = tuple(self.values)
        return OutputTensor(
            self.line_no,
            self.index,
            self.dtype,
            None,
            values,
            self.numel,
            len(values) + self.dropped,
            self.is_tensor,
        )


# --------------------------------------------------------------------------- hard faults


class FaultCollector(Report):
    """A platform's hard-fault line and the register lines after it."""

    kind = "fault"
    __slots__ = ("registers", "text")

    def __init__(self, line_no: int, text: str) -> None:
        super().__init__(line_no)
        self.text = text
        self.registers: dict[str, int] = {}
        self.add(text)

    def add(self, text: str) -> None:
        """The ``name=value`` / ``name: value`` registers of one line."""
        registers = self.registers
        for name, value in _REGISTER.findall(text):
            if len(registers) >= MAX_REGISTERS:
                return
            if "/" in name:  # Zephyr's "r0/a1", "r14/lr": keep the usual name
                parts = name.split("/")
                name = next((p for p in parts if p in ("pc", "lr", "sp", "ip")), parts[0])
            try:
                registers[name] = int(value, 16) if "x" in value else int(value)
            except ValueError:
                continue

    def finish(self) -> HardFault:
        return HardFault(self.line_no, self.registers, self.text)


# --------------------------------------------------------------------------- ETDump


def safe_file_name(name: str, index: int) -> str:
    """The file name an ETDump block writes to, reduced to a plain name of this folder."""
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    base = _SAFE_NAME.sub("_", base).lstrip(".") or "etdump.bin"
    if index:
        stem, dot, ext = base.rpartition(".")
        base = f"{stem}-{index}.{ext}" if dot and stem else f"{base}-{index}"
    return base


def decode_base64(text: str) -> bytes:
    """Base64 with any whitespace in it and its padding maybe cut; ValueError if corrupt."""
    compact = "".join(text.split())
    if len(compact) % 4 == 1:
        raise ValueError(f"{len(compact)} base64 characters cannot be a whole encoding")
    try:
        return base64.b64decode(compact + "=" * (-len(compact) % 4), validate=True)
    except binascii.Error as error:
        raise ValueError(f"corrupt base64: {error}") from None


class EtdumpCollector:
    """An ETDump block the runner prints for its run script to decode: ``#[RUN THIS]`` …
    ``#[END]`` (or ``#---`` twice), holding ``echo "…" | base64 -d > file`` lines or a
    ``base64 -d <<<"…" > file`` heredoc. The heredoc's text is capped at ``max_text``."""

    __slots__ = ("closer", "heredoc", "heredoc_line", "index", "line_no", "max_text", "size")

    def __init__(self, line_no: int, start: str, index: int, max_text: int) -> None:
        self.line_no = line_no
        self.closer = "#[END]" if start.strip() == "#[RUN THIS]" else "#---"
        self.index = index  # 0 for the log's first block
        self.max_text = max_text
        self.heredoc_line: int | None = None
        self.heredoc: list[str] = []
        self.size = 0

    def claims(self, text: str) -> bool:
        """Whether a line is the script's own (a runtime line can interleave)."""
        if self.heredoc_line is not None:
            return True
        return text[:1] in '#ep"b' or not text.strip()

    def add(self, n: int, text: str, out: list[Event]) -> bool:
        """Read line ``n`` of the block; False when the block has ended (closed or given
        up on: an error event says why)."""
        stripped = text.strip()
        if self.heredoc_line is not None:
            if stripped.startswith('"'):
                m = _HEREDOC_END.match(stripped)
                b64 = "".join(self.heredoc)
                line_no, self.heredoc_line = self.heredoc_line, None
                self.heredoc = []
                self.size = 0
                self.file(line_no, b64, m.group(1) if m else "etdump.bin", out)
                return True
            self.size += len(stripped)
            if self.size > self.max_text:
                out.append(EtdumpError(n, "ETDump heredoc too long: not decoded"))
                self.heredoc_line = None
                self.heredoc = []
                self.size = 0
                return False
            self.heredoc.append(stripped.rstrip("\\"))
            return True
        if stripped == self.closer:
            return False
        if stripped.startswith("echo "):
            m = _ECHO.search(stripped)
            if m is None:
                out.append(EtdumpError(n, "ETDump line cut or malformed: " + stripped[:60]))
                return True
            self.file(n, m.group(1), m.group(2), out)
        elif stripped.startswith("base64") and "<<<" in stripped:
            self.heredoc_line = n
            rest = after(stripped, '<<<"').rstrip("\\")
            if rest:
                self.heredoc.append(rest)
        return True

    def file(self, n: int, b64: str, target: str, out: list[Event]) -> None:
        """One file of the block: its bytes decoded, or an error saying why not."""
        name = safe_file_name(target, self.index)
        try:
            data = decode_base64(b64)
        except ValueError as error:
            out.append(EtdumpError(n, str(error), name))
            return
        if not data:
            out.append(EtdumpError(n, "empty ETDump data", name))
            return
        identifier = None
        for at in (4, 8):
            if data[at : at + 4] == b"ED00":
                identifier = "ED00"
                break
        out.append(EtdumpBlock(n, name, data, self.index, identifier))

    def unclosed(self) -> EtdumpError:
        """The error for a block the log ended inside."""
        what = "base64 heredoc" if self.heredoc_line is not None else "block"
        return EtdumpError(self.line_no, f"ETDump {what} not closed: log ended")
