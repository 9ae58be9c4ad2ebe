"""The ExecuTorch Ethos-U ahead-of-time flow, in one function.

torch.export → EthosUQuantizer (prepare_pt2e / calibrate / convert_pt2e) →
to_edge_transform_and_lower with EthosUPartitioner (TOSA → Vela) → to_executorch → .pte.

torch and executorch are imported inside the functions: importing this module is cheap,
and the console never calls it in its own process.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import re
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePath

from etu.runner.compile_request import tool_versions

VELA_STDOUT_NAME = "vela_stdout.txt"
COMPILE_RECORD_NAME = "etu_compile.json"  # the spec and tool versions that made the files
FLOAT_OUTPUTS_NAME = "etu_float_outputs.npz"  # the float model's outputs on all-ones inputs
FLOAT_MODEL_NAME = "etu_float_model.pt2"  # the exported float program (torch.export.save)
FLOAT_PROGRAM_NAME = "etu_float_model.pte"  # the same, as an ExecuTorch program (CPU only)

Progress = Callable[[str, float], None]
"""Called with (stage name, seconds the stage took) as each stage ends."""


@dataclass(frozen=True)
class LoweringSpec:
    target: str = "ethos-u55-128"
    system_config: str | None = None  # ExecuTorch's default for the target when None
    memory_mode: str | None = None
    quantize: bool = True
    per_channel: bool = True
    delegate: bool = True
    extract_delegate_segments: bool = False  # the Arm examples keep the payload inline
    extra_vela_flags: tuple[str, ...] = ()
    # Vela blocks moved to a .ptd beside the program ("cmd", "weights"; ExecuTorch PR 21893)
    external_blocks: tuple[str, ...] = ()
    # a larger Ethos-U scratch fails the compile (ExecuTorch PR 22884's max_scratch_size)
    max_scratch_size: int | None = None
    # what runs the CPU part: ExecuTorch's portable kernels, or the Cortex-M backend
    # (cortex_m::* kernels on CMSIS-NN; "Ethos-U55 with CMSIS-NN fallback", PR 19768)
    cpu_backend: str = "portable"
    # inputs and outputs as the quantized integers (ExecuTorch's quantize_io_pass): the
    # program keeps each one's scale and zero point as config methods (input0_scale...)
    int8_io: bool = False


CPU_BACKENDS = ("portable", "cortex-m")


EXTERNAL_BLOCKS = {"cmd": "cmd_data", "weights": "weight_data"}


class ScratchLimitError(ValueError):
    """A delegate's Ethos-U scratch is larger than ``max_scratch_size``."""


def scratch_limit_argument(spec_class, limit: int | None) -> dict:
    """``{"max_scratch_size": limit}`` when the installed ``EthosUCompileSpec`` takes it
    (ExecuTorch PR 22884, after 1.5.1), else {}: etu checks the limit itself."""
    import inspect

    if limit is None:
        return {}
    try:
        accepted = "max_scratch_size" in inspect.signature(spec_class).parameters
    except (TypeError, ValueError):
        accepted = False
    return {"max_scratch_size": limit} if accepted else {}


def check_scratch(payloads: list[tuple[bytes, bytes]], limit: int | None) -> None:
    """Each delegate's scratch (from the Vela payload) against ``limit``, as PR 22884 does
    before packaging: required, available and the excess in one line."""
    from etu.parsers.errors import ParseError
    from etu.parsers.ethosu import decode_ethosu_payload

    if limit is None:
        return
    for index, (_tosa, payload) in enumerate(payloads):
        try:
            need = decode_ethosu_payload(payload).scratch_size
        except ParseError:
            continue
        if need > limit:
            raise ScratchLimitError(
                f"delegate {index}: Ethos-U scratch {need:,} B exceeds max_scratch_size "
                f"{limit:,} B by {need - limit:,} B"
            )


