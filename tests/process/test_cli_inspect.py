"""``etu inspect`` as scripts and CI run it: a real subprocess of the installed command."""

from __future__ import annotations

import json
import resource
import shutil
import subprocess
from pathlib import Path

import pytest

from etu.parsers.program_facts import inspect_record
from etu.parsers.pte import open_program
from tests.helpers import ETU, etu

FEW_DESCRIPTORS = 128  # of the process inspecting 600 files


def test_json_lines_in_argument_order_with_errors(tmp_path: Path, demo_pte: Path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("not a program\n")
    truncated = tmp_path / "truncated.pte"
    truncated.write_bytes(demo_pte.read_bytes()[:1000])
    result = etu("inspect", "--json", str(demo_pte), str(text), str(truncated), str(demo_pte))
    assert result.returncode == 1
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["file"] for r in records] == [str(demo_pte), str(text), str(truncated), str(demo_pte)]
    assert "error" not in records[0] and records[0] == records[3]
    assert records[1]["error"].startswith(str(text)) and "text file" in records[1]["error"]
    assert records[2]["error"].startswith(str(truncated))
    assert result.stderr == ""


def test_json_fields_are_the_contract(demo_pte: Path) -> None:
    result = etu("inspect", "--json", str(demo_pte))
    assert result.returncode == 0, result.stderr
    record = json.loads(result.stdout)
    for key in (
        "file", "file_identifier", "extended_header", "plans", "segments",
        "constant_data_size", "cpu_operators", "select_ops_list",
    ):  # fmt: skip
        assert key in record
    (plan,) = record["plans"]
    for key in (
        "name", "values", "value_kinds", "inputs", "outputs", "instructions", "kernel_calls",
        "delegate_calls", "operators", "non_const_buffer_sizes", "delegates",
    ):  # fmt: skip
        assert key in plan
    (delegate,) = plan["delegates"]
    for key in ("id", "compile_specs", "payload_location", "payload_size", "ethosu"):
        assert key in delegate
    for key in (
        "command_stream_format", "command_stream_size", "weights_size", "scratch_size",
        "fast_scratch_size", "inputs", "outputs",
    ):  # fmt: skip
        assert key in delegate["ethosu"]
    # io_quantization[]: per input and output, dtype, the NPU's integers, scale, zero point
    quantization = record.pop("io_quantization")
    assert [(q["kind"], q["dtype"], q["integer_dtype"]) for q in quantization] == [
        ("input", "float32", "int8"), ("output", "float32", "int8")]  # fmt: skip
    assert all(q["scale"] > 0 and isinstance(q["zero_point"], int) for q in quantization)
    # npu_operations[]: the decoded command stream (tests/process/test_ethosu_commands.py)
    assert len(delegate.pop("npu_operations")) == 48
    assert delegate.pop("npu_operations_note") is None
    assert delegate.pop("npu_operations_error") is None
    # external Vela blocks (.ptd, tests/process/test_ptd.py): none in an inline program
    assert delegate.pop("external_data") == []
    assert record.pop("data_files") == [] and record.pop("data_file_errors") == []
    with open_program(demo_pte) as program:
        expected = inspect_record(program)
    assert record == json.loads(json.dumps(expected))
    assert delegate["compile_specs"]["target"] == "ethos-u55-128"
    assert delegate["ethosu"]["npu_target"] == "ethos-u55-128"


def test_readable_summary(demo_pte: Path) -> None:
    result = etu("inspect", str(demo_pte))
    assert result.returncode == 0
    assert "EthosUBackend" in result.stdout
    assert "1 delegate call (NPU), 2 kernel calls (CPU)" in result.stdout  # issue 24 §10
    assert "EXECUTORCH_SELECT_OPS_LIST=quantized_decomposed::" in result.stdout


def test_bad_file_in_readable_mode_is_one_line_on_stderr(tmp_path: Path) -> None:
    empty = tmp_path / "empty.pte"
    empty.write_bytes(b"")
    result = etu("inspect", str(empty))
    assert result.returncode == 1
    assert result.stderr.strip() == f"etu: {empty}: empty file (0 bytes), not an ExecuTorch program"
    assert "Traceback" not in result.stderr


