"""What a bring-up engineer wants to know about a program, derived from the decoded parts.

NPU/CPU split, the operators left on the CPU with the dtypes they see, the value for a
selective kernel build, planned memory per memory id, the Ethos-U target it was compiled
for, its output shapes, and the ``etu inspect --json`` record. Pure: a Program in, plain
data out. :class:`ProgramFacts` gathers them once per program, for the console's views and
``etu inspect`` alike (:func:`program_facts`); :func:`open_any` opens a ``.pte`` or the
program baked into a firmware ELF.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from etu.parsers.errors import ParseError
from etu.parsers.ethosu import EthosUPayload, decode_ethosu_payload, is_ethosu_delegate
from etu.parsers.pte import (
    BackendDelegate,
    DelegateCall,
    ExecutionPlan,
    KernelCall,
    Program,
    Tensor,
)

# Operators the runner's prim-ops library always registers: not portable kernels.
PRIM_OP_PREFIXES = ("executorch_prim::",)
PRIM_OPS = {"aten::sym_size.int", "aten::sym_numel", "aten::sym_stride.int"}


@dataclass(frozen=True, slots=True)
class CpuOperator:
    name: str  # name.overload, the runtime's registry key
    dtypes: tuple[str, ...]  # dtypes of the tensors its calls see
    calls: int

    @property
    def is_prim(self) -> bool:
        return self.name in PRIM_OPS or self.name.startswith(PRIM_OP_PREFIXES)


@dataclass(slots=True)
class DelegateInfo:
    plan: ExecutionPlan
    index: int
    delegate: BackendDelegate
    payload: EthosUPayload | None
    error: str | None  # one line, when the payload is present but cannot be decoded


def cpu_operators(program: Program) -> list[CpuOperator]:
    """Every operator a kernel call runs on the CPU, across plans, sorted by name."""
    calls: Counter[str] = Counter()
    dtypes: dict[str, set[str]] = {}
    for plan in program.plans:
        for instr in plan.instructions:
            if not isinstance(instr, KernelCall):
                continue
            name = plan.operators[instr.op_index].qualified_name
            calls[name] += 1
            seen = dtypes.setdefault(name, set())
            for index in instr.args:
                value = plan.values[index]
                if isinstance(value, Tensor):
                    seen.add(value.dtype)
    return [CpuOperator(name, tuple(sorted(dtypes[name])), calls[name]) for name in sorted(calls)]


def select_ops_list(program: Program) -> str:
    """The ``EXECUTORCH_SELECT_OPS_LIST`` value that registers exactly the kernels needed."""
    return select_ops_value(cpu_operators(program))


def select_ops_value(ops: list[CpuOperator]) -> str:
    """The select-ops value for operators already collected (prim ops left out)."""
    return ",".join(op.name for op in ops if not op.is_prim)


def planned_memory(plan: ExecutionPlan) -> dict[int, int]:
    """Bytes per memory id (``non_const_buffer_sizes[0]`` is reserved by the runtime)."""
    return {mem_id: size for mem_id, size in enumerate(plan.non_const_buffer_sizes) if mem_id}


def delegates(program: Program) -> list[DelegateInfo]:
    """Every delegate of every plan, with its Ethos-U payload decoded when it has one
    (decoded once per program: `etu inspect` asks three times per file)."""
    cached = program.derived.get("delegates")
    if cached is None:
        cached = program.derived["delegates"] = _decode_delegates(program)
    return list(cached)


def _decode_delegates(program: Program) -> list[DelegateInfo]:
    found: list[DelegateInfo] = []
    for plan in program.plans:
        for index, delegate in enumerate(plan.delegates):
            payload = error = None
            if is_ethosu_delegate(delegate.id):
                span = program.delegate_span(delegate)
                try:
                    payload = decode_ethosu_payload(program.read(span), span.offset)
                except ParseError as exc:
                    error = str(exc.with_source(program.source))
            found.append(DelegateInfo(plan, index, delegate, payload, error))
    return found


def delegate_summary(program: Program, info: DelegateInfo) -> dict:
    from etu.parsers.ethosu_defaults import tosa_profile_problem

    delegate = info.delegate
    span = program.delegate_span(delegate)
    tosa = delegate.spec("tosa_spec")
    return {
        "index": info.index,
        "id": delegate.id,
        "compile_specs": {spec.key: spec.text for spec in delegate.compile_specs},
        "payload_location": delegate.location_name,
        "payload_size": span.size,
        "payload_offset": span.offset,
        "ethosu": payload_summary(info.payload) if info.payload else None,
        "ethosu_error": info.error,
        # the TOSA profile string it was compiled with; why it is not one upstream makes
        "tosa_spec": tosa,
        "tosa_spec_warning": tosa_profile_problem(tosa, delegate.spec("target")),
    }


def plan_summary(program: Program, plan: ExecutionPlan, infos: list[DelegateInfo]) -> dict:
    """``infos``: the program's delegates, decoded once by the caller."""
    kinds = Counter(value.kind for value in plan.values)
    instructions = plan.instructions
    return {
        "name": plan.name,
        "values": len(plan.values),
        "value_kinds": dict(sorted(kinds.items())),
        "inputs": list(plan.inputs),
        "outputs": list(plan.outputs),
        "instructions": len(instructions),
        "kernel_calls": sum(isinstance(i, KernelCall) for i in instructions),
        "delegate_calls": sum(isinstance(i, DelegateCall) for i in instructions),
        "operators": sorted({op.qualified_name for op in plan.operators}),
        "non_const_buffer_sizes": list(plan.non_const_buffer_sizes),
        "planned_memory": {str(k): v for k, v in planned_memory(plan).items()},
        "non_const_buffer_device": [
            {
                "buffer_idx": d.buffer_idx,
                "device_type": d.device_type,
                "device_index": d.device_index,
                "device": d.device,
            }
            for d in plan.non_const_buffer_device
        ],
        "tensor_devices": dict(
            sorted(
                Counter(
                    v.device for v in plan.values if isinstance(v, Tensor) and v.device_type
                ).items()
            )
        ),
        "delegates": [delegate_summary(program, info) for info in infos if info.plan is plan],
    }


