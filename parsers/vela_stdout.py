"""Vela's stdout report: read it when it is all there is.

Everything Vela prints goes to stdout (warnings and errors included). Three parts matter:
the per-layer table (``--verbose-performance``; ``Performance for NPU Grap <path>`` from Regor,
``Performance for NPU Subgraph <name>`` from the legacy core), the ``Network summary for <net>``
block, and, for a failed run, the error (a traceback's last line, ``vela: error: ...`` from
argparse, or ``Error: ...`` from a VelaError). The line templates are the f-strings of
``ethosu/vela/stats_writer.py`` (5.1.0); values are rounded to 2 decimals, so prefer the CSV.

Summary keys reuse the summary CSV's column names when the unit is the same (``cycles_total``,
``sram_memory_used`` in KiB, ``sram_bandwidth`` in GiB/s, ``nn_macs`` …); the others name their
unit (``core_clock_mhz``, ``inference_time_ms``, ``sram_input_mb`` …).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from etu.parsers.errors import TruncatedError
from etu.parsers.vela_csv import (
    AREA_LABELS,
    LayerRow,
    decode_text,
    layer_row,
    per_layer_layout,
    rename_duplicate_columns,
    text_parse_errors,
    to_number,
)

_NUM = r"([-+]?(?:\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|nan|inf))"
_AREA = r"(SRAM|DRAM|On-chip Flash|Off-chip Flash)"
_CYCLE_KINDS = {
    "NPU": "cycles_npu",
    "SRAM Access": "cycles_sram_access",
    "DRAM Access": "cycles_dram_access",
    "On-chip Flash Access": "cycles_on_chip_flash_access",
    "Off-chip Flash Access": "cycles_off_chip_flash_access",
    "Total": "cycles_total",
}
# Text values are read as ``(\S.*)`` to the line's end (lines come from splitlines()) and
# right-stripped in Python: a lazy ``(.*?)\s*$`` retries ``\s*$`` at every character,
# quadratic on a line with a long run of spaces inside (issue 20).
_LINE_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"Accelerator configuration\s++(\S.*)"), "accelerator_configuration"),
    (re.compile(r"System configuration\s++(\S.*)"), "system_config"),
    (re.compile(r"Memory mode\s++(\S.*)"), "memory_mode"),
    (re.compile(rf"Accelerator clock\s+{_NUM} MHz\s*$"), "clock"),
    (re.compile(rf"Design peak {_AREA} bandwidth\s+{_NUM} GB/s\s*$"), "peak"),
    (re.compile(rf"Total {_AREA} used\s+{_NUM} KiB\s*$"), "used"),
    (re.compile(rf"(CPU|NPU) operators = (\d+) \(\s*{_NUM}%\)\s*$"), "operators"),
    (re.compile(r"   (CPU|NPU): (.*)"), "operator_name"),
    (re.compile(rf"Average {_AREA} bandwidth\s+{_NUM} GB/s\s*$"), "average"),
    (re.compile(rf"(Input|Weight|Output|Total)\s+{_AREA} bandwidth\s+{_NUM} MB/batch\s*$"), "mb"),
    (
        re.compile(
            rf"Total\s+{_AREA} bandwidth\s+per input\s+{_NUM} MB/inference"
            r" \(batch size (\d+)\)\s*$"
        ),
        "per_input",
    ),
    (re.compile(rf"Original Weights Size\s+{_NUM} KiB\s*$"), "original_weights_kib"),
    (re.compile(rf"NPU Encoded Weights Size\s+{_NUM} KiB\s*$"), "npu_encoded_weights_kib"),
    (re.compile(r"Neural network macs\s+(\d+) MACs/batch\s*$"), "nn_macs"),
    (re.compile(rf"Network Tops/s\s+{_NUM} Tops/s\s*$"), "nn_tops"),
    (re.compile(rf"({'|'.join(_CYCLE_KINDS)}) cycles\s+(\d+) cycles/batch\s*$"), "cycles"),
    (
        re.compile(
            rf"Batch Inference time\s+{_NUM} ms,\s+{_NUM} inferences/s"
            r" \(batch size (\d+)\)\s*$"
        ),
        "time",
    ),
]
_SUMMARY_START = re.compile(r"Network summary for (.*)")
_PERF_START = re.compile(r"Performance for NPU (Graph|Grap|Subgraph)\b ?(.*)")
_VERSION = re.compile(
    r"(?:ethos[-_]u[-_]vela|\bvela)(?:\s+version)?[\s:=v-]*"
    r"(\d+\.\d+\.\d+(?:(?:a|b|rc|\.post|\.dev)\d+)?(?:\+[\w.]+)?)",
    re.IGNORECASE,
)
_ALLOCATION_PEAK = re.compile(r"Allocation Peak Tensor Size: (\d+) bytes")
_EXCEPTION = re.compile(r"([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt))(?::\s*(.*))?$")
_CONFIG_SECTION = re.compile(
    r"(Configuration files|System Configuration|Memory Mode|Architecture Settings)"
    r"(?: \((.*)\))?:\s*$"
)
_CONFIG_ITEM = re.compile(r"   (\w+) = (.*)")
_IGNORED_INFO = ("Info: The numbers below are internal compiler estimates.",)


@dataclass(slots=True)
class VelaStdout:
    """What a captured Vela stdout says. Values are as printed (rounded to 2 decimals)."""

    summaries: list[dict[str, Any]] = field(default_factory=list)  # one per "Network summary"
    per_layer: list[LayerRow] = field(default_factory=list)
    # The per-layer table printed before each summary (one list per summary, [] when none):
    # ExecuTorch calls Vela once per Ethos-U delegate, each call prints table + summary.
    summary_layers: list[list[LayerRow]] = field(default_factory=list)
    per_layer_layout: str | None = None  # "regor" or "legacy"
    per_layer_graph: str | None = None  # the path/subgraph after "Performance for NPU ..."
    errors: list[str] = field(default_factory=list)  # a failed run's error text
    vela_warnings: list[str] = field(default_factory=list)  # Vela's "Warning..." messages
    info: list[str] = field(default_factory=list)  # Vela's "Info: ..." lines
    allocation_peak_bytes: list[int] = field(default_factory=list)  # --verbose-allocation
    config: dict[str, dict[str, str]] = field(default_factory=dict)  # --verbose-config
    vela_version: str | None = None  # only when the text says it
    warnings: list[str] = field(default_factory=list)  # problems reading the text itself
    source: str | None = None

    @property
    def summary(self) -> dict[str, Any] | None:
        """The last ``Network summary`` (ExecuTorch runs Vela once per partition)."""
        return self.summaries[-1] if self.summaries else None

    @property
    def failed(self) -> bool:
        return bool(self.errors) and not self.summaries

    @property
    def recognised(self) -> bool:
        """Whether anything in the text came from Vela."""
        return bool(
            self.summaries
            or self.per_layer
            or self.per_layer_layout
            or self.errors
            or self.vela_warnings
            or self.info
            or self.allocation_peak_bytes
            or self.config
        )


def parse_vela_stdout(data: bytes | str, source: str | None = None) -> VelaStdout:
    """Read a captured Vela stdout (or a log that contains one). Never fails on content:
    only an empty or binary file is a :class:`ParseError`; unknown lines are ignored."""
    with text_parse_errors(source):
        text, warnings = decode_text(data, source, "Vela's stdout")
        if not text.strip():
            raise TruncatedError("empty file, not Vela's stdout", source=source)
        result = VelaStdout(warnings=warnings, source=source)
        lines = text.splitlines()
        _Reader(result, lines).run()
        match = _VERSION.search(text)
        result.vela_version = match[1] if match else None
        return result


class _Reader:
    """One pass over the lines; each kind of block consumes its own lines."""

    def __init__(self, result: VelaStdout, lines: list[str]) -> None:
        self.result = result
        self.lines = lines
        self.i = 0
        self.current: dict[str, Any] | None = None
        self.section: dict[str, str] | None = None
        self.pending_layers: list[LayerRow] = []  # the table waiting for its summary

    def _new_summary(self, summary: dict[str, Any]) -> None:
        self.current = summary
        self.result.summaries.append(summary)
        self.result.summary_layers.append(self.pending_layers)
        self.pending_layers = []

    def run(self) -> None:
        while self.i < len(self.lines):
            line = self.lines[self.i]
            self.i += 1
            self._line(line)

    def _line(self, line: str) -> None:
        result = self.result
        stripped = line.strip()
        if not stripped:  # ends a config section; no pattern reads an empty line
            self.section = None
            return
        if self.section is not None:
            item = _CONFIG_ITEM.match(line)
            if item:
                self.section[item[1]] = item[2].rstrip()
                return
            self.section = None
        if match := _PERF_START.match(stripped):
            self._per_layer_table(match[2].rstrip())
        elif match := _SUMMARY_START.match(stripped):
            self._new_summary({"network": match[1].rstrip()})
        elif stripped.startswith("Traceback (most recent call last)"):
            self._traceback()
        elif stripped.startswith("vela: error:"):
            self._argparse_error(stripped)
        elif stripped.startswith("Error:"):
            result.errors.append(stripped)
        elif stripped.startswith("Warning"):
            self._warning(stripped)
        elif stripped.startswith("Info:"):
            if stripped not in _IGNORED_INFO:
                result.info.append(stripped)
        elif match := _ALLOCATION_PEAK.match(stripped):
            result.allocation_peak_bytes.append(int(match[1]))
        elif match := _CONFIG_SECTION.match(line):
            key = f"{match[1]} ({match[2]})" if match[2] else match[1]
            self.section = result.config.setdefault(key, {})
        else:
            self._summary_line(line)

    # ------------------------------------------------------------------ failures and messages

    def _traceback(self) -> None:
        # Frames are indented; the exception line is the first line that is not.
        while self.i < len(self.lines):
            line = self.lines[self.i]
            if line.strip() and not line[:1].isspace():
                break
            self.i += 1
        if self.i < len(self.lines):
            line = self.lines[self.i].strip()
            self.i += 1
            self.result.errors.append(line)
        else:
            self.result.errors.append("Vela stopped with a traceback (its last line is missing)")
            self.result.warnings.append("stdout ends inside a traceback (truncated?)")

    def _argparse_error(self, first: str) -> None:
        parts = [first.removeprefix("vela: error:").strip()]
        while self.i < len(self.lines) and self.lines[self.i].strip():
            parts.append(self.lines[self.i].strip())
            self.i += 1
        self.result.errors.append("vela: error: " + " ".join(part for part in parts if part))

    def _warning(self, first: str) -> None:
        parts = [first]
        # Legacy placement warnings continue on indented lines, Regor's with "Reason: ...".
        while self.i < len(self.lines):
            line = self.lines[self.i]
            if line.strip() and (line[:1].isspace() or line.startswith("Reason:")):
                if _summary_match(line):
                    break
                parts.append(line.strip())
                self.i += 1
            else:
                break
        self.result.vela_warnings.append(" ".join(parts))

    # ------------------------------------------------------------------ per-layer table

    def _per_layer_table(self, graph: str) -> None:
        result = self.result
        if self.i + 1 >= len(self.lines):
            result.warnings.append("stdout ends before the per-layer table header (truncated?)")
            return
        header_line, dashes = self.lines[self.i], self.lines[self.i + 1]
        spans = [m.span() for m in re.finditer(r"-+", dashes)]
        if not spans or dashes.replace("-", "").strip():
            result.warnings.append("per-layer table without its dashed header rule; skipped")
            return
        self.i += 2
        header = [header_line[a:b].strip() for a, b in spans]
        columns = rename_duplicate_columns(header)
        result.per_layer_layout = per_layer_layout(header)
        result.per_layer_graph = graph or None
        self.pending_layers = []
        while self.i < len(self.lines):
            line = self.lines[self.i]
            if not line.strip():
                break
            self.i += 1
            cells = line.split(None, len(columns) - 1)
            row = layer_row(
                columns, cells, f"stdout per-layer line {self.i}", result.warnings, join_name=False
            )
            if row is not None:
                result.per_layer.append(row)
                self.pending_layers.append(row)

    # ------------------------------------------------------------------ network summary

    def _summary_line(self, line: str) -> None:
        matched = _summary_match(line)
        if matched is None:
            return
        kind, match = matched
        if self.current is None or (kind == "accelerator_configuration" and kind in self.current):
            self._new_summary({})
        _store(self.current, kind, match)


def _summary_match(line: str) -> tuple[str, re.Match[str]] | None:
    for pattern, kind in _LINE_PATTERNS:
        match = pattern.match(line)
        if match:
            return kind, match
    return None


def _store(summary: dict[str, Any], kind: str, m: re.Match[str]) -> None:
    if kind in ("accelerator_configuration", "system_config", "memory_mode"):
        summary[kind] = m[1].rstrip()
    elif kind == "clock":
        mhz = to_number(m[1])
        summary["core_clock_mhz"] = mhz
        summary["core_clock"] = mhz * 1_000_000 if mhz is not None else None
    elif kind == "peak":
        summary[f"{AREA_LABELS[m[1]]}_bandwidth"] = to_number(m[2])
    elif kind == "used":
        summary[f"{AREA_LABELS[m[1]]}_memory_used"] = to_number(m[2])
    elif kind == "operators":
        who = m[1].lower()
        summary[f"{who}_operators"] = int(m[2])
        summary[f"{who}_operators_percent"] = to_number(m[3])
    elif kind == "operator_name":
        summary.setdefault(f"{m[1].lower()}_operator_names", []).append(m[2].rstrip())
    elif kind == "average":
        summary[f"{AREA_LABELS[m[1]]}_average_bandwidth"] = to_number(m[2])
    elif kind == "mb":
        summary[f"{AREA_LABELS[m[2]]}_{m[1].lower()}_mb"] = to_number(m[3])
    elif kind == "per_input":
        summary[f"{AREA_LABELS[m[1]]}_total_mb_per_inference"] = to_number(m[2])
        summary["batch_size"] = int(m[3])
    elif kind == "cycles":
        summary[_CYCLE_KINDS[m[1]]] = int(m[2])
    elif kind == "time":
        summary["inference_time_ms"] = to_number(m[1])
        summary["inferences_per_second"] = to_number(m[2])
        summary["batch_size"] = int(m[3])
    elif kind == "nn_macs":
        summary["nn_macs"] = int(m[1])
    else:  # original/encoded weights (KiB), nn_tops
        summary[kind] = to_number(m[1])


# Units of the stdout summary keys (the ones shared with the CSV have the CSV's unit).
STDOUT_SUMMARY_UNITS: dict[str, str] = {
    "network": "text",
    "accelerator_configuration": "text",
    "system_config": "text",
    "memory_mode": "text",
    "core_clock_mhz": "MHz (as printed: int(core_clock / 1e6))",
    "core_clock": "Hz (= core_clock_mhz × 1e6)",
    "<area>_bandwidth": "GiB/s design peak (printed as 'GB/s'; decimal in Vela <= 3.12)",
    "<area>_memory_used": "KiB (only areas with usage > 0 are printed)",
    "cpu_operators / npu_operators": "count (with --show-cpu-operations fused ops count too)",
    "cpu_operators_percent / npu_operators_percent": "%",
    "cpu_operator_names / npu_operator_names": "list of 'Type = name (outputs [...])'",
    "<area>_average_bandwidth": "'GB/s' as Vela prints it: bytes × inferences/s / 2^20 / 1000",
    "<area>_input_mb / _weight_mb / _output_mb / _total_mb": "MiB per batch",
    "<area>_total_mb_per_inference": "MiB per inference",
    "original_weights_kib / npu_encoded_weights_kib": "KiB (--verbose-weights)",
    "nn_macs": "MACs per batch",
    "nn_tops": "TOPS (--verbose-cycle-estimate)",
    "cycles_*": "cycles per batch (--verbose-cycle-estimate)",
    "inference_time_ms": "ms (2 decimals)",
    "inferences_per_second": "1/s",
    "batch_size": "count",
}