def external_placements(spec: LoweringSpec, tag: str):
    """``VelaExternalBlockPlacements`` putting ``spec.external_blocks`` under ``tag`` (so
    ExecuTorch writes them to ``TAG.ptd``), or None for none."""
    if not spec.external_blocks:
        return None
    from executorch.backends.arm.ethosu import VelaExternalBlockPlacements

    unknown = sorted(set(spec.external_blocks) - set(EXTERNAL_BLOCKS))
    if unknown:
        raise ValueError(f"unknown external blocks {unknown}; use {', '.join(EXTERNAL_BLOCKS)}")
    blocks = {EXTERNAL_BLOCKS[name]: tag for name in spec.external_blocks}
    return VelaExternalBlockPlacements(**blocks)


@dataclass
class LoweringResult:
    pte: Path
    vela_dir: Path | None
    stage_seconds: dict[str, float] = field(default_factory=dict)
    float_model: dict | None = None  # the compile record's "float_model" entry


def preload() -> None:
    """Import what every lowering imports, once, for the warm compile host
    (:mod:`etu.runner.warm_host`), whose forked workers then start without it."""
    import torch  # noqa: F401
    from executorch.backends.arm.ethosu import EthosUPartitioner  # noqa: F401
    from executorch.backends.arm.quantizer import EthosUQuantizer  # noqa: F401
    from executorch.exir import to_edge_transform_and_lower  # noqa: F401
    from torchao.quantization.pt2e.quantize_pt2e import prepare_pt2e  # noqa: F401


