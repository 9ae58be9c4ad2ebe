"""etu's Ethos-U model (runner/npu_model.py): throughput, and the demo end to end on QEMU.

- MAC/s of the model executing a delegate's command stream (convolution MACs over the whole
  invoke's wall time, DMA and pools included; best of five, weights' brick order already
  derived): the demo's delegate, and the ``mv2`` built-in (MobileNetV2's layer shapes at
  224×224, lowered for ethos-u55-128 once and cached like the tests' programs) when the
  model runs every operation of it.
- The demo end to end on the emulated board: ``etu run --board qemu-an547 --elf`` as a whole
  process (Python start, QEMU, the runner, the NPU invoke through the bridge, the verdict)
  after the firmware is built. Goal (issue 23): < 5 s. Needs the ExecuTorch source.
- ``mv2`` end to end the same way (441 NPU operations, 300 M MACs executed by the model in
  the one invoke): goal (issue 23) < 60 s. Its runner is built once (a few minutes the first
  time) beside the cached program.
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

DEMO = ROOT / "etu_tui" / "demo" / "demo_cnn.pte"
END_TO_END_GOAL_S = 5.0
MV2_END_TO_END_GOAL_S = 60.0
MV2_TARGET = "ethos-u55-128"


def mv2_program() -> Path:
    """The mv2 built-in lowered for MV2_TARGET, cached in the tests' artifact cache (with
    Vela's folder: its TOSA graph lets the model's result be checked against the oracle)."""
    from tests.real_programs import CACHE_ROOT, cache_lock

    folder = CACHE_ROOT / f"bench-mv2-{MV2_TARGET}"
    pte = folder / "mv2.pte"
    with cache_lock(f"bench-mv2-{MV2_TARGET}"):
        if not (folder / "vela").is_dir():
            import torch

            from etu.runner.aot import LoweringSpec, example_inputs_for, lower_to_pte
            from etu.runner.example_models import EXAMPLES

            factory, shapes = EXAMPLES["mv2"]
            work = folder.with_name(folder.name + ".partial")
            shutil.rmtree(work, ignore_errors=True)
            work.mkdir(parents=True)
            torch.manual_seed(0)
            lower_to_pte(factory(), example_inputs_for(shapes), LoweringSpec(target=MV2_TARGET),
                         work / "mv2.pte", vela_dir=work / "vela")  # fmt: skip
            shutil.rmtree(folder, ignore_errors=True)
            work.rename(folder)
    return pte


def model_throughput(pte: Path, repeats: int = 5) -> dict:
    """Best-of-``repeats`` wall time of every delegate's invoke, and MAC/s."""
    import numpy as np

    from etu.parsers.ethosu import decode_ethosu_payload
    from etu.parsers.pte import open_program
    from etu.runner.npu_bridge import DDR_START, Base, BoardMemory, InvokeRequest
    from etu.runner.npu_model import decode_cmd_data, run_stream, unsupported_reason

    memory = BoardMemory(size=1 << 30)
    rng = np.random.default_rng(0)
    total_s, cpu_s, macs, operations = 0.0, 0.0, 0, 0
    try:
        with open_program(pte) as program:
            delegates = [bytes(program.delegate_payload(d)) for d in program.plans[0].delegates]
        for blob in delegates:
            payload = decode_ethosu_payload(blob)
            blocks = {b.name: blob[b.payload_offset : b.payload_offset + b.size]
                      for b in payload.blocks}  # fmt: skip
            decoded = decode_cmd_data(blocks["cmd_data"])
            reason = unsupported_reason(decoded)
            if reason is not None:
                return {"skipped": reason}
            weights = blocks.get("weight_data", b"")
            layout = [(DDR_START, len(weights)), (DDR_START + (1 << 28), payload.scratch_size),
                      (DDR_START + (2 << 28), 1 << 20)]  # fmt: skip
            bases = tuple(Base(address, size, address) for address, size in layout)
            memory.write(DDR_START, weights, "weights")
            request = InvokeRequest(0, 0, 0, bases)
            times, cpu = [], []
            for _ in range(repeats):
                scratch = rng.integers(0, 256, payload.scratch_size, dtype=np.uint8).tobytes()
                memory.write(bases[1].address, scratch, "scratch")
                started, started_cpu = time.perf_counter(), time.process_time()
                summary = run_stream(decoded, memory, request)
                times.append(time.perf_counter() - started)
                cpu.append(time.process_time() - started_cpu)
            total_s += min(times)
            cpu_s += min(cpu)
            macs += summary.macs
            operations += summary.operations
    finally:
        memory.close()
    return {"operations": operations, "macs": macs, "best_s": round(total_s, 4),
            "mac_per_s": round(macs / total_s), "best_cpu_s": round(cpu_s, 4),
            "mac_per_cpu_s": round(macs / max(cpu_s, 1e-9))}  # fmt: skip


def _runtime_env() -> dict | None:
    from tests.real_runner import vendor_file

    env = dict(os.environ, PYTHONPATH=str(ROOT))
    for name, prefix in (("ETU_EXECUTORCH_SRC", "executorch-runtime-src-"),
                         ("ETU_ETHOSU_DRIVER_SRC", "ethos-u-core-driver-"),
                         ("ETU_CMSIS_SRC", "cmsis-core-")):  # fmt: skip
        found = vendor_file(prefix)
        if not env.get(name) and found is not None:
            env[name] = str(found)
    if not env.get("ETU_EXECUTORCH_SRC") or shutil.which("qemu-system-arm") is None:
        return None
    return env


