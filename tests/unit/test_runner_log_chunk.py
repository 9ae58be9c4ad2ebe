"""The runner-log parser's whole-chunk steps (``parsers/runner_log.py``) against the plain
per-line way they replace: a chunk's texts decoded at once (or as Latin-1 with its non-ASCII
lines decoded again) are each line decoded on its own; the lines holding EOT, ANSI or "♦"
found by their bytes are those a per-line search finds; the long-line probe at multiples of
the limit says what every line's length says."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from etu.parsers.runner_log import _has_long_line, _special_lines, _texts

# Lines made of what matters here: ASCII, multi-byte and broken UTF-8, the special marks.
_PIECES = [b"a", b"I [x] ", b"\xe2\x99\xa6", b"\x04", b"\x1b[0m", b"\xc3\xa9", b"\xc3", b"\xff",
           b"\xe7\xb1\xa5", b"\xed\xa0\x80", b" "]  # fmt: skip
_LINE = st.lists(st.sampled_from(_PIECES), max_size=8).map(b"".join)


def _split(lines: list[bytes], rest: bytes) -> tuple[bytes, list[bytes]]:
    data = b"".join(line + b"\n" for line in lines) + rest
    parts = data.split(b"\n")
    parts.pop()
    return data, parts


@settings(max_examples=300, deadline=None)
@given(st.lists(_LINE, max_size=12), _LINE)
def test_chunk_texts_are_each_line_decoded_on_its_own(lines: list[bytes], rest: bytes) -> None:
    data, parts = _split(lines, rest)
    texts = _texts(data, parts)
    assert texts[: len(parts)] == [p.decode("utf-8", "replace") for p in parts]


@settings(max_examples=300, deadline=None)
@given(st.lists(_LINE, max_size=12), _LINE)
def test_special_lines_are_the_lines_holding_a_mark(lines: list[bytes], rest: bytes) -> None:
    data, parts = _split(lines, rest)
    marks = (b"\x04", b"\x1b", b"\xe2\x99\xa6")
    want = [i for i, p in enumerate(parts) if any(m in p for m in marks)]
    assert _special_lines(data, parts) == want


@settings(max_examples=500, deadline=None)
@given(st.lists(st.integers(0, 40), min_size=1, max_size=12), st.integers(1, 16))
def test_long_line_probe_agrees_with_every_lines_length(lengths: list[int], limit: int) -> None:
    data = b"".join(b"x" * n + b"\n" for n in lengths) + b"tail without end"
    cut = data.rfind(b"\n") + 1
    assert _has_long_line(data, cut, limit) == (max(lengths) > limit)


def test_long_line_probe_at_the_limit_and_one_past() -> None:
    for limit in (1, 7, 64):
        for before in (0, 1, limit - 1, limit, limit + 1):  # short lines moving the long one
            head = b"y\n" * before
            for n, long in ((limit, False), (limit + 1, True)):
                data = head + b"x" * n + b"\n" + b"z\n"
                assert _has_long_line(data, len(data), limit) is long, (limit, before, n)
