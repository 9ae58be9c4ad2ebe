"""ExecuTorch's real arm_executor_runner: built from source, run on QEMU, checked against the
host runtime.

The builds are real (cmake + ninja + arm-none-eabi-gcc on the upstream tree). The library
build tree is cached per (source commit, compiler, CPU, options) in the build cache
(``ETU_BUILD_CACHE`` or the user cache), so only the first run pays for the cold build; every
test after it relinks. The ExecuTorch source comes from ``ETU_EXECUTORCH_SRC`` (``.ci/run``
points it at ../shared/vendor) or, failing that, from a ``shared/vendor`` folder above the
checkout; without either the build tests are skipped with the reason.
"""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

import pytest

from etu.parsers.runner_log import parse_log_bytes
from etu.runner.compare import metrics
from tests.real_runner import build, etu, run_qemu

ROOT = Path(__file__).resolve().parent.parent.parent
QEMU_LOGS = ROOT / "tests" / "data" / "transcripts" / "qemu"

runtime_build = pytest.mark.runtime_build


# ------------------------------------------------------------------ no build needed


def test_source_missing_is_one_clear_message_and_status_2(float_program, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("ETU_")}
    env.update(PYTHONPATH=str(ROOT), ETU_NO_DOWNLOAD="1", ETU_BUILD_CACHE=str(tmp_path / "c"),
               XDG_CONFIG_HOME=str(tmp_path / "cfg"), ETU_SOURCE_MIRROR="")  # fmt: skip
    result = etu(["firmware", "build", float_program, "--board", "qemu-an547", "--out",
                  tmp_path / "out"], env, cwd=tmp_path)  # fmt: skip
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr
    for way in ("ETU_EXECUTORCH_SRC", "etu.toml", "download"):
        assert way in lines[0]


def test_real_qemu_transcripts_parse():
    success = parse_log_bytes((QEMU_LOGS / "qemu_float_cpu_success.log").read_bytes())
    outputs = [e for e in success if type(e).__name__ == "OutputTensor"]
    assert len(outputs) == 1 and outputs[0].numel == 10 and len(outputs[0].values) == 10
    assert any(type(e).__name__ == "RunSucceeded" for e in success)

    missing = parse_log_bytes((QEMU_LOGS / "qemu_float_cpu_missing_operator.log").read_bytes())
    errors = [e for e in missing if type(e).__name__ == "RunError"]
    assert {e.operator for e in missing if type(e).__name__ == "MissingKernel"} == {
        "aten::relu.out"
    }
    assert errors and all(e.status == 0x14 for e in errors)  # no nameless "[zd]" error

    alloc = parse_log_bytes((QEMU_LOGS / "qemu_float_cpu_alloc_failure.log").read_bytes())
    errors = [e.text for e in alloc if type(e).__name__ == "RunError"]
    assert any("Memory allocation failed" in text for text in errors)
    assert not any(type(e).__name__ == "HardFault" for e in alloc)  # the abort is no fault

    bundle = parse_log_bytes((QEMU_LOGS / "qemu_float_cpu_bundleio_fail.log").read_bytes())
    (verdict,) = [e for e in bundle if type(e).__name__ == "BundleIOResult"]
    assert verdict.passed is False and verdict.max_absolute_error == 0.5

    fault = parse_log_bytes((QEMU_LOGS / "qemu_fault_on_start.log").read_bytes())
    (hard,) = [e for e in fault if type(e).__name__ == "HardFault"]
    assert hard.registers["cfsr"] == 0x8200 and hard.registers["bfar"] == 0xF0000000
    assert hard.registers["pc"] and hard.registers["lr"]


def test_metrics_and_tolerances():
    same = metrics(0, [1.0, 2.0], [1.0, 2.0], rtol=0, atol=0)
    assert same.passed and same.max_abs_error == 0 and same.snr_db is None
    off = metrics(1, [1.0, 2.5], [1.0, 2.0], rtol=1e-3, atol=1e-3)
    assert not off.passed and off.worst_index == 1 and off.max_abs_error == 0.5
    assert 0.99 < off.cosine_similarity < 1 and 10 < off.snr_db < 30


