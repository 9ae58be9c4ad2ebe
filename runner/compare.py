"""Outputs of a recorded run against a reference: the host runtime or saved arrays.

The target's outputs are the runner's ``Output[i][j]`` lines (the upstream runner prints
every element of Float/Int/Char/Bool outputs, floats with ``%f``: six decimals, so a
perfect match differs from the host by up to 5e-7). The host reference
(:mod:`etu.runner.reference`, imported lazily) is the same program run on the host on the same
inputs as the runner, every input filled with ones: its CPU kernels by ExecuTorch's host
runtime, each Ethos-U delegate by the TOSA reference model. Integer outputs are compared
exactly (elements that differ, the largest difference in LSBs); float outputs within the
tolerances. A session the etu stand-in FVP recorded is marked ``simulated``.

Three sides per output (issue 22 §2): the float model (kept by etu's compile), the quantised
reference and the target. **quantization** = float model → reference, **deployment** =
reference → target, each with the metrics above plus exact-integer counts: an integer output
compares as it is, a float output the program dequantizes from integers (its scale and zero
point, :mod:`etu.runner.io_quantization`) in those integers. The record is also written to the
session folder (``compare.json``) for ``etu report`` and ``etu diff``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

from etu.runner.session import EVENTS, read_session

DEFAULT_RTOL = 1e-3
DEFAULT_ATOL = 1e-5
PRINT_RESOLUTION = 5e-7  # %f rounding
INTEGER_DTYPES = {"Byte", "Char", "Short", "Int", "Long", "UInt16", "UInt32", "UInt64"}
SIMULATED_NOTE = (
    "SIMULATED: the etu stand-in FVP printed these outputs; no model of the hardware computed "
    "them, so this comparison proves nothing"
)


COMPARE_RECORD = "compare.json"  # the last host comparison, in the session folder
ONES_INPUTS = {"kind": "ones", "source": "all ones (fallback)"}  # the runner's own inputs


class CompareError(RuntimeError):
    """One line: what cannot be compared and why."""


@dataclass
class HostReference:
    """What the host reference gives ``etu compare``: each output's values, what made
    them, the output dtypes, notes, and the float model's outputs (or why there are none)."""

    outputs: list[list[float]]
    source: str
    dtypes: list[str]
    notes: list[str] = field(default_factory=list)
    float_outputs: list[list[float]] | None = None
    float_note: str | None = None


@dataclass(frozen=True)
class OutputComparison:
    index: int
    count: int  # elements compared
    numel: int | None  # elements the output has (None when unknown)
    max_abs_error: float
    mean_abs_error: float
    rmse: float
    cosine_similarity: float | None
    snr_db: float | None  # None: no error at all (infinite)
    worst_index: int
    passed: bool
    note: str | None = None
    differing: int | None = None  # integer outputs: elements not exactly the reference's
    max_lsb: int | None = None  # integer outputs: the largest difference, in LSBs

    def to_json(self) -> dict:
        return asdict(self)


def metrics(
    index: int,
    target: list[float],
    reference: list[float],
    *,
    rtol: float,
    atol: float,
    numel: int | None = None,
) -> OutputComparison:
    """Per-output error metrics (ST Edge AI's validate is the anchor) and allclose pass/fail."""
    count = min(len(target), len(reference))
    if count == 0:
        raise CompareError(f"output {index}: nothing to compare")
    errors = [abs(t - r) for t, r in zip(target[:count], reference[:count], strict=True)]
    worst = max(range(count), key=errors.__getitem__)
    sq_err = sum(e * e for e in errors)
    sq_ref = sum(r * r for r in reference[:count])
    sq_tgt = sum(t * t for t in target[:count])
    dot = sum(t * r for t, r in zip(target[:count], reference[:count], strict=True))
    cosine = dot / math.sqrt(sq_ref * sq_tgt) if sq_ref > 0 and sq_tgt > 0 else None
    if sq_err == 0:
        snr = None
    elif sq_ref == 0:
        snr = -math.inf
    else:
        snr = 10 * math.log10(sq_ref / sq_err)
    passed = all(e <= atol + rtol * abs(r) for e, r in zip(errors, reference[:count], strict=True))
    note = None
    if len(target) != len(reference):
        note = f"target printed {len(target)} values, reference has {len(reference)}"
        passed = False
    return OutputComparison(
        index=index, count=count, numel=numel, max_abs_error=max(errors),
        mean_abs_error=sum(errors) / count, rmse=math.sqrt(sq_err / count),
        cosine_similarity=cosine, snr_db=snr, worst_index=worst, passed=passed, note=note,
    )  # fmt: skip


