"""Compile-job figures on the small CNN (issue 5).

- a cache hit of ``etu compile`` as a whole process (goal < 0.5 s);
- the job's overhead over calling the same ExecuTorch API directly in one process, each
  measured as a whole process from a cold start (goal < 10 %);
- the next compile in the same process (the console's, a sweep's second job): its worker
  forked from the warm host against started cold (``ETU_WARM_HOST=0``), in wall-clock
  seconds and in the CPU seconds of the whole machine (the worker is not our child).
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


def machine_cpu() -> float:
    """CPU seconds every process on this machine has used (user, nice, system)."""
    import os

    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:4]
    return sum(int(f) for f in fields) / os.sysconf("SC_CLK_TCK")


def next_compile(work: Path, repeats: int) -> dict:
    """The second and later compiles of one process, warm against cold (interleaved)."""
    import os

    from etu.runner.compile_job import CompileJob
    from etu.runner.compile_request import CompileRequest

    figures: dict[str, list[tuple[float, float]]] = {"1": [], "0": []}
    CompileJob(CompileRequest("cnn"), work / "first", use_cache=False).run()  # host started
    for i in range(repeats):
        for mode in ("1", "0"):
            os.environ["ETU_WARM_HOST"] = mode
            cpu, start = machine_cpu(), time.perf_counter()
            result = CompileJob(
                CompileRequest("cnn"), work / f"next{mode}{i}", use_cache=False
            ).run()
            assert result.status == "ok" and result.warm == (mode == "1"), result.message
            figures[mode].append((time.perf_counter() - start, machine_cpu() - cpu))
    os.environ.pop("ETU_WARM_HOST", None)
    warm, cold = min(figures["1"]), min(figures["0"])
    return {"next_compile_warm_seconds": round(warm[0], 3),
            "next_compile_cold_seconds": round(cold[0], 3),
            "next_compile_warm_cpu_seconds": round(min(c for _, c in figures["1"]), 3),
            "next_compile_cold_cpu_seconds": round(min(c for _, c in figures["0"]), 3)}  # fmt: skip


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
        following = next_compile(work, repeats)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    job, direct, hit = min(job_times), min(direct_times), min(hits)
    result = {
        "compile_job_seconds": round(job, 3),
        "direct_api_seconds": round(direct, 3),
        "overhead_percent": round(100 * (job - direct) / direct, 1),
        "cache_hit_seconds": round(hit, 3),
        **following,
    }
    print(f"etu compile (job, cold) {job:6.2f} s   direct API {direct:6.2f} s   "
          f"overhead {result['overhead_percent']:+.1f} % (goal < 10 %)")  # fmt: skip
    print(f"cache hit, whole process {hit:6.3f} s (goal < 0.5 s)")
    print(f"next compile in the same process: warm {following['next_compile_warm_seconds']:.2f} s "
          f"({following['next_compile_warm_cpu_seconds']:.1f} CPU-s), cold "
          f"{following['next_compile_cold_seconds']:.2f} s "
          f"({following['next_compile_cold_cpu_seconds']:.1f} CPU-s)")  # fmt: skip
    return result


if __name__ == "__main__":
    print(json.dumps(main()))
