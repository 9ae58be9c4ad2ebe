"""The CPU fallback's runtime on the emulated board: portable kernels against the Cortex-M
backend (cortex_m::* on CMSIS-NN), issue 25 §3.

One model (tests/data/models/cmsis_fallback.py: conv → relu, then a stride-4 convolution
the Ethos-U55 does not take) compiled by ``etu compile`` with ``--cpu-backend portable`` and
``--cpu-backend cortex-m``, twice each: with the NPU delegate (the fallback alone on the CPU;
etu's NPU bridge runs the delegate) and all on the CPU (``--no-delegate``). Each program is
built into ExecuTorch's runner with ``--num-inferences 1`` and ``N``; the runtime of one
inference is (wall(N) − wall(1)) / (N − 1) of ``etu run --board qemu-an547``, so boot,
program load and Python start cancel out.

What it measures, labelled so: WALL TIME ON QEMU (TCG), the emulated board, which executes
Cortex-M instructions (MVE included) without the target's timing; it ranks the two CPU
backends by work done, it is not the target's speed. The emulated board has no cycle or
instruction counter the runner can read (QEMU 7.2 mps3-an547, no TCG plugins here).

Needs the ExecuTorch source (``ETU_EXECUTORCH_SRC``, or ../shared/vendor with CMSIS-NN beside
it), arm-none-eabi-gcc and qemu-system-arm; skipped without. Builds reuse etu's build cache
(a cold one takes minutes on 2 cores).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

INFERENCES = int(os.environ.get("ETU_BENCH_CORTEX_M_INFERENCES", "50"))
LABEL = "wall time on QEMU mps3-an547 (TCG emulation, not target speed)"


def _environment() -> dict[str, str] | None:
    from tests.real_runner import source_environment

    env = source_environment()
    return env if env.get("ETU_EXECUTORCH_SRC") else None


def _etu(args: list, env: dict, timeout: float = 1800) -> subprocess.CompletedProcess:
    result = subprocess.run(
        [sys.executable, "-m", "etu.tui.cli", *map(str, args)], env=env, capture_output=True,
        text=True, timeout=timeout, check=False,
    )  # fmt: skip
    if result.returncode != 0:
        raise SystemExit(f"etu {' '.join(map(str, args[:2]))} failed: {result.stderr[-800:]}")
    return result


def _run_seconds(elf: Path, sessions: Path, env: dict) -> float:
    """Wall time of one ``etu run`` of the runner to its verdict (which must be success)."""
    started = time.perf_counter()
    result = _etu(["run", "--board", "qemu-an547", "--elf", elf, "--sessions", sessions,
                   "--timelimit", "600", "--json"], env, timeout=900)  # fmt: skip
    seconds = time.perf_counter() - started
    last = json.loads(result.stdout.strip().splitlines()[-1])
    if last.get("verdict") != "success":
        raise SystemExit(f"{elf}: the run ended {last.get('verdict')}: {last.get('reason')}")
    return seconds


def _per_inference(pte: Path, work: Path, env: dict) -> dict:
    times = {}
    for count in (1, INFERENCES):
        out = work / f"fw{count}"
        _etu(["firmware", "build", pte, "--board", "qemu-an547", "--out", out,
              "--num-inferences", count], env)  # fmt: skip
        times[count] = min(
            _run_seconds(out / "arm_executor_runner.elf", work / f"s{count}-{k}", env)
            for k in range(2)
        )
    per = (times[INFERENCES] - times[1]) / (INFERENCES - 1)
    return {"per_inference_ms": round(per * 1e3, 3), "run_1_s": round(times[1], 2),
            f"run_{INFERENCES}_s": round(times[INFERENCES], 2)}  # fmt: skip


def main() -> dict:
    if shutil.which("qemu-system-arm") is None or shutil.which("arm-none-eabi-gcc") is None:
        print("skipped: needs qemu-system-arm and arm-none-eabi-gcc")
        return {"skipped": "no qemu-system-arm or cross gcc"}
    env = _environment()
    if env is None:
        print("skipped: no ExecuTorch runtime source (ETU_EXECUTORCH_SRC)")
        return {"skipped": "no ExecuTorch runtime source"}
    from tests import cortex_m_programs

    result: dict = {"measure": LABEL, "inferences": INFERENCES}
    with tempfile.TemporaryDirectory(prefix="etu-bench-cortex-m-") as work:
        for delegate, part in ((True, "npu+cpu fallback"), (False, "all on the CPU")):
            for backend in cortex_m_programs.BACKENDS:
                job = cortex_m_programs.compile_job(backend, delegate=delegate)
                pte = job / f"{cortex_m_programs.CLASS}.pte"
                folder = Path(work) / f"{backend}-{'npu' if delegate else 'cpu'}"
                figures = _per_inference(pte, folder, env)
                name = f"{part} · {'CMSIS-NN (cortex-m)' if backend == 'cortex-m' else backend}"
                result[name] = figures
                print(f"{name}: {figures['per_inference_ms']} ms per inference ({LABEL})")
    return result


if __name__ == "__main__":
    main()
