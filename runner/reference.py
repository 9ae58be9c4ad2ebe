"""The host reference of a program: what it should output, for CPU kernels and NPU alike.

ExecuTorch's host runtime cannot run an Ethos-U delegate ("Backend EthosUBackend is not
registered"). Here a program runs on the host the way the target runs it, part by part:

- **the CPU part** with ExecuTorch's own kernels: each run of kernel calls between two
  delegate calls is written as a program of its own (:mod:`etu.runner.segment_program`) and
  executed by the host runtime (``executorch.extension.pybindings``, the quantized kernels
  loaded as ``etu compare`` loads them); an operator the host runtime has no kernel for runs
  as PyTorch's ATen out-variant of it, and the reference says so in its notes;
- **each Ethos-U delegate** through the TOSA reference model on the graph Vela compiled it
  from (:mod:`etu.runner.tosa_graphs` finds it, with proof). Arm's conformance promise: the NPU
  computes exactly what the reference model computes for that graph.

The program's planned memory is kept on the host as the runtime lays it out (one buffer per
memory id, each tensor at its offset in its dim order): a part's tensors are copied in from
it and read back into it, so views that share memory, and the bytes a delegate reads and
writes, are the runtime's. A delegate's inputs are its tensors' bytes as the runtime hands
them over (``EthosUBackend`` copies them byte for byte into the NPU's buffers): read in the
TOSA graph's input order and shapes (Ethos-U graphs take the program's NCHW bytes and
transpose inside); its outputs are written back the same way. Shapes and element sizes are
checked against the graph's block inputs and outputs first.

torch and ExecuTorch are imported inside the functions (a host-reference module).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from io import BytesIO
from pathlib import Path

from etu.parsers.errors import ParseError
from etu.parsers.pte import (
    DelegateCall,
    ExecutionPlan,
    KernelCall,
    Program,
    Tensor,
    open_program,
)
from etu.runner.bundleio import RANDOM_PREFIX
from etu.runner.host_memory import (
    TORCH_DTYPES,
    Memory,
    ReferenceError,
    default_inputs,
    from_torch,
    in_memory_order,
    load_inputs,
    physical_shape,
    to_torch,
    torch_dtype,
)
from etu.runner.segment_program import SegmentError, segment_program
from etu.runner.tosa_graphs import (
    COMPILE_RECORD,
    DelegateGraph,
    TosaMatchError,
    candidate_files,
    compile_record,
    match_delegates,
    quiet_stdout,
    record_is_for,
)

FLOAT_OUTPUTS_FILE = "etu_float_outputs.npz"  # runner.aot writes it beside the record


# ------------------------------------------------------------------------------ running


@dataclass
class DelegateRun:
    graph: DelegateGraph
    calls: int = 0
    inputs: list[dict] = field(default_factory=list)
    outputs: list[dict] = field(default_factory=list)


def host_runtime():
    """ExecuTorch's host runtime (its pybindings) with the quantized kernels registered; the
    light import: ``executorch.runtime`` imports all of ``executorch.exir`` (3 s) first."""
    import executorch.kernels.quantized  # noqa: F401  (quantized_decomposed::* kernels)
    import torch  # noqa: F401  (the pybindings need it loaded first)
    from executorch.extension.pybindings import _C

    return _C


def preload() -> None:
    """The host runtime, imported once by the warm host (:mod:`etu.runner.warm_host`) whose
    forks compare runs with the host (``compare``, ``layers``)."""
    host_runtime()


def run_calls(runtime, program: Program, plan: ExecutionPlan, calls, memory: Memory) -> None:
    """Kernel calls as a program of their own in the host runtime, on ``memory``."""
    segment = segment_program(program, plan, calls)
    with quiet_stdout():
        module = runtime._load_for_executorch_from_buffer(segment.data)
        inputs = tuple(to_torch(plan.values[i], memory.read(i), i) for i in segment.io)
        outputs = module.run_method("forward", inputs)
    if len(outputs) != len(segment.io):
        raise ReferenceError(f"the host runtime returned {len(outputs)} tensors for "
                             f"{len(segment.io)}")  # fmt: skip
    # Every output is read after the run, so tensors sharing memory carry the same bytes.
    for index, value in zip(segment.io, outputs, strict=True):
        memory.write(index, from_torch(plan.values[index], value))


def runtime_operators(runtime) -> set[str]:
    """The operators (``ns::name.overload``) the host runtime has kernels for."""
    return set(runtime._get_operator_names())


def run_aten(plan: ExecutionPlan, call: KernelCall, memory: Memory) -> None:
    """A kernel call the host runtime has no kernel for, as PyTorch's ATen out-variant of
    the same operator on the values it names; every tensor the schema writes goes back to
    ``memory``."""
    import torch

    op = plan.operators[call.op_index]
    namespace, _, name = op.name.partition("::")
    if namespace == "cortex_m":  # the Cortex-M backend's operators, as PyTorch ops
        # (through its passes: importing its ops module first is a circular import)
        import executorch.backends.cortex_m.passes  # noqa: F401
    try:
        function = getattr(getattr(getattr(torch.ops, namespace), name), op.overload or "default")
        schema = function._schema
    except (AttributeError, RuntimeError):
        raise ReferenceError(f"{op.qualified_name}: neither the host runtime nor PyTorch has a "
                             "kernel for it") from None  # fmt: skip
    arguments = schema.arguments
    if len(call.args) < len(arguments):
        raise ReferenceError(f"{op.qualified_name}: the call passes {len(call.args)} values, "
                             f"its schema takes {len(arguments)}")  # fmt: skip
    tensors: dict[int, object] = {}

    def tensor(index: int):
        if index not in tensors:
            value = plan.values[index]
            tensors[index] = to_torch(value, _tensor_bytes(value, index, memory), index)
        return tensors[index]

    def value_of(index: int, kind: str):
        if index < 0:
            return None
        value = plan.values[index]
        if isinstance(value, Tensor):
            return tensor(index)
        items = value.payload
        if value.kind == "Null":
            return None
        if value.kind == "IntList":
            return [plan.values[int(i)].payload for i in items]
        if value.kind in ("TensorList", "OptionalTensorList"):
            return [None if int(i) < 0 else tensor(int(i)) for i in items]
        if value.kind in ("DoubleList", "BoolList"):
            return list(items)
        if value.kind == "Int" and "ScalarType" in kind:
            return _torch_dtype_of_code(int(items), index)
        return items

    positional, keywords = [], {}
    for argument, index in zip(arguments, call.args, strict=False):
        value = value_of(index, str(argument.type))
        if argument.kwarg_only:
            keywords[argument.name] = value
        else:
            positional.append(value)
    if namespace == "cortex_m" and op.overload == "out" and "out" in keywords:
        # upstream implements only the functional overloads in Python (its reference for
        # the CMSIS-NN kernels): run that one and write its result into `out`
        out = keywords.pop("out")
        out.copy_(getattr(torch.ops.cortex_m, name).default(*positional, **keywords))
    else:
        function(*positional, **keywords)
    for argument, index in zip(arguments, call.args, strict=False):
        if argument.alias_info is None or not argument.alias_info.is_write or index < 0:
            continue
        value = plan.values[index]
        written = [index] if isinstance(value, Tensor) else [int(i) for i in value.payload or ()]
        for i in written:
            if i >= 0 and isinstance(plan.values[i], Tensor):
                memory.write(i, from_torch(plan.values[i], tensors[i]))


def _tensor_bytes(tensor: Tensor, index: int, memory: Memory) -> bytes:
    return memory.read(index) if not tensor.is_constant else bytes(memory.constant(index))


def _torch_dtype_of_code(code: int, index: int):
    from etu.parsers.pte import SCALAR_TYPES

    name = SCALAR_TYPES.get(code, ("?", 0))[0]
    return torch_dtype(Tensor(scalar_type=code, sizes=(), dim_order=()), index) if (
        name in TORCH_DTYPES) else code  # fmt: skip


def _io_record(plan: ExecutionPlan, index: int, io) -> dict:
    tensor = plan.values[index]
    physical = physical_shape(tensor)
    return {
        "value": index,
        "dtype": tensor.dtype,
        "shape": list(tensor.sizes),
        "dim_order": list(tensor.dim_order),
        "tosa": io.to_json(),
        "layout": "same" if list(io.shape) == physical else (
            f"reshaped: the tensor's bytes ({physical} in its dim order) as the graph's "
            f"{list(io.shape)}, as the runtime copies them"),
    }  # fmt: skip


def run_delegate(call: DelegateCall, run: DelegateRun, plan: ExecutionPlan, memory: Memory):
    """One delegate call through the TOSA reference model, on ``memory``."""
    import numpy
    import tosa_reference_model

    graph = run.graph.graph
    n_in, n_out = len(graph.inputs), len(graph.outputs)
    where = f"delegate {call.delegate_index} ({graph.path.name})"
    if len(call.args) != n_in + n_out:
        raise ReferenceError(f"{where}: the call passes {len(call.args)} values, the graph "
                             f"has {n_in} inputs and {n_out} outputs")  # fmt: skip
    arrays, inputs, outputs = [], [], []
    for k, (index, io) in enumerate(zip(call.args[:n_in], graph.inputs, strict=True)):
        tensor = _delegate_tensor(plan, index, where)
        _check_fit(tensor, io, f"{where}: input {k}")
        data = memory.read(index)
        arrays.append(numpy.frombuffer(data, dtype=io.numpy_dtype).reshape(io.shape).copy())
        inputs.append({**_io_record(plan, index, io), "values": arrays[-1].reshape(-1).tolist()})
    with quiet_stdout():
        results, status = tosa_reference_model.run(graph.data, arrays)
    if status != tosa_reference_model.GraphStatus.TOSA_VALID:
        raise ReferenceError(f"{where}: the TOSA reference model ended with {status.name}")
    if len(results) != n_out:
        raise ReferenceError(f"{where}: the TOSA reference model gave {len(results)} outputs "
                             f"for {n_out}")  # fmt: skip
    for k, (index, io, result) in enumerate(
        zip(call.args[n_in:], graph.outputs, results, strict=True)
    ):
        tensor = _delegate_tensor(plan, index, where)
        _check_fit(tensor, io, f"{where}: output {k}")
        array = numpy.ascontiguousarray(result, dtype=io.numpy_dtype)
        memory.write(index, array.tobytes())
        record = _io_record(plan, index, io)
        record["values"] = array.reshape(-1).tolist()
        outputs.append(record)
    run.calls += 1
    run.inputs, run.outputs = inputs, outputs


def _delegate_tensor(plan: ExecutionPlan, index: int, where: str) -> Tensor:
    if not 0 <= index < len(plan.values) or not isinstance(plan.values[index], Tensor):
        raise ReferenceError(f"{where}: argument value {index} is not a tensor")
    return plan.values[index]


def _check_fit(tensor: Tensor, io, where: str) -> None:
    """The runtime copies a tensor's bytes into the NPU's buffer when the element counts and
    sizes agree; the graph's tensor must hold exactly those bytes."""
    import numpy

    if not io.numpy_dtype:
        raise ReferenceError(f"{where}: the graph's {io.name} is {io.dtype}, not supported")
    size = numpy.dtype(io.numpy_dtype).itemsize
    if tensor.numel != io.numel or tensor.element_size != size:
        raise ReferenceError(
            f"{where}: the program's tensor is {tensor.dtype} {list(tensor.sizes)}, the "
            f"graph's {io.name} is {io.dtype} {list(io.shape)}: they do not fit"
        )


