"""The Vela report model: what one Vela run's files say, and its ``etu vela --json`` record.

:class:`VelaReport` answers the questions a console asks (cycles, time, memory per area,
configuration); :class:`VelaCall` is one Vela call (one per Ethos-U delegate). Finding and
reading the files is :mod:`etu.parsers.vela`, which fills a report in: the loader depends on
the model, never the other way round, and the JSON contract (:func:`vela_record`) sits beside
the fields it reports.

Every number here is Vela's *estimate* from its performance model, not a measurement, and it
changes between Vela versions: keep :attr:`VelaReport.vela_version` next to it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from etu.parsers.vela_csv import LayerRow, Number, is_finite_number

__all__ = ["CALL_NUMBERS", "HEADLINE_UNITS", "VelaCall", "VelaReport", "vela_record"]

# Headline values and their units, as vela_record()["headline"] reports them.
HEADLINE_UNITS: dict[str, str] = {
    "accelerator": "text, e.g. Ethos_U55_128",
    "system_config": "text",
    "memory_mode": "text",
    "core_clock_hz": "Hz",
    "cycles": "NPU cycles per inference (estimate)",
    "npu_cycles": "NPU compute cycles per inference (estimate)",
    "inference_time_s": "s (estimate)",
    "inferences_per_second": "1/s (estimate)",
    "nn_macs": "MACs per inference",
    "sram_used_kib": "KiB",
    "dram_used_kib": "KiB",
    "on_chip_flash_used_kib": "KiB",
    "off_chip_flash_used_kib": "KiB",
    "flash_used_kib": "KiB (on-chip + off-chip)",
    "sram_needed_kib": "KiB (SRAM + the read-only data Sram_Only maps onto SRAM)",
}


# The numbers a Vela call reports that add up over calls (units as HEADLINE_UNITS).
CALL_NUMBERS = (
    "cycles",
    "nn_macs",
    "sram_used_kib",
    "dram_used_kib",
    "on_chip_flash_used_kib",
    "off_chip_flash_used_kib",
)


@dataclass(slots=True)
class VelaCall:
    """One Vela call: ExecuTorch's Ethos-U flow calls Vela once per delegate, in order.

    Vela overwrites its CSVs on each call (only the last call's summary and per-layer CSV
    remain), so with several calls these come from Vela's stdout (etu's ``vela_stdout.txt``):
    memory rounded to 0.01 KiB, cycles the sum of the call's per-layer ``Op Cycles``.
    """

    index: int
    network: str | None = None
    cycles: Number | None = None
    nn_macs: Number | None = None
    sram_used_kib: Number | None = None
    dram_used_kib: Number | None = None
    on_chip_flash_used_kib: Number | None = None
    off_chip_flash_used_kib: Number | None = None
    npu_operators: int | None = None
    cpu_operators: int | None = None
    layers: list[LayerRow] = field(default_factory=list)
    source: str = "summary"  # "stdout" | "summary" (the report's headline)

    def numbers(self) -> dict[str, Number | None]:
        return {name: getattr(self, name) for name in CALL_NUMBERS}

    def record(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "network": self.network,
            **self.numbers(),
            "npu_operators": self.npu_operators,
            "cpu_operators": self.cpu_operators,
            "layers": len(self.layers),
            "from": self.source,
        }


@dataclass(slots=True)
class VelaReport:
    """Everything read from one Vela run's files.

    ``summaries`` holds every summary CSV row (column → value under its CSV name; units in
    :data:`SUMMARY_UNITS`), ``summary_sources`` the file of each row, and ``primary`` the index
    of the row the headline properties use. ``stdout`` is the last ``Network summary`` block of
    Vela's stdout (keys in :data:`etu.parsers.vela_stdout.STDOUT_SUMMARY_UNITS`), ``per_layer`` the
    per-layer rows (CSV, or the stdout table when there is no CSV: ``per_layer_from``).
    """

    summaries: list[dict[str, Any]] = field(default_factory=list)
    per_layer: list[LayerRow] = field(default_factory=list)
    debug_db: dict[str, list[dict[str, Any]]] | None = None
    stdout: dict[str, Any] | None = None
    vela_version: str | None = None
    npu_operators: int | None = None  # Vela's count; changes with --show-cpu-operations
    cpu_operators: int | None = None
    npu_operator_names: list[str] | None = None  # only with --show-cpu-operations
    cpu_operator_names: list[str] | None = None
    is_estimate: bool = True  # Vela's numbers come from its performance model
    sources: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # what was missing, odd or inconsistent
    errors: list[str] = field(default_factory=list)  # a failed run's error text (from stdout)
    vela_warnings: list[str] = field(default_factory=list)  # Vela's own "Warning ..." lines
    vela_info: list[str] = field(default_factory=list)  # Vela's "Info: ..." lines
    summary_sources: list[str] = field(default_factory=list)
    primary: int = 0
    stdout_summaries: list[dict[str, Any]] = field(default_factory=list)
    per_layer_layout: str | None = None  # "regor" | "legacy"
    per_layer_from: str | None = None  # "csv" | "stdout"
    debug_db_layout: str | None = None  # "regor" | "legacy"
    compiler_core: str | None = None  # "regor" | "legacy", when the files show it
    vela_version_from: str | None = None  # "stdout" | "etu_compile.json"
    compile_record: dict[str, Any] | None = None
    allocation_peak_bytes: list[int] = field(default_factory=list)  # --verbose-allocation
    calls: list[VelaCall] = field(default_factory=list)  # one per Vela call (per delegate)

    # ------------------------------------------------------------------ lookups

    @property
    def summary(self) -> dict[str, Any]:
        """The primary summary row ({} when there is no summary CSV)."""
        if 0 <= self.primary < len(self.summaries):
            return self.summaries[self.primary]
        return {}

    def value(self, key: str) -> Any:
        """A summary value by CSV column name: the CSV first, then Vela's stdout."""
        for table in (self.summary, self.stdout or {}):
            value = table.get(key)
            if value is not None and value != "":
                return value
        return None

    def number(self, key: str) -> Number | None:
        value = self.value(key)
        return value if is_finite_number(value) else None

    def text(self, key: str) -> str | None:
        value = self.value(key)
        return value if isinstance(value, str) and value else None

    # ------------------------------------------------------------------ configuration

    @property
    def accelerator(self) -> str | None:
        """E.g. ``Ethos_U55_128`` (Vela's enum name of ``--accelerator-config``)."""
        return self.text("accelerator_configuration")

    @property
    def system_config(self) -> str | None:
        return self.text("system_config")

    @property
    def memory_mode(self) -> str | None:
        return self.text("memory_mode")

    @property
    def network(self) -> str | None:
        return self.text("network")

    @property
    def core_clock_hz(self) -> Number | None:
        return self.number("core_clock")

    @property
    def weights_storage_area(self) -> str | None:
        return self.text("weights_storage_area")

    @property
    def feature_map_storage_area(self) -> str | None:
        return self.text("feature_map_storage_area")

    # ------------------------------------------------------------------ performance

    @property
    def cycles(self) -> Number | None:
        """Estimated NPU cycles per inference: ``cycles_total``, else Σ per-layer Op Cycles."""
        total = self.number("cycles_total")
        if total is not None:
            return total
        values = [row.cycles for row in self.per_layer]
        if values and all(is_finite_number(v) for v in values):
            return sum(v for v in values if v is not None)
        return None

    @property
    def npu_cycles(self) -> Number | None:
        return self.number("cycles_npu")

    @property
    def inference_time_s(self) -> float | None:
        """Seconds per inference: the CSV's ``inference_time``, else cycles / clock (stdout)."""
        seconds = self.number("inference_time")
        if seconds is not None:
            return float(seconds)
        cycles, clock = self.cycles, self.core_clock_hz
        if cycles is not None and clock:
            return cycles / clock
        ms = self.number("inference_time_ms")
        return ms / 1000 if ms is not None else None

    @property
    def inferences_per_second(self) -> float | None:
        ips = self.number("inferences_per_second")
        if ips is not None:
            return float(ips)
        seconds = self.inference_time_s
        return 1 / seconds if seconds else None

    @property
    def nn_macs(self) -> Number | None:
        return self.number("nn_macs")

    # ------------------------------------------------------------------ memory (KiB, as Vela)

    def memory_used_kib(self, area: str) -> Number | None:
        """Peak usage of ``sram``/``dram``/``on_chip_flash``/``off_chip_flash`` in KiB."""
        return self.number(f"{area}_memory_used")

    def memory_used_bytes(self, area: str) -> int | None:
        """The same in bytes (exact from the CSV; from stdout it is rounded to 0.01 KiB)."""
        kib = self.memory_used_kib(area)
        return round(kib * 1024) if kib is not None else None

    @property
    def sram_used_kib(self) -> Number | None:
        return self.memory_used_kib("sram")

    @property
    def dram_used_kib(self) -> Number | None:
        return self.memory_used_kib("dram")

    @property
    def on_chip_flash_used_kib(self) -> Number | None:
        return self.memory_used_kib("on_chip_flash")

    @property
    def off_chip_flash_used_kib(self) -> Number | None:
        return self.memory_used_kib("off_chip_flash")

    @property
    def flash_used_kib(self) -> Number | None:
        """On-chip + off-chip Flash. Note: in Sram_Only "On-chip Flash" *is* SRAM."""
        parts = [self.on_chip_flash_used_kib, self.off_chip_flash_used_kib]
        known = [p for p in parts if p is not None]
        return sum(known) if known else None

    @property
    def sram_used_bytes(self) -> int | None:
        return self.memory_used_bytes("sram")

    @property
    def sram_needed_kib(self) -> Number | None:
        """SRAM the network occupies. In Sram_Only, Vela 5.x moves the read-only data out of
        "SRAM used" into "On-chip Flash used", but it still lives in SRAM: add it back."""
        sram = self.sram_used_kib
        if sram is None:
            return None
        remapped = self.memory_mode == "Sram_Only" or self.weights_storage_area == "On-chip Flash"
        return sram + (self.on_chip_flash_used_kib or 0) if remapped else sram

    @property
    def failed(self) -> bool:
        """Vela reported an error and left no summary."""
        return bool(self.errors) and not self.summaries and not self.stdout_summaries

    def total(self) -> dict[str, Any]:
        """All of Vela's calls together (a program with several Ethos-U delegates runs each
        per inference): cycles, MACs and memory summed; ``sram_peak_kib`` is the largest
        single call's SRAM (what one delegate at a time needs). A number unknown for any
        call is None (a partial sum would read as the whole)."""
        total: dict[str, Any] = {"calls": len(self.calls)}
        for name in CALL_NUMBERS:
            values = [getattr(call, name) for call in self.calls]
            known = bool(values) and all(is_finite_number(v) for v in values)
            value = sum(v for v in values if v is not None) if known else None
            # KiB from stdout have 2 decimals: keep float sums from reading 1.1400000000000001
            total[name] = round(value, 6) if isinstance(value, float) else value
        srams = [call.sram_used_kib for call in self.calls]
        known = bool(srams) and all(is_finite_number(v) for v in srams)
        total["sram_peak_kib"] = max(v for v in srams if v is not None) if known else None
        cycles, clock = total["cycles"], self.core_clock_hz
        total["inference_time_s"] = cycles / clock if cycles is not None and clock else None
        return total

    def share(self, call: VelaCall) -> float | None:
        """The call's share of all calls' cycles, in % (None when unknown)."""
        whole = self.total()["cycles"]
        if call.cycles is None or not whole:
            return None
        return 100 * call.cycles / whole

    def headline(self) -> dict[str, Any]:
        """The values a console shows first (units in :data:`HEADLINE_UNITS`)."""
        return {
            "accelerator": self.accelerator,
            "system_config": self.system_config,
            "memory_mode": self.memory_mode,
            "core_clock_hz": self.core_clock_hz,
            "cycles": self.cycles,
            "npu_cycles": self.npu_cycles,
            "inference_time_s": self.inference_time_s,
            "inferences_per_second": self.inferences_per_second,
            "nn_macs": self.nn_macs,
            "sram_used_kib": self.sram_used_kib,
            "dram_used_kib": self.dram_used_kib,
            "on_chip_flash_used_kib": self.on_chip_flash_used_kib,
            "off_chip_flash_used_kib": self.off_chip_flash_used_kib,
            "flash_used_kib": self.flash_used_kib,
            "sram_needed_kib": self.sram_needed_kib,
        }


