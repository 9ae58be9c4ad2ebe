"""Bundled programs (.bpte) for the runner's BundleIO check, and the inputs a run uses.

``--inputs`` names them (issue 22 §3): ``FILE.npy`` (one input), ``FILE.npz`` (one array per
input, in order) or ``random:SEED``, drawn within the calibration range the compile
recorded, else within the range the program's own quantize kernel can represent (its
scale and zero point), else [0, 1), the record says which. The chosen tensors are saved
beside the firmware (``inputs.npz``) so ``etu compare`` runs the reference, and the float
model, on the same bytes the target read; all ones is only the fallback, named so.

The expected outputs are the host reference's: ExecuTorch's host runtime for a CPU-only
program, etu's host reference (CPU kernels on the host, each Ethos-U delegate through the
TOSA reference model) for a delegated one, which the host runtime cannot run.

torch and executorch are imported inside the functions (the compile/host-reference path).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from etu.runner.compare import _TORCH_DTYPES, ONES_INPUTS, input_specs

RANDOM_PREFIX = "random:"
INPUTS_FILE = "inputs.npz"  # beside the firmware: the bytes the bundle carries
ONES = ONES_INPUTS
DEFAULT_RANGE = (0.0, 1.0)


class BundleError(RuntimeError):
    """One line: why the bundle cannot be made."""


def parse_inputs_option(text: str) -> tuple[str, Path | int]:
    """``--inputs`` → ("random", seed) or ("file", path); a BundleError (one line) else."""
    if text.startswith(RANDOM_PREFIX):
        seed = text[len(RANDOM_PREFIX) :]
        if not seed.isdigit() or not seed.isascii():
            raise BundleError(f"--inputs {text}: the seed must be a whole number (random:7)")
        return "random", int(seed)
    path = Path(text)
    if path.suffix not in (".npy", ".npz"):
        raise BundleError(f"--inputs {text}: expected FILE.npy, FILE.npz or random:SEED")
    if not path.exists():
        raise BundleError(f"{path}: no such inputs file")
    if not path.is_file():  # a FIFO, a device, a folder: read_regular would refuse it too
        raise BundleError(f"{path}: not a regular file (an inputs file is read whole)")
    return "file", path


def calibration_ranges(samples: Sequence[Sequence]) -> list[dict]:
    """Per input: the min and max over every calibration sample (the compile records it)."""
    import torch

    ranges: list[dict] = []
    for sample in samples:
        for k, value in enumerate(sample):
            if not isinstance(value, torch.Tensor) or value.numel() == 0:
                continue
            low, high = float(value.min()), float(value.max())
            while len(ranges) <= k:
                ranges.append({"index": len(ranges), "min": None, "max": None})
            entry = ranges[k]
            entry["min"] = low if entry["min"] is None else min(entry["min"], low)
            entry["max"] = high if entry["max"] is None else max(entry["max"], high)
    return [r for r in ranges if r["min"] is not None]


INTEGER_RANGES = {"Char": (-128, 127), "Byte": (0, 255), "Short": (-32768, 32767)}


def input_ranges(pte: Path, specs: Sequence[tuple[tuple[int, ...], str]]) -> list[dict]:
    """Where ``random:SEED`` draws each input (``specs``: shape, dtype per input):
    {index, min, max, basis}."""
    recorded = {r["index"]: r for r in _recorded_calibration(pte)}
    quantized = _quantize_ranges(pte)
    ranges = []
    for k, (_shape, dtype) in enumerate(specs):
        if k in recorded:
            r = recorded[k]
            basis = "the calibration range the compile recorded"
            ranges.append({"index": k, "min": r["min"], "max": r["max"], "basis": basis})
        elif k in quantized:
            ranges.append({"index": k, **quantized[k]})
        elif dtype in INTEGER_RANGES:  # an integer input the NPU reads as it is
            low, high = INTEGER_RANGES[dtype]
            basis = f"the input's whole {dtype} range: no calibration range recorded"
            ranges.append({"index": k, "min": low, "max": high, "basis": basis})
        else:
            low, high = DEFAULT_RANGE
            basis = "[0, 1): no calibration range recorded, no input quantisation known"
            ranges.append({"index": k, "min": low, "max": high, "basis": basis})
    return ranges


def _recorded_calibration(pte: Path) -> list[dict]:
    """The compile record's ``calibration`` ranges when the record is this program's."""
    from etu.parsers.errors import ParseError
    from etu.parsers.files import MiB, read_json
    from etu.runner.tosa_graphs import COMPILE_RECORD, VELA_FOLDER

    path = Path(pte).parent / VELA_FOLDER / COMPILE_RECORD
    if not path.is_file():
        return []
    try:
        record = read_json(path, "a compile record", 16 * MiB)
    except ParseError:
        return []
    calibration = record.get("calibration") if isinstance(record, dict) else None
    entries = calibration.get("inputs") if isinstance(calibration, dict) else None
    if not isinstance(entries, list):
        return []
    from etu.runner.tosa_graphs import record_is_for

    try:
        if not record_is_for(Path(pte), record):
            return []
    except (ParseError, OSError):
        return []
    good = []
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        index, low, high = entry.get("index"), entry.get("min"), entry.get("max")
        numbers = all(isinstance(v, int | float) and not isinstance(v, bool) for v in (low, high))
        if isinstance(index, int) and numbers and low <= high:
            good.append({"index": index, "min": float(low), "max": float(high)})
    return good


def _quantize_ranges(pte: Path) -> dict[int, dict]:
    """A float input the program quantizes: the real values its integer range represents."""
    from etu.parsers.errors import ParseError
    from etu.parsers.pte import open_program
    from etu.runner.io_quantization import program_io_quantization

    try:
        with open_program(pte) as program:
            found = program_io_quantization(program.plans[0], program.plans)
    except (ParseError, OSError, IndexError):
        return {}
    ranges = {}
    for q in found:
        if q.kind != "input" or not q.known or q.quant_min is None or q.quant_max is None:
            continue
        low = (q.quant_min - q.zero_point) * q.scale
        high = (q.quant_max - q.zero_point) * q.scale
        basis = (f"the input's quantisation range ({q.integer_dtype or 'integer'} "
                 f"{q.quant_min}..{q.quant_max}, scale {q.scale:.6g}, zero point "
                 f"{q.zero_point}; no calibration range recorded)")  # fmt: skip
        ranges[q.index] = {"min": low, "max": high, "basis": basis}
    return ranges


def choose_inputs(pte: Path, text: str) -> tuple[list, dict]:
    """The tensors ``--inputs TEXT`` names for ``pte`` and the record of the choice:
    {"kind": "file"|"random", "source": ..., "seed"?, "range"?}."""
    kind, value = parse_inputs_option(text)
    if kind == "file":
        from etu.parsers.errors import ParseError, describe_error
        from etu.parsers.pte import open_program
        from etu.runner.host_memory import ReferenceError
        from etu.runner.host_memory import load_inputs as load_for_plan

        try:
            with open_program(pte) as program:
                tensors = load_for_plan(program.plans[0], Path(value))
        except ReferenceError as error:
            raise BundleError(str(error)) from None
        except ParseError as error:
            raise BundleError(describe_error(error)) from None
        return tensors, {"kind": "file", "source": str(value)}
    return random_inputs(pte, int(value))


def random_inputs(pte: Path, seed: int) -> tuple[list, dict]:
    """Seeded inputs, each drawn uniformly within its range (see :func:`input_ranges`)."""
    import torch

    specs = input_specs(pte)
    ranges = input_ranges(pte, specs)
    generator = torch.Generator().manual_seed(seed)
    tensors = []
    for (shape, dtype), r in zip(specs, ranges, strict=True):
        torch_dtype = getattr(torch, _TORCH_DTYPES.get(dtype, "float32"))
        if torch_dtype.is_floating_point:
            drawn = torch.rand(shape, generator=generator, dtype=torch.float64)
            tensors.append((r["min"] + drawn * (r["max"] - r["min"])).to(torch_dtype))
        elif torch_dtype == torch.bool:
            tensors.append(torch.randint(0, 2, shape, generator=generator).to(torch_dtype))
        else:
            low = int(r["min"])
            high = max(int(r["max"]), low)
            tensors.append(torch.randint(low, high + 1, shape, generator=generator).to(torch_dtype))
    record = {"kind": "random", "source": f"{RANDOM_PREFIX}{seed}", "seed": seed,
              "range": ranges}  # fmt: skip
    return tensors, record


def legacy_inputs(pte: Path, files: Sequence[Path], seed: int) -> tuple[list, dict]:
    """``--bundleio`` with ``--bundle-input``/``--seed`` (random in [0, 1)), and its record."""
    tensors = load_inputs(pte, files, seed)
    if files:
        return tensors, {"kind": "file", "source": ", ".join(str(f) for f in files)}
    return tensors, {"kind": "random", "source": f"{RANDOM_PREFIX}{seed}", "seed": seed,
                     "range": [{"index": k, "min": 0.0, "max": 1.0, "basis": "[0, 1): --seed"}
                               for k in range(len(tensors))]}  # fmt: skip


def load_inputs(pte: Path, files: Sequence[Path], seed: int) -> list:
    """Tensors for the program's inputs: from .npy/.pt files in order, else seeded random."""
    import torch

    specs = input_specs(pte)
    if files:
        if len(files) != len(specs):
            raise BundleError(f"{pte}: the program has {len(specs)} inputs, {len(files)} given")
        tensors = []
        for path, (shape, _dtype) in zip(files, specs, strict=True):
            if Path(path).suffix == ".npy":
                import numpy

                tensor = torch.from_numpy(numpy.load(path, allow_pickle=False))
            else:
                tensor = torch.load(path, weights_only=True)
            if tuple(tensor.shape) != tuple(shape):
                raise BundleError(f"{path}: shape {tuple(tensor.shape)}, the program wants {shape}")
            tensors.append(tensor)
        return tensors
    generator = torch.Generator().manual_seed(seed)
    tensors = []
    for shape, dtype in specs:
        torch_dtype = getattr(torch, _TORCH_DTYPES.get(dtype, "float32"))
        if torch_dtype.is_floating_point:
            tensors.append(torch.rand(shape, generator=generator).to(torch_dtype))
        else:
            tensors.append(torch.randint(0, 8, shape, generator=generator).to(torch_dtype))
    return tensors


