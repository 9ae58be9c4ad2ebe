"""Compile-job figures on the small CNN (issue 5).

- a cache hit of ``etu compile`` as a whole process (goal < 0.5 s);
- the job's overhead over calling the same ExecuTorch API directly in one process, each
  measured as a whole process from a cold start (goal < 10 %).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DIRECT = """
import sys
from pathlib import Path
from etu.runner.aot import LoweringSpec, lower_to_pte
from etu.runner.example_models import SmallCNN
import torch
torch.manual_seed(0)
g = torch.Generator().manual_seed(0)
samples = [(torch.rand((1, 3, 32, 32), generator=g),) for _ in range(4)]
lower_to_pte(SmallCNN(), samples[0],
             LoweringSpec(extra_vela_flags=("--verbose-performance",)),
             Path(sys.argv[1]) / "cnn.pte", vela_dir=Path(sys.argv[1]) / "vela",
             calibration=samples)
"""


def timed(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main(repeats: int = 3) -> dict:
    work = Path(tempfile.mkdtemp(prefix="etu-bench-compile-"))
    try:
        etu = [sys.executable, "-m", "etu.tui.cli", "compile", "cnn", "--out"]
        job_times, direct_times = [], []
        for i in range(repeats):  # interleaved, so machine load hits both alike
            job_times.append(timed([*etu, str(work / f"job{i}"), "--no-cache"]))
            direct_times.append(timed([sys.executable, "-c", DIRECT, str(work / f"direct{i}")]))
        timed([*etu, str(work / "job0")])  # make sure the cache is populated
        hits = [timed([*etu, str(work / "job0")]) for _ in range(5)]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    job, direct, hit = min(job_times), min(direct_times), min(hits)
    result = {
        "compile_job_seconds": round(job, 3),
        "direct_api_seconds": round(direct, 3),
        "overhead_percent": round(100 * (job - direct) / direct, 1),
        "cache_hit_seconds": round(hit, 3),
    }
    print(f"etu compile (job, cold) {job:6.2f} s   direct API {direct:6.2f} s   "
          f"overhead {result['overhead_percent']:+.1f} % (goal < 10 %)")  # fmt: skip
    print(f"cache hit, whole process {hit:6.3f} s (goal < 0.5 s)")
    return result


if __name__ == "__main__":
    print(json.dumps(main()))
