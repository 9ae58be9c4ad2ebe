"""Outputs of a recorded run against a reference: the host runtime or saved arrays.

The target's outputs are the runner's ``Output[i][j]`` lines (the upstream runner prints
every element of Float/Int/Char/Bool outputs, floats with ``%f``: six decimals, so a
perfect match differs from the host by up to 5e-7). The host reference
(:mod:`etu.runner.reference`, imported lazily) is the same program run on the host on the same
inputs as the runner, every input filled with ones: its CPU kernels by ExecuTorch's host
runtime, each Ethos-U delegate by the TOSA reference model. Integer outputs are compared
exactly (elements that differ, the largest difference in LSBs); float outputs within the
tolerances. A session the etu stand-in FVP recorded is marked ``simulated``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
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


class CompareError(RuntimeError):
    """One line: what cannot be compared and why."""


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
    from etu.runner.runtime_build import load_record

    options = (load_record(Path(elf).parent) or {}).get("options")
    return options if isinstance(options, dict) else {}


def session_program(meta: dict) -> Path | None:
    """The program a session ran: its meta's ``program``, else the one the firmware was
    built for."""
    if isinstance(meta.get("program"), str):
        return Path(meta["program"])
    program = firmware_options(meta).get("program")
    return Path(program) if isinstance(program, str) else None


def compare_in_child(folder: Path, *, timeout: float = 600.0) -> dict:
    """``compare_session(folder)`` in an isolated child process: the console compares
    without importing torch and ExecuTorch itself. Raises CompareError with one line."""
    from etu.runner.isolated import ChildError, json_child

    try:
        return json_child("etu.runner.compare", str(folder), what="the host reference",
                          timeout=timeout)  # fmt: skip
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
    """The program run by ExecuTorch's host runtime; inputs all ones unless given."""
    # Loading the quantized ops library registers quantized_decomposed::* kernels with the
    # host runtime too (the portable pybindings alone lack them).
    import executorch.kernels.quantized  # noqa: F401
    import torch
    from executorch.runtime import Runtime

    if inputs is None:
        inputs = [
            torch.ones(shape, dtype=getattr(torch, _TORCH_DTYPES.get(dtype, "float32")))
            for shape, dtype in input_specs(pte)
        ]
    program = Runtime.get().load_program(Path(pte))
    method = program.load_method("forward")
    results = method.execute(inputs)
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
) -> dict:
    """The ``etu compare --json`` record."""
    outputs, meta = session_outputs(folder)
    if reference == "host":
        if firmware_options(meta).get("bundleio"):
            raise CompareError(
                f"{folder}: a BundleIO run (its inputs are the bundle's, not all ones): the "
                "runner checked its outputs on the target; see its verdict, or pass --reference"
            )
        program = pte or session_program(meta)
        if program is not None and not pte and not Path(program).is_file():
            program = Path(folder).parent.parent.parent / program  # WORKSPACE/.etu/sessions/S
        if program is None or not Path(program).is_file():
            raise CompareError(
                f"{folder}: the session names no program file; pass --pte PROGRAM.pte"
            )
        # CPU kernels by ExecuTorch's host runtime, Ethos-U delegates by the TOSA reference
        from etu.runner.reference import compare_reference

        refs, source, dtypes, notes = compare_reference(Path(program), tosa)
    else:
        refs = npy_reference(list(reference))
        source = "files: " + ", ".join(str(p) for p in reference)
        dtypes, notes = [], []
    results = []
    for index in sorted(outputs):
        if index >= len(refs):
            raise CompareError(f"output {index}: the reference has only {len(refs)} outputs")
        event = outputs[index]
        values = [math.nan if v is None else float(v) for v in event["values"]]
        result = metrics(index, values, refs[index], rtol=rtol, atol=atol,
                         numel=event.get("numel"))  # fmt: skip
        if index < len(dtypes) and dtypes[index] in INTEGER_DTYPES:  # exact, in LSBs
            from etu.runner.reference import integer_comparison

            exact = integer_comparison(values, refs[index])
            result = OutputComparison(**{**asdict(result), **exact, "passed": (
                exact["differing"] == 0 and len(values) == len(refs[index]))})  # fmt: skip
        if event.get("printed") is not None and event.get("numel") not in (None, len(values)):
            result = OutputComparison(**{**asdict(result), "note": (
                f"the runner printed {len(values)} of {event.get('numel')} elements; "
                "compared what was printed")})  # fmt: skip
        results.append(result)
    missing = [i for i in range(len(refs)) if i not in outputs]
    simulated = bool(meta.get("simulated"))
    return {
        "session": str(folder),
        "simulated": simulated,  # the etu stand-in FVP printed these outputs: they prove nothing
        "simulated_note": SIMULATED_NOTE if simulated else None,
        "reference": source,
        "reference_notes": notes,
        "rtol": rtol,
        "atol": atol,
        "print_resolution": PRINT_RESOLUTION,
        "outputs": [r.to_json() for r in results],
        "missing_outputs": missing,
        "passed": bool(results) and all(r.passed for r in results) and not missing,
    }


_TORCH_DTYPES = {
    "Float": "float32", "Double": "float64", "Int": "int32", "Long": "int64",
    "Char": "int8", "Byte": "uint8", "Short": "int16", "Bool": "bool", "Half": "float16",
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
