"""Parser worst cases next to typical inputs of the same size (issue 9).

For each text format etu parses, a typical input (real artifacts repeated to the size) and
hostile ones built to hit each parser's weak spots (one endless line, escape sequences on
every line, huge literals, printf garbage, deep nesting, a debug XML that forces the
regex fallback, a CSV with one enormous cell) are parsed at 1 MB and 10 MB. Goal: each
hostile input's time per MB within 3x of the typical one's, and its peak memory (tracemalloc)
within 3x: parsers stay linear and bounded whatever they are fed.

Shapes (issue 20): long runs of one character class (spaces, one letter, digits, ``<debug ``,
``=``, quotes, blank lines ...) placed where each parser's patterns look
(tests/hostile_shapes.py), parsed at N = 16,000 and 4N characters (4N stays under the runner
log's 64 KiB line cap, so its lines are parsed whole). Printed: time per byte at 4N / time per
byte at N, the worst run of each place and each shape issue 20 names. Goal: <= 3 (a
quadratic regex gives about 4).
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DATA = ROOT / "tests" / "data"
DEMO = ROOT / "etu_tui" / "demo"
SIZES = (1 << 20, 10 << 20)
GOAL_RATIO = 3.0
SHAPE_N = 16_000
SHAPE_GROWTH = 4
SHAPE_STOP = 30.0  # seconds: a parse still running then is reported as over
ESC = "\x1b]0;pwned\x07\x1b[2J\x1b]52;c;aGk=\x07\u202e"


def _fill(unit: bytes, size: int) -> bytes:
    return (unit * (size // max(len(unit), 1) + 1))[:size]


def _transcripts() -> bytes:
    return b"\n".join(p.read_bytes() for p in sorted((DATA / "transcripts").rglob("*.log")))


# ------------------------------------------------------------------------- the inputs


def log_cases(size: int) -> dict[str, bytes]:
    typical = _fill(_transcripts() + b"\n", size)
    line = b"I [executorch:arm_executor_runner.cpp:912 runner_init()] PTE @ 0x70000000 "
    return {
        "typical": typical,
        "one endless line": _fill(b"x" * 1023 + b"\x1b", size),
        "escapes on every line": _fill(line + ESC.encode() * 4 + b"\n", size),
        "huge literals": _fill(line + b"Size: " + b"9" * 5000 + b"\n", size),
        "printf garbage": _fill(b"I [executorch:f.cpp:zu f()] %zu %s %n %p 0x%x\n", size),
        "no prefix, trace tags": _fill(b"[T0001] [TRACE] <inf> a: %zu failed 0x\n", size),
        # a line per byte (a UART stuck on CR): runs of empty lines are one event each
        "empty-line flood (CR)": _fill(b"\r", size),
        "empty-line flood (LF)": _fill(b"\n", size),
        # issue 20: a fault line's register scan and a pool line's search, 32 KB of one letter
        "fault lines of one letter": _fill(b"Hard fault " + b"a" * 32000 + b"\n", size),
        "pool lines of one letter": _fill(
            b"I [executorch:f.cpp:1 f()] method_allocator_used: " + b"a" * 32000 + b"\n", size
        ),
    }


def ld_map_cases(size: int) -> dict[str, bytes]:
    real = (DEMO / "firmware" / "arm_executor_runner.map").read_bytes()
    head, _, body = real.partition(b"Linker script and memory map")
    rows = b"".join(
        b" .text.f%06d  0x%08x  0x10 obj%d.o\n                0x%08x   f%d\n" % (i, i, i, i, i)
        for i in range(2000)
    )
    return {
        "typical": head + b"Linker script and memory map\n" + _fill(body, size - len(head)),
        "long names": head + b"Linker script and memory map\n"
        + _fill(b" .text." + b"a" * 60000 + b"\n  0x10 0x20 x.o\n", size - len(head)),
        "many symbols": head + b"Linker script and memory map\n" + _fill(rows, size - len(head)),
        "garbage": _fill(b"0x 0x 0x ( ) *(.text*) \x1b[2J\n", size),
        "spaces inside rows": head + b"Linker script and memory map\n.text 0x0 0x10\n"
        + _fill(b" .text.a 0x0 0x10 a" + b" " * 40000 + b"b\n  0x0 f" + b" " * 40000 + b"g\n",
                size - len(head)),
    }  # fmt: skip


def script_cases(size: int) -> dict[str, bytes]:
    real = (DEMO / "firmware" / "arm_executor_runner.ld").read_bytes()
    regions = b"".join(
        b"  R%d (rwx) : ORIGIN = 0x%x, LENGTH = 0x1000\n" % (i, i * 0x1000) for i in range(20000)
    )
    deep = b"(" * 30 + b"1" + b")" * 30
    # typical: the real script with its SECTIONS statements repeated to the size
    head, _, rest = real.partition(b"SECTIONS")
    body = rest[rest.index(b"{") + 1 : rest.rindex(b"}")]
    typical = head + b"SECTIONS\n{\n" + _fill(body, size - len(head) - 16)
    typical = typical[: typical.rindex(b"}") + 1] + b"\n}\n"
    return {
        "typical": typical,
        "many regions": b"MEMORY {\n" + _fill(regions, size - 12) + b"\n}\n",
        "deep expressions": _fill(b"A = " + b" + ".join([deep] * 15) + b";\n", size),
        "huge literals": _fill(b"B = " + b"9" * 4000 + b";\n", size),
        "unclosed braces": _fill(b"SECTIONS { .x : { *(.x) \n", size),
        "spaces in headers": head + b"SECTIONS\n{\n"
        + _fill(b"  .x a" + b" " * 80000 + b"y : { *(.x) }\n", size - len(head) - 16) + b"\n}\n",
        "blank lines before MEMORY": _fill(b"\n", size) + b"MEMORY { R : ORIGIN = 0, LENGTH = 1 }",
    }  # fmt: skip


def debug_xml_cases(size: int) -> dict[str, bytes]:
    real = next((DATA / "vela").rglob("*_debug.xml")).read_bytes()
    start = real.index(b"<table")
    end = real.rindex(b"</table>") + len(b"</table>")
    tables = real[start:end]
    head, tail = real[:start], real[end:]
    fill = _fill(tables + b"\n", size - len(head) - len(tail))
    valid = head + fill[: fill.rindex(b"</table>") + 8] + tail
    return {
        "typical": valid,
        "malformed (regex fallback)": valid.replace(b"</debug>", b"<oops>"),
        "unclosed tables": head + _fill(b'<table name="perf"><![CDATA[a,b\n1,2\n', size),
        "lone angle brackets": head + _fill(b"<table <table </table <<<<", size),
        "long root attribute": b"<debug " + _fill(b"x", size) + b">" + tables + b"<oops>",
        "many '<debug '": tables + _fill(b"<debug ", size),
    }


def per_layer_cases(size: int) -> dict[str, bytes]:
    real = (DEMO / "vela" / "out_per-layer.csv").read_bytes()
    header, _, rows = real.partition(b"\n")
    return {
        "typical": header + b"\n" + _fill(rows, size),
        "one enormous cell": header + b"\n" + b"Conv,Conv,NPU," + b"9" * size + b"\n",
        "unclosed quote": header + b"\n" + b'"' + _fill(b"a,b\n", size),
        "escapes in names": header + b"\n" + _fill(b"Conv,Conv,NPU,1,1,1,1,1,1,1,1,1,1,1,1,"
                                                   + ESC.encode() + b"\n", size),
    }  # fmt: skip


def stdout_cases(size: int) -> dict[str, bytes]:
    real = (DEMO / "vela" / "vela_stdout.txt").read_bytes()
    return {
        "typical": _fill(real + b"\n", size),
        "one endless line": _fill(b"Total SRAM used " * 64, size),
        "escapes": _fill(ESC.encode() + b" cycles " + b"9" * 400 + b"\n", size),
        "spaces inside lines": _fill(b"Memory mode x" + b" " * 40000 + b"y\n", size),
    }


def _parse_log(data: bytes) -> None:
    from etu.parsers.runner_log import LogSummary, RunnerLogParser

    parser, summary = RunnerLogParser(), LogSummary()
    for at in range(0, len(data), 1 << 16):
        for event in parser.feed(data[at : at + (1 << 16)]):
            summary.add(event)
    for event in parser.close():
        summary.add(event)
    summary.to_json()


def _tolerant(parse: Callable[[bytes], object]) -> Callable[[bytes], None]:
    from etu.parsers.errors import ParseError

    def run(data: bytes) -> None:
        # refusing an input is a fine outcome; only time and memory are measured
        with contextlib.suppress(ParseError):
            parse(data)

    return run


def formats() -> dict[str, tuple[Callable[[int], dict[str, bytes]], Callable[[bytes], None]]]:
    from etu.parsers.ld_map import parse_ld_map
    from etu.parsers.linker_script import parse_linker_script
    from etu.parsers.vela_csv import parse_per_layer_csv
    from etu.parsers.vela_debug_db import parse_debug_db
    from etu.parsers.vela_stdout import parse_vela_stdout

    return {
        "runner log": (log_cases, _parse_log),
        "ld map": (ld_map_cases, _tolerant(lambda d: parse_ld_map(d.decode("utf-8", "replace")))),
        "linker script": (
            script_cases, _tolerant(lambda d: parse_linker_script(d.decode("utf-8", "replace")))
        ),
        "vela debug xml": (debug_xml_cases, _tolerant(parse_debug_db)),
        "vela per-layer csv": (per_layer_cases, _tolerant(parse_per_layer_csv)),
        "vela stdout": (stdout_cases, _tolerant(parse_vela_stdout)),
    }  # fmt: skip


# ------------------------------------------------------------------------- measuring


def measure(parse: Callable[[bytes], None], data: bytes) -> tuple[float, int]:
    """(seconds per MB, best of two; peak traced bytes of one pass)."""
    best = float("inf")
    for _ in range(2):
        start = time.perf_counter()
        parse(data)
        best = min(best, time.perf_counter() - start)
    tracemalloc.start()
    parse(data)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return best / (len(data) / (1 << 20)), peak


def shape_ratio(fmt: str, context: str, run: str, n: int = SHAPE_N) -> float:
    """Time per byte at SHAPE_GROWTH * n over time per byte at n (inf: stopped)."""
    from tests.hostile_shapes import TooSlow, best_time, parser, shape, stop_after

    parse = parser(fmt)
    small = shape(fmt, context, run, n)
    large = shape(fmt, context, run, SHAPE_GROWTH * n)
    try:
        with stop_after(SHAPE_STOP):
            parse(small)  # warm-up
            t_small = best_time(parse, small, budget=0.02)
        with stop_after(SHAPE_STOP):
            t_large = best_time(parse, large, repeats=1 if t_small > 1 else 3, budget=0.02)
    except TooSlow:
        return float("inf")
    return (t_large / len(large)) / (t_small / len(small))


def shapes() -> dict:
    """Per place (format / context): the run with the worst ratio; then issue 20's shapes."""
    from tests.hostile_shapes import CONTEXTS, ISSUE_SHAPES, RUNS

    places: dict = {}
    for fmt, contexts in CONTEXTS.items():
        for context in contexts:
            ratios = {run: shape_ratio(fmt, context, run) for run in RUNS}
            run = max(ratios, key=ratios.__getitem__)
            key = f"{fmt} / {context}"
            places[key] = {"worst_run": run, "ratio": round(ratios[run], 2)}
            mark = "" if ratios[run] <= GOAL_RATIO else "  OVER"
            print(f"shape {key:<48} worst {run!r:<22} x{ratios[run]:5.2f}{mark}", flush=True)
    issue: dict = {}
    for name, case in ISSUE_SHAPES.items():
        ratio = shape_ratio(*case)
        issue[name] = round(ratio, 2)
        mark = "" if ratio <= GOAL_RATIO else "  OVER"
        print(f"issue 20 shape {name:<45} x{ratio:5.2f}{mark}", flush=True)
    worst = max([v["ratio"] for v in places.values()] + list(issue.values()))
    return {
        "shape_n": SHAPE_N,
        "shape_growth": SHAPE_GROWTH,
        "places": places,
        "issue_shapes": issue,
        "worst_shape_ratio": worst,
        "shapes_meet_goal": worst <= GOAL_RATIO,
    }


