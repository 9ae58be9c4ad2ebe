"""Where precision is lost, layer by layer: ``etu compare --layers``.

The program runs on the host as :mod:`etu.runner.reference` runs it (CPU kernels in
ExecuTorch's host runtime, each Ethos-U delegate in the TOSA reference model), each kernel
call on its own so that its outputs can be read (the reference's ``after_call``); each
delegate's TOSA graph is then run again on the inputs it was handed, with every activation
it computes made an output of the graph (the ``tosa_serializer`` loads the graph, adds them,
writes it again: the reference model returns them as arrays, not as its text dump). The float
model the compile kept (``etu_float_model.pt2``, a ``torch.export`` program whose nodes carry
``nn_module_stack``) runs on the same inputs, every node's output kept.

What a layer is:

- on the NPU, an operator that computes (convolution, fully connected, pooling, add, mul, a
  lookup table...) with the RESCALE of its accumulator and a CLAMP after it, down to the
  int8/int16 tensor the next layer reads; layout operators (TRANSPOSE, RESHAPE, constants)
  and the RESCALEs that line inputs up for an ADD are not layers;
- on the CPU, a kernel whose output the program quantizes (``quantize_per_tensor``): the
  quantized tensor, with that kernel call's scale and zero point.

Matching a layer to its float counterpart: ExecuTorch names TOSA tensors after the lowered
graph's nodes, numbered per operator kind in graph order (``tosa_conv2d_default_1`` is the
second convolution), so the k-th layer of a kind, counted over the program in call order, is
the float graph's k-th node of that kind (a Linear is lowered to a convolution: both count as
``conv``); the batch norm and the activation (ReLU, ReLU6, clamp) the quantizer folds into a
convolution or an add come with it on the float side. The element counts must agree (a 4-D
TOSA tensor is NHWC, the float one NCHW), else the layer is listed without figures and says
why.

The TOSA graph keeps zero points (RESCALE and pooling operands) but not real scales: each
layer's integers are dequantised on their zero point with the least-squares scale against
the float values (``scale_source: fitted``; a CPU layer the same, so that layers compare, its
own scale and the SQNR on it given beside), so SQNR is the layer's noise at its best scale
and a scale chosen badly at calibration shows only as the clipping it causes. Errors build
up: a layer's figures include every error made before it; the largest single drop says where
the most was added.

torch and ExecuTorch are imported inside the functions (a host-reference module).
"""

from __future__ import annotations

import itertools
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from etu.parsers.errors import ParseError
from etu.runner.layer_figures import float_layout, layer_figures
from etu.runner.target_layers import NO_INTERMEDIATES, session_target
from etu.runner.tosa_graphs import (
    COMPILE_RECORD,
    TosaMatchError,
    candidate_files,
    compile_record,
    quiet_stdout,
    record_is_for,
)

DEFAULT_SQNR_THRESHOLD_DB = 20.0

# TOSA operators that move or reinterpret bytes, or are constants: never a layer
LAYOUT_OPS = {"TRANSPOSE", "RESHAPE", "CONST", "CONST_SHAPE", "IDENTITY", "SLICE", "PAD",
              "TILE", "CAST"}  # fmt: skip