def payload_summary(payload: EthosUPayload) -> dict:
    def io(entry) -> dict:
        return {
            "shape": list(entry.shape),
            "elem_size": entry.elem_size,
            "offset": entry.offset,
            "region": entry.region,
        }

    return {
        "command_stream_format": payload.command_stream_format,
        "command_stream_size": payload.command_stream_size,
        "command_stream_words": payload.command_stream_words,
        "weights_size": payload.weights_size,
        "scratch_size": payload.scratch_size,
        "fast_scratch_size": payload.fast_scratch_size,
        "inputs": [io(e) for e in payload.inputs],
        "outputs": [io(e) for e in payload.outputs],
        "npu_config": payload.npu_config,
        "npu_target": payload.target,
        "macs_per_cycle": payload.npu.macs_per_cycle if payload.npu else None,
        "npu_id": payload.npu_id,
        "layout": payload.layout,
        "external_blocks": payload.external_blocks,
        "blocks": [{"name": b.name, "size": b.size} for b in payload.blocks],
    }


def inspect_record(program: Program, facts: ProgramFacts | None = None) -> dict:
    """The ``etu inspect --json`` object for one file (field names are a contract);
    ``facts``: the program's facts when the caller has them (else built here)."""
    header = program.extended_header
    if facts is None or facts.program is not program:
        facts = program_facts(program, Path(program.source))
    ops = facts.cpu_ops
    infos = facts.delegates  # every Ethos-U payload decoded once per program
    return {
        "file": program.source,
        "file_size": program.file_size,
        "file_identifier": program.file_identifier,
        "bundled": program.bundled,
        "extended_header": (
            {
                "length": header.length,
                "program_size": header.program_size,
                "segment_base_offset": header.segment_base_offset,
                "segment_data_size": header.segment_data_size,
            }
            if header
            else None
        ),
        "version": program.version,
        "plans": [plan_summary(program, plan, infos) for plan in program.plans],
        "segments": [{"offset": s.offset, "size": s.size} for s in program.segment_spans],
        "constant_data_size": program.constant_data_size,
        "constant_segment_size": program.constant_segment_size,
        "constant_buffer_size": program.constant_buffer_size,
        "named_data": [
            {"key": item.key, "segment_index": item.segment_index} for item in program.named_data
        ],
        "cpu_operators": [
            {"name": op.name, "dtypes": list(op.dtypes), "calls": op.calls} for op in ops
        ],
        "select_ops_list": select_ops_value(ops),
        "warnings": list(program.warnings),
    }


# --------------------------------------------------------------------------- facts


@dataclass(slots=True)
class ProgramFacts:
    """A decoded program plus the derived facts every view shows."""

    path: Path
    program: Program
    delegates: list[DelegateInfo]
    cpu_ops: list[CpuOperator]
    select_ops: str
    delegate_calls: int
    kernel_calls: int
    other_instructions: int

    @property
    def name(self) -> str:
        """The file name: views show it instead of the path, so screenshots match anywhere."""
        return self.path.name


def program_facts(program: Program, path: Path) -> ProgramFacts:
    """The facts of an open ``program`` read from ``path`` (payloads decoded once)."""
    kernel = delegate = other = 0
    for plan in program.plans:
        for instr in plan.instructions:
            if isinstance(instr, KernelCall):
                kernel += 1
            elif isinstance(instr, DelegateCall):
                delegate += 1
            else:
                other += 1
    ops = cpu_operators(program)
    return ProgramFacts(
        path=Path(path),
        program=program,
        delegates=delegates(program),
        cpu_ops=ops,
        select_ops=select_ops_value(ops),
        delegate_calls=delegate,
        kernel_calls=kernel,
        other_instructions=other,
    )


def open_any(path: str | os.PathLike[str]) -> Program:
    """A ``.pte``/``.bpte``, or the program baked into a firmware ELF. Raises ParseError."""
    from etu.parsers.firmware_program import is_elf, open_embedded_program
    from etu.parsers.pte import open_program

    return open_embedded_program(path) if is_elf(path) else open_program(path)


def decode_facts(path: Path) -> ProgramFacts:
    """Open ``path`` (:func:`open_any`) and derive its facts; the caller closes
    ``facts.program``. Raises ParseError."""
    program = open_any(path)
    try:
        return program_facts(program, path)
    except BaseException:
        program.close()
        raise


def program_target(facts: ProgramFacts) -> str | None:
    """The Ethos-U target the program was compiled for (its delegate's ``target`` compile
    spec, e.g. ``ethos-u55-128``), when it says."""
    for info in facts.delegates:
        for spec in info.delegate.compile_specs:
            if spec.key == "target" and spec.text:
                return spec.text.strip()
    return None


def output_shapes(facts: ProgramFacts) -> list[tuple[int, ...]]:
    """The shapes of the first plan's outputs (the runner prints values, not shapes)."""
    plans = facts.program.plans
    if not plans:
        return []
    plan = plans[0]
    shapes = []
    for index in plan.outputs:
        value = plan.values[index] if 0 <= index < len(plan.values) else None
        shapes.append(tuple(getattr(value, "sizes", ()) or ()))
    return shapes
