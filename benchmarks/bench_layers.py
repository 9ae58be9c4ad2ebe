"""``etu compare --layers --pte mv2.pte --json``: where precision is lost, layer by layer, on
the ``mv2`` built-in (MobileNetV2's layer shapes at 224×224, one Ethos-U delegate).

One whole process (torch imported, the program run on the host, the delegate's TOSA graph
run again with every activation kept, the float model loaded and run with every node's
output kept), timed once after a warm-up run (the mv2 lowering is cached with
bench_npu_model's; the first call pays for it).
Goal (issue 22 §4): < 60 s.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GOAL_S = 60.0


def layers_run(pte: Path) -> tuple[float, dict]:
    command = [sys.executable, "-m", "etu.tui.cli", "compare", "--layers", "--pte", str(pte),
               "--json"]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, env=env, cwd=ROOT, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"etu compare --layers failed: {done.stderr.decode()[-2000:]}")
    return elapsed, json.loads(done.stdout)


def main() -> dict:
    sys.path.insert(0, str(ROOT))
    from benchmarks.bench_npu_model import mv2_program

    pte = mv2_program()
    layers_run(pte)  # warm: the files in the page cache, the bytecode compiled
    seconds, record = layers_run(pte)
    summary = record["layers_summary"]
    result = {
        "layers_mv2_s": round(seconds, 3),
        "layers": len(record["layers"]),
        "weakest": summary["weakest"],
        "goal_s": GOAL_S,
        "met": seconds < GOAL_S,
    }
    print(f"etu compare --layers on mv2: {seconds:.1f} s for {result['layers']} layers "
          f"(weakest {result['weakest']}); goal < {GOAL_S:.0f} s")  # fmt: skip
    return result


if __name__ == "__main__":
    main()
