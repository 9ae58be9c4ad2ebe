"""The real runner: cold library build, warm relink for a new program, QEMU run.

Cold: a fresh build cache (a temporary ``ETU_BUILD_CACHE``), the float CPU test program for
qemu-an547: ExecuTorch's core libraries, the portable kernels the program needs (selective:
not all 172), the quantized kernels, codegen, the runner, the link. Warm: the same cache, a
different program (different operators and pools): only its model header, its selected-ops
libraries, any kernel it newly needs and the link. Goal: warm < 30 s. QEMU: one run of the
runner to its verdict, through `etu run --board qemu-an547 --elf` (Python start included)
and QEMU alone.

Needs the ExecuTorch source (``ETU_EXECUTORCH_SRC``, or ../shared/vendor); skipped without.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

WARM_GOAL = 30.0


def _source_env(cache: Path) -> dict[str, str] | None:
    env = dict(os.environ, PYTHONPATH=str(ROOT), ETU_BUILD_CACHE=str(cache))
    if not env.get("ETU_EXECUTORCH_SRC"):
        for folder in [ROOT, *ROOT.parents]:
            found = sorted((folder / "shared" / "vendor").glob("executorch-runtime-src-*.tar.gz"))
            if found:
                env["ETU_EXECUTORCH_SRC"] = str(found[-1])
                break
    return env if env.get("ETU_EXECUTORCH_SRC") else None


def _etu(args: list, env: dict) -> float:
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "etu.tui.cli", *map(str, args)], env=env, capture_output=True,
        text=True, check=False,
    )  # fmt: skip
    if result.returncode != 0:
        raise SystemExit(f"etu {' '.join(map(str, args[:2]))} failed: {result.stderr[-500:]}")
    return time.perf_counter() - started


def _second_program(out: Path) -> Path:
    """Another float CPU program (softmax: operators the first one lacks), lowered here."""
    import torch

    from etu.runner.aot import LoweringSpec, example_inputs_for, lower_to_pte
    from etu.runner.example_models import EXAMPLES

    factory, shapes = EXAMPLES["softmax"]
    torch.manual_seed(0)
    spec = LoweringSpec(quantize=False, delegate=False)
    lower_to_pte(factory(), example_inputs_for(shapes), spec, out)
    return out


def main() -> dict:
    from tests.real_programs import build

    first = build("float_cpu")
    with tempfile.TemporaryDirectory(prefix="etu-bench-runtime-") as work:
        work_dir = Path(work)
        second = _second_program(work_dir / "softmax_cpu.pte")
        env = _source_env(work_dir / "cache")
        if env is None:
            print("skipped: no ExecuTorch runtime source (ETU_EXECUTORCH_SRC)")
            return {"skipped": "no ExecuTorch runtime source"}
        cold = _etu(["firmware", "build", first, "--board", "qemu-an547",
                     "--out", work_dir / "a"], env)  # fmt: skip
        relink_same = _etu(["firmware", "build", first, "--board", "qemu-an547",
                            "--out", work_dir / "a", "--pools", "256K,128K"], env)  # fmt: skip
        warm = _etu(["firmware", "build", second, "--board", "qemu-an547",
                     "--out", work_dir / "b"], env)  # fmt: skip
        elf = work_dir / "a" / "arm_executor_runner.elf"
        run = _etu(["run", "--board", "qemu-an547", "--elf", elf, "--sessions",
                    work_dir / "s"], env)  # fmt: skip
        started = time.perf_counter()
        subprocess.run(
            ["qemu-system-arm", "-M", "mps3-an547", "-nographic", "-no-reboot", "-kernel",
             str(elf)], capture_output=True, timeout=60, check=False,
        )  # fmt: skip
        qemu_alone = time.perf_counter() - started
    result = {
        "cold_library_build_s": round(cold, 1),
        "relink_new_pools_s": round(relink_same, 1),
        "warm_relink_new_program_s": round(warm, 1),
        "warm_goal_s": WARM_GOAL,
        "qemu_run_etu_s": round(run, 2),
        "qemu_run_alone_s": round(qemu_alone, 2),
    }
    for key, value in result.items():
        print(f"{key}: {value}")
    return result


if __name__ == "__main__":
    main()