def save_inputs(tensors: Sequence, path: Path) -> Path:
    """The tensors as an .npz (arr_0, arr_1, ... in input order), written atomically."""
    import numpy

    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial.npz")
    numpy.savez(partial, *[t.detach().cpu().numpy() for t in tensors])
    partial.replace(path)
    return path


def expected_outputs(pte: Path, tensors: Sequence) -> list:
    """The outputs the target must print on ``tensors``: the host runtime's for a CPU-only
    program, etu's host reference's for a delegated one."""
    from etu.parsers.pte import open_program

    with open_program(pte) as program:
        delegated = bool(program.plans[0].delegates)
    if delegated:
        from etu.runner.reference import ReferenceError, program_reference
        from etu.runner.segment_program import SegmentError
        from etu.runner.tosa_graphs import TosaMatchError

        try:
            return list(program_reference(pte, inputs=list(tensors), float_side=False).outputs)
        except (ReferenceError, SegmentError, TosaMatchError) as error:
            raise BundleError(f"the host reference: {error}") from None
    # the quantized ops library registers quantized_decomposed::* with the host runtime: a
    # quantized CPU program (a twin, a --no-delegate compile) has them
    import executorch.kernels.quantized  # noqa: F401
    from executorch.runtime import Runtime

    method = Runtime.get().load_program(Path(pte)).load_method("forward")
    return [o.clone() for o in method.execute(list(tensors))]


