"""Hostile shapes for the text parsers (issue 20): long runs of one character class placed
where each parser's patterns look (a fault line, a MEMORY entry, a map row, a summary line,
the root tag of a debug XML ...). A parser whose regex rescans the rest of a run from each of
its characters takes quadratic time on them; a linear one takes 4x the time on 4x the input.

Shared by tests/unit/test_hostile_shapes.py (which asserts linear-ish scaling and an absolute
bound) and benchmarks/bench_hostile.py (which prints the per-byte ratio of each shape).
"""

from __future__ import annotations

import contextlib
import json
import signal
import threading
import time
from collections.abc import Callable, Iterator

from etu.parsers.errors import ParseError

PLACE = "@@"  # where a template takes the run (templates hold "{" and "}" of their own)

# Each run is its unit repeated to the wanted size; none holds a newline but the last two.
RUNS: dict[str, str] = {
    "spaces": " ",
    "tabs": "\t",
    "one letter": "a",
    "digits": "7",
    "letter digit": "a1",
    "words": "ab ",
    "<debug ": "<debug ",
    "=": "=",
    '"': '"',
    ":": ":",
    "name=": "a=",
    "hex": "0x",
    "(": "(",
    "slashes": "r/",
    ",": ",",
    "-": "-",
    "[": "[",
    "{": "{",
    ";": ";",
    "assert marker": "(), assert failed (",
    "attribute letters": "rwx",
    "non-ASCII": "é\u00a0",
    "newlines": "\n",
    "blank lines": " \n",
}

_RT = "I [executorch:arm_executor_runner.cpp:912 runner_init()] "
_MAP_HEAD = (
    "Memory Configuration\n\n"
    "Name             Origin             Length             Attributes\n"
    "FLASH            0x00000000         0x00100000         xr\n"
    "*default*        0x00000000         0xffffffff\n\n"
    "Linker script and memory map\n\n"
    ".text           0x00000000      0x100\n"
)
_MEMORY = "MEMORY\n{\n  FLASH (rx) : ORIGIN = 0x0, LENGTH = 512K\n}\n"
_PER_LAYER_HEADER = (
    "Original Operator,NNG Operator,Target,Staging Usage,Peak% (Staging),Op Cycles,"
    "Network% (cycles),NPU,SRAM AC,DRAM AC,OnFlash AC,OffFlash AC,MAC Count,Network% (MAC),"
    "Util% (MAC),Name\n"
)
_SUMMARY_HEADER = "experiment,network,accelerator_configuration,system_config,memory_mode\n"
_TABLE = '<table name="perf"><![CDATA["id","name"\n1,"a"\n]]></table>'

# format → context → template (PLACE is where the run goes)
CONTEXTS: dict[str, dict[str, str]] = {
    "runner log": {
        "bare line": "@@\n",
        "runtime message": _RT + "@@\n",
        "runtime error": "E [executorch:method.cpp:1 f()] @@ 0x12\n",
        "fault line": "Hard fault @@\n",
        "fault registers": "Hard fault\n cfsr=@@\n",
        "Zephyr fault": ">>> ZEPHYR FATAL ERROR 0\n[00:00:00.100,000] <err> os: @@\n",
        "assert": _RT + "In function @@\n",
        "memory pool": _RT + "method_allocator_used: @@\n",
        "output tensor": "Output[0][1]: @@\n",
        "foreign prefix": "[00:00:01.000,000] <inf> app: @@\n",
    },
    "vela stdout": {
        "bare line": "@@\n",
        "memory mode": "Memory mode x@@y\n",
        "accelerator configuration": "Accelerator configuration  x@@y\n",
        "operator name": "   NPU: x@@y\n",
        "network summary": "Network summary for x@@y\n",
        "per-layer title": "Performance for NPU Graph x@@y\n",
        "config item": "Memory Mode (x):\n   key = x@@y\n",
        "config section": "Memory Mode (@@):\n",
        "clock": "Accelerator clock @@9 MHz\n",
        "version": "ethos-u-vela @@\n",
        "warning": "Warning: x\n  @@\n",
    },
    "vela debug xml": {
        "root attributes": "<debug @@>" + _TABLE + "<oops>",
        "after the tables": _TABLE + "@@",
        "unclosed root": '<debug x="1">' + _TABLE + "@@",
        "table cdata": '<debug><table name="perf"><![CDATA[a,b\n@@\n]]></table></debug>',
        "table name": '<debug><table name="@@"><![CDATA[a\n1\n]]></table>',
    },
    "vela per-layer csv": {
        "cell": _PER_LAYER_HEADER + "Conv2D,Conv2D,NPU,@@\n",
        "name": _PER_LAYER_HEADER + "Conv2D,Conv2D,NPU,1,1,1,1,1,1,1,1,1,1,1,1,x@@y\n",
        "header": "@@\n1,2\n",
    },
    "vela summary csv": {
        "cell": _SUMMARY_HEADER + "default,x@@y,Ethos_U55_128,cfg,Shared_Sram\n",
        "header": "@@\n1,2\n",
    },
    "ld map": {
        "memory row": "Memory Configuration\n\nName Origin Length Attributes\n"
        "FLASH@@ 0x0 0x1000 xr\n",
        "output section": _MAP_HEAD + ".data@@ 0x0 0x10\n",
        "input row": _MAP_HEAD + " .text.a 0x0 0x10 a@@b\n",
        "input row, name alone": _MAP_HEAD + " .text.a\n                0x0 0x10 a@@b\n",
        "symbol row": _MAP_HEAD + " .text.a 0x0 0x10 a.o\n                0x0 a@@b\n",
        "body line": _MAP_HEAD + "@@\n",
    },
    "ld memory usage": {
        "row": "Memory region  Used Size  Region Size  %age Used\n  FLASH:@@ 1 KB 2 KB 50%\n",
        "bare line": "Memory region\n@@\n",
    },
    "linker script": {
        "section header": _MEMORY + "SECTIONS\n{\n  .text a@@y :\n  {\n  } > FLASH\n}\n",
        "section trailer": _MEMORY + "SECTIONS\n{\n  .text :\n  {\n  } >@@FLASH\n}\n",
        "sections body": _MEMORY + "SECTIONS\n{\n@@\n}\n",
        "memory origin": "MEMORY\n{\n  FLASH (rx) : ORIGIN = 0@@x, LENGTH = 512K\n}\n",
        "memory length": "MEMORY\n{\n  FLASH (rx) : ORIGIN = 0, LENGTH = 1@@x\n}\n",
        "memory attributes": "MEMORY\n{\n  FLASH (r@@y) : ORIGIN = 0, LENGTH = 1\n}\n",
        "memory name": "MEMORY\n{\n  F@@ : ORIGIN = 0, LENGTH = 1\n}\n",
        "before MEMORY": "@@\n" + _MEMORY,
        "assignment": "a = 1@@;\n" + _MEMORY,
    },
}

