"""Integer IO made visible: per program input and output, the integers the NPU sees and
their scale and zero point (real = (q - zero_point) * scale).

Three sources, the program first:

- **the program's config methods**: a program whose inputs or outputs were made integers
  with ExecuTorch's ``QuantizeInputs``/``QuantizeOutputs`` (``exir/passes/quantize_io_pass``,
  ``etu compile --int8-io``) keeps each one's figures as constant methods beside
  ``forward``: ``input0_scale``, ``input0_zp``, ``input0_quant_min``, ``input0_quant_max``,
  ``input0_dtype`` (``forward_input0_scale``... when the pass was given the method's name);
- **the program's own kernels**: a float input the program quantizes on the CPU
  (``quantized_decomposed::quantize_per_tensor``) before a delegate, a float output it
  dequantizes (``dequantize_per_tensor``) after one; the scale and zero point are the
  kernel call's arguments;
- **Vela's** ``out_vela.npz`` (``input_quantization`` / ``output_quantization``, Vela 5.0
  and later): for an integer input or output the program hands to the NPU as it is. Graphs
  Vela compiled from TOSA carry ``quant_type: none`` there (the TOSA graph rescales
  inside), and then the scale is not known.

The npz's quantization arrays are numpy object arrays (a pickle): they are read by an
unpickler that builds numpy arrays and dicts only, from members of at most 1 MiB.
"""

from __future__ import annotations

import io
import pickle
import re
import zipfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from etu.parsers.pte import SCALAR_TYPES, DelegateCall, ExecutionPlan, KernelCall, Tensor

VELA_ARRAYS = "out_vela.npz"
MEMBER_CAP = 1 << 20  # the quantization members are a few hundred bytes
# ExecuTorch ScalarType name → the name people use
DTYPE_NAMES = {
    "Byte": "uint8", "Char": "int8", "Short": "int16", "Int": "int32", "Long": "int64",
    "Half": "float16", "Float": "float32", "Double": "float64", "Bool": "bool",
    "UInt16": "uint16", "BFloat16": "bfloat16",
}  # fmt: skip
CONFIG_METHOD = re.compile(
    r"(?:(\w+)_)?(input|output)(\d{1,4})_(scale|zp|quant_min|quant_max|dtype)"
)
CONFIG_SOURCE = "the program's config methods, as QuantizeInputs/QuantizeOutputs write them"
QUANTIZE = "quantized_decomposed::quantize_per_tensor.out"
DEQUANTIZE = "quantized_decomposed::dequantize_per_tensor.out"


@dataclass(frozen=True)
class IoQuantization:
    kind: str  # "input" | "output"
    index: int  # the program's k-th input or output
    value: int  # its value index in the plan
    dtype: str  # what the program takes or gives: float32, int8...
    shape: list[int]
    integer_dtype: str | None  # the integers the NPU reads or writes (None: not known)
    scale: float | None
    zero_point: int | None
    quant_min: int | None = None
    quant_max: int | None = None
    source: str = "not known"  # where the figures come from

    @property
    def known(self) -> bool:
        return self.scale is not None and self.zero_point is not None

    def sentence(self) -> str:
        """One line for the pre-flight and the views."""
        if not self.known:
            what = self.integer_dtype or self.dtype
            return f"{self.kind} {self.index}: {what}, scale and zero point not known"
        if self.integer_dtype == self.dtype:
            head = f"this program takes {self.dtype} {self.kind}" if self.kind == "input" else (
                f"this program gives {self.dtype} {self.kind}")  # fmt: skip
        else:
            verb = "quantized to" if self.kind == "input" else "dequantized from"
            head = f"{self.kind} {self.index}: {self.dtype}, {verb} {self.integer_dtype} on the CPU"
        return f"{head}: scale {self.scale:.4g}, zero point {self.zero_point}"

    def to_json(self) -> dict:
        return asdict(self)

    def dequantize(self, q: float) -> float:
        assert self.scale is not None and self.zero_point is not None
        return (q - self.zero_point) * self.scale

    def quantize(self, real: float) -> int:
        """The integer a dequantized float came from (round half to even, clamped)."""
        assert self.scale is not None and self.zero_point is not None
        q = round(real / self.scale) + self.zero_point
        if self.quant_min is not None:
            q = max(self.quant_min, q)
        if self.quant_max is not None:
            q = min(self.quant_max, q)
        return q