def test_more_files_than_the_process_may_hold_open(tmp_path: Path, demo_pte: Path) -> None:
    """600 files with at most 128 descriptors: each file is let go before the next (a map
    or handle kept per file would run out), records in argument order, a bad file an error
    record of its own. (2,000 files without the limit cost a minute of the test run and
    never came near the machine's 20,000.)"""
    names = []
    for i in range(600):
        target = tmp_path / f"m{i:04d}.pte"
        if i % 150 == 7:
            target.write_bytes(b"garbage")
        else:
            shutil.copyfile(demo_pte, target) if i == 0 else target.symlink_to(
                tmp_path / "m0000.pte"
            )
        names.append(target.name)

    def few_descriptors() -> None:
        hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        resource.setrlimit(resource.RLIMIT_NOFILE, (FEW_DESCRIPTORS, hard))

    result = subprocess.run(
        [*ETU, "inspect", "--json", *names], capture_output=True, text=True, timeout=300,
        cwd=tmp_path, check=False, preexec_fn=few_descriptors,
    )  # fmt: skip
    assert result.returncode == 1, result.stderr[-2000:]
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["file"] for r in records] == names
    assert sum("error" in r for r in records) == 4


def test_help_lists_commands() -> None:
    result = etu("--help")
    assert result.returncode == 0
    assert "etu inspect" in result.stdout


@pytest.mark.parametrize("args", [["inspect"], ["no-such-file.pte"]])
def test_usage_errors_exit_non_zero(args: list[str]) -> None:
    result = etu(*args)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr


VELA_DATA = Path(__file__).resolve().parent.parent / "data" / "vela"


def test_vela_json_contract_on_the_demo_folder(demo_pte: Path) -> None:
    result = etu("vela", "--json", str(demo_pte.parent / "vela"))
    assert result.returncode == 0, result.stderr
    record = json.loads(result.stdout)
    for key in ("summaries", "per_layer", "npu_operators", "cpu_operators", "vela_version"):
        assert key in record
    assert record["vela_version"] == "5.1.0" and record["estimate"] is True
    (summary,) = record["summaries"]
    assert summary["system_config"] == "Ethos_U55_High_End_Embedded"
    assert isinstance(summary["cycles_total"], int | float)
    assert sum(row["Op Cycles"] for row in record["per_layer"]) == summary["cycles_total"]


def test_vela_readable_and_failed_run(tmp_path: Path) -> None:
    result = etu("vela", str(VELA_DATA / "02_u55_128_verbose_performance"))
    assert result.returncode == 0 and "estimate" in result.stdout and "cycles" in result.stdout
    failed = etu("vela", "--json", str(VELA_DATA / "11_u55_128_dedicated_sram_invalid"))
    assert failed.returncode == 0
    assert json.loads(failed.stdout)["failed"] is True
    garbage = tmp_path / "out_summary_X.csv"
    garbage.write_bytes(b"\x00\x01\x02binary")
    bad = etu("vela", str(garbage))
    assert bad.returncode == 1 and bad.stderr.startswith(f"etu: {garbage}")
    assert "Traceback" not in bad.stderr


def test_elf_json_contract(demo_pte: Path) -> None:
    firmware = demo_pte.parent / "firmware"
    result = etu(
        "elf", "--json", str(firmware / "arm_executor_runner.elf"),
        "--map", str(firmware / "arm_executor_runner.map"),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    record = json.loads(result.stdout)
    region = next(r for r in record["regions"] if r["name"] == "SRAM")
    assert set(region) >= {"name", "origin", "length", "used"}
    section = next(s for s in record["sections"] if s["name"] == ".ddr.rodata")
    assert set(section) >= {"name", "address", "load_address", "size", "region"}
    assert section["region"] == "DDR"
    assert set(record["symbols_top"][0]) >= {"name", "address", "size", "section"}
    pte = record["pools"]["model_pte"]
    assert pte["size"] == demo_pte.stat().st_size and pte["region"] == "DDR"
    assert record["pools"]["temp_allocator"]["region"] == "SRAM"
    assert isinstance(record["warnings"], list)


def test_elf_on_a_program_file_is_one_line_error(demo_pte: Path) -> None:
    result = etu("elf", str(demo_pte))
    assert result.returncode == 1 and result.stderr.count("\n") == 1
    assert str(demo_pte) in result.stderr and "Traceback" not in result.stderr
