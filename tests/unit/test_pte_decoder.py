"""Every decoded field against ExecuTorch's own deserializer, on real lowered programs."""

from __future__ import annotations

import functools
import importlib.util
import math
from pathlib import Path

import pytest

from etu.parsers.ethosu import decode_ethosu_payload
from etu.parsers.program_facts import cpu_operators, inspect_record, select_ops_list
from etu.parsers.pte import (
    DelegateCall,
    FreeCall,
    JumpFalseCall,
    KernelCall,
    MoveCall,
    Tensor,
    open_program,
)

pytestmark = [
    pytest.mark.aot,
    pytest.mark.skipif(importlib.util.find_spec("executorch") is None,
                       reason="needs ExecuTorch (the compile extra)"),
]  # fmt: skip


@functools.cache
def exir():
    """ExecuTorch's schema and deserializer, imported by the first test that reads them, not
    while the tests are collected: they import torch (~7 CPU-seconds in every test worker,
    most of which never need it)."""
    from executorch.exir import schema
    from executorch.exir._serialize import _program as serialize

    return schema, serialize


def reference(path: Path):
    """(raw flatbuffer Program with segments as stored, PTEFile with segments restored)."""
    _, serialize = exir()
    data = path.read_bytes()
    header = serialize._get_extended_header(data)
    size = header.program_size if header and header.is_valid() else len(data)
    return serialize._flatbuffer_to_program(data[:size]), serialize.deserialize_pte_binary(data)


def same_scalar(ours, theirs) -> bool:
    if isinstance(theirs, str):  # the deserializer spells inf/nan doubles as strings
        theirs = float(theirs)
    if isinstance(theirs, float) and math.isnan(theirs):
        return math.isnan(ours)
    return ours == theirs


def assert_value(ours, theirs) -> None:
    schema, _ = exir()
    val = theirs.val
    if isinstance(val, schema.Tensor):
        assert isinstance(ours, Tensor)
        assert ours.scalar_type == int(val.scalar_type)
        assert list(ours.sizes) == list(val.sizes)
        assert list(ours.dim_order) == list(val.dim_order)
        assert ours.shape_dynamism == int(val.shape_dynamism)
        assert ours.data_buffer_idx == val.data_buffer_idx
        assert ours.storage_offset == val.storage_offset
        assert ours.requires_grad == val.requires_grad
        assert ours.layout == val.layout
        alloc = val.allocation_info
        if alloc is None:
            assert ours.memory_id is None and ours.memory_offset is None
        else:
            assert ours.memory_id == alloc.memory_id
            assert ours.memory_offset == alloc.memory_offset_low | (alloc.memory_offset_high << 32)
        extra = val.extra_tensor_info
        assert ours.external_name == (extra.fully_qualified_name if extra else None)
        return
    kind = type(val).__name__
    assert ours.kind == kind
    if kind in ("Int", "Bool", "Double", "String"):
        field = {"Int": "int_val", "Bool": "bool_val", "Double": "double_val"}.get(
            kind, "string_val"
        )
        assert same_scalar(ours.payload, getattr(val, field))
    elif kind != "Null":
        assert list(ours.payload) == [float(x) if isinstance(x, str) else x for x in val.items]


def assert_instruction(ours, theirs) -> None:
    schema, _ = exir()
    args = theirs.instr_args
    expected = {
        schema.KernelCall: (KernelCall, ("op_index", "args")),
        schema.DelegateCall: (DelegateCall, ("delegate_index", "args")),
        schema.MoveCall: (MoveCall, ("move_from", "move_to")),
        schema.JumpFalseCall: (JumpFalseCall, ("cond_value_index", "destination_instruction")),
        schema.FreeCall: (FreeCall, ("value_index",)),
    }[type(args)]
    assert isinstance(ours, expected[0])
    for name in expected[1]:
        mine, theirs_value = getattr(ours, name), getattr(args, name)
        assert (list(mine) if isinstance(mine, tuple) else mine) == theirs_value


