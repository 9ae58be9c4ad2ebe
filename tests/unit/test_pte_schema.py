"""The ``.pte`` schema is declared once (parsers/pte_schema.py) and read by both sides."""

from __future__ import annotations

from enum import IntEnum

from etu.parsers import pte, pte_schema
from etu.runner import segment_program


def _slot_enums() -> list[type[IntEnum]]:
    return [
        value
        for name, value in vars(pte_schema).items()
        if name.endswith("Slot") and isinstance(value, type) and issubclass(value, IntEnum)
    ]


def test_every_table_declares_its_slots_in_order_from_zero() -> None:
    enums = _slot_enums()
    assert len(enums) >= 20
    for enum in enums:
        assert sorted(member.value for member in enum) == list(range(len(enum))), enum.__name__


def test_the_decoder_and_the_writer_use_the_one_declaration() -> None:
    assert pte.SCALAR_TYPES is pte_schema.SCALAR_TYPES
    assert pte.ProgramSlot is pte_schema.ProgramSlot
    assert segment_program.ProgramSlot is pte_schema.ProgramSlot
    assert pte_schema.PROGRAM_IDENTIFIER.encode() == segment_program.FILE_IDENTIFIER


def test_value_kind_tags_invert_the_value_kinds() -> None:
    for name, tag in pte_schema.VALUE_KIND_TAGS.items():
        assert pte_schema.VALUE_KINDS[tag] == name
    assert "None" not in pte_schema.VALUE_KIND_TAGS  # nothing to write for it
    assert len(pte_schema.VALUE_KIND_TAGS) == len(pte_schema.KernelTypes) - 1