def session_outputs(folder: Path) -> tuple[dict[int, dict], dict]:
    """``{output index: OutputTensor event}`` of the session's last inference, and its meta.
    A session file that cannot be read, or an output whose fields have the wrong types, is
    a CompareError naming it."""
    from etu.parsers.errors import ParseError

    try:
        session = read_session(Path(folder), with_log=False)  # the events are enough
    except ParseError as error:
        raise CompareError(str(error)) from None
    outputs: dict[int, dict] = {}
    for event in session.events:
        if event.get("type") == "OutputTensor":
            problem = _output_problem(event)
            if problem is not None:
                raise CompareError(f"{Path(folder) / EVENTS}: an OutputTensor event {problem}")
            outputs[event["index"]] = event
    if not outputs:
        raise CompareError(f"{folder}: the run printed no Output[i][j] lines")
    return outputs, session.meta


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _output_problem(event: dict) -> str | None:
    """What is wrong with an OutputTensor event's fields (None: nothing)."""
    index, values = event.get("index"), event.get("values")
    if not _whole(index) or index < 0:
        return f"has index {index!r:.40}, not a whole number"
    if not isinstance(values, list):
        return f"(output {index}) has values that are not a list"
    if not all(v is None or isinstance(v, int | float) for v in values):
        return f"(output {index}) has values that are not numbers"
    for key in ("numel", "printed"):
        if event.get(key) is not None and not _whole(event.get(key)):
            return f"(output {index}) has {key} {event.get(key)!r:.40}, not a whole number"
    return None


def firmware_options(meta: dict) -> dict:
    """The build options of the firmware a session ran (``etu_firmware.json`` beside the
    ELF, written by ``etu firmware build``); {} when it was not built by etu."""
    elf = meta.get("elf")
    if not isinstance(elf, str):
        return {}
    from etu.runner.runtime_build import firmware_options as recorded_options

    return recorded_options(Path(elf))


def session_program(meta: dict) -> Path | None:
    """The program a session ran: its meta's ``program``, else the one the firmware was
    built for."""
    named = meta.get("program")
    if isinstance(named, str) and Path(named).is_absolute():
        return Path(named)
    program = firmware_options(meta).get("program")  # where etu built the firmware from
    if isinstance(program, str):
        return Path(program)
    return Path(named) if isinstance(named, str) else None  # a name in the workspace


def compare_in_child(folder: Path, *, timeout: float = 600.0) -> dict:
    """``compare_session(folder)`` in an isolated child process: the console compares
    without importing torch and ExecuTorch itself. Raises CompareError with one line."""
    from etu.runner.isolated import ChildError, json_child

    try:
        return json_child("etu.runner.compare", str(folder), what="the host reference",
                          timeout=timeout, preload="etu.runner.reference")  # fmt: skip
    except ChildError as error:
        raise CompareError(str(error)) from None


def input_specs(pte: Path) -> list[tuple[tuple[int, ...], str]]:
    """(shape, dtype) of the forward method's tensor inputs, from etu's decoder."""
    from etu.parsers.pte import Tensor, open_program

    with open_program(pte) as program:
        plan = program.plans[0]
        return [
            (tuple(plan.values[i].sizes), plan.values[i].dtype)
            for i in plan.inputs
            if isinstance(plan.values[i], Tensor)
        ]