# ------------------------------------------------------------------ real builds


@runtime_build
def test_float_program_runs_on_qemu_and_matches_the_host(
    float_firmware, float_program, runtime_env, tmp_path
):
    elf = Path(float_firmware["elf"])
    assert elf.is_file() and float_firmware["select_ops"]
    assert "cmake" in float_firmware["rebuild"] and (elf.parent / "rebuild.sh").is_file()
    status, events, session = run_qemu(elf, tmp_path / "s", runtime_env)
    assert status == 0, events[-1]
    assert events[-1]["reason"] == "success"
    meta = json.loads((session / "meta.json").read_text())
    assert meta["label"].startswith("emulated board (QEMU, no NPU)")

    # The runner's allocator figures against etu inspect's planned memory.
    inspect = etu(["inspect", "--json", float_program], runtime_env)
    planned = sum(json.loads(inspect.stdout)["plans"][0]["planned_memory"].values())
    (report,) = [e for e in events if e.get("type") == "MemoryReport"]
    assert report["planned"] == planned
    assert report["pools"]["method_allocator"]["size"] == float_firmware["pools"]["method"]
    assert planned <= report["pools"]["method_allocator"]["used"]

    compared = etu(["compare", session, "--pte", float_program, "--json"], runtime_env)
    assert compared.returncode == 0, compared.stderr[-1500:]
    record = json.loads(compared.stdout)
    (output,) = record["outputs"]
    assert output["passed"] and output["count"] == 10
    assert output["max_abs_error"] <= record["print_resolution"] + 1e-9


@runtime_build
def test_missing_operator_error_then_the_fit_fix_works(
    float_firmware, float_program, runtime_env, tmp_path
):
    ops = float_firmware["select_ops"]
    left_out = "aten::relu.out"
    partial = build(float_program, tmp_path / "fw", runtime_env, "--select-ops",
                    ",".join(op for op in ops if op != left_out))  # fmt: skip
    # etu run's pre-flight sees it coming and starts nothing; --force shows the runner's own
    refused = etu(["run", "--board", "qemu-an547", "--elf", partial["elf"], "--sessions",
                   tmp_path / "s", "--json"], runtime_env, timeout=120)  # fmt: skip
    assert refused.returncode == 2 and left_out in refused.stderr, refused.stderr
    assert not (tmp_path / "s").exists()
    status, events, _ = run_qemu(Path(partial["elf"]), tmp_path / "s", runtime_env, "--force")
    assert status == 1 and events[-1]["reason"] == "runner_error"
    assert {e["operator"] for e in events if e.get("type") == "MissingKernel"} == {left_out}

    fit = etu(["fit", "--pte", float_program, "--elf", partial["elf"], "--json"], runtime_env)
    assert fit.returncode == 1
    (kernels,) = [v for v in json.loads(fit.stdout)["verdicts"] if v["check"] == "cpu_kernels"]
    assert kernels["status"] == "fail" and left_out in kernels["message"]
    fixed_ops = shlex.split(kernels["fix"])[-1].split("=", 1)[1]  # -D...SELECT_OPS_LIST=...
    fixed = build(float_program, tmp_path / "fw", runtime_env, "--select-ops", fixed_ops)
    status, events, _ = run_qemu(Path(fixed["elf"]), tmp_path / "s", runtime_env)
    assert status == 0 and events[-1]["reason"] == "success"


