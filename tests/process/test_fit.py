"""The fit check on real programs and real firmware links: each check must be able to fail.

Firmware comes from the stub runner built by arm-none-eabi-gcc at test time, with the pool
sizes, kernels and platform each case needs.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from etu.parsers.fit import FAIL, OK, check_fit, fit_record
from etu.parsers.memory_map import load_memory_map
from etu.parsers.program_facts import delegates, select_ops_list
from etu.parsers.pte import open_program

pytestmark = pytest.mark.skipif(
    shutil.which("arm-none-eabi-gcc") is None, reason="arm-none-eabi-gcc is not installed"
)

DEMO = Path(__file__).resolve().parent.parent.parent / "etu_tui" / "demo"


def firmware(tmp_path: Path, pte: Path, **options) -> Path:
    from etu.runner.firmware import build_stub_firmware

    with open_program(pte) as program:
        ops = options.pop("ops", select_ops_list(program).split(","))
    out = tmp_path / f"fw{len(list(tmp_path.iterdir()))}"
    return build_stub_firmware(pte, out, ops=[op for op in ops if op], **options).elf


def verdicts_for(pte: Path, elf: Path, **kwargs) -> dict[str, list]:
    by_check: dict[str, list] = {}
    with open_program(pte) as program:
        for verdict in check_fit(program, load_memory_map(elf), **kwargs):
            by_check.setdefault(verdict.check, []).append(verdict)
    return by_check


def scratch_of(pte: Path) -> int:
    with open_program(pte) as program:
        return max(info.payload.scratch_size for info in delegates(program) if info.payload)


def test_everything_fits_on_the_demo_firmware() -> None:
    with open_program(DEMO / "demo_cnn.pte") as program:
        elf = DEMO / "firmware" / "arm_executor_runner.elf"
        verdicts = check_fit(program, load_memory_map(elf, map_path=elf.with_suffix(".map")))
    assert [v for v in verdicts if v.status != OK] == []
    assert {v.check for v in verdicts} >= {
        "program_placement", "method_allocator", "ethosu_scratch", "target", "cpu_kernels",
        "system_config", "region",
    }  # fmt: skip


def test_scratch_larger_than_the_temp_pool(tmp_path: Path, real_program) -> None:
    pte = real_program("u55")
    need = scratch_of(pte)
    elf = firmware(tmp_path, pte, temp_pool=need - 16)
    (verdict,) = verdicts_for(pte, elf)["ethosu_scratch"]
    assert verdict.status == FAIL and verdict.need == need and verdict.have == need - 16
    assert "ET_ARM_BAREMETAL_SCRATCH_TEMP_ALLOCATOR_POOL_SIZE" in verdict.fix
    fixed = firmware(tmp_path, pte, temp_pool=need)
    assert verdicts_for(pte, fixed)["ethosu_scratch"][0].status == OK


def test_method_pool_too_small(tmp_path: Path, real_program) -> None:
    pte = real_program("u55")
    elf = firmware(tmp_path, pte, method_pool=4096)
    (verdict,) = verdicts_for(pte, elf)["method_allocator"]
    with open_program(pte) as program:
        planned = sum(program.plans[0].non_const_buffer_sizes[1:])
    assert verdict.status == FAIL and verdict.have == 4096 and verdict.need > planned
    assert f"{verdict.need - 4096:,} bytes short" in verdict.message
    assert "ET_ARM_BAREMETAL_METHOD_ALLOCATOR_POOL_SIZE" in verdict.fix


def test_missing_cpu_kernel_is_predicted(tmp_path: Path, real_program) -> None:
    pte = real_program("u55")
    elf = firmware(tmp_path, pte, ops=["quantized_decomposed::quantize_per_tensor.out"])
    (verdict,) = verdicts_for(pte, elf)["cpu_kernels"]
    assert verdict.status == FAIL
    assert "dequantize_per_tensor.out" in verdict.message and "OperatorMissing" in verdict.message
    assert "EXECUTORCH_SELECT_OPS_LIST" in verdict.fix


def test_program_too_large_for_the_baked_in_slot(tmp_path: Path, real_program) -> None:
    small, large = real_program("two_inputs"), real_program("u55")
    assert small.stat().st_size < large.stat().st_size
    elf = firmware(tmp_path, small)
    (verdict,) = verdicts_for(large, elf)["program_placement"]
    assert verdict.status == FAIL and verdict.need == large.stat().st_size


def test_u85_program_on_a_corstone_300_firmware(tmp_path: Path, real_program) -> None:
    pte = real_program("u85")
    elf300 = firmware(tmp_path, pte, preset="corstone-300")
    assert any(v.status == FAIL for v in verdicts_for(pte, elf300)["target"])
    elf320 = firmware(tmp_path, pte, preset="corstone-320", memory_mode="Sram_Only")
    assert all(v.status == OK for v in verdicts_for(pte, elf320)["target"])
    # and against the NPU the run is set up for
    wrong = verdicts_for(pte, elf320, target="ethos-u85-1024")["target"]
    assert any(v.status == FAIL and v.have == "ethos-u85-1024" for v in wrong)


def test_dedicated_sram_needs_fast_scratch(tmp_path: Path, real_program) -> None:
    pte = real_program("u65")  # ExecuTorch's U65 default: Dedicated_Sram_384KB
    with open_program(pte) as program:
        assert "--memory-mode=Dedicated_Sram_384KB" in program.plans[0].delegates[0].spec(
            "compile_flags"
        )
    shared = firmware(tmp_path, pte, memory_mode="Shared_Sram")
    (verdict,) = verdicts_for(pte, shared)["fast_scratch"]
    assert verdict.status == FAIL and verdict.need == 384 * 1024 and verdict.have == 0
    dedicated = firmware(tmp_path, pte, memory_mode="Dedicated_Sram_384KB")
    assert all(v.status == OK for v in verdicts_for(pte, dedicated)["fast_scratch"])


def test_fit_cli_json_and_exit_status(tmp_path: Path, real_program) -> None:
    pte = real_program("u55")
    bad = firmware(tmp_path, pte, temp_pool=1024)
    run = [sys.executable, "-m", "etu.tui.cli", "fit", "--pte", str(pte), "--elf", str(bad)]
    result = subprocess.run([*run, "--json"], capture_output=True, text=True, check=False)
    assert result.returncode == 1
    record = json.loads(result.stdout)
    assert record["status"] == "fail"
    failing = [v for v in record["verdicts"] if v["status"] == "fail"]
    assert failing and set(failing[0]) >= {"check", "status", "need", "have", "message", "fix"}
    assert record["verdicts"][0]["status"] == "fail"  # failing ones first
    good = subprocess.run(
        [*run[:-1], str(DEMO / "firmware" / "arm_executor_runner.elf")],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    # A smaller program than the one baked in fits, with a warning: another program is in there.
    assert good.returncode == 0
    assert "WARN program_placement" in good.stdout and "different program" in good.stdout
    unreadable = subprocess.run(
        [*run[:-2], "--elf", str(pte)], capture_output=True, text=True, check=False
    )
    assert unreadable.returncode == 2 and "Traceback" not in unreadable.stderr


def test_fit_record_is_json_safe(real_program) -> None:
    elf = DEMO / "firmware" / "arm_executor_runner.elf"
    with open_program(DEMO / "demo_cnn.pte") as program:
        record = fit_record(check_fit(program, load_memory_map(elf)))
    assert json.loads(json.dumps(record)) == record