def host_reference(pte: Path, inputs: list | None = None) -> list[list[float]]:
    """The program run whole by ExecuTorch's host runtime (with its quantized kernels);
    inputs all ones unless given."""
    import torch

    from etu.runner.reference import host_runtime
    from etu.runner.tosa_graphs import quiet_stdout

    runtime = host_runtime()
    if inputs is None:
        inputs = [
            torch.ones(shape, dtype=getattr(torch, _TORCH_DTYPES.get(dtype, "float32")))
            for shape, dtype in input_specs(pte)
        ]
    with quiet_stdout():
        module = runtime._load_for_executorch(str(pte))
        results = module.run_method("forward", tuple(inputs))
    return [_flat(r) for r in results]


def npy_reference(paths: list[Path]) -> list[list[float]]:
    import numpy

    return [numpy.load(path).astype("float64").reshape(-1).tolist() for path in paths]


def compare_session(
    folder: Path,
    *,
    reference: str | list[Path] = "host",
    pte: Path | None = None,
    rtol: float = DEFAULT_RTOL,
    atol: float = DEFAULT_ATOL,
    tosa: Path | None = None,
    save: bool = True,
) -> dict:
    """The ``etu compare --json`` record (``save``: also written to the session folder)."""
    outputs, meta = session_outputs(folder)
    if pte is not None and not Path(pte).is_file():
        raise CompareError(f"{pte}: no such program file")
    program = _program_of(folder, meta, pte)
    inputs = session_inputs(meta)
    if reference == "host":
        if inputs["kind"] == "bundle":
            raise CompareError(
                f"{folder}: a BundleIO run whose inputs etu did not record (firmware built "
                "before etu kept them): the runner checked its outputs on the target; see its "
                "verdict, rebuild with --inputs, or pass --reference"
            )
        if program is None:
            raise CompareError(
                f"{folder}: the session names no program file; pass --pte PROGRAM.pte"
            )
        # CPU kernels by ExecuTorch's host runtime, Ethos-U delegates by the TOSA reference
        from etu.runner.reference import compare_reference

        host = compare_reference(program, tosa, inputs=inputs_file(inputs))
    else:
        host = HostReference(
            npy_reference(list(reference)),
            "files: " + ", ".join(str(p) for p in reference), [],
            float_note="not known: the reference is saved arrays, not the host reference",
        )  # fmt: skip
    refs, dtypes = host.outputs, host.dtypes
    quantization = io_quantization_of(program)
    output_quantization = {q["index"]: q for q in quantization if q["kind"] == "output"}
    simulated = bool(meta.get("simulated"))
    results, rows = [], []
    for index in sorted(outputs):
        if index >= len(refs):
            raise CompareError(f"output {index}: the reference has only {len(refs)} outputs")
        event = outputs[index]
        values = [math.nan if v is None else float(v) for v in event["values"]]
        result = metrics(index, values, refs[index], rtol=rtol, atol=atol,
                         numel=event.get("numel"))  # fmt: skip
        dtype = dtypes[index] if index < len(dtypes) else None
        grid = output_quantization.get(index)
        if dtype in INTEGER_DTYPES:  # exact, in LSBs
            from etu.runner.reference import integer_comparison

            exact = integer_comparison(values, refs[index])
            result = OutputComparison(**{**asdict(result), **exact, "passed": (
                exact["differing"] == 0 and len(values) == len(refs[index]))})  # fmt: skip
        if event.get("printed") is not None and event.get("numel") not in (None, len(values)):
            result = OutputComparison(**{**asdict(result), "note": (
                f"the runner printed {len(values)} of {event.get('numel')} elements; "
                "compared what was printed")})  # fmt: skip
        results.append(result)
        deployment = result.to_json()
        if deployment["differing"] is None and _has_grid(grid):
            deployment.update(grid_comparison(values, refs[index], grid))
        floats = None
        if host.float_outputs is not None and index < len(host.float_outputs):
            floats = quantization_comparison(index, refs[index], host.float_outputs[index],
                                             dtype, grid, rtol=rtol, atol=atol)  # fmt: skip
        row = {**result.to_json(), "dtype": dtype, "deployment": deployment,
               "quantization": floats, "io_quantization": grid}  # fmt: skip
        if _has_grid(grid) and deployment.get("target_integers") is not None:
            row["target_integers"] = deployment.pop("target_integers")
        deployment.pop("target_integers", None)
        row["verdict"] = verdict(row, host.float_note, simulated=simulated)
        rows.append(row)
    missing = [i for i in range(len(refs)) if i not in outputs]
    record = {
        "session": str(folder),
        "simulated": simulated,  # the etu stand-in FVP printed these outputs: they prove nothing
        "simulated_note": SIMULATED_NOTE if simulated else None,
        "reference": host.source,
        "reference_notes": host.notes,
        "inputs": inputs,  # which inputs the target and the reference ran on
        "quantization_note": host.float_note,  # where the float side came from, or why none
        "rtol": rtol,
        "atol": atol,
        "print_resolution": PRINT_RESOLUTION,
        "io_quantization": quantization,
        "outputs": rows,
        "missing_outputs": missing,
        "passed": bool(results) and all(r.passed for r in results) and not missing,
    }
    if save:
        _save(Path(folder), record)
    return record