@dataclass
class ProgramReference:
    """What :func:`program_reference` found: the outputs and how they were made."""

    program: Path
    plan: ExecutionPlan
    inputs: list  # torch tensors
    input_source: str
    outputs: list  # torch tensors, in the plan's output order
    delegates: list[DelegateRun]
    segments: int
    kernel_calls: int
    aten_calls: dict[str, int] = field(default_factory=dict)  # operator → calls run by ATen
    float_outputs: list | None = None  # numpy arrays: the float model on the same inputs
    float_outputs_note: str | None = None
    notes: list[str] = field(default_factory=list)
    # every plan of the program: an int8-IO program's config methods (input0_scale...) are
    # among them, read with the program once
    config_plans: list[ExecutionPlan] = field(default_factory=list)

    @property
    def source(self) -> str:
        """One line naming what computed the outputs."""
        host = self.kernel_calls - sum(self.aten_calls.values())
        parts = [f"ExecuTorch's host kernels ({host} calls)"]
        if self.aten_calls:
            parts.append(f"PyTorch's ATen for {sum(self.aten_calls.values())}")
        if self.delegates:
            n = len(self.delegates)
            parts.append(f"the TOSA reference model for {n} Ethos-U delegate{'s' * (n > 1)}")
        return f"{' + '.join(parts)} on {self.program}, inputs {self.input_source}"

    def flat_outputs(self) -> list[list[float]]:
        """Each output's values in memory order (its dim order), as the runner prints them:
        a channels-last output (the Cortex-M backend's) is NHWC on the target."""
        return [in_memory_order(t, self.plan.values[i])
                for t, i in zip(self.outputs, self.plan.outputs, strict=True)]  # fmt: skip

    def output_dtypes(self) -> list[str]:
        return [self.plan.values[i].dtype for i in self.plan.outputs]

    def to_json(self) -> dict:
        """The ``etu reference --json`` record."""
        plan = self.plan
        inputs = [
            {"index": k, "value": i, "dtype": plan.values[i].dtype,
             "shape": list(plan.values[i].sizes), "source": self.input_source}
            for k, i in enumerate(plan.inputs)
        ]  # fmt: skip
        outputs = [
            {"index": k, "value": i, "dtype": plan.values[i].dtype, "shape": list(t.shape),
             "values": t.reshape(-1).tolist()}
            for k, (i, t) in enumerate(zip(plan.outputs, self.outputs, strict=True))
        ]  # fmt: skip
        floats = None
        if self.float_outputs is not None:
            floats = [
                {"index": k, "dtype": str(a.dtype), "shape": list(a.shape),
                 "values": a.reshape(-1).tolist()}
                for k, a in enumerate(self.float_outputs)
            ]  # fmt: skip
        delegates = [
            {"index": run.graph.delegate_index,
             "backend": plan.delegates[run.graph.delegate_index].id, "calls": run.calls,
             "tosa": str(run.graph.graph.path), "tosa_sha256": run.graph.graph.sha256,
             "matched_by": run.graph.matched_by, "note": run.graph.note,
             "inputs": run.inputs, "outputs": run.outputs}
            for run in self.delegates
        ]  # fmt: skip
        return {
            "program": str(self.program),
            "program_sha256": _sha256(self.program),
            "plan": plan.name,
            "reference": self.source,
            "inputs": inputs,
            "outputs": outputs,
            "float_outputs": floats,
            "float_outputs_note": self.float_outputs_note,
            "delegates": delegates,
            "cpu_segments": self.segments,
            "kernel_calls": self.kernel_calls,
            "aten_calls": self.aten_calls,
            "notes": self.notes,
        }