# TOSA operators that continue the layer before them (requantise, fused activation)
FOLLOWER_OPS = {"RESCALE", "CLAMP"}
TOSA_KINDS = {
    "CONV2D": "conv", "DEPTHWISE_CONV2D": "conv", "TRANSPOSE_CONV2D": "conv", "CONV3D": "conv",
    "FULLY_CONNECTED": "conv", "MATMUL": "conv", "MAX_POOL2D": "maxpool",
    "AVG_POOL2D": "avgpool", "REDUCE_SUM": "avgpool", "ADD": "add", "SUB": "sub", "MUL": "mul",
    "CONCAT": "cat", "TABLE": "act", "SIGMOID": "act", "TANH": "act", "ERF": "act",
    "REDUCE_MAX": "max", "ARGMAX": "argmax", "MAXIMUM": "max", "MINIMUM": "min",
}  # fmt: skip
# aten operator names (without overload) → the same kinds
FLOAT_KINDS = {
    "conv2d": "conv", "convolution": "conv", "conv1d": "conv", "conv3d": "conv",
    "conv_transpose2d": "conv", "linear": "conv", "addmm": "conv", "mm": "conv", "bmm": "conv",
    "matmul": "conv", "max_pool2d": "maxpool", "max_pool2d_with_indices": "maxpool",
    "avg_pool2d": "avgpool", "adaptive_avg_pool2d": "avgpool", "mean": "avgpool",
    "add": "add", "add_": "add", "sub": "sub", "mul": "mul", "cat": "cat", "concat": "cat",
    "sigmoid": "act", "tanh": "act", "hardswish": "act", "hardsigmoid": "act", "gelu": "act",
    "silu": "act", "softmax": "act", "amax": "max", "argmax": "argmax", "maximum": "max",
    "minimum": "min", "topk": "topk", "sort": "topk",
}  # fmt: skip
# what the quantizer folds into the convolution or add before it: the norm, then the activation
FOLDED_NORMS = {"batch_norm", "_native_batch_norm_legit_no_training", "native_batch_norm"}
FUSED_ACTIVATIONS = {"relu", "relu_", "hardtanh", "hardtanh_", "relu6", "clamp", "clamp_"}
LAYERS_NOTE = (
    "each layer's integers are dequantised on its zero point with the least-squares scale "
    "(an NPU layer's TOSA graph keeps no real scales): SQNR is the noise at the best scale; "
    "program_scale_sqnr_db is the same on the layer's real scale (a CPU layer's quantize "
    "kernel, an NPU layer's from the compile record), clipping included; errors build up "
    "from layer to layer"
)
INTEGER_TOSA = {"INT8": "int8", "INT16": "int16"}  # activations a layer ends on


class LayersError(RuntimeError):
    """One line: why there is no per-layer comparison for this program."""


@dataclass
class Layer:
    """One layer's figures, the float model against the program on the host."""

    name: str  # the TOSA tensor the layer ends on (named after the lowered graph's node)
    op: str  # the TOSA operator that computes it (CONV2D, MAX_POOL2D...)
    kind: str
    module: str | None  # the nn.Module path of the float counterpart ("features.3")
    float_node: str | None  # the float graph's node ("conv2d_1", with "+relu_1" if fused)
    unit: str  # "NPU" (an Ethos-U delegate) or "CPU"
    delegate: int | None
    shape: list[int]
    dtype: str
    zero_point: int | None
    scale: float | None
    scale_source: str | None  # "fitted": least squares on the zero point
    sqnr_db: float | None  # None: no error at all, or a float side of zeros (cosine None)
    cosine: float | None
    max_abs_error: float | None
    note: str | None = None
    # the layer's real scale: a CPU layer's quantize kernel's, an NPU layer's as calibration
    # chose it (the compile record's activation_quantization, its zero point the graph's)
    program_scale: float | None = None
    program_scale_sqnr_db: float | None = None  # ... and the SQNR on it (clipping included)
    # the target's own integers (a runner's ETDump intermediate outputs) against the host's
    target_differing: int | None = None  # elements that differ from the host reference
    target_max_lsb: int | None = None  # the largest difference, in steps of the integer
    target_sqnr_db: float | None = None  # the target's integers against the float model

    def to_json(self) -> dict:
        return asdict(self)


# ------------------------------------------------------------------------------ the NPU side


@dataclass
class TosaLayer:
    name: str
    op: str
    kind: str
    dtype: str
    zero_point: int | None
    values: object  # numpy array, the graph's own layout


def _const_array(block, name: str):
    """A constant tensor's values (the serializer keeps them as little-endian bytes)."""
    import numpy

    tensor = block.getTensorByName(name)
    data = tensor.data if tensor is not None else None
    dtype = {"INT8": "int8", "INT16": "int16", "INT32": "int32"}.get(
        tensor.dtype.name if tensor is not None else ""
    )
    if not data or dtype is None:
        return None
    raw = numpy.array(data, dtype=numpy.uint8).tobytes()
    if len(raw) % numpy.dtype(dtype).itemsize:
        return None
    return numpy.frombuffer(raw, dtype=dtype)


def _single_zero_point(block, name: str | None) -> int | None:
    values = _const_array(block, name) if name else None
    if values is None or values.size < 1 or not (values == values[0]).all():
        return None
    return int(values[0])