def session_inputs(meta: dict) -> dict:
    """Which inputs the run used: the session's record (``etu run --inputs``), else the
    firmware's build record; all ones (the runner's fallback) when neither names any.
    ``kind`` "bundle": a BundleIO firmware whose inputs were not recorded."""
    recorded = meta.get("inputs")
    options = firmware_options(meta)
    if not isinstance(recorded, dict):
        recorded = options.get("inputs")
    if isinstance(recorded, dict) and recorded.get("kind") in ("file", "random", "ones"):
        return {key: recorded[key] for key in ("kind", "source", "seed", "range", "file")
                if key in recorded}  # fmt: skip
    if options.get("bundleio"):
        return {"kind": "bundle", "source": "the bundle's (not recorded)"}
    return dict(ONES_INPUTS)


def inputs_file(inputs: dict) -> Path | None:
    """The saved inputs (``inputs.npz`` beside the firmware) the reference runs on; None
    for all ones. Gone: a CompareError (comparing on other inputs would mislead)."""
    if inputs["kind"] == "ones":
        return None
    saved = inputs.get("file")
    if not isinstance(saved, str) or not Path(saved).is_file():
        raise CompareError(f"{saved or 'the inputs file'}: the run's inputs "
                           f"({inputs.get('source')}) are no longer there; rebuild the "
                           "firmware with the same --inputs and run it again")  # fmt: skip
    return Path(saved)


def inputs_text(inputs: dict) -> str:
    """``FILE`` / ``random:SEED (range [a, b]: why)`` / ``all ones (fallback)``."""
    text = str(inputs.get("source"))
    ranges = inputs.get("range") if isinstance(inputs.get("range"), list) else []
    spans = [r for r in ranges if isinstance(r, dict)
             and all(isinstance(r.get(k), int | float) for k in ("min", "max"))]  # fmt: skip
    if spans:
        text += " (range " + ", ".join(f"[{r['min']:.4g}, {r['max']:.4g}]" for r in spans)
        text += f": {spans[0].get('basis')})" if spans[0].get("basis") else ")"
    return text


def _program_of(folder: Path, meta: dict, pte: Path | None) -> Path | None:
    if pte is not None:
        return Path(pte) if Path(pte).is_file() else None
    program = session_program(meta)
    if program is not None and not Path(program).is_file():
        program = Path(folder).parent.parent.parent / program  # WORKSPACE/.etu/sessions/S
    return Path(program) if program is not None and Path(program).is_file() else None


def session_program_path(folder: Path, pte: Path | None = None) -> Path | None:
    """The program file a session ran (``pte`` when given; ``etu compare --layers``), None
    when it is not there; a session file that cannot be read is a CompareError."""
    from etu.parsers.errors import ParseError

    try:
        session = read_session(Path(folder), with_log=False)
    except ParseError as error:
        raise CompareError(str(error)) from None
    return _program_of(Path(folder), session.meta, pte)