def lower_to_pte(
    model,
    example_inputs: Sequence,
    spec: LoweringSpec,
    out_pte: Path,
    *,
    vela_dir: Path | None = None,
    calibration: Sequence[Sequence] | None = None,
    progress: Progress | None = None,
    bundled_out: Path | None = None,
    source: str | None = None,
) -> LoweringResult:
    """Lower ``model`` for ``spec`` and write ``out_pte``; Vela's files go to ``vela_dir``.

    With ``vela_dir``, the float model is kept beside Vela's files: exported before
    quantization and saved with ``torch.export.save`` (``etu_float_model.pt2``), with its
    ``source`` and input shapes in the compile record, so the host reference can run the
    float side later without the user's Python path (quantisation loss). A CPU-only
    compile (no delegate, so no Vela) keeps its record and float model there as well.

    With ``bundled_out``, also write a bundled program (``.bpte``) carrying the example
    inputs and the eager model's outputs as a test case, as the runner's BundleIO mode uses.
    """
    import torch
    from executorch.backends.arm.ethosu import EthosUCompileSpec, EthosUPartitioner
    from executorch.backends.arm.quantizer import (
        EthosUQuantizer,
        get_symmetric_quantization_config,
    )
    from executorch.exir import (
        EdgeCompileConfig,
        ExecutorchBackendConfig,
        to_edge_transform_and_lower,
    )
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    from etu.runner.bundleio import calibration_ranges
    from etu.runner.heap import settle_imports

    settle_imports()
    stages: dict[str, float] = {}
    clock = [time.perf_counter()]

    def done(stage: str) -> None:
        now = time.perf_counter()
        stages[stage] = now - clock[0]
        clock[0] = now
        if progress:
            progress(stage, stages[stage])

    example_inputs = tuple(example_inputs)
    with contextlib.suppress(NotImplementedError):  # an unlifted .pt2 module has no eval()
        model = model.eval()
    if spec.cpu_backend not in CPU_BACKENDS:
        raise ValueError(f"unknown CPU backend {spec.cpu_backend!r}; one of {CPU_BACKENDS}")
    if spec.cpu_backend == "cortex-m":  # its kernels take NHWC only, as upstream exports
        model, example_inputs = channels_last(model), channels_last(example_inputs)
        if calibration is not None:
            calibration = [channels_last(tuple(sample)) for sample in calibration]
    if bundled_out is not None:
        with torch.no_grad():
            expected_outputs = model(*example_inputs)
    compile_spec = EthosUCompileSpec(
        spec.target,
        system_config=spec.system_config,
        memory_mode=spec.memory_mode,
        extra_flags=list(spec.extra_vela_flags) or None,
        external_block_placements=external_placements(spec, Path(out_pte).stem),
        **scratch_limit_argument(EthosUCompileSpec, spec.max_scratch_size),
    )
    scratch_dir: Path | None = None
    calibration_record: dict | None = None  # per input: the range calibration saw
    activations: dict | None = None  # per quantized node: the scale calibration chose
    if vela_dir is not None:
        # Vela writes into <intermediates>/output; it overwrites files sharing a folder.
        scratch_dir = Path(vela_dir).with_name(Path(vela_dir).name + ".intermediates")
        shutil.rmtree(scratch_dir, ignore_errors=True)
        scratch_dir.mkdir(parents=True)
        compile_spec.dump_intermediate_artifacts_to(str(scratch_dir))

    float_outputs = _float_outputs(model, example_inputs) if vela_dir is not None else None
    with torch.no_grad(), _delegates_recorded() as delegates:
        exported = torch.export.export(model, example_inputs)
        float_program = exported
        done("export")
        if spec.quantize:
            # torch 2.13: unlift without guards, or the Arm passes meet call_module nodes.
            graph = exported.module(check_guards=False)
            quantizer = EthosUQuantizer(compile_spec)
            quantizer.set_global(get_symmetric_quantization_config(is_per_channel=spec.per_channel))
            prepared = prepare_pt2e(graph, quantizer)
            done("quantize")
            samples = list(calibration or [example_inputs])
            for sample in samples:
                prepared(*sample)
            calibration_record = {"samples": len(samples),
                                  "inputs": calibration_ranges(samples)}  # fmt: skip
            done("calibrate")
            converted = convert_pt2e(prepared)
            activations = activation_quantization(converted)
            if not spec.delegate:
                widen_per_channel_zero_points(converted)
            exported = torch.export.export(converted, example_inputs)
        partitioners = [EthosUPartitioner(compile_spec)] if spec.delegate else []
        vela_stdout = io.StringIO()
        with contextlib.redirect_stdout(vela_stdout):  # Vela prints its report in-process
            edge = to_edge_transform_and_lower(
                exported,
                partitioner=partitioners,
                compile_config=EdgeCompileConfig(_check_ir_validity=False),
            )
        check_scratch(delegates, spec.max_scratch_size)
        if spec.int8_io:
            edge = integer_io(edge)
        if spec.cpu_backend == "cortex-m":
            lower_cpu_part_to_cortex_m(edge)
        done("lower")
        _forget_debug_paths(edge)  # the same program wherever its debug artifacts went
        program = edge.to_executorch(
            config=ExecutorchBackendConfig(extract_delegate_segments=spec.extract_delegate_segments)
        )
        done("serialize")

    _write_atomically(Path(out_pte), program.buffer)
    if spec.external_blocks:  # TAG.ptd beside the program (the tag is the program's name)
        _write_data_files(program, Path(out_pte).parent)
    if bundled_out is not None:
        _write_atomically(Path(bundled_out), _bundle(program, example_inputs, expected_outputs))
    kept_vela = _keep_vela_outputs(scratch_dir, Path(vela_dir)) if scratch_dir else None
    if kept_vela is None and vela_dir is not None and not spec.delegate:
        kept_vela = Path(vela_dir)  # no Vela ran: the compile record and float model only
        kept_vela.mkdir(parents=True, exist_ok=True)
    float_model: dict | None = None
    if kept_vela is not None:
        if spec.delegate:
            text = neutral_vela_stdout(vela_stdout.getvalue(), scratch_dir)
            (kept_vela / VELA_STDOUT_NAME).write_text(text)
        record = {"spec": asdict(spec), "versions": tool_versions(),
                  "delegates": _keep_delegate_graphs(kept_vela, delegates),
                  "program_sha256": hashlib.sha256(program.buffer).hexdigest()}  # fmt: skip
        if calibration_record is not None:  # where `--inputs random:SEED` draws
            record["calibration"] = calibration_record
        if activations:  # the real scales of `etu compare --layers` (TOSA keeps none)
            record["activation_quantization"] = activations
        if float_outputs is not None:
            import numpy

            numpy.savez(kept_vela / FLOAT_OUTPUTS_NAME, *float_outputs)
            record["float_outputs"] = {"file": FLOAT_OUTPUTS_NAME, "inputs": "all ones"}
        record["float_model"] = float_model = _save_float_model(
            float_program, kept_vela, source, example_inputs
        )
        (kept_vela / COMPILE_RECORD_NAME).write_text(json.dumps(record, indent=2) + "\n")
    done("write")
    return LoweringResult(Path(out_pte), kept_vela, stages, float_model=float_model)