def tosa_layers(graph_data: bytes, inputs: list, where: str) -> list[TosaLayer]:
    """The layers of one TOSA graph in graph order, each with its values on ``inputs`` (the
    arrays the delegate was handed, in the graph's input order)."""
    import tosa_reference_model
    import tosa_serializer

    with tempfile.TemporaryDirectory(prefix="etu-layers-") as scratch:
        path = Path(scratch) / "graph.tosa"
        path.write_bytes(graph_data)
        with quiet_stdout():
            serializer = tosa_serializer.TosaSerializer(targetMinor=0, targetDraft=False)
            loaded = serializer.loadTosaFlatbuffer(str(path))
    regions = serializer.regions if loaded else []
    if not regions or not regions[0].basicBlocks:
        raise LayersError(f"{where}: the tosa_serializer could not read the graph")
    block = regions[0].basicBlocks[0]
    consumers: dict[str, int] = {}
    for operator in block.operators:
        for name in operator.inputs:
            consumers[name] = consumers.get(name, 0) + 1
    zero_points: dict[str, int | None] = {}
    for name in block.inputs:
        zero_points[name] = None  # known only to the program's quantize kernel
    ends: list[tuple[str, str, str]] = []  # (tensor, anchor op, kind)
    anchor_of: dict[str, tuple[str, str]] = {}
    for operator in block.operators:
        op = operator.op.name
        if not operator.outputs:
            continue
        out = operator.outputs[0]
        first = operator.inputs[0] if operator.inputs else None
        if op == "RESCALE":
            zero_points[out] = _single_zero_point(block, _at(operator.inputs, 4))
        elif op == "AVG_POOL2D":  # out = mean(in - input_zp) + output_zp
            given, taken = (_single_zero_point(block, _at(operator.inputs, k)) for k in (1, 2))
            before = zero_points.get(first)
            zero_points[out] = (taken if before is None or given is None or taken is None
                                else before - given + taken)  # fmt: skip
        elif op in ("CONV2D", "DEPTHWISE_CONV2D", "FULLY_CONNECTED", "MATMUL", "TABLE"):
            zero_points[out] = None
        else:
            zero_points[out] = zero_points.get(first) if first else None
        if op in LAYOUT_OPS:
            continue
        if op == "RESCALE" and first in anchor_of and not _is_activation(block, first):
            anchor_of[out] = anchor_of[first]  # an accumulator requantised: the layer's end
        elif op == "CLAMP" and first in anchor_of and consumers.get(first, 0) == 1:
            anchor_of[out] = anchor_of.pop(first)  # a fused activation: the layer goes on
            ends = [e for e in ends if e[0] != first]
        elif op in FOLLOWER_OPS:
            continue  # a RESCALE of an activation (to add it, or of a graph input): no layer
        else:
            anchor_of[out] = (op, TOSA_KINDS.get(op, op.lower()))
        tensor = block.getTensorByName(out)
        if tensor is not None and tensor.dtype.name in INTEGER_TOSA:
            ends.append((out, *anchor_of[out]))
    outputs = list(block.outputs)
    for name, _op, _kind in ends:
        if name not in outputs:
            block.addOutput(name)
    try:
        with quiet_stdout():
            results, status = tosa_reference_model.run(serializer.serialize(), inputs)
    except (ValueError, RuntimeError) as error:  # the model refuses the graph or its inputs
        raise LayersError(f"{where}: the TOSA reference model: {error}") from None
    if status != tosa_reference_model.GraphStatus.TOSA_VALID:
        raise LayersError(f"{where}: the TOSA reference model ended with {status.name}")
    arrays = dict(zip(block.outputs, results, strict=False))
    layers = []
    for name, op, kind in ends:
        if name not in arrays:
            raise LayersError(f"{where}: the reference model gave no values for {name}")
        dtype = INTEGER_TOSA[block.getTensorByName(name).dtype.name]
        layers.append(TosaLayer(name, op, kind, dtype, zero_points.get(name), arrays[name]))
    return layers


def _is_activation(block, name: str) -> bool:
    tensor = block.getTensorByName(name)
    return tensor is not None and tensor.dtype.name in INTEGER_TOSA


def _at(items, index: int):
    return items[index] if len(items) > index else None


# ------------------------------------------------------------------------------ the CPU side

QUANTIZE_KERNEL = "quantized_decomposed::quantize_per_tensor.out"


@dataclass
class CpuLayer:
    name: str  # the kernel that computed it, numbered per kernel ("convolution_1")
    op: str  # its operator (aten::convolution.out)
    kind: str
    dtype: str
    zero_point: int
    scale: float
    values: object  # numpy array, the program's layout (the tensor's sizes)
    instruction: int = -1  # the quantize kernel call's index in the chain (ETDump's id)


