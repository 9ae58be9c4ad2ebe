"""The byte-level mutator shared by the bounded fuzz test and ``make fuzz``'s hypothesis
fallback: a plain helper module, so neither imports the other."""

from __future__ import annotations

from functools import cache

from hypothesis import strategies as st

from tests.fuzzing import seeds

INTERESTING = [b"\x00", b"\xff", b"\x7f", b"\x80", b"\x1b[2J", b"%zu", b"9" * 64, b"\n",
               b"\r", b"0xffffffffffffffff", b"-1", b"(", b")", b"]", b"\"", b","]  # fmt: skip


@cache
def _pool(name: str) -> tuple[bytes, ...]:
    """The seeds, read once per process: read at each draw, a corpus that grows mid-test
    (another worker lowering a program into the artifact cache) made hypothesis's replay
    of an example draw different data (its Flaky error)."""
    return tuple(seeds(name))


@st.composite
def mutated(draw, name: str) -> bytes:
    """A real artifact of the format with a few byte-level mutations."""
    pool = _pool(name)
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
