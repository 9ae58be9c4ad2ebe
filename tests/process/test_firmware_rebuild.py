"""The stand-in firmware build records the exact command that builds ExecuTorch's own
runner for the current program."""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path

import pytest

from etu.runner.build_plan import auto_pools, build_facts
from etu.runner.firmware import build_stub_firmware, upstream_rebuild_command

DEMO = Path(__file__).resolve().parent.parent.parent / "etu_tui" / "demo"
OPS = [
    "quantized_decomposed::quantize_per_tensor.out",
    "quantized_decomposed::dequantize_per_tensor.out",
]


def _defines(command: str) -> dict[str, str]:
    configure = shlex.split(command.split(" && ")[0])
    assert configure[:5] == ["cmake", "-S", "examples/arm/executor_runner", "-B",
                             "cmake-out/arm_executor_runner"]  # fmt: skip
    return dict(arg[2:].split("=", 1) for arg in configure[5:])


def test_the_command_names_program_ops_pools_and_target(tmp_path: Path) -> None:
    pte = tmp_path / "a program's name.pte"  # a path that needs quoting
    shutil.copy(DEMO / "demo_cnn.pte", pte)
    command = upstream_rebuild_command(pte, memory_mode="Shared_Sram")
    defines = _defines(command)
    pools, _basis = auto_pools(build_facts(pte))
    assert defines["ET_PTE_FILE_PATH"] == str(pte)
    assert defines["ETHOSU_TARGET_NPU_CONFIG"] == "ethos-u55-128"
    assert defines["MEMORY_MODE"] == "Shared_Sram"
    assert set(defines["EXECUTORCH_SELECT_OPS_LIST"].split(",")) == set(OPS)
    assert defines["ET_ARM_BAREMETAL_METHOD_ALLOCATOR_POOL_SIZE"] == str(pools["method"])
    assert defines["ET_ARM_BAREMETAL_SCRATCH_TEMP_ALLOCATOR_POOL_SIZE"] == str(pools["temp"])
    assert command.endswith(
        " && cmake --build cmake-out/arm_executor_runner --target arm_executor_runner"
    )


@pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None, reason="no cross gcc")
def test_the_build_records_it(tmp_path: Path) -> None:
    build = build_stub_firmware(DEMO / "demo_cnn.pte", tmp_path, ops=OPS)
    assert build.rebuild_file == tmp_path / "rebuild.sh"
    assert build.rebuild_command in build.rebuild_file.read_text()
    defines = _defines(build.rebuild_command)
    assert defines["TARGET_CPU"] == build.cpu
    assert defines["ET_PTE_FILE_PATH"] == str((DEMO / "demo_cnn.pte").resolve())
    empty = build_stub_firmware(None, tmp_path / "none", ops=OPS)
    assert empty.rebuild_command == "" and empty.rebuild_file is None