class ProgramWalk:
    """Called by the host reference after each instruction (``after_call``): the order of
    delegate calls and CPU layers, and each CPU layer's integers as its
    ``quantize_per_tensor`` kernel wrote them (with that call's scale and zero point: the
    program keeps the real ones on the CPU side)."""

    def __init__(self, plan) -> None:
        self.plan = plan
        self.events: list[tuple[str, object]] = []  # ("npu", delegate index) | ("cpu", layer)
        self.writers: dict[int, tuple[str, int | None]] = {}  # value → (kernel, first input)
        self.counts: dict[str, int] = {}
        self.repeated: set[int] = set()
        self.index = -1  # the instruction being walked

    def __call__(self, instruction, memory) -> None:
        from etu.parsers.pte import DelegateCall, Tensor

        self.index += 1
        if isinstance(instruction, DelegateCall):
            index = instruction.delegate_index
            if ("npu", index) in self.events:
                self.repeated.add(index)
            else:
                self.events.append(("npu", index))
            return
        plan = self.plan
        operator = plan.operators[instruction.op_index]
        args = instruction.args
        if operator.qualified_name == QUANTIZE_KERNEL and len(args) >= 7:
            self._quantized(args, memory)
        name = operator.name.partition("::")[2] or operator.name
        first = next((a for a in args if 0 <= a < len(plan.values)
                      and isinstance(plan.values[a], Tensor)), None)  # fmt: skip
        for value in self._written(args):
            self.writers[value] = (name, first)

    def _written(self, args) -> list[int]:
        """An out-variant call's returns come last: a tensor, or a list of them."""
        from etu.parsers.pte import Tensor

        if not args or not 0 <= args[-1] < len(self.plan.values):
            return []
        last = self.plan.values[args[-1]]
        if isinstance(last, Tensor):
            return [args[-1]]
        if last.kind == "TensorList":
            return [int(i) for i in last.payload or () if 0 <= int(i) < len(self.plan.values)]
        return []

    def _quantized(self, args, memory) -> None:
        from etu.runner.host_memory import to_torch

        plan = self.plan
        source, out = args[0], args[-1]
        writer = self.writers.get(source)
        if writer is None:
            return  # a program input, or a view: not a layer's output
        kernel, before = writer
        if kernel in FUSED_ACTIVATIONS and before in self.writers:
            inner = self.writers[before][0]
            if FLOAT_KINDS.get(inner) in ("conv", "add"):
                kernel = inner  # the activation folded into the layer, as on the float side
        kind = FLOAT_KINDS.get(kernel)
        if kind is None:
            return
        scale, zero_point = plan.values[args[1]].payload, plan.values[args[2]].payload
        if not isinstance(scale, int | float) or not isinstance(zero_point, int):
            return
        tensor = plan.values[out]
        values = to_torch(tensor, memory.read(out), out).numpy().copy()
        count = self.counts.get(kernel, 0)
        self.counts[kernel] = count + 1
        name = kernel if count == 0 else f"{kernel}_{count}"
        self.events.append(("cpu", CpuLayer(name, f"aten::{kernel}", kind, str(values.dtype),
                                            zero_point, float(scale), values,
                                            self.index)))  # fmt: skip


# ---------------------------------------------------------------------------- the float side


@dataclass
class FloatNode:
    name: str  # node name, "+relu" when a fused activation is taken with it
    kind: str
    module: str | None
    value: object  # numpy array


def _module_path(node) -> str | None:
    """The innermost nn.Module the node was traced in ("" for the model's own forward)."""
    stack = node.meta.get("nn_module_stack")
    if not isinstance(stack, dict):
        return None
    paths = [value[0] for value in stack.values() if isinstance(value, tuple | list) and value]
    paths = [p for p in paths if isinstance(p, str) and p]
    return paths[-1] if paths else ""


def _aten_name(node) -> str | None:
    if node.op != "call_function":
        return None
    target = getattr(node.target, "__name__", str(node.target))
    return target.split(".")[0]