def io_line(record: dict) -> str:
    """One ``io_quantization[]`` JSON record as a line: "input 0: float32 ↔ int8, scale
    0.003919, zero point -128 (quantize_per_tensor on the CPU before delegate 0)"."""
    head = f"{record['kind']} {record['index']}: {record['dtype']}"
    if record.get("scale") is None or record.get("zero_point") is None:
        return f"{head}, scale and zero point not known"
    if record.get("integer_dtype") not in (None, record["dtype"]):
        head = f"{head} ↔ {record['integer_dtype']}"
    return (f"{head}, scale {record['scale']:.4g}, zero point "
            f"{record['zero_point']} ({record['source']})")  # fmt: skip


def real_formula(record: dict) -> str:
    """How an integer becomes its real value: "(q + 12) × 0.001857"."""
    zero = int(record["zero_point"])
    shifted = "q" if zero == 0 else f"(q {'-' if zero > 0 else '+'} {abs(zero)})"
    return f"{shifted} × {record['scale']:.4g}"


def _scalar(plan: ExecutionPlan, index: int, kind: str):
    if not 0 <= index < len(plan.values):
        return None
    value = plan.values[index]
    if isinstance(value, Tensor) or getattr(value, "kind", None) != kind:
        return None
    return value.payload


def _dtype_name(code: object) -> str | None:
    if not isinstance(code, int) or isinstance(code, bool):
        return None
    name = SCALAR_TYPES.get(code, (None, 0))[0]
    return DTYPE_NAMES.get(name, name) if name else None


def _tensor_dtype(plan: ExecutionPlan, index: int) -> str:
    value = plan.values[index] if 0 <= index < len(plan.values) else None
    return DTYPE_NAMES.get(value.dtype, value.dtype) if isinstance(value, Tensor) else "?"


def _kernel_figures(plan: ExecutionPlan, call: KernelCall) -> dict | None:
    """scale, zero point, range and integer dtype of a (de)quantize_per_tensor call."""
    if len(call.args) < 6:
        return None
    scale = _scalar(plan, call.args[1], "Double")
    zero = _scalar(plan, call.args[2], "Int")
    if not isinstance(scale, float) or not isinstance(zero, int):
        return None  # the .tensor overloads: scale and zero point are tensors
    return {"scale": scale, "zero_point": zero,
            "quant_min": _scalar(plan, call.args[3], "Int"),
            "quant_max": _scalar(plan, call.args[4], "Int"),
            "integer_dtype": _dtype_name(_scalar(plan, call.args[5], "Int"))}  # fmt: skip


def config_io_figures(plan: ExecutionPlan, plans: Sequence[ExecutionPlan]) -> dict:
    """``{(kind, index): figures}`` from the program's config methods for ``plan`` (each a
    plan with no instructions and one constant output); only complete sets, scale and
    zero point both there."""
    keys = {"scale": ("scale", "Double"), "zp": ("zero_point", "Int"),
            "quant_min": ("quant_min", "Int"), "quant_max": ("quant_max", "Int"),
            "dtype": ("integer_dtype", "Int")}  # fmt: skip
    found: dict[tuple[str, int], dict] = {}
    for method in plans:
        match = CONFIG_METHOD.fullmatch(method.name)
        if match is None or method.instructions or method.inputs or len(method.outputs) != 1:
            continue
        owner, kind, index, key = match.groups()
        if owner is not None and owner != plan.name:
            continue
        field_name, scalar_kind = keys[key]
        value = _scalar(method, method.outputs[0], scalar_kind)
        if field_name == "integer_dtype":
            value = _dtype_name(value)
        if value is not None and not isinstance(value, bool):
            found.setdefault((kind, int(index)), {})[field_name] = value
    complete = {}
    for where, figures in found.items():
        if isinstance(figures.get("scale"), float) and isinstance(figures.get("zero_point"), int):
            complete[where] = {"quant_min": None, "quant_max": None, "integer_dtype": None,
                               **figures}  # fmt: skip
    return complete