def activation_quantization(converted) -> dict[str, dict]:
    """``{node: {"scale", "zero_point"}}``: each node of the quantized graph whose output is
    quantized per tensor, with the scale and zero point calibration chose for it. The node
    names are the float graph's (the quantizer adds nodes, it does not rename them)."""
    found: dict[str, dict] = {}
    for node in converted.graph.nodes:
        if not _quantized_by(node) or len(node.args) < 3:
            continue
        producer, scale, zero = node.args[:3]
        if getattr(producer, "op", None) != "call_function":
            continue  # a graph input: the program's own quantize kernel says it
        if isinstance(scale, float) and isinstance(zero, int) and not isinstance(zero, bool):
            found[producer.name] = {"scale": scale, "zero_point": zero}
    return found


def channels_last(value):
    """A model, or a tuple of inputs, in channels-last memory format (4-D tensors only): the
    Cortex-M backend's convolution and pooling kernels refuse any other dim order, so
    upstream's example exports model and inputs so."""
    import torch

    if isinstance(value, tuple):
        return tuple(
            x.to(memory_format=torch.channels_last)
            if isinstance(x, torch.Tensor) and x.dim() == 4 else x
            for x in value
        )  # fmt: skip
    with contextlib.suppress(AttributeError, NotImplementedError, TypeError):
        value = value.to(memory_format=torch.channels_last)
    return value


def integer_io(edge):
    """The program's float inputs and outputs replaced by the integers its quantize and
    dequantize nodes made (ExecuTorch's QuantizeInputs/QuantizeOutputs, as upstream's
    int8-IO examples do): the nodes go, their figures stay as config methods."""
    from executorch.exir.passes.quantize_io_pass import QuantizeInputs, QuantizeOutputs

    graph = edge.exported_program().graph_module.graph
    inputs = [n for n in graph.nodes if n.op == "placeholder" and len(n.users) == 1
              and _quantized_by(next(iter(n.users)))]  # fmt: skip
    user_inputs = edge.exported_program().graph_signature.user_inputs
    input_indexes = [user_inputs.index(n.name) for n in inputs if n.name in user_inputs]
    output = next(n for n in graph.nodes if n.op == "output")
    output_indexes = [k for k, node in enumerate(output.args[0]) if _dequantized(node)]
    if not input_indexes and not output_indexes:
        raise ValueError("--int8-io: no input is quantized and no output dequantized")
    return edge.transform([QuantizeInputs(edge, input_indexes),
                           QuantizeOutputs(edge, output_indexes)])  # fmt: skip


def _quantized_by(node) -> bool:
    """A quantize_per_tensor.default node (the one overload quantize_io_pass takes)."""
    return node.op == "call_function" and (
        "quantized_decomposed.quantize_per_tensor.default" in str(node.target))  # fmt: skip


def _dequantized(node) -> bool:
    return getattr(node, "op", None) == "call_function" and (
        "quantized_decomposed.dequantize_per_tensor.default" in str(node.target))  # fmt: skip


def lower_cpu_part_to_cortex_m(edge) -> None:
    """What the NPU did not take, to the Cortex-M backend, as upstream's "Ethos-U55 with
    CMSIS-NN fallback" example does: its pass manager over each lowered method turns the
    quantized operators left on the CPU (and the quantize/dequantize at the edges) into
    ``cortex_m::*`` kernels that call CMSIS-NN; what it has no kernel for stays portable."""
    from executorch.backends.cortex_m.passes.cortex_m_pass_manager import CortexMPassManager

    for name in list(edge.methods):
        edge._edge_programs[name] = CortexMPassManager(edge.exported_program(name)).transform()


