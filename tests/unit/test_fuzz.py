"""Fuzzing that keeps running (issue 9): every kept finding is replayed, and each format's
harness gets a bounded hypothesis run (a few seconds) of mutations of real artifacts.
``make fuzz`` runs the same harnesses under atheris for longer (tests/fuzzing.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fuzzing import HARNESSES, findings, run_one, seeds

INTERESTING = [b"\x00", b"\xff", b"\x7f", b"\x80", b"\x1b[2J", b"%zu", b"9" * 64, b"\n",
               b"\r", b"0xffffffffffffffff", b"-1", b"(", b")", b"]", b"\"", b","]  # fmt: skip


@st.composite
def mutated(draw, name: str) -> bytes:
    """A real artifact of the format with a few byte-level mutations."""
    pool = seeds(name)
    data = bytearray(draw(st.sampled_from(pool)))
    for _ in range(draw(st.integers(1, 8))):
        if not data:
            data += draw(st.binary(min_size=1, max_size=16))
            continue
        at = draw(st.integers(0, len(data) - 1))
        op = draw(st.integers(0, 5))
        if op == 0:
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif op == 1:
            data[at] = draw(st.integers(0, 255))
        elif op == 2:
            del data[at : at + draw(st.integers(1, 64))]
        elif op == 3:
            data[at:at] = draw(st.sampled_from(INTERESTING))
        elif op == 4:
            data = data[: draw(st.integers(0, len(data)))]  # truncated
        else:
            other = draw(st.sampled_from(pool))
            start = draw(st.integers(0, max(0, len(other) - 1)))
            data[at:at] = other[start : start + draw(st.integers(1, 256))]
    return bytes(data)


def _cases() -> list[tuple[str, Path]]:
    return [(name, path) for name in HARNESSES for path in findings(name)]


@pytest.mark.parametrize(("name", "path"), _cases(), ids=[f"{n}/{p.name}" for n, p in _cases()])
def test_kept_findings_stay_fixed(name: str, path: Path) -> None:
    run_one(name, path.read_bytes())


@pytest.mark.parametrize("name", sorted(HARNESSES))
def test_every_format_has_a_seeded_corpus(name: str) -> None:
    assert seeds(name), f"no real artifact seeds the {name} corpus"
    for seed in seeds(name):
        run_one(name, seed)


@pytest.mark.parametrize("name", sorted(HARNESSES))
def test_bounded_fuzz(name: str) -> None:
    @settings(max_examples=100, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(mutated(name))
    def one(data: bytes) -> None:
        run_one(name, data)

    one()