def test_every_field_matches_executorch(any_real_program: Path) -> None:
    raw, restored = reference(any_real_program)
    with open_program(any_real_program) as program:
        assert program.file_identifier == "ET12"
        assert program.version == raw.version
        assert [(s.offset, s.size) for s in program.segments] == [
            (s.offset, s.size) for s in raw.segments
        ]
        if raw.constant_segment is not None:
            assert program.constant_segment.segment_index == raw.constant_segment.segment_index
            assert list(program.constant_segment.offsets) == list(raw.constant_segment.offsets)
        assert [n.key for n in program.named_data] == [n.key for n in raw.named_data or []]
        assert len(program.plans) == len(raw.execution_plan)
        for plan, ref in zip(program.plans, raw.execution_plan, strict=True):
            assert plan.name == ref.name
            assert list(plan.inputs) == ref.inputs
            assert list(plan.outputs) == ref.outputs
            assert list(plan.non_const_buffer_sizes) == ref.non_const_buffer_sizes
            assert [(o.name, o.overload) for o in plan.operators] == [
                (o.name, o.overload) for o in ref.operators
            ]
            assert len(plan.values) == len(ref.values)
            for ours, theirs in zip(plan.values, ref.values, strict=True):
                assert_value(ours, theirs)
            assert len(plan.chains) == len(ref.chains)
            for chain, ref_chain in zip(plan.chains, ref.chains, strict=True):
                assert list(chain.inputs) == ref_chain.inputs
                assert list(chain.outputs) == ref_chain.outputs
                for ours, theirs in zip(chain.instructions, ref_chain.instructions, strict=True):
                    assert_instruction(ours, theirs)
            assert len(plan.delegates) == len(ref.delegates)
            for delegate, ref_delegate, restored_delegate in zip(
                plan.delegates,
                ref.delegates,
                restored.program.execution_plan[0].delegates,
                strict=True,
            ):
                assert delegate.id == ref_delegate.id
                assert delegate.location == int(ref_delegate.processed.location)
                assert delegate.index == ref_delegate.processed.index
                assert [(c.key, c.value) for c in delegate.compile_specs] == [
                    (c.key, bytes(c.value)) for c in ref_delegate.compile_specs
                ]
                # Payload bytes, wherever they live, equal the restored inline blob.
                blob = restored.program.backend_delegate_data[restored_delegate.processed.index]
                assert bytes(program.delegate_payload(delegate)) == bytes(blob.data)


def test_constant_tensor_bytes_match_restored_constants(real_program) -> None:
    path = real_program("float_cpu")
    _, restored = reference(path)
    with open_program(path) as program:
        assert program.extended_header is not None  # weights live in a segment
        constants = [v for v in program.plans[0].values if isinstance(v, Tensor) and v.is_constant]
        assert constants
        for tensor in constants:
            expected = restored.program.constant_buffer[tensor.data_buffer_idx].storage
            assert bytes(program.constant_data(tensor)) == bytes(expected)[: tensor.nbytes]
        total = sum(t.nbytes for t in constants)
        assert total <= program.constant_data_size


