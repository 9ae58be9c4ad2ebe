"""`etu inspect`'s per-file work: each delegate's payload is decoded once per program however
many views ask for it, and the operations' JSON records equal ``dataclasses.asdict``'s."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from etu.parsers import program_facts
from etu.parsers.ethosu_commands import program_operations
from etu.parsers.pte import open_program


def test_payloads_are_decoded_once_per_program(
    demo_pte: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = []
    real = program_facts.decode_ethosu_payload

    def counted(data, offset):
        calls.append(offset)
        return real(data, offset)

    monkeypatch.setattr(program_facts, "decode_ethosu_payload", counted)
    with open_program(demo_pte) as program:
        first = program_facts.delegates(program)
        first.clear()  # a caller's list is its own
        again = program_facts.delegates(program)
        program_facts.program_facts(program, demo_pte)
    assert len(calls) == 1 and len(again) == 1 and again[0].payload is not None
    with open_program(demo_pte) as other:  # another program decodes its own
        program_facts.delegates(other)
    assert len(calls) == 2


def test_operation_records_equal_asdict(demo_pte: Path) -> None:
    with open_program(demo_pte) as program:
        decoded = program_operations(program, program_facts.delegates(program))
    operations = decoded[0].stream.operations
    assert len(operations) > 10
    for operation in operations:
        expected = dataclasses.asdict(operation)
        expected["summary"] = operation.summary
        expected = {k: v for k, v in expected.items() if v is not None and v != ()}
        assert operation.to_json() == expected