def float_nodes(exported, inputs: list) -> list[FloatNode]:
    """The float graph's nodes that are layers, in graph order, with their outputs on
    ``inputs``; an activation fused by the quantizer comes with the node before it."""
    import torch

    module = exported.module(check_guards=False)
    kept: dict[str, object] = {}

    class Keeping(torch.fx.Interpreter):
        def run_node(self, node):
            result = super().run_node(node)
            first = result[0] if isinstance(result, tuple | list) and result else result
            if isinstance(first, torch.Tensor):  # topk, max_pool2d_with_indices: the values
                kept[node.name] = first.detach()
            return result

    with torch.no_grad():
        Keeping(module).run(*inputs)
    nodes = []
    for node in module.graph.nodes:
        name = _aten_name(node)
        kind = FLOAT_KINDS.get(name or "")
        if kind is None or node.name not in kept:
            continue
        label, value = node.name, kept[node.name]
        if kind in ("conv", "add"):  # batch norm and activation folded in by the quantizer
            end = node
            for folded in (FOLDED_NORMS, FUSED_ACTIVATIONS):
                users = list(end.users)
                if len(users) == 1 and _aten_name(users[0]) in folded and users[0].name in kept:
                    end = users[0]
                    label, value = f"{label}+{end.name}", kept[end.name]
        nodes.append(FloatNode(label, kind, _module_path(node), value.float().numpy()))
    return nodes


# ----------------------------------------------------------------------------- the program


def _float_model_path(pte: Path, tosa: Path | None) -> Path:
    """The saved float model (``.pt2``) of the compile beside ``pte``; its compile record
    is checked to be ``pte``'s own."""
    try:
        _files, folder = candidate_files(pte, tosa)
    except TosaMatchError:
        folder = None
    record = compile_record(folder)
    if record is None:
        raise LayersError(f"{pte}: no compile record beside it (vela/{COMPILE_RECORD}): "
                          "compile it with etu compile to keep the float model")  # fmt: skip
    if not record_is_for(pte, record):
        raise LayersError(f"{pte}: {Path(folder) / COMPILE_RECORD} is another program's compile")
    entry = record.get("float_model") if isinstance(record.get("float_model"), dict) else {}
    name = entry.get("file")
    if not isinstance(name, str) or not name or Path(name).name != name:
        why = entry.get("note") or "this compile kept no float model (recompile with etu)"
        raise LayersError(f"{pte}: no float model (.pt2): {why}")
    path = Path(folder) / name
    if not path.is_file():
        raise LayersError(f"{pte}: the float model {path} is no longer there")
    return path