def io_quantization_of(program: Path | None) -> list[dict]:
    """Each input's and output's integer dtype, scale and zero point ([] when unknown)."""
    if program is None:
        return []
    from etu.parsers.errors import ParseError
    from etu.parsers.pte import open_program
    from etu.runner.io_quantization import io_quantization
    from etu.runner.tosa_graphs import VELA_FOLDER

    vela = Path(program).parent / VELA_FOLDER
    try:
        with open_program(program) as opened:
            plan = opened.plans[0] if opened.plans else None
            if plan is None:
                return []
            folder = vela if vela.is_dir() else None
            return [q.to_json() for q in io_quantization(plan, folder, opened.plans)]
    except (ParseError, OSError):
        return []


def _has_grid(grid: dict | None) -> bool:
    return bool(grid) and grid.get("scale") is not None and grid.get("zero_point") is not None


def to_integers(values: list[float], grid: dict) -> list[int | None]:
    """The integers dequantized values came from: round(v / scale) + zero point, clamped."""
    scale, zero = float(grid["scale"]), int(grid["zero_point"])
    low, high = grid.get("quant_min"), grid.get("quant_max")
    found: list[int | None] = []
    for v in values:
        if not math.isfinite(v) or scale <= 0:
            found.append(None)
            continue
        q = round(v / scale) + zero
        q = q if low is None else max(int(low), q)
        found.append(q if high is None else min(int(high), q))
    return found


def grid_comparison(target: list[float], reference: list[float], grid: dict) -> dict:
    """Exact-integer counts of a float output the program dequantizes: both sides as the
    integers they were dequantized from (the runner's six decimals resolve any int8 scale
    above 2e-6), elements that differ and the largest difference in LSBs."""
    ours, theirs = to_integers(target, grid), to_integers(reference, grid)
    count = min(len(ours), len(theirs))
    diffs = [math.inf if a is None or b is None else abs(a - b)
             for a, b in zip(ours[:count], theirs[:count], strict=True)]  # fmt: skip
    largest = max(diffs, default=0)
    return {
        "differing": sum(1 for d in diffs if d != 0),
        "max_lsb": None if math.isinf(largest) else int(largest),
        "integer_dtype": grid.get("integer_dtype"),
        "target_integers": ours,
        "off_grid": off_grid(target, grid),
    }


def off_grid(values: list[float], grid: dict) -> int:
    """How many values no integer in range dequantizes to (within the runner's six
    printed decimals): a target that printed them did not dequantize int8 results."""
    scale, zero = float(grid["scale"]), int(grid["zero_point"])
    low, high = grid.get("quant_min"), grid.get("quant_max")
    slack = PRINT_RESOLUTION / scale + 1e-6 if scale > 0 else math.inf
    count = 0
    for v in values:
        q = v / scale + zero if math.isfinite(v) and scale > 0 else math.nan
        outside = (low is not None and q < low - slack) or (high is not None and q > high + slack)
        if not math.isfinite(q) or abs(q - round(q)) > slack or outside:
            count += 1
    return count


def quantization_comparison(
    index: int, reference: list[float], floats: list[float], dtype: str | None,
    grid: dict | None, *, rtol: float, atol: float,
) -> dict | None:  # fmt: skip
    """The float model → the quantised reference: the same metrics (the float model is the
    ground truth), and, on the output's integer grid, how many elements the quantised
    program lands on another integer than the float model's value rounds to. Measured, not
    judged: ``passed`` is None."""
    if not floats or not reference:
        return None
    if dtype in INTEGER_DTYPES and _has_grid(grid):  # the program gives the integers itself
        return _integer_output_quantization(index, reference, floats, grid, rtol, atol)
    result = metrics(index, reference, floats, rtol=rtol, atol=atol).to_json()
    result["passed"] = None
    if _has_grid(grid):
        exact = grid_comparison(reference, floats, grid)
        exact.pop("target_integers")
        exact.pop("off_grid")  # the float model's values are never on the grid
        result.update(exact)
    elif dtype in INTEGER_DTYPES:
        from etu.runner.reference import integer_comparison

        result.update(integer_comparison(reference, [round(v) for v in floats]))
    return result