def end_to_end(pte: Path, firmware: Path, sessions: Path, env: dict, repeats: int) -> dict:
    """``etu firmware build`` of ``pte`` into ``firmware`` (cached: a relink at most), then
    ``etu run --board qemu-an547 --elf`` timed whole, best of ``repeats``; what the emulated
    NPU did (the NpuInvoke events of ``--json``)."""
    etu = [sys.executable, "-m", "etu.tui.cli"]
    build = subprocess.run([*etu, "firmware", "build", pte, "--board", "qemu-an547", "--out",
                            firmware], env=env, capture_output=True, text=True,
                           check=False)  # fmt: skip
    if build.returncode != 0:
        raise SystemExit(f"etu firmware build failed: {build.stderr[-500:]}")
    elf = firmware / "arm_executor_runner.elf"
    times, invokes = [], []
    for attempt in range(repeats):
        started = time.perf_counter()
        run = subprocess.run([*etu, "run", "--board", "qemu-an547", "--elf", elf, "--sessions",
                              sessions / f"s{attempt}", "--timelimit", "300", "--json"],
                             env=env, capture_output=True, text=True, check=False)  # fmt: skip
        times.append(time.perf_counter() - started)
        if run.returncode != 0:
            raise SystemExit(f"etu run failed: {run.stderr[-500:]}")
        events = [json.loads(line) for line in run.stdout.splitlines() if line.strip()]
        invokes = [e for e in events if e.get("type") == "NpuInvoke"]
    return {"run_s": round(min(times), 2),
            "executed_by_model": bool(invokes) and all(e["executor"] == "model" for e in invokes),
            "npu_operations": sum(e["operations"] or 0 for e in invokes),
            "npu_macs": sum(e["macs"] or 0 for e in invokes)}  # fmt: skip


def demo_end_to_end() -> dict:
    """``etu run`` of the demo's firmware on qemu-an547, best of three, after the build."""
    env = _runtime_env()
    if env is None:
        return {"skipped": "no ExecuTorch runtime source or no qemu-system-arm"}
    with tempfile.TemporaryDirectory(prefix="etu-bench-npu-") as work:
        work_dir = Path(work)
        shutil.copyfile(DEMO, work_dir / DEMO.name)
        shutil.copytree(DEMO.parent / "vela", work_dir / "vela")
        result = end_to_end(work_dir / DEMO.name, work_dir / "fw", work_dir, env, 3)
    best = result["run_s"]
    return {**result, "goal_s": END_TO_END_GOAL_S, "met": best < END_TO_END_GOAL_S}


def mv2_end_to_end() -> dict:
    """``etu run`` of mv2's runner on qemu-an547, best of two, after the build (kept beside
    the cached program: the first bench builds it)."""
    env = _runtime_env()
    if env is None:
        return {"skipped": "no ExecuTorch runtime source or no qemu-system-arm"}
    pte = mv2_program()
    with tempfile.TemporaryDirectory(prefix="etu-bench-mv2-") as work:
        result = end_to_end(pte, pte.parent / "mv2.qemu-an547", Path(work), env, 2)
    best = result["run_s"]
    return {**result, "goal_s": MV2_END_TO_END_GOAL_S, "met": best < MV2_END_TO_END_GOAL_S}


def throughput_line(what: str, figures: dict) -> str:
    return (f"model on {what}: {figures['operations']} operations, {figures['macs']:,} MACs "
            f"in {figures['best_s']:.3f} s: {figures['mac_per_s'] / 1e6:.1f} M MAC/s "
            f"({figures['mac_per_cpu_s'] / 1e6:.1f} M per CPU second)")  # fmt: skip


def main() -> dict:
    result = {"demo": model_throughput(DEMO)}
    print(throughput_line("the demo delegate", result["demo"]))
    mv2 = result["mv2"] = model_throughput(mv2_program(), repeats=2)
    if "skipped" in mv2:
        print(f"mv2: not executed by the model: {mv2['skipped']}")
    else:
        print(throughput_line(f"mv2 ({MV2_TARGET})", mv2))
    end = result["end_to_end"] = demo_end_to_end()
    if "skipped" in end:
        print(f"demo on QEMU: skipped ({end['skipped']})")
    else:
        print(f"demo on QEMU, etu run whole: {end['run_s']:.2f} s (executed by the model: "
              f"{end['executed_by_model']}); goal < {END_TO_END_GOAL_S:.0f} s")  # fmt: skip
    whole = result["mv2_end_to_end"] = mv2_end_to_end()
    if "skipped" in whole:
        print(f"mv2 on QEMU: skipped ({whole['skipped']})")
    else:
        print(f"mv2 on QEMU, etu run whole: {whole['run_s']:.2f} s ({whole['npu_operations']} "
              f"NPU operations, {whole['npu_macs']:,} MACs, executed by the model: "
              f"{whole['executed_by_model']}); goal < {MV2_END_TO_END_GOAL_S:.0f} s")  # fmt: skip
    return result


if __name__ == "__main__":
    main()
