"""Issue 25 §6, runner changes to follow: the Cortex-M55 CPU-cycles bug before PR 21833,
per-inference rows (ET_NUM_INFERENCES), PR 22884's compile-time scratch limit, upstream's
Ethos-U defaults and TOSA profile strings. No build here (tests/process has those)."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest

from etu.parsers.ethosu_defaults import (
    DEFAULT_CONFIGS,
    DEFAULT_MAX_SCRATCH,
    TOSA_PROFILES,
    scratch_limit,
    tosa_profile_problem,
)
from etu.parsers.log_summary import (
    CPU_CYCLES_BUG,
    CPU_CYCLES_UNKNOWN,
    LogSummary,
    cpu_cycles_note,
    spread,
    summarize,
)
from etu.parsers.program_facts import delegates
from etu.parsers.runner_log import parse_log_bytes
from etu.runner.history import figures
from etu.runner.runner_facts import runner_facts
from etu.runner.runtime_build import reads_cpu_cycles
from etu.tui import cli
from etu.tui.widgets.history import inference_spread, spread_text
from tests.real_runner import vendor_file

ROOT = Path(__file__).resolve().parent.parent.parent
QEMU_LOGS = ROOT / "tests" / "data" / "transcripts" / "qemu"
PREFIX = "I [executorch:arm_perf_monitor.cpp:{line} StopMeasurements()] "


def pmu_report(inferences: int, npu_cycles: int, cpu_cycles: int, line: int = 150) -> list[str]:
    """The report upstream's arm_perf_monitor.cpp (cff6f4dd) prints: sums over the
    inferences, each with its mean per inference."""
    per = inferences

    def mean(value: int) -> str:
        return f"({value / per:.2f} per inference)"

    body = [
        f"NPU Inferences : {inferences}",
        f"NPU delegations: {inferences} {mean(inferences)}",
        "Profiler report, CPU cycles per operator:",
        f"ethos-u : cycle_cnt : {npu_cycles} cycles {mean(npu_cycles)}",
        f"Operator(s) total: {npu_cycles} CPU cycles {mean(npu_cycles)}",
        f"Inference runtime: {cpu_cycles} CPU cycles total {mean(cpu_cycles)}",
        "NOTE: CPU cycle values and ratio calculations require FPGA and identical CPU/NPU "
        "frequency",
        "Inference CPU ratio: ?.?? %" if cpu_cycles == 0 else "Inference CPU ratio: 50.00 %",
        "Inference NPU ratio: ?.?? %" if cpu_cycles == 0 else "Inference NPU ratio: 50.00 %",
        f"cpu_wait_for_npu_cntr : 0 CPU cycles {mean(0)}",
        "Ethos-U PMU report:",
        f"ethosu_pmu_cycle_cntr : {npu_cycles} {mean(npu_cycles)}",
        *(f"ethosu_pmu_cntr{i} : {i} {mean(i)}" for i in range(4)),
        "Ethos-U PMU Events:[ETHOSU_PMU_AXI0_RD_DATA_BEAT_RECEIVED, "
        "ETHOSU_PMU_AXI1_RD_DATA_BEAT_RECEIVED, ETHOSU_PMU_AXI0_WR_DATA_BEAT_WRITTEN, "
        "ETHOSU_PMU_NPU_IDLE]",
    ]
    return [PREFIX.format(line=line + n) + text for n, text in enumerate(body)]


def log_of(*reports: list[str]) -> bytes:
    lines = [line for report in reports for line in report]
    return ("\n".join(lines) + "\n").encode()


# --------------------------------------------------------------------------- CPU cycles


def test_a_zero_from_a_cortex_m55_runner_says_what_it_means() -> None:
    assert cpu_cycles_note(0, "cortex-m55", False) == CPU_CYCLES_BUG
    assert cpu_cycles_note(0, "Cortex-M55", None) == CPU_CYCLES_UNKNOWN
    assert cpu_cycles_note(0, "cortex-m55", True) is None  # fixed runner: a real 0
    assert cpu_cycles_note(0, "cortex-m85", False) is None  # the bug hit the M55 only
    assert cpu_cycles_note(0, None, False) is None  # CPU unknown: no claim
    assert cpu_cycles_note(2585, "cortex-m55", False) is None
    assert cpu_cycles_note(None, "cortex-m55", False) is None


def test_the_source_says_whether_its_runner_reads_the_cycle_counter(tmp_path: Path) -> None:
    archive = vendor_file("executorch-runtime-src-")
    if archive is None:
        pytest.skip("no vendored ExecuTorch source")
    member = "executorch/examples/arm/executor_runner/arm_perf_monitor.cpp"
    with tarfile.open(archive) as tar:
        tar.extract(member, tmp_path, filter="data")
    fixed = tmp_path / "executorch"
    assert reads_cpu_cycles(fixed) is True  # cff6f4dd (2026-08-22) has PR 21833
    # the same file as it was before PR 21833: the architecture guard GCC's M55 misses
    old = tmp_path / "old" / "examples/arm/executor_runner/arm_perf_monitor.cpp"
    old.parent.mkdir(parents=True)
    text = (fixed / member.removeprefix("executorch/")).read_text()
    old.write_text(text.replace("defined(__PMU_PRESENT) && (__PMU_PRESENT == 1U)",
                                "defined(__ARM_ARCH_8_1M_MAIN__)"))  # fmt: skip
    assert reads_cpu_cycles(tmp_path / "old") is False
    assert reads_cpu_cycles(tmp_path / "nowhere") is None


def session_with(tmp_path: Path, log: bytes, meta: dict, record: dict | None) -> Path:
    folder = tmp_path / "20261126-101010-fvp-000"
    folder.mkdir()
    (folder / "raw.log").write_bytes(log)
    firmware = tmp_path / "fw"
    firmware.mkdir()
    if record is not None:
        (firmware / "etu_firmware.json").write_text(json.dumps(record))
    (folder / "meta.json").write_text(
        json.dumps({"format": 2, "kind": "fvp", "elf": str(firmware / "runner.elf"), **meta})
    )
    return folder


@pytest.mark.parametrize(
    ("record", "meta", "note"),
    [
        ({"options": {"cpu": "cortex-m55", "cpu_cycle_counter": False}}, {}, CPU_CYCLES_BUG),
        ({"options": {"cpu": "cortex-m55", "cpu_cycle_counter": True}}, {}, None),
        # an older record: the commit says it (the pinned source has the fix)
        ({"options": {}, "source": {"commit": "cff6f4dd1234"}}, {}, None),
        (None, {"platform": "corstone-300"}, CPU_CYCLES_UNKNOWN),  # date unknown, an M55
        (None, {"platform": "corstone-320"}, None),  # a Cortex-M85
    ],
)
def test_etu_log_explains_a_zero_cpu_cycles_figure(tmp_path, capsys, record, meta, note):
    folder = session_with(tmp_path, log_of(pmu_report(1, 4000, 0)), meta, record)
    assert cli.main(["log", str(folder), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["pmu"][0]["cpu_cycles"] == 0  # the figure itself is kept
    assert summary["pmu"][0]["cpu_cycles_note"] == note
    assert summary["inferences"][0]["cpu_cycles_note"] == note
    assert cli.main(["log", str(folder)]) == 0
    text = capsys.readouterr().out
    assert (f"CPU {note} cycles" if note else "CPU 0 cycles") in text


def test_a_plain_log_makes_no_claim_about_its_runner() -> None:
    summary = summarize(parse_log_bytes(log_of(pmu_report(1, 4000, 0))))
    assert summary["pmu"][0]["cpu_cycles_note"] is None


def test_runner_facts_come_from_the_record_beside_the_elf(tmp_path: Path) -> None:
    (tmp_path / "etu_firmware.json").write_text(
        json.dumps({"options": {"cpu": "cortex-m55", "cpu_cycle_counter": False}})
    )
    facts = runner_facts({}, tmp_path / "arm_executor_runner.elf")
    assert (facts.cpu, facts.counter_fixed) == ("cortex-m55", False)
    assert facts.source == "firmware record"
    assert runner_facts({"target": "qemu-an547"}).cpu == "cortex-m55"
    assert runner_facts({"target": "ethos-u55-128"}).cpu is None  # a board of unknown CPU


# --------------------------------------------------------------------------- inferences


def test_a_real_runner_with_three_inferences_says_so() -> None:
    """Recorded from ExecuTorch's arm_executor_runner built with ET_NUM_INFERENCES=3
    (``etu firmware build --num-inferences 3``) on QEMU: a CPU-only runner prints no PMU
    report, so there are no per-inference rows, only the count."""
    summary = summarize(parse_log_bytes((QEMU_LOGS / "qemu_float_cpu_three_inferences.log")
                                        .read_bytes()))  # fmt: skip
    assert (summary["verdict"], summary["inference_count"]) == ("success", 3)
    assert summary["inferences"] == [] and summary["pmu"] == []
    one = summarize(parse_log_bytes((QEMU_LOGS / "qemu_float_cpu_success.log").read_bytes()))
    assert one["inference_count"] == 1


def test_several_reports_give_one_row_each_with_figures_per_inference() -> None:
    """One report per inference (the runner's semihosting server mode, StopMeasurements(1)
    per request), then a report summing 4 inferences (ET_NUM_INFERENCES=4)."""
    data = log_of(pmu_report(1, 1000, 3000), pmu_report(1, 1200, 3100),
                  pmu_report(1, 900, 2900), pmu_report(4, 4400, 12000))  # fmt: skip
    summary = summarize(parse_log_bytes(data))
    rows = summary["inferences"]
    assert [row["report"] for row in rows] == [0, 1, 2, 3]
    assert [row["inferences"] for row in rows] == [1, 1, 1, 4]
    assert [row["npu_cycles"] for row in rows] == [1000, 1200, 900, 1100]
    assert [row["cpu_cycles"] for row in rows] == [3000, 3100, 2900, 3000]
    assert [row["line"] for row in rows] == [1, 18, 35, 52]
    assert spread(row["npu_cycles"] for row in rows) == {
        "n": 4, "min": 900, "median": 1050, "max": 1200,
    }  # fmt: skip
    listed = figures(summary)
    assert listed["spread"]["npu_cycles"]["max"] == 1200
    assert listed["spread"]["cpu_cycles"]["min"] == 2900
    # one report: nothing to spread
    assert figures(summarize(parse_log_bytes(log_of(pmu_report(3, 3000, 9000)))))["spread"] is None


def test_spread_needs_two_numbers() -> None:
    assert spread([5]) is None and spread([None, "x", True]) is None
    assert spread([3, None, 1, 2]) == {"n": 3, "min": 1, "median": 2, "max": 3}


def test_the_history_reads_a_spread_only_when_it_is_numbers() -> None:
    from etu.runner.history import session_row

    good = {"spread": {"npu_cycles": {"n": 3, "min": 900, "median": 1000, "max": 1200}},
            "inferences": 3}  # fmt: skip
    row = session_row(Path("s"), {"format": 2}, good)
    assert row.inferences == 3
    assert inference_spread(row, "npu_cycles") == {"min": 900.0, "median": 1000.0,
                                                   "max": 1200.0}  # fmt: skip
    assert spread_text(row, "npu_cycles") == "min 900 · median 1,000 · max 1,200 over 3 reports"
    assert inference_spread(row, "cpu_cycles") is None
    bad = session_row(Path("s"), {}, {"spread": {"npu_cycles": {"min": "a", "median": 1,
                                                                "max": 2}}})  # fmt: skip
    assert inference_spread(bad, "npu_cycles") is None and spread_text(bad, "npu_cycles") == ""


@pytest.mark.parametrize("count", ["0", "-2", "1000001"])
def test_num_inferences_out_of_range_is_one_line(count, capsys, tmp_path) -> None:
    pte = tmp_path / "x.pte"
    pte.write_bytes(b"\0" * 64)
    status = cli.main(["firmware", "build", str(pte), "--board", "qemu-an547",
                       "--num-inferences", count, "--out", str(tmp_path / "out")])  # fmt: skip
    err = capsys.readouterr().err
    assert status == 2 and "--num-inferences" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


# --------------------------------------------------------------------------- scratch limit


def test_the_scratch_limit_follows_pr_22884() -> None:
    standard = scratch_limit("ethos-u55-128", *DEFAULT_CONFIGS["ethos-u55"])
    assert standard.size == DEFAULT_MAX_SCRATCH == 2 * 1024 * 1024
    assert scratch_limit("ethos-u55-64", *DEFAULT_CONFIGS["ethos-u55"], "Arm/vela.ini").size
    # custom system configs or INI files, and the U65/U85 defaults: no implicit limit
    assert scratch_limit("ethos-u55-128", "Ethos_U55_Deep_Embedded", "Shared_Sram").size is None
    assert scratch_limit("ethos-u55-128", *DEFAULT_CONFIGS["ethos-u55"], "my.ini").size is None
    for family in ("ethos-u65", "ethos-u85"):
        assert scratch_limit(f"{family}-256", *DEFAULT_CONFIGS[family]).size is None
    # an explicit max_scratch_size wins
    assert scratch_limit("ethos-u85-256", *DEFAULT_CONFIGS["ethos-u85"], explicit=5).size == 5


@pytest.mark.parametrize(
    ("text", "size"),
    [("2M", 2 << 20), ("512k", 512 << 10), ("100", 100), (None, None)],
)
def test_max_scratch_size_option_reads_sizes(text, size) -> None:
    from etu.tui.cli.compile import parse_size

    assert parse_size(text, "--max-scratch-size") == size


@pytest.mark.parametrize("text", ["0", "two", "1G", "-5", "9" * 40])
def test_a_bad_max_scratch_size_is_refused(text) -> None:
    from etu.runner.compile_request import RequestError
    from etu.tui.cli.compile import parse_size

    with pytest.raises(RequestError, match="--max-scratch-size"):
        parse_size(text, "--max-scratch-size")


def test_a_compile_request_keeps_its_cache_key_without_a_limit() -> None:
    from etu.runner.compile_request import CompileRequest, RequestError

    plain = CompileRequest("add").resolved()
    assert "max_scratch_size" not in plain.to_json()  # earlier jobs' keys stay the same
    limited = CompileRequest("add", max_scratch_size=1 << 20).resolved()
    assert CompileRequest.from_json(limited.to_json()) == limited
    with pytest.raises(RequestError):
        CompileRequest("add", max_scratch_size=0).resolved()


def test_a_compile_spec_that_takes_no_limit_gets_none() -> None:
    from etu.runner.aot import scratch_limit_argument

    class Old:
        def __init__(self, target, system_config=None): ...

    class New:
        def __init__(self, target, system_config=None, max_scratch_size=None): ...

    assert scratch_limit_argument(Old, 1024) == {}
    assert scratch_limit_argument(New, 1024) == {"max_scratch_size": 1024}
    assert scratch_limit_argument(New, None) == {}


# --------------------------------------------------------------------------- TOSA profiles


def test_upstreams_profile_strings_are_known() -> None:
    for family, profile in TOSA_PROFILES.items():
        assert tosa_profile_problem(profile, f"{family}-128") is None
    assert tosa_profile_problem("TOSA-1.0+FP+bf16") is None
    assert tosa_profile_problem("TOSA-1.1+INT+int16+8k") is None
    assert tosa_profile_problem(None) is None


@pytest.mark.parametrize(
    ("text", "target", "says"),
    [
        ("TOSA-2.0+INT", None, "version 2.0"),
        ("TOSA-1.0+INT+fp8e4m3", None, "unknown extension fp8e4m3"),
        ("TOSA-1.0+int16", None, "names no profile"),
        ("TOSA-1.0+INT+int16+int4", "ethos-u55-128", "lacks the u55 subset"),
        ("tosa 1.0 int", None, "is not TOSA-<version>"),
        ("TOSA-1.0+INT+u56", None, "unknown extension u56"),
    ],
)
def test_an_unknown_profile_string_is_a_warning(text, target, says) -> None:
    problem = tosa_profile_problem(text, target)
    assert problem is not None and says in problem


def test_the_compile_defaults_are_upstreams() -> None:
    from etu.runner.compile_request import DEFAULTS, CompileRequest

    assert DEFAULTS == {
        "ethos-u55": ("Ethos_U55_High_End_Embedded", "Shared_Sram"),
        "ethos-u65": ("Ethos_U65_High_End", "Dedicated_Sram_384KB"),
        "ethos-u85": ("Ethos_U85_SYS_DRAM_Mid", "Sram_Only"),
    }
    for target in ("ethos-u55-128", "ethos-u65-256", "ethos-u85-256"):
        request = CompileRequest("add", target=target).resolved()
        family = target.rsplit("-", 1)[0]
        assert (request.system_config, request.memory_mode) == DEFAULT_CONFIGS[family]


def test_fit_accepts_upstreams_default_pairs_on_their_platform() -> None:
    """Fit's system-config check (the runner's CMake) takes each NPU's default pair, on the
    Corstone platform that NPU comes with."""
    from etu.parsers.fit import PLATFORM_NPUS, RUNNER_SYSTEM_CONFIGS, is_dedicated_sram

    for family, (config, mode) in DEFAULT_CONFIGS.items():
        platform, modes = RUNNER_SYSTEM_CONFIGS[config]
        assert family in PLATFORM_NPUS[platform]
        assert any(mode == m or (m.endswith("*") and is_dedicated_sram(mode)) for m in modes)


def test_a_summary_json_keeps_the_new_fields_typed() -> None:
    from etu.runner.session_fields import check_summary

    clean, notes = check_summary({"inferences": "many", "inference_count": [3]})
    assert "inferences" not in clean and "inference_count" not in clean and len(notes) == 2
    summary = LogSummary()
    assert summary.to_json()["inferences"] == [] and summary.to_json()["inference_count"] is None


def test_the_delegates_view_shows_the_profile_and_warns_on_an_unknown_one() -> None:
    """The demo's real delegate, then the same delegate with its ``tosa_spec`` spec set to a
    string upstream does not make (as a newer or hand-made compile could write)."""
    from dataclasses import replace

    from etu.parsers.pte import CompileSpec, open_program
    from etu.tui.widgets.delegates import payload_content

    with open_program(ROOT / "etu_tui" / "demo" / "demo_cnn.pte") as program:
        info = next(i for i in delegates(program) if i.payload is not None)
        shown = payload_content(program, info).plain
        assert "TOSA profile    TOSA-1.0+INT+int16+int4+u55" in shown and "⚠" not in shown
        specs = tuple(
            CompileSpec(s.key, b"TOSA-1.0+INT+int16+int4+u99") if s.key == "tosa_spec" else s
            for s in info.delegate.compile_specs
        )
        odd = replace(info, delegate=replace(info.delegate, compile_specs=specs))
        shown = payload_content(program, odd).plain
        assert "⚠ TOSA profile 'TOSA-1.0+INT+int16+int4+u99': unknown extension u99" in shown