def _delegate_of(plan: ExecutionPlan, value: int) -> int | None:
    for instruction in plan.instructions:
        if isinstance(instruction, DelegateCall) and value in instruction.args:
            return instruction.delegate_index
    return None


def program_io_quantization(
    plan: ExecutionPlan, config: Sequence[ExecutionPlan] = ()
) -> list[IoQuantization]:
    """Each input and output of ``plan`` with what the program says: its config methods
    (``config``: the program's plans), else its own kernels."""
    configured = config_io_figures(plan, config) if config else {}
    kernels = [
        (plan.operators[i.op_index].qualified_name, i)
        for i in plan.instructions
        if isinstance(i, KernelCall) and 0 <= i.op_index < len(plan.operators)
    ]
    records = []
    for kind, values in (("input", plan.inputs), ("output", plan.outputs)):
        for k, value in enumerate(values):
            tensor = plan.values[value] if 0 <= value < len(plan.values) else None
            if not isinstance(tensor, Tensor):
                continue
            dtype = _tensor_dtype(plan, value)
            figures, source = configured.get((kind, k)), CONFIG_SOURCE
            for name, call in () if figures is not None else kernels:
                if kind == "input" and name == QUANTIZE and call.args[:1] == (value,):
                    figures = _kernel_figures(plan, call)
                    delegate = _delegate_of(plan, call.args[6]) if len(call.args) > 6 else None
                    after = f" before delegate {delegate}" if delegate is not None else ""
                    source = f"quantize_per_tensor on the CPU{after}"
                elif kind == "output" and name == DEQUANTIZE and value in call.args[-2:]:
                    figures = _kernel_figures(plan, call)
                    delegate = _delegate_of(plan, call.args[0])
                    after = f" after delegate {delegate}" if delegate is not None else ""
                    source = f"dequantize_per_tensor on the CPU{after}"
                if figures is not None:
                    break
            integer = dtype if dtype.startswith(("int", "uint")) else None
            if figures is not None and figures["integer_dtype"] is None:
                figures = {**figures, "integer_dtype": integer}
            if figures is None:
                records.append(IoQuantization(kind, k, value, dtype, list(tensor.sizes), integer,
                                              None, None))  # fmt: skip
                continue
            records.append(IoQuantization(kind, k, value, dtype, list(tensor.sizes),
                                          source=source, **figures))  # fmt: skip
    return records


def delegate_io_quantization(
    plan: ExecutionPlan, delegate_index: int, n_inputs: int
) -> tuple[list, list]:
    """(inputs, outputs) of the first call of a delegate taking ``n_inputs`` tensors: per
    tensor, ``(integer dtype, scale, zero point, where)`` from the quantize kernel that
    writes it or the dequantize kernel that reads it, else None."""
    calls = [i for i in plan.instructions if isinstance(i, DelegateCall)]
    call = next((i for i in calls if i.delegate_index == delegate_index), None)
    if call is None:
        return [], []
    writers: dict[int, tuple] = {}
    readers: dict[int, tuple] = {}
    for instruction in plan.instructions:
        if not isinstance(instruction, KernelCall) or not (
            0 <= instruction.op_index < len(plan.operators)
        ):
            continue
        name = plan.operators[instruction.op_index].qualified_name
        figures = _kernel_figures(plan, instruction) if name in (QUANTIZE, DEQUANTIZE) else None
        if figures is None:
            continue
        entry = (figures["integer_dtype"], figures["scale"], figures["zero_point"])
        if name == QUANTIZE and len(instruction.args) > 6:
            writers[instruction.args[6]] = (*entry, "quantize_per_tensor on the CPU")
        elif name == DEQUANTIZE:
            readers[instruction.args[0]] = (*entry, "dequantize_per_tensor on the CPU")
    inputs = [writers.get(v) for v in call.args[:n_inputs]]
    outputs = [readers.get(v) for v in call.args[n_inputs:]]
    return inputs, outputs