def _integer_output_quantization(
    index: int, reference: list[float], floats: list[float], grid: dict, rtol: float,
    atol: float,
) -> dict:  # fmt: skip
    """An integer output (``--int8-io``) against the float model: in real units, the
    reference's integers dequantized with the output's scale and zero point; on the grid,
    the float model's values quantized against the reference's integers."""
    from etu.runner.reference import integer_comparison

    scale, zero = float(grid["scale"]), int(grid["zero_point"])
    real = [(q - zero) * scale for q in reference]
    result = metrics(index, real, floats, rtol=rtol, atol=atol).to_json()
    result["passed"] = None
    on_grid = [math.nan if q is None else q for q in to_integers(floats, grid)]
    result.update(integer_comparison(reference, on_grid))
    result["integer_dtype"] = grid.get("integer_dtype")
    return result


def verdict(row: dict, float_note: str | None, *, simulated: bool = False) -> str:
    """One line, deployment first: "deployment exact · quantisation SNR 31.2 dB"."""
    deployment = row["deployment"]
    if deployment.get("differing") is not None:
        if deployment["differing"] == 0 and row.get("passed"):
            first = "deployment exact"
        else:
            lsb = deployment.get("max_lsb")
            first = (f"deployment {deployment['differing']} of {deployment['count']} differ"
                     + (f" (max {lsb} LSB)" if lsb is not None else ""))  # fmt: skip
    elif deployment.get("passed"):
        first = f"deployment within tolerance (max |e| {deployment['max_abs_error']:.3g})"
    else:
        first = f"deployment FAIL ({_snr(deployment.get('snr_db'))})"
    if simulated:
        first += " (target simulated)"
    floats = row.get("quantization")
    if floats is None:
        gone = (float_note or "not known").split(":")[0]
        second = f"quantisation {gone} (float model)" if gone != "not known" else (
            "quantisation not known (no float model)")  # fmt: skip
    else:
        second = f"quantisation {_snr(floats.get('snr_db'))}"
    return f"{first} · {second}"


def _snr(snr: float | None) -> str:
    return "SNR ∞ dB" if snr is None else f"SNR {snr:.1f} dB"


def _save(folder: Path, record: dict) -> None:
    """The record beside the session's events (atomically; a folder that cannot take it
    keeps none: the comparison is still printed)."""
    import json
    import os

    partial = folder / (COMPARE_RECORD + ".partial")
    try:
        partial.write_text(json.dumps(record) + "\n")
        os.replace(partial, folder / COMPARE_RECORD)
    except OSError:
        partial.unlink(missing_ok=True)


def load_comparison(folder: Path) -> dict | None:
    """The session's saved comparison (``compare.json``), None when there is none or it is
    not one."""
    from etu.parsers.errors import ParseError
    from etu.parsers.files import MiB, read_json

    path = Path(folder) / COMPARE_RECORD
    if not path.is_file():
        return None
    try:
        record = read_json(path, "a saved comparison", 64 * MiB)
    except ParseError:
        return None
    if not isinstance(record, dict) or not isinstance(record.get("outputs"), list):
        return None
    return record


_TORCH_DTYPES = {
    "Float": "float32", "Double": "float64", "Int": "int32", "Long": "int64",
    "Char": "int8", "Byte": "uint8", "Short": "int16", "Bool": "bool", "Half": "float16",
    "BFloat16": "bfloat16",
}  # fmt: skip


def _flat(value) -> list[float]:
    try:
        return [float(v) for v in value.reshape(-1).tolist()]
    except AttributeError:
        return [float(value)]


if __name__ == "__main__":
    import sys

    from etu.runner.isolated import print_json_record

    raise SystemExit(print_json_record(compare_session, Path(sys.argv[1])))
