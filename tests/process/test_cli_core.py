"""The CLI's contracts: dry runs without a simulator, JSON errors, listed values, and the
program baked into a firmware ELF."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from etu.fvp.targets import targets
from etu.parsers.program_facts import decode_facts
from etu.runner.compile_request import MEMORY_MODES, SYSTEM_CONFIGS
from tests.helpers import DEMO, etu

FIRMWARE = DEMO / "firmware" / "arm_executor_runner.elf"


def _no_simulators(tmp_path: Path) -> dict:
    """``etu``'s keywords for a child that finds no FVP and no ExecuTorch checkout."""
    return {"env": {"PATH": "/usr/bin:/bin", "XDG_CONFIG_HOME": str(tmp_path / "config")},
            "drop": ("ETU_FVP_DIR", "EXECUTORCH_ROOT")}  # fmt: skip


def test_dry_run_without_a_simulator(tmp_path: Path) -> None:
    bare = _no_simulators(tmp_path)
    args = ["run", "--dry-run", "--target", "ethos-u85-256", "--elf", str(FIRMWARE)]
    result = etu(*args, "--json", **bare, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    record = json.loads(result.stdout)
    assert record["found"] is False and record["argv"][0] == "FVP_Corstone_SSE-320"
    assert str(FIRMWARE) in record["argv"]
    plain = etu(*args, **bare, cwd=tmp_path)
    assert plain.returncode == 0 and plain.stdout.startswith("FVP_Corstone_SSE-320 ")
    assert "not installed" in plain.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["elf", "--json", "/nonexistent.elf"],
        ["fit", "--json", "--pte", "/nonexistent.pte", "--elf", str(FIRMWARE)],
        ["log", "--json", "/nonexistent.log"],
        ["vela", "--json", "/nonexistent"],
        ["run", "--json", "--target", "ethos-u99-1", "--elf", str(FIRMWARE)],
        ["run", "--json", "--target", "ethos-u55-128"],
        ["sessions", "--json", "--limit", "many"],
        ["compile", "--json", "add", "--memory-mode", "Huge_Sram", "--out", "x"],
    ],
)
def test_every_error_is_json_on_stdout(args: list[str], tmp_path: Path) -> None:
    result = etu(*args, cwd=tmp_path)
    assert result.returncode != 0
    lines = result.stdout.splitlines()
    assert lines, result.stderr
    for line in lines:
        record = json.loads(line)
        assert set(record) == {"error"} and "\n" not in record["error"]
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("command", ["run", "fit", "compile"])
def test_targets_and_configs_are_listed(command: str) -> None:
    text = " ".join(etu(command, "--help").stdout.split())
    assert all(target in text for target in targets())
    if command == "compile":
        assert all(config in text for config in SYSTEM_CONFIGS)
        assert all(mode in text for mode in MEMORY_MODES)


def test_inspect_a_firmware_decodes_its_program() -> None:
    result = etu("inspect", "--json", str(FIRMWARE))
    assert result.returncode == 0, result.stderr
    record = json.loads(result.stdout)
    assert record["file_identifier"] == "ET12" and record["plans"][0]["delegate_calls"] == 1
    assert record["firmware"]["section"] == ".ddr.rodata"
    assert record["firmware"]["found_by"] == "model_pte"
    data = FIRMWARE.read_bytes()
    offset, size = record["firmware"]["file_offset"], record["firmware"]["size"]
    assert data[offset + 4 : offset + 8] == b"ET12" and offset + size <= len(data)
    plain = etu("inspect", str(FIRMWARE))
    assert "baked into the firmware: .ddr.rodata at 0x70000000" in plain.stdout


def test_the_console_decodes_a_firmware_too() -> None:
    facts = decode_facts(FIRMWARE)
    try:
        assert facts.path == FIRMWARE and facts.delegate_calls == 1
        assert "quantized_decomposed::quantize_per_tensor.out" in facts.select_ops
    finally:
        facts.program.close()


@pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None, reason="no cross gcc")
def test_a_firmware_without_a_program_and_a_cut_one(tmp_path: Path) -> None:
    from etu.runner.firmware import build_stub_firmware

    empty = build_stub_firmware(None, tmp_path / "empty", ops=["aten::add.out"]).elf
    result = etu("inspect", "--json", str(empty))
    assert result.returncode == 1
    assert "no program baked in" in json.loads(result.stdout)["error"]
    cut = tmp_path / "cut.elf"
    data = FIRMWARE.read_bytes()
    record = json.loads(etu("inspect", "--json", str(FIRMWARE)).stdout)["firmware"]
    cut.write_bytes(data[: record["file_offset"] + 100])  # the program's bytes cut short
    result = etu("inspect", "--json", str(cut))
    assert result.returncode == 1 and "error" in json.loads(result.stdout)
    assert "Traceback" not in result.stderr


@pytest.mark.anyio
async def test_the_console_opens_a_firmware() -> None:
    """`etu FIRMWARE.elf`: the console shows the program baked into it."""
    from etu.tui.app import EtuApp

    app = EtuApp(FIRMWARE)
    async with app.run_test(size=(120, 36)) as pilot:
        for _ in range(600):
            if app.load_state != "loading":
                break
            await pilot.pause(0.05)
        assert app.load_state == "ready"
        assert app.facts.path == FIRMWARE and app.facts.delegate_calls == 1
