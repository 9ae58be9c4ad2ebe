"""Version skew (issue 25 §5): a program's kernel calls against the schemas of the runner's
ExecuTorch source, its command stream against the runner's Ethos-U driver, and what the
driver prints about the NPU at run time.

The schemas are the real ones: the ExecuTorch runtime source's kernel YAML files (read from
the mirrored archive) and the installed torchgen's ``native_functions.yaml``; the skewed
runner source is that source with one schema as ExecuTorch releases before ``out_dtype``
had it.
"""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest

from etu.parsers.pte import open_program
from etu.parsers.version_skew import (
    arch_problem,
    argument_skew,
    boxed_arguments,
    command_stream_arch,
    driver_line,
    format_problem,
    schema_arguments,
)
from etu.runner.skew_sources import SkewError, check_program, driver_arch, runner_arguments
from tests.helpers import DEMO
from tests.real_runner import vendor_file

CPU_DEMO = DEMO / "demo_cnn_cpu.pte"
NPU_DEMO = DEMO / "demo_cnn.pte"
DEQUANTIZE = "quantized_decomposed::dequantize_per_tensor.out"
# the schema before `out_dtype` (ExecuTorch releases of 2024)
OLD_DEQUANTIZE = (
    "- func: quantized_decomposed::dequantize_per_tensor.out(Tensor input, float scale, "
    "int zero_point, int quant_min, int quant_max, ScalarType dtype, *, Tensor(a!) out) -> "
    "Tensor(a!)"
)


def test_schema_arguments_leave_out_the_keyword_marker_and_keep_nested_brackets():
    func = "max_pool2d.out(Tensor self, int[2] k, int[2] s=[], *, Tensor(a!) out) -> Tensor(a!)"
    assert schema_arguments(func) == ["Tensor self", "int[2] k", "int[2] s=[]", "Tensor(a!) out"]
    with pytest.raises(ValueError, match="does not end"):
        schema_arguments("add.out(Tensor self, Tensor other")


def test_boxed_arguments_count_the_return_and_autogen_out_variants():
    counts = boxed_arguments(
        [
            {"func": "relu_(Tensor(a!) self) -> Tensor(a!)", "autogen": "relu.out"},
            {"func": "topk(Tensor self, int k) -> (Tensor values, Tensor indices)",
             "autogen": "topk.values_out"},
            {"func": "my::op.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)"},
            {"op": "add.out"},  # no schema: not counted
        ]
    )  # fmt: skip
    assert counts == {
        "aten::relu_": 2,
        "aten::relu.out": 3,  # self, out, the return
        "aten::topk": 3,
        "aten::topk.values_out": 5,  # self, k, two outs, the return
        "my::op.out": 3,
    }


@pytest.fixture(scope="module")
def runner_source(tmp_path_factory) -> Path:
    """The kernel YAML files and version of the mirrored ExecuTorch runtime source."""
    archive = vendor_file("executorch-runtime-src-")
    if archive is None:
        pytest.skip("no ExecuTorch runtime source archive in shared/vendor")
    root = tmp_path_factory.mktemp("et-src")
    wanted = ("kernels/quantized/quantized.yaml", "kernels/portable/custom_ops.yaml",
              "backends/cortex_m/ops/operators.yaml", "version.txt")  # fmt: skip
    with tarfile.open(archive) as tar:
        for member in tar:
            name = member.name.split("/", 1)[-1]
            if member.isfile() and name in wanted:
                target = root / name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(tar.extractfile(member).read())
    return root


def skewed(root: Path, tmp_path: Path) -> Path:
    """``root`` with the dequantize schema of an older release."""
    old = tmp_path / "old-src"
    for path in root.rglob("*"):
        if path.is_file():
            target = old / path.relative_to(root)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(path.read_bytes())
    yaml_file = old / "kernels/quantized/quantized.yaml"
    lines = yaml_file.read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith(f"- func: {DEQUANTIZE}("))
    lines[at] = OLD_DEQUANTIZE
    yaml_file.write_text("\n".join(lines) + "\n")
    return old