def _save_float_model(exported, folder: Path, source: str | None, example_inputs) -> dict:
    """The float program as exported (before quantization), kept for the host reference:
    saved with ``torch.export.save`` (PyTorch loads it again anywhere, without the model's
    code) and lowered to a CPU-only ExecuTorch program (the host reference runs it with the
    runtime it has already loaded: ``torch.export.load`` alone costs 1.6 s of imports).
    The record names the files, where the model came from and the inputs it takes; what
    could not be saved is recorded with the reason (the reference then says so)."""
    import torch
    from executorch.exir import EdgeCompileConfig, to_edge

    inputs = [{"shape": list(x.shape), "dtype": str(x.dtype).removeprefix("torch.")}
              for x in example_inputs if isinstance(x, torch.Tensor)]  # fmt: skip
    entry: dict = {"file": None, "program": None, "source": neutral_source(source),
                   "inputs": inputs, "saved_with": "torch.export.save"}  # fmt: skip
    notes = []
    partial = folder / (FLOAT_MODEL_NAME + ".partial")
    try:
        neutral_stack_traces(exported, model_folder(source))
        torch.export.save(exported, partial)
        partial.replace(folder / FLOAT_MODEL_NAME)
        entry["file"] = FLOAT_MODEL_NAME
    except Exception as error:  # an exported program torch cannot serialise: say so
        partial.unlink(missing_ok=True)
        notes.append(f"{FLOAT_MODEL_NAME} not saved: {type(error).__name__}: {str(error)[:200]}")
    try:
        with torch.no_grad():
            edge = to_edge(exported, compile_config=EdgeCompileConfig(_check_ir_validity=False))
            _write_atomically(folder / FLOAT_PROGRAM_NAME, edge.to_executorch().buffer)
        entry["program"] = FLOAT_PROGRAM_NAME
    except Exception as error:  # an operator the edge dialect refuses: the .pt2 still runs
        notes.append(f"{FLOAT_PROGRAM_NAME} not made: {type(error).__name__}: "
                     f"{str(error)[:200]}")  # fmt: skip
    if notes:
        entry["note"] = "; ".join(notes)
    return entry


# What the compile keeps travels with the program (a copied job folder, the shipped demo):
# it names files by their name, or relative to the model's folder or to site-packages, never
# by a folder of the machine that compiled it.
_TRACE_FILE = re.compile(r'File "([^"]+)"')
_PACKAGE_FOLDERS = ("site-packages", "dist-packages")


def _model_path(source: str | None) -> tuple[str, str] | None:
    """(file, ":Class" or "") of a model file source; None for a built-in example."""
    if not source:
        return None
    if ".py:" in source:
        path, name = source.rsplit(":", 1)
        return path, f":{name}"
    if source.endswith((".py", ".pt2")):
        return source, ""
    return None


def neutral_source(source: str | None) -> str | None:
    """The model's source as the compile record names it: a model file by its name (with
    its ``:Class``), a built-in example as given."""
    found = _model_path(source)
    return source if found is None else f"{PurePath(found[0]).name}{found[1]}"


def model_folder(source: str | None) -> Path | None:
    """The folder of a model file source (resolved), else None."""
    found = _model_path(source)
    return None if found is None else Path(found[0]).resolve().parent


def neutral_path(path: str, folder: Path | None) -> str:
    """``path`` without this machine's folders: relative to ``folder`` (the model's) when in
    it, from the package down when installed in site-packages, else its name."""
    pure = PurePath(path)
    if not pure.is_absolute():
        return path
    if folder is not None and pure.is_relative_to(folder):
        return pure.relative_to(folder).as_posix()
    parts = pure.parts
    for marker in _PACKAGE_FOLDERS:
        if marker in parts[:-1]:
            at = len(parts) - 1 - parts[::-1].index(marker)
            return PurePath(*parts[at + 1 :]).as_posix()
    return pure.name