def _sha256(path: Path) -> str:
    from etu.parsers.files import GiB, sha256_regular

    return sha256_regular(path, "an ExecuTorch program", 4 * GiB)


def random_reference_inputs(pte: Path, text: str) -> tuple[list, str]:
    """The tensors ``--inputs random:SEED`` gives ``pte`` and their label: drawn by
    runner.bundleio as ``etu run``/``etu firmware build`` draw them (the calibration range
    the compile recorded, else the input's quantisation range), so the reference and a run
    on the same seed see the same bytes. Raises ReferenceError (one line)."""
    from etu.runner.bundleio import BundleError, parse_inputs_option, random_inputs
    from etu.runner.compare import inputs_text

    try:
        _kind, seed = parse_inputs_option(text)
        tensors, record = random_inputs(pte, int(seed))
    except BundleError as error:
        raise ReferenceError(str(error)) from None
    return tensors, inputs_text(record)


def program_reference(
    pte: Path,
    *,
    inputs: Path | Sequence | None = None,
    tosa: Path | None = None,
    split_every_call: bool = False,
    float_side: bool = True,
    after_call: Callable[[KernelCall | DelegateCall, Memory], None] | None = None,
) -> ProgramReference:
    """Run ``pte`` on the host: CPU kernels in ExecuTorch's host runtime, Ethos-U delegates
    in the TOSA reference model. ``inputs``: a .npy/.npz path, ``"random:SEED"`` (drawn as a
    run on those inputs draws them), tensors, or None (all ones).
    ``split_every_call`` runs each kernel call as its own program (a test of the memory
    hand-over: the outputs must not change); ``float_side``: also run the float model the
    compile kept, on the same inputs; ``after_call(instruction, memory)``: called after each
    instruction ran, every kernel call then its own program so that its outputs are still in
    memory (``etu compare --layers``). Raises ReferenceError, TosaMatchError (one line)."""
    pte = Path(pte)
    split_every_call = split_every_call or after_call is not None
    with open_program(pte) as program:
        plan = _forward(program)
        bad = [type(i).__name__ for i in plan.instructions
               if not isinstance(i, KernelCall | DelegateCall)]  # fmt: skip
        if bad:
            raise ReferenceError(f"{pte}: {bad[0]} instructions (control flow, moves) are not "
                                 "supported by the host reference yet")  # fmt: skip
        graphs = match_delegates(program, plan, pte, tosa)
        runtime = host_runtime()
        if inputs is None:
            tensors, source = default_inputs(plan), "all ones"
        elif isinstance(inputs, str) and inputs.startswith(RANDOM_PREFIX):
            tensors, source = random_reference_inputs(pte, inputs)
        elif isinstance(inputs, str | Path):
            tensors, source = load_inputs(plan, Path(inputs)), f"from {inputs}"
        else:
            tensors, source = list(inputs), "given"
        memory = Memory(program, plan)
        for index, value in zip(plan.inputs, tensors, strict=True):
            memory.write(index, from_torch(plan.values[index], value))
        runs = {index: DelegateRun(graph) for index, graph in graphs.items()}
        have = runtime_operators(runtime)
        pending: list[KernelCall] = []
        segments = kernel_calls = 0
        aten: dict[str, int] = {}

        def flush() -> None:
            nonlocal segments
            if pending:
                run_calls(runtime, program, plan, pending, memory)
                segments += 1
                pending.clear()

        try:
            for instruction in plan.instructions:
                if isinstance(instruction, KernelCall):
                    kernel_calls += 1
                    name = _operator_name(plan, instruction)
                    if name not in have:
                        flush()
                        run_aten(plan, instruction, memory)
                        aten[name] = aten.get(name, 0) + 1
                    else:
                        pending.append(instruction)
                        if split_every_call:
                            flush()
                else:
                    flush()
                    run_delegate(instruction, runs[instruction.delegate_index], plan, memory)
                if after_call is not None:
                    after_call(instruction, memory)
            flush()
        except SegmentError as error:
            raise ReferenceError(f"{pte}: {error}") from None
        outputs = [to_torch(plan.values[i], memory.read(i), i).clone() for i in plan.outputs]
    reference = ProgramReference(
        pte, plan, tensors, source, outputs, list(runs.values()), segments, kernel_calls,
        aten_calls=aten, config_plans=list(program.plans),
    )  # fmt: skip
    for name, count in aten.items():
        reference.notes.append(
            f"{name} ({count} call{'s' * (count > 1)}): the host runtime has no kernel for it; "
            "ran PyTorch's ATen kernel instead (the target's may differ in the last bits, or "
            "in the order of ties)"
        )
    if float_side:
        _float_outputs(reference, tosa, ones=inputs is None)
    return reference