def make_bundled(
    pte: Path,
    out: Path,
    *,
    inputs: Sequence[Path] = (),
    seed: int = 0,
    expected: Sequence[Path] = (),
    tensors: Sequence | None = None,
) -> Path:
    """Write ``out`` (.bpte): inputs (``tensors``, else the files or seeded random) and the
    expected outputs (the files given, else the host reference's)."""
    import torch
    from executorch.devtools import BundledProgram
    from executorch.devtools.bundled_program.config import MethodTestCase, MethodTestSuite
    from executorch.devtools.bundled_program.serialize import (
        serialize_from_bundled_program_to_flatbuffer,
    )

    if tensors is None:
        tensors = load_inputs(Path(pte), list(inputs), seed)
    tensors = list(tensors)
    if expected:
        import numpy

        outputs = [torch.from_numpy(numpy.load(path, allow_pickle=False)) for path in expected]
    else:
        outputs = expected_outputs(Path(pte), tensors)
    case = MethodTestCase(inputs=tensors, expected_outputs=outputs)
    suite = MethodTestSuite(method_name="forward", test_cases=[case])
    bundled = BundledProgram(None, [suite], pte_file_path=str(pte))
    data = serialize_from_bundled_program_to_flatbuffer(bundled)
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + ".partial")
    partial.write_bytes(data)
    partial.replace(out)
    return out


def firmware_inputs(elf: Path) -> dict | None:
    """The inputs a firmware etu built runs on (its ``etu_firmware.json`` beside the ELF):
    the bundled ones, or all ones (the fallback); None for firmware etu did not build, or a
    BundleIO build that did not record them."""
    from etu.runner.runtime_build import load_record

    record = load_record(Path(elf).parent)
    if record is None:
        return None
    options = record.get("options") if isinstance(record.get("options"), dict) else {}
    inputs = options.get("inputs")
    if isinstance(inputs, dict):
        return inputs
    return None if options.get("bundleio") else dict(ONES)