def program_layers(
    pte: Path,
    *,
    tosa: Path | None = None,
    inputs: Path | str | None = None,
    threshold_db: float = DEFAULT_SQNR_THRESHOLD_DB,
    session: Path | None = None,
) -> dict:
    """The ``layers`` record of ``etu compare --layers``: one entry per layer in graph
    order, the weakest, the first below ``threshold_db`` and the largest single drop. With
    a ``session`` whose runner kept its intermediate outputs, its CPU layers also say how the
    target's integers differ from the host's. Raises LayersError (one line)."""
    import numpy
    import torch

    from etu.parsers.files import GiB, read_regular
    from etu.runner.reference import ReferenceError, float_inputs, program_reference
    from etu.runner.segment_program import SegmentError

    pte = Path(pte)
    model_path = _float_model_path(pte, tosa)
    recorded = compile_record(model_path.parent) or {}
    activations = recorded.get("activation_quantization")
    activations = activations if isinstance(activations, dict) else {}
    target = session_target(Path(session)) if session is not None else None
    walks: list[ProgramWalk] = []

    def after_call(instruction, memory) -> None:
        if not walks:
            walks.append(ProgramWalk(memory.plan))
        walks[0](instruction, memory)

    try:
        reference = program_reference(pte, tosa=tosa, inputs=inputs, float_side=False,
                                      after_call=after_call)  # fmt: skip
    except (ReferenceError, SegmentError, TosaMatchError, ParseError) as error:
        raise LayersError(f"{pte}: {error}") from None
    walk = walks[0] if walks else ProgramWalk(reference.plan)
    made = float_inputs(reference)
    if made is None:
        raise LayersError(f"{pte}: an integer input whose scale and zero point the program "
                          "does not say: the float model cannot take the same inputs")  # fmt: skip
    try:
        data = read_regular(model_path, "a saved float model", 4 * GiB)
        from io import BytesIO

        with quiet_stdout(silent=True):  # torch logs a traceback of its own for a bad file
            exported = torch.export.load(BytesIO(data))
        with quiet_stdout():
            floats = float_nodes(exported, made)
    except (ParseError, OSError) as error:
        raise LayersError(f"{model_path}: {error}") from None
    except Exception as error:  # a float model that no longer loads or runs: say why
        text = str(error).splitlines()[0][:200] if str(error) else ""
        raise LayersError(f"{model_path}: {type(error).__name__}: {text}") from None
    by_kind: dict[str, list[FloatNode]] = {}
    for node in floats:
        by_kind.setdefault(node.kind, []).append(node)
    used: dict[str, int] = {}
    runs = {run.graph.delegate_index: run for run in reference.delegates}
    layers: list[Layer] = []

    def counterpart(kind: str) -> FloatNode | None:
        k = used.get(kind, 0)
        used[kind] = k + 1
        candidates = by_kind.get(kind, [])
        return candidates[k] if k < len(candidates) else None

    for unit, item in walk.events:
        if unit == "cpu":
            node = counterpart(item.kind)
            layer = _layer(item, node, "CPU", None)
            if target is not None:
                target.compare(layer, item, node)
            layers.append(layer)
            continue
        run = runs[item]
        graph = run.graph.graph
        where = f"delegate {item} ({graph.path.name})"
        arrays = [
            numpy.asarray(record["values"], dtype=io.numpy_dtype).reshape(io.shape)
            for record, io in zip(run.inputs, graph.inputs, strict=True)
        ]
        for tosa_layer in tosa_layers(graph.data, arrays, where):
            node = counterpart(tosa_layer.kind)
            scale = _recorded_scale(activations, node, tosa_layer.zero_point)
            layers.append(_layer(tosa_layer, node, "NPU", item, scale))
    if not layers:
        raise LayersError(f"{pte}: no layer found: neither an Ethos-U delegate nor a quantized "
                          "CPU kernel")  # fmt: skip
    record = layers_record(pte, layers, threshold_db, reference.input_source, model_path)
    if target is not None:
        record["layers_summary"]["target"] = target.summary(layers)
    elif session is not None:
        record["layers_summary"]["target"] = {"source": None, "note": NO_INTERMEDIATES}
    if walk.repeated:
        record["layers_summary"]["note"] += (
            f"; delegate {sorted(walk.repeated)[0]} is called more than once: its layers are "
            "those of its last call"
        )
    return record


def _recorded_scale(activations: dict, node: FloatNode | None, zero_point: int | None):
    """An NPU layer's real scale: what calibration chose for its float counterpart's output
    (the last node of a fused group), used only when the recorded zero point is the one the
    TOSA graph gives the layer (the match is then the same tensor)."""
    if node is None or zero_point is None:
        return None
    entry = activations.get(node.name.split("+")[-1])
    if not isinstance(entry, dict) or entry.get("zero_point") != zero_point:
        return None
    scale = entry.get("scale")
    return float(scale) if isinstance(scale, int | float) and scale > 0 else None


def _layer(
    source: TosaLayer | CpuLayer,
    node: FloatNode | None,
    unit: str,
    delegate: int | None,
    recorded_scale: float | None = None,
) -> Layer:
    values = source.values
    shape = tuple(int(s) for s in values.shape)
    known_scale = source.scale if isinstance(source, CpuLayer) else recorded_scale
    figures = {"scale": None, "zero_point": source.zero_point, "sqnr_db": None,
               "cosine": None, "max_abs_error": None}  # fmt: skip
    on_program_scale = None
    note = None
    if unit == "CPU":  # the program's own layout: the float model's
        floats = node.value.reshape(shape) if node and node.value.size == values.size else None
    else:
        floats = float_layout(node.value, shape) if node is not None else None
    if node is None:
        note = f"no float counterpart: the float model has fewer {source.kind} nodes"
    elif floats is None:
        note = (f"{node.name} is {list(node.value.shape)}, the layer's tensor {list(shape)}: "
                "they do not match")  # fmt: skip
    else:
        # every layer on its best scale, so that layers compare with each other (an NPU
        # layer's real scale is not in its graph); a CPU layer's own scale is given beside
        figures = layer_figures(values, source.zero_point, floats)
        if known_scale is not None:
            on_program_scale = layer_figures(values, source.zero_point, floats, known_scale)
    return Layer(
        name=source.name, op=source.op, kind=source.kind,
        module=node.module if node else None, float_node=node.name if node else None,
        unit=unit, delegate=delegate, shape=list(shape), dtype=source.dtype,
        zero_point=figures["zero_point"], scale=figures["scale"],
        scale_source="fitted" if figures["scale"] is not None else None,
        sqnr_db=figures["sqnr_db"], cosine=figures["cosine"],
        max_abs_error=figures["max_abs_error"], note=note, program_scale=known_scale,
        program_scale_sqnr_db=on_program_scale["sqnr_db"] if on_program_scale else None,
    )  # fmt: skip