def test_every_kernel_call_of_the_demo_matches_the_runner_source(runner_source):
    with open_program(CPU_DEMO) as program:
        operators = sorted({op.qualified_name for plan in program.plans for op in plan.operators})
        expected = runner_arguments(runner_source, operators)
        assert set(expected) == set(operators), "every operator has a schema"
        assert argument_skew(program, expected) == []
    record = check_program(CPU_DEMO, runner_source, "cff6f4dd", None, operators)
    assert record["kernel_arguments"][DEQUANTIZE] == 9
    assert record["runner_version"] == [1, 5]


def test_a_runner_source_with_an_older_schema_is_a_skew_with_its_fix(runner_source, tmp_path):
    old = skewed(runner_source, tmp_path)
    with open_program(CPU_DEMO) as program:
        operators = [op.qualified_name for op in program.plans[0].operators]
        found = argument_skew(program, runner_arguments(old, operators))
    assert [(s.operator, s.passed, s.expected) for s in found] == [(DEQUANTIZE, 9, 8)]
    with pytest.raises(SkewError) as error:
        check_program(CPU_DEMO, old, "0123456789abcdef", None, operators)
    message = str(error.value)
    assert "\n" not in message
    assert message.startswith(f"{CPU_DEMO}: version skew: {DEQUANTIZE}: the program passes 9")
    assert "takes 8" in message and "0123456789" in message and "newer ExecuTorch" in message
    assert "ETU_EXECUTORCH_SRC" in message


def test_the_driver_archive_names_the_architecture_and_the_demo_stream_runs_on_it():
    archive = vendor_file("ethos-u-core-driver-")
    if archive is None:
        pytest.skip("no Ethos-U core driver archive in shared/vendor")
    u55 = driver_arch(archive, "ethos-u55")
    assert u55 is not None and u55[0] == 1
    assert driver_arch(archive, "ethos-u85")[0] == 2
    with open_program(NPU_DEMO) as program:
        from etu.parsers.program_facts import delegates

        payload = next(info.payload for info in delegates(program) if info.payload)
    arch = command_stream_arch(payload.npu_id)
    assert arch[0] == 1  # Vela 5.1.0's Ethos-U55 streams are architecture 1.x
    assert arch_problem(arch, u55) is None
    newer = (u55[0], u55[1] + 1, 0)
    problem = arch_problem(newer, u55)
    assert problem and "NPU arch mismatch" in problem and "Vela" in problem
    assert arch_problem(arch, (2, 0, 0)) is not None  # a U85 driver for a U55 stream


def test_cop2_needs_a_runner_from_1_2_on():
    assert format_problem("COP2", (1, 1)) is not None
    assert format_problem("COP2", (1, 2)) is None
    assert format_problem("COP1", (0, 4)) is None
    assert format_problem("COP2", None) is None  # unknown runner: not judged


def test_the_driver_lines_at_run_time_say_what_was_found():
    # the driver's format strings (ethosu_device_u55_u65.c), filled in
    npu = driver_line("I: Ethos-U config. product=0, cmd_stream_version=0, macs_per_cc=8, "
                      "shram_size=48, custom_dma=0")  # fmt: skip
    assert npu is not None and npu.kind == "npu_config" and "ethos-u55-256" in npu.text
    mismatch = driver_line("E: NPU config mismatch. npu.macs_per_cc=8, optimizer.macs_per_cc=7")
    assert mismatch is not None and mismatch.kind == "mismatch"
    assert "MACs 256" in mismatch.text and "wants 128" in mismatch.text
    version = driver_line(
        "E: NPU config mismatch. npu.cmd_stream_version=1, optimizer.cmd_stream_version=0 "
        "(ethosu_device_u55_u65.c:345)"
    )
    assert version is not None and "cmd_stream_version 1" in version.text
    args = driver_line("E [executorch:RegisterCodegenUnboxedKernels.cpp:40] Expected 8 args "
                       "received 9")  # fmt: skip
    assert args is not None and "different ExecuTorch versions" in args.text
    assert driver_line("I [executorch:arm_executor_runner.cpp:1] Model executed") is None