def neutral_stack_traces(exported, folder: Path | None) -> int:
    """Rewrite the file paths in each node's ``stack_trace`` (torch.export keeps the frames
    that made the node: saved with the model) with :func:`neutral_path`. The number of
    traces changed."""
    changed = 0
    for module in exported.graph_module.modules():
        graph = getattr(module, "graph", None)
        for node in getattr(graph, "nodes", ()):
            trace = node.meta.get("stack_trace")
            if not isinstance(trace, str):
                continue
            neutral = _TRACE_FILE.sub(lambda m: f'File "{neutral_path(m[1], folder)}"', trace)
            if neutral != trace:
                node.meta["stack_trace"] = neutral
                changed += 1
    return changed


def neutral_vela_stdout(text: str, scratch_dir: Path | None) -> str:
    """Vela's report names the output folder it wrote (``Performance for NPU Grap <path>``):
    the job's intermediates folder, named here by its own name."""
    if scratch_dir is None:
        return text
    for folder in sorted({str(scratch_dir.resolve()), str(scratch_dir)}, key=len, reverse=True):
        text = text.replace(folder, scratch_dir.name)
    return text


@contextlib.contextmanager
def _delegates_recorded():
    """Catch each Vela call of the Ethos-U backend: the TOSA graph it was given and the
    delegate payload it made (the backend returns Vela's bytes as the payload), so the
    compile record can say which graph is whose, by content, not by file name."""
    pairs: list[tuple[bytes, bytes]] = []
    try:
        from executorch.backends.arm.ethosu import backend
    except ImportError:  # no Ethos-U backend: nothing to record
        yield pairs
        return
    original = backend.vela_compile

    def recorded(tosa_flatbuffer, *args, **kwargs):
        result = original(tosa_flatbuffer, *args, **kwargs)
        pairs.append((bytes(tosa_flatbuffer), bytes(result.processed_bytes)))
        return result

    backend.vela_compile = recorded
    try:
        yield pairs
    finally:
        backend.vela_compile = original


def _keep_delegate_graphs(vela_dir: Path, pairs: list[tuple[bytes, bytes]]) -> list[dict]:
    """One record per delegate: its payload's SHA-256 and the TOSA graph Vela compiled it
    from (the file ExecuTorch saved with those bytes, else one written here)."""
    import hashlib

    saved = {}
    for path in sorted(vela_dir.glob("*.tosa"), key=lambda p: (p.name == "out.tosa", p.name)):
        saved.setdefault(hashlib.sha256(path.read_bytes()).hexdigest(), path.name)
    records = []
    for number, (tosa, payload) in enumerate(pairs):
        digest = hashlib.sha256(tosa).hexdigest()
        if digest not in saved:
            saved[digest] = f"etu_delegate_{number}.tosa"
            (vela_dir / saved[digest]).write_bytes(tosa)
        records.append({
            "payload_sha256": hashlib.sha256(payload).hexdigest(),
            "payload_size": len(payload),
            "tosa": saved[digest],
            "tosa_sha256": digest,
        })  # fmt: skip
    return records


def _float_outputs(model, example_inputs: tuple) -> list | None:
    """The float model's outputs on all-ones inputs (the runner's and the host reference's
    inputs), as numpy arrays; None when the model cannot run on them."""
    import torch

    try:
        with torch.no_grad():
            result = model(*[torch.ones_like(x) for x in example_inputs])
        leaves = torch.utils._pytree.tree_leaves(result)
        return [leaf.detach().cpu().numpy() for leaf in leaves if isinstance(leaf, torch.Tensor)]
    except Exception:  # a model that needs other inputs: the reference says "not known"
        return None


