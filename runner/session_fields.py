"""The fields of a session's ``meta.json`` and ``summary.json``, type-checked on read.

A session folder may come from anywhere (a copy, an older or newer etu, a hand edit): every
field etu uses is checked against the type etu writes, and one of another type is dropped
(as if absent) with a note saying which and why, so a listing, a diff, a report or a
comparison never meets a string where it counts cycles. Fields etu does not know are kept
as they are (nothing reads them). The numbers a reader could meet here are finite: the JSON
reader (parsers.files.read_json) refuses NaN and Infinity in ``meta.json``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

Check = Callable[[Any], bool]
LATEST_TIME = 253402300799.0  # 9999-12-31T23:59:59Z: past it, the C library cannot show a date


def _int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _time(value: Any) -> bool:
    return _number(value) and 0 <= value <= LATEST_TIME


def _str(value: Any) -> bool:
    return isinstance(value, str)


def _bool(value: Any) -> bool:
    return isinstance(value, bool)


def _dict(value: Any) -> bool:
    return isinstance(value, dict)


def _list(value: Any) -> bool:
    return isinstance(value, list)


def _str_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


_EXPECTED = {
    _int: "a whole number",
    _number: "a finite number",
    _time: "a time (seconds since 1970, up to the year 9999)",
    _str: "a string",
    _bool: "true or false",
    _dict: "an object",
    _list: "a list",
    _str_list: "a list of strings",
}


def _kind(value: Any) -> str:
    if value is True or value is False:
        return "a boolean"
    names = {int: "a whole number", float: "a number", str: "a string", list: "a list",
             dict: "an object"}  # fmt: skip
    return names.get(type(value), type(value).__name__)


def _checked(data: dict, fields: dict[str, Check], where: str, notes: list[str]) -> dict:
    """``data`` with each field of ``fields`` that has another type dropped (and noted)."""
    clean = dict(data)
    for key, check in fields.items():
        value = clean.get(key)
        if value is None or check(value):
            continue
        del clean[key]
        notes.append(f"{where}{key} is {_kind(value)}, not {_EXPECTED[check]}; ignored")
    return clean


META_FIELDS: dict[str, Check] = {
    "format": _int, "kind": _str, "started": _time, "ended": _time, "command": _str_list,
    "target": _str, "platform": _str, "simulator": _str, "simulator_found_via": _str,
    "simulated": _bool, "emulated": _bool, "incomplete": _bool, "record_error": _str,
    "elf": _str, "firmware": _str, "elf_sha256": _str, "program": _str,
    "program_sha256": _str, "exit_reason": _str, "proof": _str, "proof_line": _int,
    "returncode": _int, "verdict": _str, "label": _str, "board": _str, "port": _str,
    "baud": _int, "bytes": _dict, "peak_rss_bytes": _int, "summary": _dict,
}  # fmt: skip

FIGURE_FIELDS: dict[str, Check] = {
    "lines": _int, "verdict": _str, "npu_cycles": _int, "cpu_cycles": _int,
    "method_allocator_used": _int, "method_allocator_size": _int, "temp_allocator": _int,
    "outputs": _int, "errors": _int, "inferences": _int, "spread": _dict,
}  # fmt: skip

SUMMARY_FIELDS: dict[str, Check] = {
    "format": _int, "lines": _int, "verdict": _str, "model": _dict, "pmu": _list,
    "allocators": _dict, "outputs": _dict, "errors": _list, "bundleio": _list,
    "etdump_blocks": _int, "output_values": _dict, "npu": _list, "inferences": _list,
    "inference_count": _int,
}  # fmt: skip
NPU_FIELDS: dict[str, Check] = {
    "delegate": _int, "invokes": _int, "failed": _int, "executor": _str, "operations": _int,
    "kinds": _dict, "macs": _int, "bytes_read": _int, "bytes_written": _int, "fallback": _str,
    "error": _str, "operation": _int, "command": _str, "line": _int,
}  # fmt: skip
PMU_FIELDS: dict[str, Check] = {
    "npu_inferences": _int, "npu_cycles": _int, "cpu_cycles": _int, "counters": _dict,
}  # fmt: skip
ALLOCATOR_FIELDS: dict[str, Check] = {
    "method_allocator": _dict, "planned": _int, "loaded": _int, "input": _int,
    "executor": _int, "temp_allocator": _dict,
}  # fmt: skip
ERROR_FIELDS: dict[str, Check] = {"line": _int, "text": _str, "status_name": _str}
OUTPUT_FIELDS: dict[str, Check] = {"dtype": _str, "numel": _int, "values": _list}


def check_figures(figures: Any, where: str = "summary: ") -> tuple[dict, list[str]]:
    """The few figures a listing shows (meta.json's ``summary``, the listing's cache)."""
    notes: list[str] = []
    if not isinstance(figures, dict):
        return {}, [f"{where.rstrip(': ')} is {_kind(figures)}, not an object; ignored"]
    return _checked(figures, FIGURE_FIELDS, where, notes), notes


def check_meta(meta: Any) -> tuple[dict, list[str]]:
    """``meta.json``'s object with its fields type-checked, and a note per field dropped."""
    if not isinstance(meta, dict):
        return {}, [f"is {_kind(meta)}, not a JSON object; ignored"]
    notes: list[str] = []
    clean = _checked(meta, META_FIELDS, "", notes)
    if isinstance(clean.get("summary"), dict):
        clean["summary"], more = check_figures(clean["summary"])
        notes.extend(more)
    return clean, notes