def _operator_name(plan: ExecutionPlan, call: KernelCall) -> str:
    if not 0 <= call.op_index < len(plan.operators):
        raise ReferenceError(f"a kernel call names operator {call.op_index}; the plan has "
                             f"{len(plan.operators)}")  # fmt: skip
    return plan.operators[call.op_index].qualified_name


def _forward(program: Program) -> ExecutionPlan:
    if not program.plans:
        raise ReferenceError(f"{program.source}: the program has no methods")
    for plan in program.plans:
        if plan.name == "forward":
            return plan
    return program.plans[0]


def _float_outputs(reference: ProgramReference, tosa: Path | None, ones: bool) -> None:
    """The float model's outputs on the same inputs (quantisation loss): the float program
    the compile saved (``etu_float_model.pt2``, run here), else, for all-ones inputs, the
    outputs an older compile kept. When neither is there, the note says why."""
    try:
        _files, folder = candidate_files(reference.program, tosa)
    except TosaMatchError:
        folder = None
    record = compile_record(folder)
    if record is None:
        reference.float_outputs_note = (
            "not known: no compile record beside the program (vela/etu_compile.json); "
            "compile it with etu to keep the float model"
        )
        return
    if not record_is_for(reference.program, record):
        reference.float_outputs_note = (f"not known: {Path(folder) / COMPILE_RECORD} is "
                                        "another program's compile")  # fmt: skip
        return
    entry = record.get("float_model") if isinstance(record.get("float_model"), dict) else None
    names = [entry.get(key) for key in ("program", "file")] if entry else []
    names = [n for n in names if isinstance(n, str) and n and Path(n).name == n]
    for name in names:  # the ExecuTorch program first: it runs without importing more
        if (Path(folder) / name).is_file():
            _run_float_model(reference, Path(folder) / name, entry)
            return
    if names:
        reference.float_outputs_note = (
            f"gone: the compile saved the float model as {Path(folder) / names[-1]}, which "
            "is no longer there; deployment side only"
        )
        return
    saved = Path(folder) / FLOAT_OUTPUTS_FILE
    if ones and saved.is_file():
        import numpy

        from etu.parsers.files import GiB, read_regular

        data = read_regular(saved, "the float outputs", 4 * GiB)
        with numpy.load(BytesIO(data), allow_pickle=False) as arrays:
            reference.float_outputs = [arrays[key] for key in arrays.files]
        reference.float_outputs_note = "the float model before quantization, inputs all ones"
        return
    why = (entry or {}).get("note") or "this compile kept no float model (recompile with etu)"
    reference.float_outputs_note = f"not known: {why}"


