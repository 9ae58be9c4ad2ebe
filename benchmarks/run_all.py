"""`make bench`: run every benchmark and print its figures (goals are in each module)."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

BENCHMARKS = [
    "benchmarks.bench_inspect",
    "benchmarks.bench_elf",
    "benchmarks.bench_runner_log",
    "benchmarks.bench_hostile",
    "benchmarks.bench_compile",
    "benchmarks.bench_console_start",
    "benchmarks.bench_console_flood",
    "benchmarks.bench_monitor_flood",
    "benchmarks.bench_xmodem",
    "benchmarks.bench_place",
    "benchmarks.bench_console_big_session",
    "benchmarks.bench_sessions",
    "benchmarks.bench_diff",
    "benchmarks.bench_reference",
    "benchmarks.bench_runtime_build",
    "benchmarks.bench_cortex_m",
    "benchmarks.bench_npu_model",
    "benchmarks.bench_layers",
]


def main() -> None:
    results = {}
    for name in BENCHMARKS:
        print(f"== {name}", flush=True)
        results[name] = importlib.import_module(name).main()
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
