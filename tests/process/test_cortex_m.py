"""Issue 25 §3: the Cortex-M backend (CMSIS-NN) for what the NPU does not take.

One program with a CPU fallback (a stride-4 convolution the Ethos-U55 does not take),
compiled by `etu compile` with the portable kernels and with `--cpu-backend cortex-m`; each
is built into ExecuTorch's real runner (the second with upstream's Cortex-M kernels and
CMSIS-NN from the vendored archive), run on the emulated board, and `etu compare` checks
it against its host reference. Slow (runner builds); trees are cached like the other
real-runner tests'."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests import cortex_m_programs
from tests.real_runner import build, etu, run_qemu, runtime_environment

pytestmark = [
    pytest.mark.runtime_build,
    pytest.mark.skipif(shutil.which("qemu-system-arm") is None, reason="no qemu-system-arm"),
    pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None, reason="no cross gcc"),
]
CLASS = cortex_m_programs.CLASS


def test_etu_inspect_names_each_cpu_kernels_library_and_the_cortex_m_flag(built) -> None:
    env = runtime_environment()
    lines = {}
    for backend in cortex_m_programs.BACKENDS:
        pte, _record = built[backend]
        result = etu(["inspect", pte], env, timeout=120)
        assert result.returncode == 0, result.stderr[-2000:]
        lines[backend] = result.stdout.splitlines()
    assert (
        "    cortex_m::quantized_conv2d.out  (Byte, Char, Int)  x1  CMSIS-NN" in lines["cortex-m"]
    )
    assert (
        "  -DEXECUTORCH_BUILD_CORTEX_M=ON (the Cortex-M kernels and CMSIS-NN)" in lines["cortex-m"]
    )
    assert "    aten::convolution.out  (Float)  x1  portable" in lines["portable"]
    assert not any("CORTEX_M" in line for line in lines["portable"])


def operators(pte: Path, env: dict) -> set[str]:
    result = etu(["inspect", pte, "--json"], env, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    text = result.stdout
    return {op for op in ("cortex_m::quantized_conv2d.out", "aten::convolution.out") if op in text}


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, tuple[Path, dict]]:
    """Per CPU backend: the compiled program (a copy of the cached job) and its runner's
    build record."""
    env = runtime_environment()
    done = {}
    for backend in cortex_m_programs.BACKENDS:
        work = tmp_path_factory.mktemp(f"job-{backend}")
        shutil.copytree(cortex_m_programs.compile_job(backend), work, dirs_exist_ok=True)
        pte = work / f"{CLASS}.pte"
        done[backend] = (pte, build(pte, tmp_path_factory.mktemp(f"fw-{backend}"), env))
    return done


@pytest.mark.parametrize("backend", cortex_m_programs.BACKENDS)
def test_a_cpu_fallback_compiled_both_ways_runs_on_the_emulated_board_and_matches(
    tmp_path, backend, built
):
    env = runtime_environment()
    pte, record = built[backend]
    cmsis = backend == "cortex-m"
    # the fallback convolution: one CMSIS-NN int8 kernel, or the portable float one
    assert operators(pte, env) == (
        {"cortex_m::quantized_conv2d.out"} if cmsis else {"aten::convolution.out"}
    )
    assert record["options"]["npu_bridge"] is True
    assert record["options"].get("cortex_m", False) is cmsis
    libraries = record["kernel_libraries"]
    if cmsis:
        assert Path(record["options"]["cmsis_nn"], "Include", "arm_nnfunctions.h").is_file()
        assert libraries["cortex_m"]["operators"]["cortex_m::quantized_conv2d.out"] == (
            "backends/cortex_m/ops/op_quantized_conv2d.cpp"
        )
        assert "-DEXECUTORCH_BUILD_CORTEX_M=ON" in record["configure_command"]
        symbols = (Path(record["map_file"])).read_text(errors="replace")
        assert "arm_convolve_wrapper_s8" in symbols  # CMSIS-NN is linked in
    else:
        assert "cortex_m" not in libraries
        assert "-DEXECUTORCH_BUILD_CORTEX_M=OFF" in record["configure_command"]
    code, lines, session = run_qemu(Path(record["elf"]), tmp_path / "sessions", env)
    assert code == 0, lines[-1]
    assert lines[-1]["verdict"] == "success"
    compared = etu(["compare", session, "--json"], env, timeout=300)
    assert compared.returncode == 0, compared.stdout[-2000:] + compared.stderr[-2000:]
    report = json.loads(compared.stdout)
    assert report["passed"] is True
    (output,) = report["outputs"]
    assert output["count"] == output["numel"] == 8 * 8 * 8
    assert output["cosine_similarity"] > 0.99999


def test_fit_counts_the_cmsis_nn_kernels_and_scratch_and_names_the_flag_they_need(built):
    env = runtime_environment()
    pte, record = built["cortex-m"]
    _, portable = built["portable"]

    def fit(elf: str) -> dict[str, dict]:
        result = etu(["fit", "--pte", pte, "--elf", elf, "--json"], env, timeout=120)
        return {v["check"]: v for v in json.loads(result.stdout)["verdicts"]}

    own = fit(record["elf"])
    assert own["cpu_kernels"]["status"] == "ok"
    assert "(3 CMSIS-NN, from the Cortex-M backend)" in own["cpu_kernels"]["message"]
    assert "B of CMSIS-NN scratch" in own["method_allocator"]["message"]
    other = fit(portable["elf"])  # a runner without the Cortex-M kernels
    assert other["cpu_kernels"]["status"] == "fail"
    assert "-DEXECUTORCH_BUILD_CORTEX_M=ON" in other["cpu_kernels"]["fix"]


def test_bundled_inputs_for_a_channels_last_program_are_refused_in_one_line(built, tmp_path):
    """ExecuTorch's BundledProgram stores tensors contiguous: NHWC inputs would be scrambled
    (seen: deployment cosine 0.73, then the runner's BundleIO check aborted on strides)."""
    env = runtime_environment()
    pte, _record = built["cortex-m"]
    result = etu(["firmware", "build", pte, "--board", "qemu-an547", "--out", tmp_path / "fw",
                  "--inputs", "random:1"], env, timeout=300)  # fmt: skip
    assert result.returncode == 2
    (line,) = [line for line in result.stderr.splitlines() if line.startswith("etu:")]
    assert "input 0 (dim order 0,2,3,1), output 0 (dim order 0,2,3,1) are not" in line
    assert "BundledProgram stores tensors contiguous" in line


def test_every_cortex_m_kernel_is_placed_in_its_own_source_and_planned(runtime_env):
    """The pinned source's operators.yaml against its CMake list: each cortex_m kernel in
    ops/op_<name>.cpp, so the runner compiles only those the program calls."""
    import os

    from etu.runner.build_plan import kernel_plan
    from etu.runner.kernel_sources import load_index
    from etu.runner.runtime_source import find_executorch

    saved = dict(os.environ)
    os.environ.update(runtime_env)
    try:
        root = find_executorch(online=False).root
    finally:
        os.environ.clear()
        os.environ.update(saved)
    index = load_index(root)
    ops = sorted(op for op, (library, _) in index.operators.items() if library == "cortex_m")
    assert len(ops) >= 18
    for op in ops:
        stem = op.removeprefix("cortex_m::").removesuffix(".out")
        assert index.place(op) == f"backends/cortex_m/ops/op_{stem}.cpp", op
    plan = kernel_plan(root, ["cortex_m::quantized_conv2d.out", "aten::add.out"])
    assert plan.cortex_m and not plan.cortex_m_whole
    assert plan.cortex_m_sources == ["backends/cortex_m/ops/op_quantized_conv2d.cpp"]
    assert "op_add.cpp" in plan.portable_sources
