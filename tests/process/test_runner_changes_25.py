"""Issue 25 §6 on real artifacts: a runner built with ET_NUM_INFERENCES and run on QEMU, a
program whose Ethos-U scratch passes PR 22884's limit, a compile refused by
``--max-scratch-size``, and upstream's defaults and TOSA profiles as the installed ExecuTorch
makes them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from etu.parsers.ethosu_defaults import DEFAULT_CONFIGS, DEFAULT_MAX_SCRATCH, TOSA_PROFILES
from etu.parsers.fit import OK, WARN, check_fit
from etu.parsers.memory_map import load_memory_map
from etu.parsers.program_facts import delegates
from etu.parsers.pte import open_program
from tests.real_runner import build, etu, run_qemu

ROOT = Path(__file__).resolve().parent.parent.parent
DEMO = ROOT / "etu_tui" / "demo"
DEMO_ELF = DEMO / "firmware" / "arm_executor_runner.elf"


def scratch_verdicts(pte: Path) -> list:
    with open_program(pte) as program:
        verdicts = check_fit(
            program, load_memory_map(DEMO_ELF, map_path=DEMO_ELF.with_suffix(".map"))
        )
    return [v for v in verdicts if v.check == "scratch_limit"]


@pytest.fixture(scope="module")
def big_scratch_program(tmp_path_factory) -> Path:
    """A U55 program (ExecuTorch's default config) whose feature maps need 2.6 MB of
    scratch: over the 2 MiB PR 22884 allows for Corstone-300 Shared_Sram."""
    import torch

    from etu.runner.aot import LoweringSpec, lower_to_pte

    class Wide(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.expand = torch.nn.Conv2d(8, 32, 1)
            self.project = torch.nn.Conv2d(32, 8, 1)

        def forward(self, x):
            return self.project(torch.relu(self.expand(x)))

    torch.manual_seed(0)
    out = tmp_path_factory.mktemp("big-scratch") / "wide.pte"
    lower_to_pte(Wide().eval(), (torch.rand(1, 8, 256, 256),),
                 LoweringSpec(target="ethos-u55-128"), out)  # fmt: skip
    return out


@pytest.mark.aot
def test_fit_shows_the_compile_time_scratch_limit(big_scratch_program: Path) -> None:
    (demo,) = scratch_verdicts(DEMO / "demo_cnn.pte")
    assert (demo.status, demo.have) == (OK, DEFAULT_MAX_SCRATCH)
    (big,) = scratch_verdicts(big_scratch_program)
    assert big.status == WARN and big.need > DEFAULT_MAX_SCRATCH == big.have
    assert "PR 22884" in big.message and big.fix


@pytest.mark.aot
def test_the_compile_refuses_a_scratch_over_max_scratch_size(big_scratch_program, tmp_path):
    from etu.runner.aot import ScratchLimitError, check_scratch
    from etu.runner.compile_request import CompileRequest

    with open_program(big_scratch_program) as program:
        (info,) = [i for i in delegates(program) if i.payload]
        blob = bytes(program.read(program.delegate_span(info.delegate)))
    check_scratch([(b"", blob)], DEFAULT_MAX_SCRATCH * 2)  # within: no error
    with pytest.raises(ScratchLimitError, match="exceeds max_scratch_size 2,097,152 B by"):
        check_scratch([(b"", blob)], DEFAULT_MAX_SCRATCH)
    # end to end: etu compile passes the limit down to the lowering (1.5.1's
    # EthosUCompileSpec takes no max_scratch_size, so etu checks Vela's payloads itself)
    result = subprocess.run(
        [sys.executable, "-m", "etu.tui.cli", "compile", "add", "--max-scratch-size", "16",
         "--no-cache", "--out", str(tmp_path / "out"), "--json"],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert result.returncode == 1, result.stderr[-2000:]
    assert "exceeds max_scratch_size 16 B" in result.stdout + result.stderr
    assert CompileRequest("add", max_scratch_size=16).resolved().to_json()["max_scratch_size"]


@pytest.mark.aot
def test_defaults_and_tosa_profiles_are_what_the_installed_executorch_makes(real_program):
    from executorch.backends.arm.ethosu import EthosUCompileSpec

    for family, (config, mode) in DEFAULT_CONFIGS.items():
        spec = EthosUCompileSpec(f"{family}-128" if family != "ethos-u65" else f"{family}-256")
        assert f"--system-config={config}" in spec.compiler_flags
        assert f"--memory-mode={mode}" in spec.compiler_flags
        assert str(spec.tosa_spec) == TOSA_PROFILES[family]
    for name, family in (("u55", "ethos-u55"), ("u65", "ethos-u65"), ("u85", "ethos-u85")):
        shown = subprocess.run(
            [sys.executable, "-m", "etu.tui.cli", "inspect", str(real_program(name)), "--json"],
            capture_output=True, text=True, timeout=120, check=True,
        )  # fmt: skip
        (delegate,) = json.loads(shown.stdout)["plans"][0]["delegates"]
        assert delegate["tosa_spec"] == TOSA_PROFILES[family]
        assert delegate["tosa_spec_warning"] is None


@pytest.mark.runtime_build
def test_a_runner_built_with_three_inferences_runs_three(float_program, runtime_env, tmp_path):
    record = build(float_program, tmp_path / "fw", runtime_env, "--num-inferences", "3")
    assert "-DET_NUM_INFERENCES=3" in record["configure_command"]
    options = record["options"]
    assert options["num_inferences"] == 3 and options["cpu"] == "cortex-m55"
    assert options["cpu_cycle_counter"] is True  # the vendored source has PR 21833
    status, _lines, session = run_qemu(Path(record["elf"]), tmp_path / "sessions", runtime_env)
    assert status == 0
    summary = json.loads((session / "summary.json").read_text())
    assert summary["inference_count"] == 3
    shown = etu(["log", session, "--json"], runtime_env)
    assert json.loads(shown.stdout)["inference_count"] == 3
    assert "inferences: 3 (ET_NUM_INFERENCES)" in etu(["log", session], runtime_env).stdout


def test_a_recorded_session_keeps_the_cpu_cycles_note(tmp_path: Path) -> None:
    """The run writes summary.json with the note, from the firmware record beside the ELF
    its meta names (History and etu report read that file, not the log)."""
    from etu.parsers.log_summary import CPU_CYCLES_BUG
    from etu.runner.run import RunController
    from tests.unit.test_runner_changes_25 import log_of, pmu_report

    firmware = tmp_path / "fw"
    firmware.mkdir()
    (firmware / "etu_firmware.json").write_text(
        json.dumps({"options": {"cpu": "cortex-m55", "cpu_cycle_counter": False}})
    )
    log = tmp_path / "runner.log"
    log.write_bytes(log_of(pmu_report(2, 8000, 0)))
    printer = [sys.executable, "-c", "import sys; sys.stdout.buffer.write(open(sys.argv[1], "
               "'rb').read())", str(log)]  # fmt: skip
    controller = RunController(
        printer, sessions=tmp_path / "sessions", kind="fvp",
        meta={"elf": str(firmware / "arm_executor_runner.elf")},
    ).start()  # fmt: skip
    controller.wait(60)
    summary = json.loads((controller.folder / "summary.json").read_text())
    assert summary["pmu"][0]["cpu_cycles_note"] == CPU_CYCLES_BUG
    (row,) = summary["inferences"]
    assert (row["inferences"], row["npu_cycles"], row["cpu_cycles_note"]) == (
        2,
        4000,
        CPU_CYCLES_BUG,
    )
    # etu report reads summary.json: its PMU table says it too
    from etu.runner.report import build_report

    report = build_report(controller.folder, tmp_path)
    assert report["pmu"]["cpu_cycles_note"] == CPU_CYCLES_BUG
    shown = subprocess.run(
        [sys.executable, "-m", "etu.tui.cli", "report", str(controller.folder), "--format", "md"],
        capture_output=True, text=True, timeout=120, check=False, cwd=tmp_path,
    )  # fmt: skip
    assert CPU_CYCLES_BUG in shown.stdout, shown.stderr[-2000:]