# --------------------------------------------------------------------- Vela's npz


class _ArraysOnly(pickle.Unpickler):
    """numpy arrays, dtypes and plain containers; any other global is refused."""

    ALLOWED = frozenset({
        ("numpy._core.multiarray", "_reconstruct"), ("numpy.core.multiarray", "_reconstruct"),
        ("numpy", "ndarray"), ("numpy", "dtype"),
    })  # fmt: skip

    def find_class(self, module: str, name: str):
        if (module, name) not in self.ALLOWED:
            raise pickle.UnpicklingError(f"{module}.{name} is not allowed")
        return super().find_class(module, name)


def _member(archive: zipfile.ZipFile, name: str) -> list | None:
    import numpy

    try:
        info = archive.getinfo(name)
    except KeyError:
        return None
    if info.file_size > MEMBER_CAP:
        raise ValueError(f"{name} is {info.file_size} bytes (at most {MEMBER_CAP})")
    stream = io.BytesIO(archive.read(info))
    version = numpy.lib.format.read_magic(stream)
    shape, _fortran, dtype = numpy.lib.format._read_array_header(stream, version)
    if dtype.hasobject:
        array = _ArraysOnly(stream).load()
    else:
        array = numpy.frombuffer(stream.read(), dtype=dtype).reshape(shape)
    return list(getattr(array, "tolist", lambda: array)()) if shape else []


def vela_io_quantization(folder: Path) -> dict[str, list[dict]]:
    """``{"input": [...], "output": [...]}`` from ``out_vela.npz`` in ``folder``: per
    NPU input/output, its quant_type, scale and zero point lists ({} when there is none).
    Raises ValueError (one line) for a file that is not Vela's."""
    path = Path(folder) / VELA_ARRAYS
    if not path.is_file():
        return {}
    found: dict[str, list[dict]] = {}
    try:
        with zipfile.ZipFile(path) as archive:
            for kind in ("input", "output"):
                items = _member(archive, f"{kind}_quantization.npy")
                if items is None:
                    continue
                found[kind] = [_vela_entry(item) for item in items]
    except (zipfile.BadZipFile, pickle.UnpicklingError, ValueError, EOFError, OSError) as error:
        raise ValueError(f"{path}: {error}") from None
    return found


def _vela_entry(item: object) -> dict:
    if not isinstance(item, dict):
        return {"quant_type": "?", "scale": [], "zero_point": []}

    def numbers(key: str) -> list:
        value = item.get(key)
        value = value.tolist() if hasattr(value, "tolist") else value
        value = value if isinstance(value, list) else [value] if value is not None else []
        return [v for v in value if isinstance(v, int | float) and not isinstance(v, bool)]

    return {"quant_type": str(item.get("quant_type", "?"))[:40], "scale": numbers("scale"),
            "zero_point": [int(v) for v in numbers("zero_point")]}  # fmt: skip


def io_quantization(
    plan: ExecutionPlan,
    vela_folder: Path | None = None,
    config: Sequence[ExecutionPlan] = (),
) -> list[IoQuantization]:
    """The program's figures (``config``: its plans, for the config methods), completed
    from Vela's for an integer input or output the program hands to a delegate as it is
    (one delegate: Vela's k-th is the program's k-th)."""
    records = program_io_quantization(plan, config)
    if vela_folder is None:
        return records
    try:
        vela = vela_io_quantization(vela_folder)
    except ValueError:
        return records
    done = []
    for record in records:
        entries = vela.get(record.kind) or []
        entry = entries[record.index] if record.index < len(entries) else None
        usable = (entry is not None and not record.known and record.integer_dtype
                  and entry["scale"] and entry["zero_point"])  # fmt: skip
        if usable:
            record = IoQuantization(
                record.kind, record.index, record.value, record.dtype, record.shape,
                record.integer_dtype, float(entry["scale"][0]), int(entry["zero_point"][0]),
                source=f"Vela's {VELA_ARRAYS} ({entry['quant_type']})",
            )  # fmt: skip
        done.append(record)
    return done