@runtime_build
def test_memory_allocation_failure_then_the_fit_fix_works(
    float_firmware, float_program, runtime_env, tmp_path
):
    small = build(float_program, tmp_path / "fw", runtime_env, "--pools", "16K,64K")
    # the pre-flight names the pool and its fix; --force shows the runner's own failure
    status, events, _ = run_qemu(Path(small["elf"]), tmp_path / "s", runtime_env, "--force")
    assert status == 1 and events[-1]["reason"] == "runner_error"
    assert any("Memory allocation failed" in (e.get("text") or "") for e in events
               if e.get("type") == "RunError")  # fmt: skip

    fit = etu(["fit", "--pte", float_program, "--elf", small["elf"], "--json"], runtime_env)
    (pool,) = [v for v in json.loads(fit.stdout)["verdicts"] if v["check"] == "method_allocator"]
    assert pool["status"] == "fail" and pool["have"] == 16 * 1024
    size = int(pool["fix"].split("=")[1].split()[0], 0)
    fixed = build(float_program, tmp_path / "fw", runtime_env, "--pools", f"{size},64K")
    status, events, _ = run_qemu(Path(fixed["elf"]), tmp_path / "s", runtime_env)
    assert status == 0 and events[-1]["reason"] == "success"


@runtime_build
def test_hard_fault_registers_come_over_the_uart(
    float_firmware, float_program, runtime_env, tmp_path
):
    faulty = build(float_program, tmp_path / "fw", runtime_env, "--fault-on-start")
    status, events, _ = run_qemu(Path(faulty["elf"]), tmp_path / "s", runtime_env)
    assert status == 3 and events[-1]["reason"] == "hard_fault"
    (fault,) = [e for e in events if e.get("type") == "HardFault"]
    registers = fault["registers"]
    assert registers["cfsr"] & 0x8200 == 0x8200  # BusFault, precise, BFAR valid
    assert registers["bfar"] == 0xF0000000  # the address the platform layer stores to
    from etu.runner.runtime_run import symbolize

    assert symbolize(Path(faulty["elf"]), registers["pc"]) == "etu_fault_on_start"


@runtime_build
def test_corstone300_ethosu_build_of_the_demo_links_and_fits(demo_pte, runtime_env, tmp_path):
    if not runtime_env.get("ETU_ETHOSU_DRIVER_SRC") or not runtime_env.get("ETU_CMSIS_SRC"):
        pytest.skip("no Ethos-U core driver / CMSIS source (ETU_ETHOSU_DRIVER_SRC, ETU_CMSIS_SRC)")
    result = etu(["firmware", "build", demo_pte, "--board", "corstone-300", "--out", tmp_path,
                  "--json"], runtime_env)  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    elf = tmp_path / "arm_executor_runner.elf"
    record = json.loads(etu(["elf", "--json", elf], runtime_env).stdout)
    assert {"model_pte", "method_allocator", "temp_allocator"} <= set(record["pools"])
    assert record["pools"]["temp_allocator"]["region"] == "SRAM"  # Shared_Sram
    fit = etu(["fit", "--pte", demo_pte, "--elf", elf, "--json"], runtime_env)
    assert fit.returncode == 0, fit.stdout
    verdicts = {v["check"]: v for v in json.loads(fit.stdout)["verdicts"]}
    assert verdicts["cpu_kernels"]["status"] == "ok"  # the kernel registry was found


