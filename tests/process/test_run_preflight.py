"""`etu run --elf` checks before it starts what the Run tab's pre-flight checks (issue 25 §5):
the program baked into the firmware (or the PROGRAM.pte named) against the firmware's build
record, the run's target and the firmware's memory. Each problem is one line with its fix on
stderr, the run is refused with status 2 (nothing started, no session), and `--force` runs it
anyway. On the stand-in FVP, in a copy of the demo workspace."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.history_workspace import etu, make_workspace

ELF = "firmware/arm_executor_runner.elf"
DEQUANTIZE = "quantized_decomposed::dequantize_per_tensor.out"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return make_workspace(tmp_path / "ws")


def run(ws: Path, *args: object):
    return etu("run", *map(str, args), cwd=ws, env={"ETU_FVP_DIR": str(ws / "fvps")})


def sessions(ws: Path) -> list[Path]:
    folder = ws / ".etu" / "sessions"
    return sorted(folder.iterdir()) if folder.is_dir() else []


def preflight_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("etu: pre-flight: ")]


def skew_record(ws: Path) -> None:
    """The firmware record of a build from an ExecuTorch whose dequantize kernel takes one
    value fewer than the demo program passes (before ``out_dtype``)."""
    record = {"options": {"kernel_arguments": {DEQUANTIZE: 8}, "runner_version": [1, 0]}}
    (ws / "firmware" / "etu_firmware.json").write_text(json.dumps(record))


def test_a_version_skew_is_named_with_its_fix_before_the_run(ws: Path) -> None:
    assert run(ws, "--elf", ELF, "--target", "ethos-u55-128").returncode == 0  # as shipped
    before = sessions(ws)
    skew_record(ws)
    refused = run(ws, "--elf", ELF, "--target", "ethos-u55-128")
    assert refused.returncode == 2, refused.stderr
    (line,) = preflight_lines(refused.stderr)
    assert f"version skew: {DEQUANTIZE}: the program passes 9 values" in line
    assert "takes 8" in line and "; fix: recompile the program" in line
    assert "--force" in refused.stderr.splitlines()[-1]
    assert refused.stdout == "" and sessions(ws) == before, "nothing started"
    as_json = run(ws, "--elf", ELF, "--target", "ethos-u55-128", "--json")
    assert as_json.returncode == 2
    (record,) = map(json.loads, as_json.stdout.splitlines())
    assert "pre-flight" in record["error"]
    assert record["preflight"] == [line.removeprefix("etu: pre-flight: ")]
    forced = run(ws, "--elf", ELF, "--target", "ethos-u55-128", "--force", "--json")
    assert forced.returncode == 0, forced.stderr
    assert preflight_lines(forced.stderr)[0] == line
    assert json.loads(forced.stdout.splitlines()[-1])["reason"] == "success"
    assert len(sessions(ws)) == len(before) + 1


def test_another_target_and_another_program_are_refused(ws: Path) -> None:
    other = run(ws, "--elf", ELF, "--target", "ethos-u55-256")
    assert other.returncode == 2, other.stderr
    (line,) = preflight_lines(other.stderr)
    assert "compiled for ethos-u55-128" in line and "ethos-u55-256" in line and "fix:" in line
    # the program meant to run, named beside the firmware: another one is baked in
    wrong = run(ws, "--elf", ELF, "--target", "ethos-u55-128", "demo_cnn_cpu.pte")
    assert wrong.returncode == 2, wrong.stderr
    lines = preflight_lines(wrong.stderr)
    assert any("model_pte" in p and "-DET_PTE_FILE_PATH" in p for p in lines), lines
    right = run(ws, "--elf", ELF, "--target", "ethos-u55-128", "demo_cnn.pte")
    assert right.returncode == 0 and not preflight_lines(right.stderr), right.stderr
    missing = run(ws, "--elf", ELF, "--target", "ethos-u55-128", "gone.pte")
    assert missing.returncode == 2 and "gone.pte" in missing.stderr
    assert sessions(ws) and len(sessions(ws)) == 1


def test_the_emulated_board_is_checked_before_qemu_starts(ws: Path) -> None:
    """The demo's delegated program on a firmware without etu's NPU bridge: the Run tab's
    emulated-board problem, before QEMU starts."""
    refused = run(ws, "--board", "qemu-an547", "--elf", ELF)
    assert refused.returncode == 2, refused.stderr
    lines = preflight_lines(refused.stderr)
    assert any("no NPU driver layer" in p and "--no-delegate" in p for p in lines), lines
    assert sessions(ws) == []