def main() -> dict:
    results: dict = {}
    over: list[str] = []
    worst_time = worst_memory = 0.0
    for name, (cases, parse) in formats().items():
        for size in SIZES:
            inputs = cases(size)
            typical_s, typical_peak = measure(parse, inputs["typical"])
            for case, data in inputs.items():
                seconds, peak = measure(parse, data) if case != "typical" else (
                    typical_s, typical_peak
                )  # fmt: skip
                time_ratio = seconds / typical_s if typical_s else 0.0
                memory_ratio = peak / typical_peak if typical_peak else 0.0
                if case != "typical":
                    worst_time = max(worst_time, time_ratio)
                    worst_memory = max(worst_memory, memory_ratio)
                key = f"{name} / {case} / {size >> 20} MB"
                results[key] = {
                    "ms_per_mb": round(seconds * 1e3, 2), "peak_mb": round(peak / 2**20, 2),
                    "time_ratio": round(time_ratio, 2), "memory_ratio": round(memory_ratio, 2),
                }  # fmt: skip
                mark = "" if case == "typical" or (
                    time_ratio <= GOAL_RATIO and memory_ratio <= GOAL_RATIO
                ) else "  OVER"  # fmt: skip
                if mark:
                    over.append(key)
                print(
                    f"{key:<58} {seconds * 1e3:9.1f} ms/MB  x{time_ratio:5.2f}  "
                    f"peak {peak / 2**20:7.1f} MB  x{memory_ratio:5.2f}{mark}",
                    flush=True,
                )
    shape_summary = shapes()
    summary = {
        "cases": results,
        "worst_time_ratio": round(worst_time, 2),
        "worst_memory_ratio": round(worst_memory, 2),
        "goal_ratio": GOAL_RATIO,
        "over_goal": over,
        "shapes": shape_summary,
        "meets_goal": worst_time <= GOAL_RATIO
        and worst_memory <= GOAL_RATIO
        and shape_summary["shapes_meet_goal"],
    }
    print(json.dumps({k: v for k, v in summary.items() if k not in ("cases", "shapes")}))
    print(json.dumps({k: v for k, v in shape_summary.items() if k != "places"}))
    return summary


if __name__ == "__main__":
    main()