def widen_per_channel_zero_points(graph_module) -> int:
    """Store ``dequantize_per_channel``'s int32 zero points as int64; returns how many.

    The quantizer gives a bias's dequantization int32 zero points, which ExecuTorch's
    portable kernel accepts (its check allows Int or Long) but reads as int64
    (``const_data_ptr<int64_t>()``): twice the bytes, the second half past the tensor. On the
    host that memory happened to be zero; on the target it was not, and the CPU twin's
    outputs differed from the host's (cosine 0.17). As int64 both read the same values.
    """
    import torch

    target = torch.ops.quantized_decomposed.dequantize_per_channel.default
    widened = 0
    for node in graph_module.graph.nodes:
        if node.op != "call_function" or node.target != target or len(node.args) < 3:
            continue
        zero_points = node.args[2]
        if getattr(zero_points, "op", None) != "get_attr":
            continue
        *path, name = zero_points.target.split(".")
        owner = graph_module.get_submodule(".".join(path)) if path else graph_module
        value = getattr(owner, name)
        if isinstance(value, torch.Tensor) and value.dtype == torch.int32:
            setattr(owner, name, value.to(torch.int64))
            widened += 1
    return widened


def _write_data_files(program, folder: Path) -> list[Path]:
    """The program's ``.ptd`` files (its external named data), each written whole."""
    partial = folder / ".etu-ptd.partial"
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir()
    try:
        program.write_tensor_data_to_file(str(partial))
        written = []
        for path in sorted(partial.glob("*.ptd")):
            path.replace(folder / path.name)
            written.append(folder / path.name)
        return written
    finally:
        shutil.rmtree(partial, ignore_errors=True)


def _write_atomically(path: Path, data: bytes) -> None:
    """Never leave a half-written file looking like a result."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    partial.write_bytes(data)
    partial.replace(path)


def _bundle(program, example_inputs: tuple, expected_outputs) -> bytes:
    from executorch.devtools import BundledProgram
    from executorch.devtools.bundled_program.config import MethodTestCase, MethodTestSuite
    from executorch.devtools.bundled_program.serialize import (
        serialize_from_bundled_program_to_flatbuffer,
    )

    outputs = expected_outputs if isinstance(expected_outputs, tuple) else (expected_outputs,)
    case = MethodTestCase(inputs=list(example_inputs), expected_outputs=list(outputs))
    suite = MethodTestSuite(method_name="forward", test_cases=[case])
    return serialize_from_bundled_program_to_flatbuffer(BundledProgram(program, [suite]))


DEBUG_ARTIFACT_KEY = "debug_artifact_path"  # ArmCompileSpec's key for the intermediates


def _forget_debug_paths(edge) -> int:
    """Drop the intermediates folder from every lowered delegate's compile specs: the
    backend has written its debug artifacts there already (etu keeps them in the job's
    ``vela/``), and the path, baked into the program, would make the same request give
    other bytes in another output folder. What remains is what a lowering without
    intermediates records. The number of entries dropped."""
    from executorch.exir.lowered_backend_module import LoweredBackendModule

    dropped = 0
    for name in edge.methods:
        for module in edge.exported_program(name).graph_module.modules():
            if not isinstance(module, LoweredBackendModule):
                continue
            specs = module.compile_specs
            kept = [spec for spec in specs if spec.key != DEBUG_ARTIFACT_KEY]
            dropped += len(specs) - len(kept)
            module._compile_specs = kept
    return dropped


def _keep_vela_outputs(scratch_dir: Path, vela_dir: Path) -> Path | None:
    """Move Vela's output folder (summary CSV, per-layer CSV, debug DB) and the TOSA file."""
    produced = scratch_dir / "output"
    if not produced.is_dir():
        shutil.rmtree(scratch_dir, ignore_errors=True)
        return None
    shutil.rmtree(vela_dir, ignore_errors=True)
    produced.rename(vela_dir)
    if not any(vela_dir.glob("*.tosa")):
        for tosa in scratch_dir.glob("*.tosa"):
            tosa.rename(vela_dir / tosa.name)
    shutil.rmtree(scratch_dir, ignore_errors=True)
    return vela_dir


def example_inputs_for(shapes: Sequence[tuple[int, ...]], seed: int = 0) -> tuple:
    import torch

    generator = torch.Generator().manual_seed(seed)
    return tuple(torch.rand(shape, generator=generator) for shape in shapes)