def float_inputs(reference: ProgramReference) -> list | None:
    """The float model's inputs for the reference's: a float input as it is, an integer
    input dequantized with its scale and zero point; None when one cannot be made."""
    import torch

    from etu.runner.io_quantization import program_io_quantization

    config = reference.config_plans
    quantization = {q.index: q for q in program_io_quantization(reference.plan, config)
                    if q.kind == "input"}  # fmt: skip
    made = []
    for k, tensor in enumerate(reference.inputs):
        if tensor.dtype.is_floating_point:
            made.append(tensor.to(torch.float32))
            continue
        q = quantization.get(k)
        if q is None or not q.known:
            return None
        made.append((tensor.to(torch.float32) - q.zero_point) * q.scale)
    return made


def _run_float_model(reference: ProgramReference, path: Path, entry: dict) -> None:
    import torch

    from etu.parsers.files import GiB, read_regular

    inputs = float_inputs(reference)
    if inputs is None:
        reference.float_outputs_note = ("not known: an integer input whose scale and zero "
                                        "point the program does not say")  # fmt: skip
        return
    try:
        if path.suffix == ".pte":  # CPU only: the host runtime, as the reference runs
            floats = program_reference(path, inputs=inputs, float_side=False).outputs
        else:
            data = read_regular(path, "a saved float model", 4 * GiB)
            with quiet_stdout():
                exported = torch.export.load(BytesIO(data))
                with torch.no_grad():
                    result = exported.module(check_guards=False)(*inputs)
            floats = torch.utils._pytree.tree_leaves(result)
    except Exception as error:  # a float model that no longer loads or runs: say why
        text = str(error).splitlines()[0][:200] if str(error) else ""
        reference.float_outputs_note = f"not known: {path}: {type(error).__name__}: {text}"
        return
    reference.float_outputs = [leaf.detach().cpu().numpy() for leaf in floats
                               if isinstance(leaf, torch.Tensor)]  # fmt: skip
    source = entry.get("source") if isinstance(entry.get("source"), str) else "the model"
    integer = any(not tensor.dtype.is_floating_point for tensor in reference.inputs)
    how = ", integers dequantized with their scale and zero point" if integer else ""
    reference.float_outputs_note = (f"the float model before quantization ({source}, saved as "
                                    f"{path.name}), inputs {reference.input_source}"
                                    f"{how}")  # fmt: skip