@runtime_build
def test_bundleio_passes_on_target_and_a_wrong_reference_fails_and_etdump_is_read(
    float_program, runtime_env, tmp_path
):
    """One build tree (BundleIO + ETDump) for both features: one cold library build."""
    flags = ("--bundleio", "--etdump", "--seed", "3")
    good = build(float_program, tmp_path / "good", runtime_env, *flags)
    assert Path(good["options"]["baked"]).name == "program.bpte"
    status, events, _ = run_qemu(Path(good["elf"]), tmp_path / "s", runtime_env)
    assert status == 0, events[-1]
    (verdict,) = [e for e in events if e.get("type") == "BundleIOResult"]
    assert verdict["passed"] is True
    logged = etu(["log", "--json", _session_of(events)], runtime_env)
    rows = json.loads(logged.stdout)["etdump_operators"]
    executed = [
        r["operator"] for r in rows if r["block"] == "Execute" and "::" not in r["operator"]
    ]
    assert sorted(set(executed)) == sorted(op.split("::")[1] for op in good["select_ops"])
    assert all(r["where"] == "CPU" for r in rows)
    # QEMU has no cycle counter: times are unknown, and the summary says why (not 0).
    assert all(r["time"] is None for r in rows)
    assert "emulated board" in json.loads(logged.stdout)["etdump_time_note"]
    # The console's reader (a child process: the Inspector imports torch) agrees.
    from etu.runner.etdump import operators_in_child

    table = operators_in_child(_session_of(events))
    assert table["rows"] == rows and table["time_note"]

    # A deliberately wrong reference: the host's outputs plus 0.5 on element 7.
    import numpy

    from etu.runner.compare import session_outputs

    host = numpy.array(session_outputs(_session_of(events))[0][0]["values"], dtype="float32")
    wrong = host.copy()
    wrong[7] += 0.5
    numpy.save(tmp_path / "wrong.npy", wrong.reshape(1, -1))
    bad = build(float_program, tmp_path / "bad", runtime_env, *flags,
                "--bundle-expected", tmp_path / "wrong.npy")  # fmt: skip
    status, events, session = run_qemu(Path(bad["elf"]), tmp_path / "s", runtime_env)
    assert status == 1 and events[-1]["reason"] == "runner_error"
    (verdict,) = [e for e in events if e.get("type") == "BundleIOResult"]
    assert verdict["passed"] is False
    compared = etu(["compare", session, "--reference", tmp_path / "wrong.npy", "--json"],
                   runtime_env)  # fmt: skip
    assert compared.returncode == 1
    (output,) = json.loads(compared.stdout)["outputs"]
    assert not output["passed"] and output["worst_index"] == 7
    assert abs(output["max_abs_error"] - 0.5) < 1e-5


def _session_of(events: list[dict]) -> Path:
    return Path(events[-1]["session"])


@runtime_build
def test_per_channel_quantized_cpu_program_matches_the_host(real_program, runtime_env, tmp_path):
    """The CPU twin's shape (int8, per-channel weights, int32 biases): on QEMU its outputs
    equal the host runtime's. They did not while the bias dequantization's zero points were
    int32, which the runtime's kernel reads as int64 (runner/aot.py widens them)."""
    program = real_program("int8_cpu")
    firmware = build(program, tmp_path / "fw", runtime_env)
    status, events, session = run_qemu(Path(firmware["elf"]), tmp_path / "s", runtime_env)
    assert status == 0, events[-1]
    compared = etu(["compare", session, "--pte", program, "--json"], runtime_env)
    assert compared.returncode == 0, compared.stdout + compared.stderr[-1500:]
    (output,) = json.loads(compared.stdout)["outputs"]
    assert output["passed"] and output["cosine_similarity"] > 0.9999


def test_a_quantized_cpu_program_is_bundled_with_the_host_runtimes_outputs(real_program, tmp_path):
    """BundleIO on an int8 CPU program: its expected outputs come from the host runtime, which
    needs the quantized kernels loaded (it failed with "Missing operator" before)."""
    import numpy

    from etu.runner.bundleio import expected_outputs, make_bundled, random_inputs
    from etu.runner.compare import host_reference

    program = real_program("int8_cpu")
    tensors, _record = random_inputs(program, 5)
    (expected,) = expected_outputs(program, tensors)
    host = host_reference(program, list(tensors))[0]
    assert numpy.array_equal(expected.numpy().reshape(-1), numpy.asarray(host, dtype="float32"))
    bundled = make_bundled(program, tmp_path / "program.bpte", tensors=tensors)
    assert bundled.stat().st_size > program.stat().st_size


