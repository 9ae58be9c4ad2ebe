"""``etu reference etu_tui/demo/demo_cnn.pte --json``: the host reference of the demo, whole.

One whole process each time (torch and ExecuTorch's pybindings imported, the delegate's
TOSA graph found and proven, the CPU kernels run by the host runtime, the delegate by the TOSA
reference model), best of five, with an empty etu cache first (Vela proves the demo's graph
again) and then warm (the proof remembered). ``python -c "import torch"`` is timed the same
way: it is most of the figure and the floor under it.
Goal (issue 22): < 3 s for the whole process.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "etu_tui" / "demo" / "demo_cnn.pte"
GOAL_S = 3.0


def wall(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, env=env, cwd=ROOT, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{argv[2:5]} failed: {done.stderr.decode()[-2000:]}")
    return elapsed


def main() -> dict:
    command = [sys.executable, "-m", "etu.tui.cli", "reference", str(DEMO), "--json"]
    with tempfile.TemporaryDirectory(prefix="etu-bench-reference-") as cache:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "ETU_BUILD_CACHE": cache}
        cold = []
        for _ in range(5):
            for leftover in Path(cache).iterdir():
                leftover.unlink()
            cold.append(wall(command, env))
        warm = [wall(command, env) for _ in range(5)]
        torch_only = [wall([sys.executable, "-c", "import torch"], env) for _ in range(5)]
    result = {
        "reference_cold_s": round(min(cold), 3),
        "reference_warm_s": round(min(warm), 3),
        "import_torch_s": round(min(torch_only), 3),
        "goal_s": GOAL_S,
        "met": min(cold) < GOAL_S,
    }
    print(
        f"etu reference demo_cnn.pte: {result['reference_cold_s']:.2f} s (Vela proving the "
        f"graph), {result['reference_warm_s']:.2f} s (proof remembered); import torch alone "
        f"{result['import_torch_s']:.2f} s; goal < {GOAL_S:.0f} s"
    )
    return result


if __name__ == "__main__":
    main()