# ------------------------------------------------------------------------- comparisons


def integer_comparison(target: list[float], reference: list[float]) -> dict:
    """Exact comparison of integer outputs: elements that differ, largest difference in
    LSBs (units of the last place: 1 for an integer)."""
    count = min(len(target), len(reference))
    diffs = [
        abs(t - r) if not (math.isnan(t) or math.isnan(r)) else math.inf
        for t, r in zip(target[:count], reference[:count], strict=True)
    ]
    largest = max(diffs, default=0.0)
    return {
        "differing": sum(1 for d in diffs if d != 0),
        "max_lsb": None if math.isinf(largest) else round(largest),
    }


def compare_reference(program: Path, tosa: Path | None = None, inputs: Path | None = None):
    """For ``etu compare``: a :class:`etu.runner.compare.HostReference` (each output's
    values, what made them, output dtypes, notes, the float model's outputs or why there
    are none) on ``inputs`` (a .npy/.npz; None: all ones); CompareError (one line) when
    there is no reference."""
    from etu.runner.compare import CompareError, HostReference
    from etu.runner.segment_program import SegmentError

    try:
        reference = program_reference(program, tosa=tosa, inputs=inputs)
    except (ReferenceError, SegmentError) as error:
        if _has_delegate_calls(program):
            raise CompareError(f"{program}: {error}") from None
        # A CPU-only program the parts cannot express (mutable state, control flow): the
        # host runtime runs it whole, as etu compare always did.
        from etu.runner.compare import host_reference

        with open_program(program) as opened:
            dtypes = [opened.plans[0].values[i].dtype for i in opened.plans[0].outputs]
            tensors = None if inputs is None else load_inputs(opened.plans[0], inputs)
        source = (f"host runtime (ExecuTorch pybindings) on {program}, inputs "
                  f"{'all ones' if inputs is None else f'from {inputs}'}")  # fmt: skip
        return HostReference(host_reference(program, tensors), source, dtypes,
                             [f"run whole: {error}"],
                             float_note="not known: the program ran whole")  # fmt: skip
    except (TosaMatchError, ParseError) as error:
        raise CompareError(f"{program}: {error}") from None
    notes = list(reference.notes)
    for run in reference.delegates:
        graph = run.graph
        notes.append(f"delegate {graph.delegate_index}: {graph.graph.path} (matched by "
                     f"{graph.matched_by}{': ' + graph.note if graph.note else ''})")  # fmt: skip
    floats = None
    if reference.float_outputs is not None:
        import torch

        plan = reference.plan  # in the program's output dim orders too, like the target's
        floats = []
        for k, array in enumerate(reference.float_outputs):
            value = torch.as_tensor(array)
            output = plan.values[plan.outputs[k]] if k < len(plan.outputs) else None
            if output is not None and tuple(value.shape) == tuple(output.sizes):
                floats.append(in_memory_order(value, output))
            else:
                floats.append([float(v) for v in value.reshape(-1).tolist()])
    return HostReference(reference.flat_outputs(), reference.source, reference.output_dtypes(),
                         notes, floats, reference.float_outputs_note)  # fmt: skip


def _has_delegate_calls(program: Path) -> bool:
    with open_program(program) as opened:
        return any(isinstance(i, DelegateCall) for i in _forward(opened).instructions)


def reference_record(path: str) -> dict:
    return program_reference(Path(path)).to_json()


if __name__ == "__main__":
    import sys

    from etu.runner.isolated import print_json_record

    raise SystemExit(print_json_record(reference_record, sys.argv[1]))