def test_reading_lines_gives_what_a_yaml_parser_gives_on_the_real_schema_files(runner_source):
    yaml = pytest.importorskip("yaml")
    from etu.parsers.version_skew import schema_entries
    from etu.runner.skew_sources import aten_schema_file

    files = [runner_source / "kernels/quantized/quantized.yaml"]
    if aten_schema_file() is not None:
        files.append(aten_schema_file())
    for path in files:
        text = path.read_text()
        assert boxed_arguments(schema_entries(text)) == boxed_arguments(yaml.safe_load(text))


def test_a_run_pre_flight_reads_what_the_firmware_build_recorded(tmp_path):
    """The Run tab's pre-flight judges the program by the firmware record of the ELF to be
    run: the counts recorded by a build from a source before ``out_dtype`` refuse it."""
    import json
    import shutil

    from etu.runner.preflight import preflight
    from etu.runner.skew_sources import firmware_skew

    elf = tmp_path / "fw" / "arm_executor_runner.elf"
    elf.parent.mkdir()
    shutil.copy(DEMO / "firmware" / "arm_executor_runner.elf", elf)
    with open_program(CPU_DEMO) as program:
        assert firmware_skew(program, elf) == []  # no record: not judged
        record = {"options": {"kernel_arguments": {DEQUANTIZE: 8}, "runner_version": [1, 0]}}
        (elf.parent / "etu_firmware.json").write_text(json.dumps(record))
        (problem,) = firmware_skew(program, elf)
        assert problem.startswith(f"version skew: {DEQUANTIZE}: the program passes 9 values")
        assert problem in preflight("qemu-an547", None, program, None, elf)
        record["options"]["kernel_arguments"][DEQUANTIZE] = 9
        (elf.parent / "etu_firmware.json").write_text(json.dumps(record))
        assert firmware_skew(program, elf) == []
        (elf.parent / "etu_firmware.json").write_text("{not json")
        assert firmware_skew(program, elf) == []  # a damaged record is not a verdict


def test_the_pre_flight_judges_the_command_stream_by_the_recorded_driver(tmp_path):
    import json

    from etu.runner.skew_sources import firmware_skew

    elf = tmp_path / "arm_executor_runner.elf"
    elf.write_bytes(b"")
    record = {"options": {"runner_version": [1, 5], "driver_arch": {"ethos-u55": [1, 1, 0]}}}
    (tmp_path / "etu_firmware.json").write_text(json.dumps(record))
    with open_program(NPU_DEMO) as program:
        assert firmware_skew(program, elf) == []
        record["options"]["driver_arch"]["ethos-u55"] = [2, 0, 0]  # a U85 driver's interface
        (tmp_path / "etu_firmware.json").write_text(json.dumps(record))
        (problem,) = firmware_skew(program, elf)
        assert problem.startswith("version skew: the command stream is for NPU architecture 1.")
        assert "driver is for 2.0.0" in problem


def test_the_npu_the_driver_finds_at_boot_is_checked_against_the_program_as_it_arrives():
    """A live run's record compares the driver's ``Ethos-U config.`` line (info level, at
    boot) with the target the program was compiled for, before any invoke fails."""
    from etu.parsers.runner_log import parse_log_bytes
    from etu.runner.run_model import RunRecord, split_events

    log = (
        b"I: Ethos-U config. product=0, cmd_stream_version=0, macs_per_cc=8, shram_size=48, "
        b"custom_dma=0\n"
        b"I [executorch:arm_executor_runner.cpp:1140 run_model()] Starting running 1 "
        b"inferences...\n"
    )
    record = RunRecord("current run", live=True)
    record.expected_npu = "ethos-u55-128"
    changed = record.add(*split_events(parse_log_bytes(log), 0.0))
    assert "skew" in changed and record.npu_found == "ethos-u55-256"
    (said,) = record.skew
    assert "the NPU is ethos-u55-256, the program is compiled for ethos-u55-128" in said
    same = RunRecord("current run", live=True)
    same.expected_npu = "ethos-u55-256"
    assert "skew" not in same.add(*split_events(parse_log_bytes(log), 0.0))
    assert same.skew == []