# --------------------------------------------------------------------------- JSON record


def vela_record(report: VelaReport) -> dict[str, Any]:
    """The ``etu vela PATH --json`` object. Field names are a contract.

    ``summaries`` (every CSV column under its CSV name), ``per_layer`` (rows, [] when absent),
    ``npu_operators``/``cpu_operators`` (null when unknown) and ``vela_version`` (or null) are
    fixed; the rest is extra. NaN/infinite numbers become null (JSON has no NaN) and are listed
    in ``warnings``.
    """
    non_finite: list[str] = []
    record: dict[str, Any] = {
        "summaries": [
            _json_safe(row, f"summaries[{i}]", non_finite) for i, row in enumerate(report.summaries)
        ],
        "per_layer": [
            _json_safe(dict(row), "per_layer[*]", non_finite) for row in report.per_layer
        ],
        "npu_operators": report.npu_operators,
        "cpu_operators": report.cpu_operators,
        "vela_version": report.vela_version,
        "estimate": report.is_estimate,
        "headline": _json_safe(report.headline(), "headline", non_finite),
        "headline_units": HEADLINE_UNITS,
        "vela_version_from": report.vela_version_from,
        "compiler_core": report.compiler_core,
        "failed": report.failed,
        "errors": list(report.errors),
        "vela_warnings": list(report.vela_warnings),
        "vela_info": list(report.vela_info),
        "sources": list(report.sources),
        "summary_sources": list(report.summary_sources),
        "primary_summary": report.primary if report.summaries else None,
        "per_layer_layout": report.per_layer_layout,
        "per_layer_from": report.per_layer_from,
        "npu_operator_names": report.npu_operator_names,
        "cpu_operator_names": report.cpu_operator_names,
        "debug_db": (
            None
            if report.debug_db is None
            else {
                "layout": report.debug_db_layout,
                "tables": {name: len(rows) for name, rows in report.debug_db.items()},
            }
        ),
        "calls": [
            _json_safe(call.record(), f"calls[{call.index}]", non_finite) for call in report.calls
        ],
        "total": _json_safe(report.total(), "total", non_finite),
        "stdout_summary": (
            None if report.stdout is None else _json_safe(report.stdout, "stdout", non_finite)
        ),
    }
    warnings = list(report.warnings)
    for where in dict.fromkeys(non_finite):
        warnings.append(f"{where} is not a finite number; written as null")
    record["warnings"] = warnings
    return record


def _json_safe(value: Any, where: str, non_finite: list[str]) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        non_finite.append(where)
        return None
    if isinstance(value, dict):
        return {str(k): _json_safe(v, f"{where}.{k}", non_finite) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v, where, non_finite) for v in value]
    return value
