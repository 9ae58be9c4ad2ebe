"""``etu inspect --json`` against ExecuTorch's own deserializer on a ≥100 MB program.

Builds (once, cached in benchmarks/.work/) a non-delegated 48-block transformer with
d=256, then measures each tool as a whole process: wall time and peak RSS (from wait4).
Goals (issue 2): ≥20× faster, ≥10× less peak memory, full decode of every value < 0.3 s.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

WORK = Path(__file__).resolve().parent / ".work"
PROGRAM = WORK / "tx48.pte"
BUILD_SCRIPT = """
import sys, torch
from pathlib import Path
from etu.runner.aot import LoweringSpec, lower_to_pte
from etu.runner.example_models import Transformer
torch.manual_seed(0)
lower_to_pte(Transformer(48, 256, 1024), (torch.rand(1, 16, 256),),
             LoweringSpec(quantize=False, delegate=False), Path(sys.argv[1]))
"""
REFERENCE_SCRIPT = """
import sys
from executorch.exir._serialize._program import deserialize_pte_binary
with open(sys.argv[1], "rb") as f:
    pte = deserialize_pte_binary(f.read())
print(sum(len(p.values) for p in pte.program.execution_plan))
"""


def ensure_program() -> Path:
    if not PROGRAM.exists():
        WORK.mkdir(parents=True, exist_ok=True)
        print(f"building {PROGRAM} with the real ExecuTorch flow (once) ...", flush=True)
        subprocess.run([sys.executable, "-c", BUILD_SCRIPT, str(PROGRAM)], check=True)
    return PROGRAM


def measure(argv: list[str]) -> tuple[float, int]:
    """Wall seconds and peak RSS bytes of one whole process."""
    start = time.perf_counter()
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode not in (0,):
        raise SystemExit(f"{argv[:3]} failed: {process.stderr.read().decode()[-2000:]}")
    return elapsed, usage.ru_maxrss * 1024


def in_process_decode(path: Path, repeats: int = 5) -> tuple[float, int]:
    from etu.parsers.program_facts import inspect_record
    from etu.parsers.pte import open_program

    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        with open_program(path) as program:
            values = sum(len(plan.values) for plan in program.plans)
            inspect_record(program)
        best = min(best, time.perf_counter() - start)
    return best, values


def main() -> dict:
    path = ensure_program()
    size = path.stat().st_size
    etu_time, etu_rss = measure(
        [sys.executable, "-m", "etu.tui.cli", "inspect", "--json", str(path)]
    )
    ref_time, ref_rss = measure([sys.executable, "-c", REFERENCE_SCRIPT, str(path)])
    decode_time, values = in_process_decode(path)
    result = {
        "program_bytes": size,
        "values": values,
        "etu_inspect_seconds": round(etu_time, 3),
        "etu_inspect_peak_rss_mb": round(etu_rss / 2**20, 1),
        "deserialize_pte_binary_seconds": round(ref_time, 3),
        "deserialize_pte_binary_peak_rss_mb": round(ref_rss / 2**20, 1),
        "speedup": round(ref_time / etu_time, 1),
        "memory_ratio": round(ref_rss / etu_rss, 1),
        "full_decode_in_process_seconds": round(decode_time, 4),
    }
    print(f"program: {path.name}, {size / 1e6:.1f} MB, {values} values")
    print(f"etu inspect --json       {etu_time:7.3f} s  {etu_rss / 2**20:8.1f} MB peak")
    print(f"deserialize_pte_binary   {ref_time:7.3f} s  {ref_rss / 2**20:8.1f} MB peak")
    print(
        f"ratio                    {ref_time / etu_time:7.1f}x faster, "
        f"{ref_rss / etu_rss:.1f}x less memory (goals: 20x, 10x)"
    )
    print(f"full decode in process   {decode_time:7.4f} s (goal < 0.3 s)")
    return result


if __name__ == "__main__":
    print(json.dumps(main()))