# The shapes issue 20 names (the first seven), and the ones found auditing the same parsers.
ISSUE_SHAPES: dict[str, tuple[str, str, str]] = {
    "runner log: fault line of one letter": ("runner log", "fault line", "one letter"),
    "debug xml: long root attribute": ("vela debug xml", "root attributes", "one letter"),
    "debug xml: 20,000 '<debug '": ("vela debug xml", "after the tables", "<debug "),
    "vela stdout: spaces inside a line": ("vela stdout", "memory mode", "spaces"),
    "ld map: spaces inside an input row": ("ld map", "input row", "spaces"),
    "ld map: spaces inside a symbol row": ("ld map", "symbol row", "spaces"),
    "linker script: spaces in a header": ("linker script", "section header", "spaces"),
    "linker script: spaces in a MEMORY line": ("linker script", "memory origin", "spaces"),
    "linker script: attribute letters": ("linker script", "memory attributes", "attribute letters"),
    "linker script: blank lines": ("linker script", "before MEMORY", "newlines"),
    "runner log: memory pool of one letter": ("runner log", "memory pool", "one letter"),
    "runner log: repeated assert marker": ("runner log", "assert", "assert marker"),
}


def _runner_log(text: str) -> None:
    from etu.parsers.log_summary import LogSummary
    from etu.parsers.runner_log import RunnerLogParser

    data = text.encode()
    parser, summary = RunnerLogParser(), LogSummary()  # the console's own line cap (64 KiB)
    for at in range(0, len(data), 4096):  # as a UART delivers it
        for event in parser.feed(data[at : at + 4096]):
            summary.add(event)
    for event in parser.close():
        summary.add(event)
    json.dumps(summary.to_json())


def _parsers() -> dict[str, Callable[[str], object]]:
    from etu.parsers.ld_map import parse_ld_map, parse_memory_usage
    from etu.parsers.linker_script import parse_linker_script
    from etu.parsers.vela_csv import parse_per_layer_csv, parse_summary_csv
    from etu.parsers.vela_debug_db import parse_debug_db
    from etu.parsers.vela_stdout import parse_vela_stdout

    return {
        "runner log": _runner_log,
        "vela stdout": parse_vela_stdout,
        "vela debug xml": parse_debug_db,
        "vela per-layer csv": parse_per_layer_csv,
        "vela summary csv": parse_summary_csv,
        "ld map": parse_ld_map,
        "ld memory usage": parse_memory_usage,
        "linker script": parse_linker_script,
    }


def parser(fmt: str) -> Callable[[str], None]:
    """The format's parser; refusing an input (ParseError) is a fine outcome here."""
    parse = _parsers()[fmt]

    def run(text: str) -> None:
        with contextlib.suppress(ParseError):
            parse(text)

    return run


def shape(fmt: str, context: str, run: str, size: int) -> str:
    """The context's template with ``size`` characters of the run in its place."""
    unit = RUNS[run]
    return CONTEXTS[fmt][context].replace(PLACE, unit * (size // len(unit)), 1)


def cases() -> Iterator[tuple[str, str, str]]:
    for fmt, contexts in CONTEXTS.items():
        for context in contexts:
            for run in RUNS:
                yield fmt, context, run


class TooSlow(Exception):
    """A parse was stopped after its time budget (an exponential regex would never end)."""


@contextlib.contextmanager
def stop_after(seconds: float) -> Iterator[None]:
    """Interrupt the block with TooSlow after ``seconds`` (the regex engine checks for
    signals while it backtracks). Only on the main thread of a POSIX process; elsewhere the
    block runs to its end."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(
        signal, "setitimer"
    ):
        yield
        return

    def alarm(signum: int, frame: object) -> None:
        raise TooSlow(f"stopped after {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def best_time(
    parse: Callable[[str], None], text: str, *, repeats: int = 3, budget: float = 0.05
) -> float:
    """Best CPU time of ``repeats`` parses (more, up to 20, while their total is under
    ``budget`` seconds: short times are noisy). CPU time, not wall time: a machine busy with
    other work delays a parse without making it slower."""
    best = float("inf")
    spent = 0.0
    runs = 0
    while runs < repeats or (spent < budget and runs < 20):
        start = time.process_time()
        parse(text)
        took = time.process_time() - start
        best, spent, runs = min(best, took), spent + took, runs + 1
    return best
