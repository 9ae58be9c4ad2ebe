"""The runner-log parser's hot loop (``_complete_many``, a chunk's lines at once) gives the
same events as its full path (the general split, then ``_complete`` line by line): on every
real transcript, with LF, CRLF and mixed line ends, fed whole and in chunks, and on lines
that are broken UTF-8 or carry EOT and colour codes."""

from __future__ import annotations

from pathlib import Path

import pytest

from etu.parsers.runner_events import Event
from etu.parsers.runner_log import RunnerLogParser

TRANSCRIPTS = Path(__file__).resolve().parent.parent / "data" / "transcripts"
ALL_LOGS = sorted(p.name for p in TRANSCRIPTS.glob("*.log"))


class FullPath(RunnerLogParser):
    """Every chunk through the general split, every line through ``_complete``."""

    _fast_path = False


class CountingFastPath(RunnerLogParser):
    """The normal parser, counting the lines its hot loop read."""

    def __init__(self, **options) -> None:
        super().__init__(**options)
        self.fast_lines = 0

    def _complete_many(self, parts, texts, end, mixed, out) -> None:
        self.fast_lines += len(parts)
        super()._complete_many(parts, texts, end, mixed, out)


def _events(parser: RunnerLogParser, data: bytes, chunk: int | None) -> list[Event]:
    if chunk is None:
        events = parser.feed(data)
    else:
        events = []
        for offset in range(0, len(data), chunk):
            events += parser.feed(data[offset : offset + chunk])
    return events + parser.close()


def _ends(data: bytes, style: str) -> bytes:
    """The log with LF ends, CRLF ends, or CRLF on every third line (as the benchmark)."""
    lines = data.splitlines()
    if style == "lf":
        return b"".join(line + b"\n" for line in lines)
    if style == "crlf":
        return b"".join(line + b"\r\n" for line in lines)
    return b"".join(line + (b"\r\n" if i % 3 == 0 else b"\n") for i, line in enumerate(lines))


def _assert_same(data: bytes, chunk: int | None, **options) -> int:
    fast = CountingFastPath(**options)
    got = _events(fast, data, chunk)
    want = _events(FullPath(**options), data, chunk)
    assert len(got) == len(want)
    for a, b in zip(got, want, strict=True):
        assert a == b, (a, b)
    return fast.fast_lines


@pytest.mark.parametrize("name", ALL_LOGS)
@pytest.mark.parametrize("style", ["as_is", "lf", "crlf", "mixed"])
def test_fast_path_and_full_path_agree_on_every_transcript(name: str, style: str) -> None:
    data = (TRANSCRIPTS / name).read_bytes()
    if style != "as_is":
        data = _ends(data, style)
    fast_lines = 0
    for chunk in (None, 4096, 333, 7):
        fast_lines += _assert_same(data, chunk)
    assert _assert_same(data, 64, stream="uart0", npu="U55") >= 0
    if style in ("lf", "crlf", "mixed") and b"\r" not in data.replace(b"\r\n", b""):
        assert fast_lines > 0  # the hot loop ran (the comparison is not full path twice)


def test_fast_path_and_full_path_agree_on_all_transcripts_in_one_log() -> None:
    """The benchmark's mix: every transcript's lines in a row, reports cut by other
    transcripts' lines, CRLF on every third line, fed in 64 KiB chunks."""
    lines: list[bytes] = []
    for name in ALL_LOGS:
        lines.extend((TRANSCRIPTS / name).read_bytes().splitlines())
    data = _ends(b"\n".join(lines * 5), "mixed")
    assert _assert_same(data, 64 * 1024) > len(lines)
    assert _assert_same(data, 1000) > 0


@pytest.mark.parametrize(
    "line",
    [
        b"I [executorch:f.cpp:1] broken \xe2\x99",  # a cut UTF-8 sequence at the end
        b"\xf0\x9f\x98 I [executorch:f.cpp:2] Method loaded.",
        b"I [executorch:f.cpp:3 main()] \xed\xa0\x80 surrogate \xff\xfe",
        b"I [executorch:f.cpp:4] Program complete, exiting.\x04",
        b"\x1b[32mI [executorch:f.cpp:5] Model executed successfully.\x1b[0m",
        b"I [executorch:f.cpp:6 main()] \xe2\x99\xa6",  # how a terminal shows EOT
        b"Output[0][1]: (float) 0.5 \xc3",
        b"[00:00:00.100,000] <err> app: Loading of method forward failed with status 0x12",
        b"E: something failed \xc3\xa9",
        b"   ]",
        b"]",
        b"x" * 200 + b"] I [executorch:f.cpp:7] far",
    ],
)
@pytest.mark.parametrize("style", ["lf", "crlf", "mixed"])
def test_fast_path_and_full_path_agree_on_odd_lines(line: bytes, style: str) -> None:
    plain = b"I [executorch:arm_executor_runner.cpp:325] BLINK"
    data = _ends(b"\n".join([plain, line, plain, line, b"", line, plain]), style)
    for chunk in (None, 5, 64):
        _assert_same(data, chunk)


@pytest.mark.parametrize("style", ["lf", "crlf", "mixed"])
def test_lines_with_eot_or_colour_leave_the_others_to_the_hot_loop(style: str) -> None:
    """A chunk with EOT bytes, ANSI colours or "♦" in some lines (a coloured Zephyr log):
    those lines take the full path, every other line still the hot loop, same events."""
    plain = b"I [executorch:arm_executor_runner.cpp:325] BLINK"
    coloured = b"\x1b[32mI [executorch:f.cpp:5] Model executed successfully.\x1b[0m"
    eot = b"I [executorch:f.cpp:4] Program complete, exiting.\x04"
    lines = [plain, coloured, coloured, plain, b"Output[0][0]: 1", eot, b"\xe2\x99\xa6", plain]
    data = _ends(b"\n".join(lines * 50), style)
    assert _assert_same(data, None) == 4 * 50  # the plain and Output lines
    for chunk in (4096, 333, 7):
        _assert_same(data, chunk)