@pytest.mark.parametrize(
    ("name", "target"),
    [
        ("u55", "ethos-u55-128"),
        ("u65", "ethos-u65-256"),
        ("u85", "ethos-u85-256"),
        ("u55_segment", "ethos-u55-128"),
        ("two_inputs", "ethos-u55-64"),
    ],
)
def test_ethosu_payload_matches_the_blob(real_program, name: str, target: str) -> None:
    # Vela 5.1.0 writes COP1 for every target, U85 included (the reference said COP2).
    fmt, vela_io_dims = "COP1", 6
    with open_program(real_program(name)) as program:
        (delegate,) = program.plans[0].delegates
        assert delegate.id == "EthosUBackend"
        assert delegate.location_name == ("segment" if name.endswith("segment") else "inline")
        span = program.delegate_span(delegate)
        assert span.offset % 16 == 0 and span.size % 16 == 0
        payload = decode_ethosu_payload(program.delegate_payload(delegate), span.offset)
        assert payload.command_stream_format == fmt
        assert payload.target == target == delegate.spec("target")
        assert [b.name for b in payload.blocks] == [
            "vela_bin_stream", "cmd_data", "weight_data", "scratch_size",
            "inputs", "outputs", "vela_end_stream",
        ]  # fmt: skip
        # The delegate's inputs are the quantized program inputs: same element counts.
        plan = program.plans[0]
        call = next(i for i in plan.instructions if isinstance(i, DelegateCall))
        inputs = [plan.values[a] for a in call.args[: len(payload.inputs)]]
        for io, tensor in zip(payload.inputs, inputs, strict=True):
            assert len(io.shape) == vela_io_dims
            assert io.nbytes == tensor.nbytes
        assert payload.scratch_size > 0 and payload.weights_size >= 0
        blob = bytes(program.delegate_payload(delegate))
        cmd = payload.blocks[1]
        assert payload.command_stream_size == cmd.size
        assert blob[cmd.payload_offset : cmd.payload_offset + 4] == fmt.encode()


def test_segment_program_has_header_and_segments(real_program) -> None:
    with open_program(real_program("u55_segment")) as program:
        header = program.extended_header
        assert header is not None and header.segment_base_offset % 128 == 0
        assert header.segment_base_offset + header.segment_data_size == program.file_size
        spans = program.segment_spans
        (delegate,) = program.plans[0].delegates
        assert program.delegate_span(delegate) == spans[delegate.index]


def test_derived_facts(real_program) -> None:
    with open_program(real_program("u55")) as program:
        record = inspect_record(program)
        (plan,) = record["plans"]
        assert plan["delegate_calls"] == 1
        assert plan["kernel_calls"] == 2
        assert plan["planned_memory"] == {"1": program.plans[0].non_const_buffer_sizes[1]}
        names = [op.name for op in cpu_operators(program)]
        assert names == [
            "quantized_decomposed::dequantize_per_tensor.out",
            "quantized_decomposed::quantize_per_tensor.out",
        ]
        assert select_ops_list(program) == ",".join(names)
        assert {d for op in cpu_operators(program) for d in op.dtypes} == {"Char", "Float"}
    with open_program(real_program("float_cpu")) as program:
        record = inspect_record(program)
        assert record["plans"][0]["delegate_calls"] == 0
        ops = record["select_ops_list"].split(",")
        assert "aten::convolution.out" in ops and "aten::relu.out" in ops
        assert record["constant_data_size"] > 0


def test_two_input_program_reports_both_inputs(real_program) -> None:
    with open_program(real_program("two_inputs")) as program:
        record = inspect_record(program)
        plan = record["plans"][0]
        assert len(plan["inputs"]) == 2
        (delegate,) = plan["delegates"]
        assert len(delegate["ethosu"]["inputs"]) == 2
        assert delegate["compile_specs"]["target"] == "ethos-u55-64"


def test_bundled_program_decodes_its_embedded_program(real_program) -> None:
    bundled = real_program("u55.bpte")
    with open_program(bundled) as program, open_program(real_program("u55")) as plain:
        assert program.file_identifier.startswith("BP") and program.bundled
        assert program.program_offset > 0
        record, plain_record = inspect_record(program), inspect_record(plain)
        # Same plans; only payload offsets move, by where the program sits in the bundle.
        for plan, plain_plan in zip(record["plans"], plain_record["plans"], strict=True):
            for delegate, plain_delegate in zip(
                plan.pop("delegates"), plain_plan.pop("delegates"), strict=True
            ):
                offset = delegate.pop("payload_offset")
                assert offset == plain_delegate.pop("payload_offset") + program.program_offset
                assert delegate == plain_delegate
            assert plan == plain_plan
        assert record["select_ops_list"] == plain_record["select_ops_list"]
        (delegate,) = program.plans[0].delegates
        (plain_delegate,) = plain.plans[0].delegates
        assert bytes(program.delegate_payload(delegate)) == bytes(
            plain.delegate_payload(plain_delegate)
        )
