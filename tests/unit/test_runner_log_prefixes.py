"""The runner-log parser reads runners it has not seen (issue 9): messages are recognised
by what they say whatever prefix is in front. Every real transcript is re-prefixed in each
style (no prefix at all as a plain printf PAL prints, Zephyr's logging, custom trace tags
interleaved, ExecuTorch's older prefixes) and must give the same PMU reports, allocator
summary, outputs, errors and verdict as the original."""

from __future__ import annotations

from pathlib import Path

import pytest

from etu.parsers.log_prefix import RUNTIME_PREFIX
from etu.parsers.runner_events import LogLine, MethodLoaded, RunError, RunSucceeded
from etu.parsers.runner_log import line_level, parse_log_bytes, summarize

DATA = Path(__file__).resolve().parent.parent / "data" / "transcripts"
SHARED = Path("/work/shared/reference/transcripts")  # the same set, when this machine has it
FOLDERS = [DATA, *([SHARED] if SHARED.is_dir() else [])]
TRANSCRIPTS = sorted({p.name: p for f in FOLDERS for p in f.rglob("*.log")}.values())
STYLES = ("plain", "zephyr", "zephyr-bare", "trace", "timestamp", "v0.3", "v0.5")


def reprefix(lines: list[str], style: str) -> list[str]:
    """The same messages with another runner's prefix in front."""
    out = []
    for i, line in enumerate(lines):
        m = RUNTIME_PREFIX.match(line)
        if not m:
            out.append(line)
            continue
        level, file, number, _function, message = m.groups()
        zlevel = {"E": "err", "F": "err", "D": "dbg"}.get(level, "inf")
        if style == "plain":  # a printf PAL: the message only
            out.append(message)
        elif style == "zephyr":
            out.append(f"[00:00:{i % 60:02d}.{i % 1000:03d},000] <{zlevel}> executorch: {message}")
        elif style == "zephyr-bare":  # CONFIG_LOG_BACKEND without timestamps
            out.append(f"<{zlevel}> app: {message}")
        elif style == "trace":  # a trace tool's tag before each line, and lines of its own
            out.append(f"[T{i:05d}] {line}")
            if i % 3 == 0:
                out.append(f"[TRACE] tick {i}")
        elif style == "timestamp":
            out.append(f"{i // 1000}.{i % 1000:03d} {line}")
        elif style == "v0.3":
            out.append(f"{level} executorch:{file}:{number or 12}] {message}")
        elif style == "v0.5":
            out.append(f"{level} [executorch:{file}:{number or 12}] {message}")
    return out


def essentials(data: bytes) -> dict:
    summary = summarize(parse_log_bytes(data))
    return {
        "verdict": summary["verdict"],
        "pmu": [(p["npu_cycles"], p["cpu_cycles"], p["npu_inferences"]) for p in summary["pmu"]],
        "allocators": summary["allocators"],
        "outputs": summary["outputs"],
        "errors": sorted(str((e.get("status"), e.get("kind"))) for e in summary["errors"]),
        "program": summary["model"].get("pte_size"),
    }


def lines_of(path: Path) -> list[str]:
    return path.read_bytes().decode("utf-8", "replace").splitlines()


@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("path", TRANSCRIPTS, ids=lambda p: p.name[:24])
def test_same_findings_whatever_the_prefix(path: Path, style: str) -> None:
    lines = lines_of(path)
    reference = essentials("\n".join(lines).encode() + b"\n")
    moved = essentials("\n".join(reprefix(lines, style)).encode() + b"\n")
    if style == "plain":  # without a level, an error is known only by what it says
        reference["errors"] = moved["errors"] = None
    assert moved == reference


@pytest.mark.parametrize("style", [*STYLES, "zephyr in colour"])
def test_a_line_read_on_its_own_gets_the_level_the_parser_gives_it(style: str) -> None:
    """``line_level`` (a session file's lines, read back without the parser) agrees with
    the parser on every line of every transcript in every prefix style."""
    checked = 0
    for path in TRANSCRIPTS:
        if style == "zephyr in colour":
            lines = [f"\x1b[1;32m{line}\x1b[0m" for line in reprefix(lines_of(path), "zephyr")]
        else:
            lines = reprefix(lines_of(path), style)
        for event in parse_log_bytes("\n".join(lines).encode()):
            if isinstance(event, LogLine):
                text = event.raw.decode("utf-8", "replace")
                assert line_level(text) == event.level, (path.name, text)
                checked += event.level is not None
    if style != "plain":  # a printf PAL prints no levels at all
        assert checked > 300


def test_the_styles_change_something() -> None:
    """The re-prefixed logs are not the original (the test above could not fail if so)."""
    lines = lines_of(DATA / "04_et_docs_v0.4_mv2_pmu_allocator.log")
    for style in STYLES:
        assert reprefix(lines, style) != lines


def test_plain_printf_runner() -> None:
    log = b"\n".join(
        [
            b"Model buffer loaded, has 1 methods",
            b"Method loaded.",
            b"Starting running 1 inferences...",
            b"Memory allocation failed: 6144000B requested, 2000B available",
            b"Program complete, exiting.",
        ]
    )
    events = parse_log_bytes(log + b"\n")
    assert any(isinstance(e, RunError) for e in events)
    assert any(isinstance(e, RunSucceeded) for e in events) or any(
        isinstance(e, MethodLoaded) for e in events
    )


def test_zephyr_error_level_is_an_error() -> None:
    events = parse_log_bytes(b"[00:00:01.000,000] <err> app: something broke 0x12\n")
    (error,) = [e for e in events if isinstance(e, RunError)]
    assert error.status == 0x12


def test_a_trace_tag_does_not_end_a_report() -> None:
    lines = lines_of(DATA / "04_et_docs_v0.4_mv2_pmu_allocator.log")
    tagged = []
    for line in lines:
        tagged.append(line)
        tagged.append("[TRACE] irq 17")
    assert essentials("\n".join(tagged).encode()) == essentials("\n".join(lines).encode())