def _int_key(key: Any) -> bool:
    try:
        return int(key) >= 0 and str(int(key)) == key
    except (TypeError, ValueError):
        return False


def check_summary(summary: Any) -> tuple[dict, list[str]]:
    """``summary.json`` (or a re-parse's summary) with every field a reader uses checked:
    the PMU reports, the allocators, the errors, the emulated NPU's invokes and each
    output's values."""
    if not isinstance(summary, dict):
        return {}, [f"is {_kind(summary)}, not a JSON object; ignored"]
    notes: list[str] = []
    clean = _checked(summary, SUMMARY_FIELDS, "", notes)
    reports = []
    for n, report in enumerate(clean.get("pmu") or []):
        if not isinstance(report, dict):
            notes.append(f"pmu[{n}] is {_kind(report)}, not an object; ignored")
            continue
        report = _checked(report, PMU_FIELDS, f"pmu[{n}].", notes)
        counters = report.get("counters") or {}
        report["counters"] = {k: v for k, v in counters.items() if _int(v)}
        if len(report["counters"]) != len(counters):
            notes.append(f"pmu[{n}].counters: counters that are not whole numbers ignored")
        reports.append(report)
    if "pmu" in clean:
        clean["pmu"] = reports
    if "allocators" in clean:
        allocators = _checked(clean["allocators"], ALLOCATOR_FIELDS, "allocators.", notes)
        if isinstance(allocators.get("method_allocator"), dict):
            allocators["method_allocator"] = _checked(
                allocators["method_allocator"], {"used": _int, "size": _int},
                "allocators.method_allocator.", notes,
            )  # fmt: skip
        if isinstance(allocators.get("temp_allocator"), dict):
            allocators["temp_allocator"] = _checked(
                allocators["temp_allocator"], {"size": _int}, "allocators.temp_allocator.", notes
            )
        clean["allocators"] = allocators
    for key, fields in (("errors", ERROR_FIELDS), ("npu", NPU_FIELDS)):
        if key in clean:
            entries = [e for e in clean[key] if isinstance(e, dict)]
            if len(entries) != len(clean[key]):
                notes.append(f"{key}: entries that are not objects ignored")
            clean[key] = [_checked(e, fields, f"{key}[{n}].", notes)
                          for n, e in enumerate(entries)]  # fmt: skip
    if "output_values" in clean:
        outputs = {}
        for key, item in clean["output_values"].items():
            if not _int_key(key) or not isinstance(item, dict):
                notes.append(f"output_values[{key!r}] is not an output (index: object); ignored")
                continue
            outputs[key] = _checked(item, OUTPUT_FIELDS, f"output_values[{key}].", notes)
        clean["output_values"] = outputs
    return clean, notes


__all__ = ["check_figures", "check_meta", "check_summary"]
