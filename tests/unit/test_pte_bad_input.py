"""Corrupt, truncated, hostile and wrong-kind files: a ParseError naming what is wrong,
never another exception, a hang or a read outside the file."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from etu.parsers.errors import ParseError, WrongKindError
from etu.parsers.program_facts import inspect_record
from etu.parsers.pte import decode_program, open_program


def decode_fully(data: bytes) -> dict | None:
    """Decode and derive everything ``etu inspect`` would; None when a ParseError was raised."""
    try:
        program = decode_program(data, "sample.pte")
        return inspect_record(program)
    except ParseError as error:
        message = str(error)
        assert message.startswith("sample.pte: ") and "\n" not in message
        return None


@pytest.fixture(scope="module")
def small_program(real_program) -> bytes:
    return real_program("u55").read_bytes()


@pytest.fixture(scope="module")
def segment_program(real_program) -> bytes:
    return real_program("u55_segment").read_bytes()


def test_every_truncation_is_a_parse_error(small_program: bytes) -> None:
    decoded = [decode_fully(small_program[:cut]) for cut in range(len(small_program))]
    failures = sum(record is None for record in decoded)
    # The last bytes of a FlatBuffer may be alignment padding nothing refers to; every
    # other cut breaks a reference and must be reported.
    assert failures >= len(small_program) - 16


def test_every_truncation_of_a_segment_program(segment_program: bytes) -> None:
    for cut in range(len(segment_program)):
        assert decode_fully(segment_program[:cut]) is None, cut


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_byte_flips(small_program: bytes, segment_program: bytes, data) -> None:
    original = data.draw(st.sampled_from([small_program, segment_program]))
    mutated = bytearray(original)
    for _ in range(data.draw(st.integers(1, 8))):
        position = data.draw(st.integers(0, len(mutated) - 1))
        mutated[position] = data.draw(st.integers(0, 255))
    decode_fully(bytes(mutated))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_spliced_files(small_program: bytes, segment_program: bytes, data) -> None:
    a, b = data.draw(st.permutations([small_program, segment_program]))
    cut_a = data.draw(st.integers(0, len(a)))
    cut_b = data.draw(st.integers(0, len(b)))
    decode_fully(a[:cut_a] + b[cut_b:])


def test_hostile_lengths_do_not_allocate(small_program: bytes) -> None:
    """Every uint32 set to 0xFFFFFFFF in turn: huge counts and offsets are caught by bounds."""
    rng = random.Random(7)
    positions = rng.sample(range(0, len(small_program) - 4, 4), 300)
    for position in positions:
        mutated = bytearray(small_program)
        mutated[position : position + 4] = b"\xff\xff\xff\xff"
        decode_fully(bytes(mutated))


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"", "empty file"),
        (b"ET12", "8 bytes"),
        (b"hello, this is a text file\nwith two lines\n", "text file"),
        (b"\x7fELF\x02\x01\x01\x00" + bytes(56), "ELF"),
        (b"\x10\x00\x00\x00FT01" + bytes(40), ".ptd"),
        (b"\x10\x00\x00\x00ED00" + bytes(40), "ETDump"),
        (b"\x10\x00\x00\x00TOSA" + bytes(40), "TOSA"),
        (bytes(range(256)) * 4, "not an ExecuTorch program"),
    ],
)
def test_wrong_kind_files(tmp_path: Path, content: bytes, expected: str) -> None:
    path = tmp_path / "bad.pte"
    path.write_bytes(content)
    with pytest.raises(ParseError) as caught:
        open_program(path)
    message = str(caught.value)
    assert message.startswith(str(path)) and expected in message and "\n" not in message


def test_real_elf_is_named(tmp_path: Path) -> None:
    with pytest.raises(WrongKindError, match="ELF"):
        open_program(Path("/bin/ls"))


def test_directory_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ParseError, match="directory"):
        open_program(tmp_path)
    with pytest.raises(ParseError, match="No such file"):
        open_program(tmp_path / "missing.pte")


def test_segment_past_end_names_the_segment(segment_program: bytes) -> None:
    # Shrink the file by one byte but keep the header's promise: the header check reports it.
    with pytest.raises(ParseError, match="extended header"):
        decode_program(segment_program[:-1], "short.pte")


def test_unchanged_program_still_decodes(small_program: bytes) -> None:
    """Guards the tests above: a clean program must decode, or they prove nothing."""
    assert decode_fully(small_program) is not None