def test_int32_per_channel_zero_points_are_widened():
    """The pass itself, on a converted graph: int32 zero points become int64, others stay."""
    import torch

    from etu.runner.aot import widen_per_channel_zero_points

    class Dequant(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("scale", torch.ones(4))
            self.register_buffer("zp32", torch.zeros(4, dtype=torch.int32))
            self.register_buffer("zp64", torch.zeros(4, dtype=torch.int64))

        def forward(self, x):
            op = torch.ops.quantized_decomposed.dequantize_per_channel.default
            a = op(x, self.scale, self.zp32, 0, -128, 127, torch.int8)
            return a + op(x, self.scale, self.zp64, 0, -128, 127, torch.int8)

    import executorch.exir  # noqa: F401  (registers quantized_decomposed ops)

    graph = torch.fx.symbolic_trace(Dequant())
    assert widen_per_channel_zero_points(graph) == 1
    assert graph.zp32.dtype == torch.int64 and graph.zp64.dtype == torch.int64
    x = torch.zeros(4, 3, dtype=torch.int8)
    assert torch.equal(graph(x), torch.zeros(4, 3))


# ------------------------------------------------------------------ hostile inputs (issue 20)


def test_a_bad_operator_name_is_refused_before_configuring(float_program, runtime_env, tmp_path):
    """An operator name would reach upstream's generated C and its codegen's commands: one
    whose characters are not namespace::name(.overload) is exit 2, one line, no build."""
    data = float_program.read_bytes()
    planted = tmp_path / "planted.pte"
    planted.write_bytes(data.replace(b"aten::relu", b"aten::re\nu", 1))
    env = dict(runtime_env, ETU_BUILD_CACHE=str(tmp_path / "cache"))
    result = etu(["firmware", "build", planted, "--board", "qemu-an547", "--out",
                  tmp_path / "out"], env)  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "'aten::re\\nu.out'" in result.stderr and "refusing" in result.stderr
    assert not (tmp_path / "cache" / "runtime-build").exists() or not any(
        (tmp_path / "cache" / "runtime-build").rglob("build.ninja")
    )
    listed = etu(["firmware", "build", float_program, "--board", "qemu-an547", "--out",
                  tmp_path / "out", "--select-ops", "aten::add.out,aten::x;touch y"],
                 env)  # fmt: skip
    assert listed.returncode == 2 and "--select-ops" in listed.stderr


def test_a_build_cache_path_a_shell_would_interpret_is_refused(float_program, runtime_env,
                                                               tmp_path):  # fmt: skip
    env = dict(runtime_env, ETU_BUILD_CACHE=str(tmp_path / "c$(touch pwned)"))
    result = etu(["firmware", "build", float_program, "--board", "qemu-an547", "--out",
                  tmp_path / "out"], env, cwd=tmp_path)  # fmt: skip
    assert result.returncode == 2 and "ETU_BUILD_CACHE" in result.stderr
    assert not list(tmp_path.rglob("pwned"))


@runtime_build
def test_a_program_path_full_of_shell_syntax_builds_and_runs_nothing(
    float_firmware, float_program, runtime_env, tmp_path
):
    """No user path reaches a build command: the program is copied to program.pte in the
    build tree. Before, ninja's /bin/sh ran the backticks and $() of a folder name."""
    odd = tmp_path / "a b'c\"d$(touch pwned1)`touch pwned2`;touch pwned3\nz"
    odd.mkdir()
    program = odd / "float cpu.pte"
    program.write_bytes(float_program.read_bytes())
    firmware = build(program, odd / "fw", runtime_env)
    assert Path(firmware["elf"]).is_file()
    build_dir = Path(firmware["build_dir"])
    (staged,) = build_dir.glob("program-*.pte")  # named by its content, not the user's path
    assert staged.read_bytes() == program.read_bytes()
    assert str(program) not in " ".join(firmware["configure_command"])
    for folder in (tmp_path, build_dir, Path(firmware["source"]["root"])):
        assert not [p for p in folder.rglob("pwned*") if p.name in {"pwned1", "pwned2",
                                                                      "pwned3"}]  # fmt: skip


@runtime_build
def test_the_memory_map_of_a_real_runner_lists_only_kernels(float_firmware):
    """Before, the kernel list of a real runner ELF held C++ strings: ``Error::Ok``,
    ``ScalarType::Long``, ``vector::reserve``, ``basic_string::_S_create``."""
    from etu.parsers.memory_map import load_memory_map
    from etu.parsers.program_facts import PRIM_OPS

    names = set(load_memory_map(Path(float_firmware["elf"])).kernels.names)
    assert set(float_firmware["select_ops"]) <= names
    assert names - set(float_firmware["select_ops"]) <= PRIM_OPS | {"aten::_local_scalar_dense"}
