"""What changed between two runs, two programs or two Vela estimates (``etu diff``).

Sessions: the ending, every PMU counter and cycle count, the allocators, each output
(max/mean absolute difference, cosine similarity), the measured NPU cycles per layer (when
both kept an FVP PMU trace: runner/npu_layers.py) and the first log line where the two
runs part, with timestamps and other volatile text (addresses, durations) masked. The logs
are streamed line by line side by side, so two million-line sessions cost two file reads
and no more memory than two lines; the figures come from ``summary.json`` (or a one-pass
re-parse for sessions recorded before it existed).

Equality (the exit status) uses numpy's rule ``|a - b| <= atol + rtol * |b|`` for every
number, exact equality for text, and the logs with every number masked (numbers are
compared through the figures, within the tolerances).
"""

from __future__ import annotations

import contextlib
import math
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from etu.parsers.errors import ParseError
from etu.parsers.files import read_pieces
from etu.runner.history import load_summary, read_meta, session_row, workspace_programs
from etu.runner.session import LOG_CAP, RAW

# Text in a log line that differs between identical runs.
VOLATILE = re.compile(
    rb"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?"  # ISO time
    rb"|\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?"  # clock time
    rb"|^\[\s*\d+(?:\.\d+)?\]"  # [  12.345678] uptime prefix
    rb"|\b0x[0-9a-fA-F]+"  # addresses
    rb"|\b\d+(?:\.\d+)?\s?(?:s|ms|us|\xc2\xb5s|ns)\b"  # durations (\xc2\xb5: UTF-8 mu)
)
# A timestamp that starts a line ("[00:00:01.234,000] ", "[  12.345678] ", ISO, clock time):
# tried first, anchored, so a log stamped on every line costs one cheap match per line.
STAMP_PREFIX = re.compile(
    rb"\s*(?:\[[\d\s.:,+-]{1,40}\]"
    rb"|\d{4}-\d{2}-\d{2}[T ][\d:.,]+(?:Z|[+-]\d{2}:?\d{2})?"
    rb"|\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?)\s*"
)
NUMBER = re.compile(rb"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
PIECE = 1 << 16  # bytes of a line compared at once (a line longer than this, in pieces)


@dataclass(frozen=True, slots=True)
class Tolerance:
    rtol: float = 1e-5
    atol: float = 1e-8

    def close(self, a: float | None, b: float | None) -> bool:
        if a is None or b is None:
            return a is b
        return abs(a - b) <= self.atol + self.rtol * abs(b)


class DiffError(Exception):
    """An input that cannot be compared; one line."""


def _delta(name: str, a: Any, b: Any, tol: Tolerance) -> dict[str, Any]:
    numeric = all(isinstance(v, int | float) and not isinstance(v, bool) for v in (a, b))
    delta = b - a if numeric else None
    percent = (delta / a * 100 if a else None) if numeric else None
    equal = tol.close(a, b) if numeric else a == b
    return {
        "name": name,
        "a": a,
        "b": b,
        "delta": delta,
        "percent": None if percent is None else round(percent, 4),
        "equal": equal,
    }


# --------------------------------------------------------------------------- sessions


def _pmu(summary: dict) -> dict:
    reports = summary.get("pmu") or []
    return reports[-1] if reports else {}


def _allocators(summary: dict) -> dict[str, int | None]:
    allocators = summary.get("allocators") or {}
    method = allocators.get("method_allocator") or {}
    temp = allocators.get("temp_allocator") or {}
    return {
        "method_allocator_used": method.get("used"),
        "method_allocator_size": method.get("size"),
        "planned": allocators.get("planned"),
        "loaded": allocators.get("loaded"),
        "input": allocators.get("input"),
        "executor": allocators.get("executor"),
        "temp_allocator": temp.get("size"),
    }


def compare_outputs(a: dict, b: dict, tol: Tolerance) -> list[dict[str, Any]]:
    """Per output index: sizes, max/mean absolute difference and cosine similarity."""
    result = []
    for index in sorted(set(a) | set(b), key=lambda k: int(k)):
        left = [_as_float(v) for v in (a.get(index) or {}).get("values") or []]
        right = [_as_float(v) for v in (b.get(index) or {}).get("values") or []]
        n = min(len(left), len(right))
        diffs = [abs(x - y) for x, y in zip(left[:n], right[:n], strict=True)]
        dot = sum(x * y for x, y in zip(left[:n], right[:n], strict=True))
        norm = math.sqrt(sum(x * x for x in left[:n])) * math.sqrt(sum(y * y for y in right[:n]))
        both_zero = not any(left[:n]) and not any(right[:n])
        cosine = dot / norm if norm else (1.0 if both_zero else 0.0)
        numel_a = (a.get(index) or {}).get("numel")
        numel_b = (b.get(index) or {}).get("numel")
        close = all(tol.close(x, y) for x, y in zip(left[:n], right[:n], strict=True))
        result.append(
            {
                "index": int(index),
                "numel_a": numel_a,
                "numel_b": numel_b,
                "compared": n,
                "max_abs_diff": max(diffs) if diffs else None,
                "mean_abs_diff": sum(diffs) / n if n else None,
                "cosine_similarity": round(cosine, 9),
                "equal": close and numel_a == numel_b and len(left) == len(right),
            }
        )
    return result


def _as_float(value: Any) -> float:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        return float(value) if math.isfinite(value) else 0.0
    return 0.0


def first_divergence(a: Path, b: Path) -> tuple[dict | None, bool]:
    """The first line where the logs part with volatile text masked (or None), and whether
    they also part with every number masked (text changed, not just figures).

    Lines are compared in pieces of at most PIECE bytes (parsers.files.read_pieces), so a log
    without a newline (a device that never sent one) costs two pieces of memory, not its
    size; a divergence shows the piece where the lines part. Raises ParseError when a log is
    not a regular file of at most LOG_CAP bytes."""
    found: dict | None = None
    text_differs = False
    pieces = [read_pieces(p, "a session log", LOG_CAP, PIECE, follow=False) for p in (a, b)]
    with contextlib.closing(pieces[0]) as left, contextlib.closing(pieces[1]) as right:
        number = 1  # the line the next pieces belong to
        at_start = True  # whether they start it
        for (x, x_ends), (y, y_ends) in zip(left, right):  # noqa: B905 (lengths differ)
            line, starts = number, at_start
            if x_ends == y_ends:
                number += x_ends
                at_start = x_ends
                if x == y:
                    continue
                sx, sy = (STAMP_PREFIX.match(x), STAMP_PREFIX.match(y)) if starts else (None, None)
                if sx and sy and x[sx.end() :] == y[sy.end() :]:
                    continue
                mx = VOLATILE.sub(b"~", x.rstrip(b"\r\n"))
                my = VOLATILE.sub(b"~", y.rstrip(b"\r\n"))
                if mx == my:
                    continue
                if found is None:
                    found = {"line": line, "a": _text(x), "b": _text(y)}
                if NUMBER.sub(b"#", mx) != NUMBER.sub(b"#", my):
                    text_differs = True
                    break
                continue
            # One line ends where the other goes on: they part here, and so does the text.
            if found is None:
                found = {"line": line, "a": _text(x), "b": _text(y)}
            text_differs = True
            break
        rest_a, rest_b = next(left, None), next(right, None)
        if (rest_a or rest_b) and not text_differs:
            text_differs = True
            if found is None:
                found = {
                    "line": number,
                    "a": _text(rest_a[0]) if rest_a else None,
                    "b": _text(rest_b[0]) if rest_b else None,
                }
    return found, text_differs


def _text(line: bytes) -> str:
    return line.rstrip(b"\r\n").decode("utf-8", "replace")


def diff_sessions(a: Path, b: Path, tol: Tolerance | None = None) -> dict[str, Any]:
    """The ``etu diff A B --json`` object for two session folders. A file of either that
    cannot be read is a DiffError naming it (one line)."""
    try:
        return _diff_sessions(a, b, tol or Tolerance())
    except ParseError as error:
        raise DiffError(str(error)) from None


def _diff_sessions(a: Path, b: Path, tol: Tolerance) -> dict[str, Any]:
    meta_a, meta_b = read_meta(a), read_meta(b)
    if not meta_a and not os.path.lexists(a / RAW):
        raise DiffError(f"{a}: not a recorded session")
    if not meta_b and not os.path.lexists(b / RAW):
        raise DiffError(f"{b}: not a recorded session")
    sum_a, sum_b = load_summary(a, meta_a), load_summary(b, meta_b)
    programs = {}
    if not (meta_a.get("program") and meta_b.get("program")):
        programs = workspace_programs(a.parent.parent.parent)  # WORKSPACE/.etu/sessions/A
    row_a = session_row(a, meta_a, {}, programs).to_json()
    row_b = session_row(b, meta_b, {}, programs).to_json()
    pmu_a, pmu_b = _pmu(sum_a), _pmu(sum_b)
    cycles = [
        _delta(name, pmu_a.get(name), pmu_b.get(name), tol)
        for name in ("npu_cycles", "cpu_cycles", "npu_inferences")
    ]
    counters_a, counters_b = pmu_a.get("counters") or {}, pmu_b.get("counters") or {}
    counters = [
        _delta(name, counters_a.get(name), counters_b.get(name), tol)
        for name in dict.fromkeys([*counters_a, *counters_b])
    ]
    alloc_a, alloc_b = _allocators(sum_a), _allocators(sum_b)
    allocators = [_delta(name, alloc_a[name], alloc_b[name], tol) for name in alloc_a]
    outputs = compare_outputs(
        sum_a.get("output_values") or {}, sum_b.get("output_values") or {}, tol
    )
    layers = layer_deltas(_session_layers(a, meta_a), _session_layers(b, meta_b), tol)
    diverge, text_differs = (None, False)
    if os.path.lexists(a / RAW) and os.path.lexists(b / RAW):
        diverge, text_differs = first_divergence(a / RAW, b / RAW)
    ending = {
        "a": row_a["ending"]["reason"],
        "b": row_b["ending"]["reason"],
        "a_proof": row_a["ending"]["proof"],
        "b_proof": row_b["ending"]["proof"],
        "changed": row_a["ending"]["reason"] != row_b["ending"]["reason"],
    }
    equal = (
        not ending["changed"]
        and all(item["equal"] for item in [*cycles, *counters, *allocators, *outputs, *layers])
        and not text_differs
    )
    return {
        "kind": "sessions",
        "a": _side(row_a),
        "b": _side(row_b),
        "ending": ending,
        "cycles": cycles,
        "counters": counters,
        "allocators": allocators,
        "outputs": outputs,
        "npu_layers": layers,
        "first_divergence": diverge,
        "log_text_differs": text_differs,
        "losses": session_losses(a, b),
        "tolerance": {"rtol": tol.rtol, "atol": tol.atol},
        "equal": equal,
    }


def _session_layers(folder: Path, meta: dict) -> list[dict] | None:
    """A session's measured NPU cycles per layer (its PMU trace), None without one."""
    from etu.runner.npu_layers import session_layers

    found = session_layers(folder, meta)
    return found.layers if found is not None else None


def layer_deltas(a: list[dict] | None, b: list[dict] | None, tol: Tolerance) -> list[dict]:
    """Measured cycles per layer of two runs, matched by delegate and name in A's order
    (a layer only one side has is a change too); Vela's estimate rides along. Only when
    both runs kept a PMU trace: a run without one (an older session, a board, the emulated
    board) has nothing per layer to compare."""
    if not a or not b:
        return []

    def keyed(layers: list[dict] | None) -> dict[tuple, dict]:
        found: dict[tuple, dict] = {}
        for layer in layers or []:
            key = (layer.get("delegate"), layer.get("name"))
            while key in found:  # the same operation twice: tell them apart by position
                key = (*key, len(found))
            found[key] = layer
        return found

    side_a, side_b = keyed(a), keyed(b)
    rows = []
    for key in dict.fromkeys([*side_a, *side_b]):
        one, two = side_a.get(key) or {}, side_b.get(key) or {}
        row = _delta(str(key[1]), one.get("measured_cycles"), two.get("measured_cycles"), tol)
        row["delegate"] = key[0]
        row["estimated_cycles"] = two.get("estimated_cycles", one.get("estimated_cycles"))
        rows.append(row)
    return rows


def loss_summary(row: dict) -> dict[str, Any]:
    """One output of a saved comparison, both losses: the verdict, deployment (reference →
    target) and quantisation (float model → reference) figures."""
    keys = ("passed", "count", "differing", "max_lsb", "integer_dtype", "max_abs_error",
            "snr_db", "cosine_similarity")  # fmt: skip

    def side(record: Any) -> dict | None:
        return {k: record.get(k) for k in keys} if isinstance(record, dict) else None

    return {"verdict": row.get("verdict"), "deployment": side(row.get("deployment") or row),
            "quantization": side(row.get("quantization"))}  # fmt: skip


def session_losses(a: Path, b: Path) -> list[dict[str, Any]]:
    """Per output, each session's saved host comparison (``compare.json``, written by ``etu
    compare`` and the console) as its two losses; None for a session never compared."""
    from etu.runner.compare import load_comparison

    sides = {}
    for name, folder in (("a", a), ("b", b)):
        record = load_comparison(folder)
        rows = (record or {}).get("outputs") or []
        sides[name] = {row.get("index"): loss_summary(row) for row in rows
                       if isinstance(row, dict)}  # fmt: skip
        sides[name + "_compared"] = record is not None
    indices = sorted({i for i in (*sides["a"], *sides["b"]) if isinstance(i, int)})
    return [
        {"index": i,
         "a": sides["a"].get(i) if sides["a_compared"] else None,
         "b": sides["b"].get(i) if sides["b_compared"] else None}
        for i in indices
    ]  # fmt: skip


def _side(row: dict) -> dict:
    keys = ("id", "folder", "kind", "target", "program", "firmware", "started_text", "format")
    return {key: row[key] for key in keys}


# --------------------------------------------------------------------------- programs


def program_facts(path: Path) -> dict[str, Any]:
    from etu.parsers.errors import ParseError
    from etu.parsers.program_facts import inspect_record
    from etu.parsers.pte import open_program

    try:
        with open_program(path) as program:
            return inspect_record(program)
    except ParseError as error:
        raise DiffError(str(error.with_source(str(path)))) from None
    except OSError as error:
        raise DiffError(f"{path}: {error.strerror or error}") from None


def _split(record: dict) -> dict[str, int]:
    plans = record["plans"]
    return {
        "delegate_calls": sum(p["delegate_calls"] for p in plans),
        "kernel_calls": sum(p["kernel_calls"] for p in plans),
    }


def _delegates(record: dict) -> list[dict]:
    found = []
    for plan in record["plans"]:
        for d in plan["delegates"]:
            ethosu = d.get("ethosu") or {}
            found.append(
                {
                    "plan": plan["name"],
                    "index": d["index"],
                    "id": d["id"],
                    "payload_size": d["payload_size"],
                    "payload_location": d["payload_location"],
                    "npu_target": ethosu.get("npu_target"),
                    "command_stream_size": ethosu.get("command_stream_size"),
                    "weights_size": ethosu.get("weights_size"),
                    "scratch_size": ethosu.get("scratch_size"),
                }
            )
    return found


def diff_programs(a: Path, b: Path, tol: Tolerance | None = None) -> dict[str, Any]:
    """Two ``.pte`` programs: operators, NPU/CPU split, delegates, memory, constants."""
    tol = tol or Tolerance()
    ra, rb = program_facts(a), program_facts(b)
    ops_a = {op for plan in ra["plans"] for op in plan["operators"]}
    ops_b = {op for plan in rb["plans"] for op in plan["operators"]}
    cpu_a = {op["name"] for op in ra["cpu_operators"]}
    cpu_b = {op["name"] for op in rb["cpu_operators"]}
    split_a, split_b = _split(ra), _split(rb)
    split = [_delta(k, split_a[k], split_b[k], tol) for k in split_a]
    dels_a, dels_b = _delegates(ra), _delegates(rb)
    delegates = []
    for i in range(max(len(dels_a), len(dels_b))):
        left = dels_a[i] if i < len(dels_a) else None
        right = dels_b[i] if i < len(dels_b) else None
        fields = [k for k in (left or right or {}) if k not in ("plan", "index")]
        changes = [
            _delta(k, (left or {}).get(k), (right or {}).get(k), tol)
            for k in fields
            if (left or {}).get(k) != (right or {}).get(k)
        ]
        delegates.append({"index": i, "a": left, "b": right, "changes": changes})
    memory = []
    plans = dict.fromkeys([p["name"] for p in ra["plans"]] + [p["name"] for p in rb["plans"]])
    for name in plans:
        pa = next((p for p in ra["plans"] if p["name"] == name), {})
        pb = next((p for p in rb["plans"] if p["name"] == name), {})
        ma, mb = pa.get("planned_memory") or {}, pb.get("planned_memory") or {}
        for mem_id in sorted(set(ma) | set(mb), key=int):
            memory.append(_delta(f"{name}.mem_id {mem_id}", ma.get(mem_id), mb.get(mem_id), tol))
    sizes = [
        _delta("file_size", ra["file_size"], rb["file_size"], tol),
        _delta("constant_data_size", ra["constant_data_size"], rb["constant_data_size"], tol),
    ]
    operators = {
        "added": sorted(ops_b - ops_a),
        "removed": sorted(ops_a - ops_b),
        "cpu_added": sorted(cpu_b - cpu_a),
        "cpu_removed": sorted(cpu_a - cpu_b),
    }
    equal = (
        not any(operators.values())
        and all(item["equal"] for item in [*split, *memory, *sizes])
        and all(not d["changes"] and d["a"] and d["b"] for d in delegates)
        and ra["select_ops_list"] == rb["select_ops_list"]
    )
    return {
        "kind": "programs",
        "a": _program_side(a, cpu_a, ra),
        "b": _program_side(b, cpu_b, rb),
        "operators": operators,
        "split": split,
        "delegates": delegates,
        "planned_memory": memory,
        "sizes": sizes,
        "tolerance": {"rtol": tol.rtol, "atol": tol.atol},
        "equal": equal,
    }


def _program_side(path: Path, cpu: set[str], record: dict) -> dict:
    return {
        "file": str(path),
        "cpu_operators": sorted(cpu),
        "select_ops_list": record["select_ops_list"],
        "split": _split(record),
    }


# --------------------------------------------------------------------------- Vela

VELA_METRICS = (
    ("accelerator", "accelerator"),
    ("system_config", "system config"),
    ("memory_mode", "memory mode"),
    ("core_clock_hz", "clock"),
    ("cycles", "cycles"),
    ("npu_cycles", "NPU cycles"),
    ("inference_time_s", "inference"),
    ("inferences_per_second", "inferences/s"),
    ("nn_macs", "MACs"),
    ("sram_used_kib", "SRAM"),
    ("flash_used_kib", "flash"),
    ("dram_used_kib", "DRAM"),
)


def load_vela(path: Path):
    from etu.parsers.errors import ParseError
    from etu.parsers.vela import load_vela_report

    try:
        return load_vela_report(path)
    except ParseError as error:
        raise DiffError(str(error)) from None
    except OSError as error:
        raise DiffError(f"{path}: {error.strerror or error}") from None


def diff_vela(a: Path, b: Path, tol: Tolerance | None = None) -> dict[str, Any]:
    """The NPU tab's compare (the headline numbers, changes against A) as JSON."""
    tol = tol or Tolerance()
    va, vb = load_vela(a), load_vela(b)
    ha, hb = va.headline(), vb.headline()
    pairs = [(key, label, ha.get(key), hb.get(key)) for key, label in VELA_METRICS]
    pairs += [
        ("npu_operators", "NPU operators", va.npu_operators, vb.npu_operators),
        ("cpu_operators", "CPU operators", va.cpu_operators, vb.cpu_operators),
        ("vela_version", "Vela", va.vela_version, vb.vela_version),
    ]
    metrics = [_delta(key, x, y, tol) | {"label": label} for key, label, x, y in pairs]
    return {
        "kind": "vela",
        "a": {"path": str(a), "failed": va.failed, "estimate": va.is_estimate},
        "b": {"path": str(b), "failed": vb.failed, "estimate": vb.is_estimate},
        "metrics": metrics,
        "tolerance": {"rtol": tol.rtol, "atol": tol.atol},
        "equal": all(m["equal"] for m in metrics) and va.failed == vb.failed,
    }


__all__ = [
    "DiffError",
    "Tolerance",
    "compare_outputs",
    "diff_programs",
    "diff_sessions",
    "diff_vela",
    "first_divergence",
]