def layers_record(
    pte: Path, layers: list[Layer], threshold_db: float, input_source: str, model: Path
) -> dict:
    """The JSON record: the layers and the three markers (weakest, first below the
    threshold, largest single drop from the layer before)."""
    measured = [(i, layer) for i, layer in enumerate(layers) if layer.sqnr_db is not None]
    weakest = min(measured, key=lambda pair: pair[1].sqnr_db, default=None)
    first_below = next((layer for _i, layer in measured if layer.sqnr_db < threshold_db), None)
    drop = None
    for (_a, before), (_b, after) in itertools.pairwise(measured):
        change = before.sqnr_db - after.sqnr_db
        if change > 0 and (drop is None or change > drop[1]):
            drop = (after, change)
    largest = {"name": drop[0].name, "drop_db": round(drop[1], 3)} if drop else None
    rows = []
    for layer in layers:
        row = layer.to_json()
        row["below_threshold"] = layer.sqnr_db is not None and layer.sqnr_db < threshold_db
        row["first_below_threshold"] = layer is first_below
        row["largest_drop"] = drop is not None and layer is drop[0]
        row["weakest"] = weakest is not None and layer is weakest[1]
        rows.append(row)
    return {
        "program": str(pte),
        "layers": rows,
        "layers_summary": {
            "float_model": str(model),
            "inputs": input_source,
            "sqnr_threshold_db": threshold_db,
            "weakest": weakest[1].name if weakest else None,
            "first_below_threshold": first_below.name if first_below else None,
            "largest_drop": largest,
            "note": LAYERS_NOTE,
        },
    }


def session_layers(
    pte: Path | None,
    session: Path | None = None,
    *,
    threshold_db: float = DEFAULT_SQNR_THRESHOLD_DB,
) -> dict:
    """The layers of ``pte`` (or of the program ``session`` ran) on the inputs the session
    ran on, all ones without a session: what the console's Layers view shows. The record
    says which program and which inputs; raises LayersError (one line)."""
    from etu.runner.compare import (
        CompareError,
        inputs_file,
        session_inputs,
        session_outputs,
        session_program_path,
    )

    inputs = None
    if session is not None:
        try:
            program = session_program_path(Path(session), None) or pte
            recorded = session_inputs(session_outputs(Path(session))[1])
            if recorded["kind"] == "bundle":
                raise LayersError(f"{session}: a BundleIO run whose inputs etu did not record: "
                                  "its layers cannot be compared on the same inputs")  # fmt: skip
            inputs = inputs_file(recorded)
        except CompareError as error:
            raise LayersError(str(error).splitlines()[0] if str(error) else "no session") from None
        pte = program
    if pte is None or not Path(pte).is_file():
        raise LayersError(f"{pte or 'the session'}: no program file to compare layer by layer")
    return program_layers(Path(pte), inputs=inputs, threshold_db=threshold_db, session=session)


def layers_in_child(
    pte: Path | None, session: Path | None = None, *, timeout: float = 600.0
) -> dict:
    """:func:`session_layers` in an isolated child process (the console never imports
    torch itself). Raises LayersError with one line."""
    from etu.runner.isolated import ChildError, json_child

    try:
        return json_child("etu.runner.layers", str(pte or ""), str(session or ""),
                          what="the per-layer comparison", timeout=timeout,
                          preload="etu.runner.reference")  # fmt: skip
    except ChildError as error:
        raise LayersError(str(error)) from None


def _child(pte: str, session: str) -> dict:
    try:
        return session_layers(Path(pte) if pte else None, Path(session) if session else None)
    except LayersError as error:  # already one line: no "unexpected" prefix
        return {"error": str(error)}


if __name__ == "__main__":
    import sys

    from etu.runner.isolated import print_json_record

    raise SystemExit(print_json_record(_child, *[*sys.argv[1:3], "", ""][:2]))
