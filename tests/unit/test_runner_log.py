"""The runner-log parser on real published transcripts, on every format the runner prints,
and on hostile byte streams.

The expected facts per transcript were read off the files by hand (tests/data/transcripts,
copied with INDEX.tsv from the reference folder): what a person sees in the log is what
the parser must report.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from etu.parsers.runner_events import (
    AssertFailed,
    BundleIOResult,
    EtdumpBlock,
    EtdumpError,
    Event,
    FvpBanner,
    FvpStopped,
    HardFault,
    InferenceFinished,
    InferenceStarted,
    InputsPrepared,
    LogLine,
    MemoryReport,
    MethodAllocatorSetUp,
    MethodLoaded,
    MethodSelected,
    MissingKernel,
    OutputTensor,
    PlannedBuffers,
    PmuReport,
    ProgramLoaded,
    PteLoaded,
    RunError,
    RunSucceeded,
    new_log_line,
)
from etu.parsers.runner_log import (
    BLANK_RUN,
    U55_EVENTS,
    U85_EVENTS_7,
    LogSummary,
    RunnerLogParser,
    parse_log_bytes,
    summarize,
)
from etu.parsers.status_codes import STATUS_NAMES, status_code, status_name

TRANSCRIPTS = Path(__file__).resolve().parent.parent / "data" / "transcripts"
ALL_LOGS = sorted(p.name for p in TRANSCRIPTS.glob("*.log"))


def load(name: str) -> bytes:
    return (TRANSCRIPTS / name).read_bytes()


def events_of(name: str, **options) -> list[Event]:
    return parse_log_bytes(load(name), **options)


def only(events: list[Event], kind: type) -> list:
    return [e for e in events if type(e) is kind]


def one(events: list[Event], kind: type):
    found = only(events, kind)
    assert len(found) == 1, f"{kind.__name__}: {found}"
    return found[0]


def feed_in_pieces(data: bytes, cuts: list[int], **options) -> list[Event]:
    parser = RunnerLogParser(**options)
    events: list[Event] = []
    last = 0
    for cut in sorted(set(cuts)):
        events += parser.feed(data[last:cut])
        last = cut
    events += parser.feed(data[last:])
    events += parser.close()
    return events


def rebuilt(events: list[Event]) -> bytes:
    return b"".join(e.raw + e.end for e in events if type(e) is LogLine)


def blank_runs_merged(events: list[Event]) -> list[Event]:
    """Consecutive empty lines as one event: where a chunk ends inside a long run of empty
    lines the parser gives two runs (it never holds a flood back), else the same events."""
    merged: list[Event] = []
    for event in events:
        last = merged[-1] if merged else None
        if (
            type(event) is LogLine and not event.raw and event.end and not event.partial
            and type(last) is LogLine and not last.raw and last.end and not last.partial
            and last.stream == event.stream
        ):  # fmt: skip
            merged[-1] = dataclasses.replace(
                last, end=last.end + event.end, lines=last.lines + event.lines
            )
        else:
            merged.append(event)
    return merged


# --------------------------------------------------------------------------- the corpus


def test_every_reference_transcript_is_in_the_test_data():
    index = (TRANSCRIPTS / "INDEX.tsv").read_text().splitlines()
    listed = sorted(line.split("\t")[0] for line in index[1:] if line.strip())
    assert listed == ALL_LOGS
    assert len(ALL_LOGS) == 23


@pytest.mark.parametrize("name", ALL_LOGS)
def test_transcript_bytes_round_trip_and_line_numbers(name):
    data = load(name)
    events = parse_log_bytes(data)
    lines = only(events, LogLine)
    assert rebuilt(events) == data
    assert [line.line_no for line in lines] == list(range(1, len(lines) + 1))
    assert summarize(events)["lines"] == len(data.splitlines())
    for event in events:  # every event serialises, with its type
        record = event.to_json()
        assert record["type"] == type(event).__name__
        json.dumps(record)
    # LogLine first: every derived event points at a line already emitted.
    seen = 0
    for event in events:
        if type(event) is LogLine:
            seen = event.line_no
        else:
            assert 1 <= event.line_no <= seen


# Expected summary per transcript, read off the files.
VERDICTS = {
    "01_et_docs_v0.1_softmax_portable_cs300.log": "success",  # then CPU time exceeded
    "02_et_docs_v0.1_add_delegated_cs300.log": "success",  # then CPU time exceeded
    "03_et_docs_v0.3_mv2_delegated_cs300.log": "success",
    "04_et_docs_v0.4_mv2_pmu_allocator.log": "success",
    "07_et_pr12353_add_u55_allocator.log": "success",
    "08_zephyr_fvp_tutorial_add_cs300_u55.log": "success",  # then simulated time exceeded
    "09_zephyr_docker_tutorial_add_u85_runsh.log": "success",
    "12_rp2040_linear_hang_at_execute.log": "incomplete",  # hangs in execute
    "13_rp2040_mv2_alloc_failed_0x21.log": "error",
    "14_learnpath_rps_cs320_u85_partial.log": "incomplete",
    "15_learnpath_tinyml_intro_cs320_u85_partial.log": "incomplete",
    "17_zephyr_docs_hello_executorch_expected.log": "success",
    "20_tinycnn_psoc_edge_e84_rtthread_board.log": "incomplete",  # custom runtime's own words
    "22_et_docs_zephyr_alif_e8_mv2_v1.log": "success",  # ExecuTorch's Zephyr mv2 sample
    "24_issue7568_semihosting_cpu_time_exceeded_partial.log": "timeout",
    "25_issue9356_add_u55_pmu_partial.log": "incomplete",
    "26_issue13399_kernel_not_found_softmax_partial.log": "error",
    "27_ultralytics24171_zephyr_u85_planned_buffer_alloc_failed.log": "error",
    "30_issue13038_add2_u85_fixed_format_partial.log": "incomplete",
    "31_issue22316_fvp_launch_fail_wrong_arch.log": "incomplete",  # "No problems found!" lies
    "33_issue2533_mbedos_nucleo_wb55_invalid_program_0x23.log": "error",
    "35_issue16784_board_m55_u55_ethosu_driver_log.log": "incomplete",
    "36_learnpath_alif_e8_u85_mv2_runner_rtt.log": "incomplete",  # custom runner
}


def test_every_transcript_has_an_expected_verdict():
    assert sorted(VERDICTS) == ALL_LOGS


@pytest.mark.parametrize("name", ALL_LOGS)
def test_transcript_verdict(name):
    assert summarize(events_of(name))["verdict"] == VERDICTS[name]


def test_01_portable_softmax_v01():
    events = events_of("01_et_docs_v0.1_softmax_portable_cs300.log")
    banner = one(events, FvpBanner)
    assert (banner.model, banner.version, banner.date) == (
        "Ethos-U",
        "136b7d75",
        "Apr 12 2023 13:44:01",
    )
    pte = one(events, PteLoaded)
    assert (pte.size, pte.address, pte.line_no) == (960, None, 5)
    assert one(events, PlannedBuffers).sizes == (32,)
    assert one(events, PlannedBuffers).mem_ids == (1,)  # printed index 0
    assert one(events, MethodLoaded).name == "forward"
    out = one(events, OutputTensor)
    assert (out.index, out.dtype, out.values, out.numel) == (0, None, (0.5,) * 4, 4)
    stops = [(s.kind, s.exit_code) for s in only(events, FvpStopped)]
    assert stops == [("exit", 0), ("shutdown_tag", None), ("time_limit", None)]
    # The old runner.cpp format has no brackets and no function.
    line = only(events, LogLine)[4]
    assert (line.level, line.file, line.line, line.function) == ("I", "runner.cpp", 64, None)
    summary = summarize(events)
    assert summary["model"] == {"pte_size": 960, "methods": 1, "method": "forward"}
    assert summary["outputs"] == {"0": 4}
    assert summary["errors"] == []


def test_02_delegated_add_v01_int_outputs():
    events = events_of("02_et_docs_v0.1_add_delegated_cs300.log")
    assert one(events, PteLoaded).size == 2208
    assert one(events, PlannedBuffers).sizes == (64,)
    out = one(events, OutputTensor)
    assert out.values == (2, 2, 2, 2, 2)
    assert all(type(v) is int for v in out.values)
    assert summarize(events)["outputs"] == {"0": 5}
    assert only(events, FvpStopped)[-1].reason == "CPU time has been exceeded"


def test_03_mv2_elided_output_dump():
    events = events_of("03_et_docs_v0.3_mv2_delegated_cs300.log")
    pte = one(events, PteLoaded)
    assert (pte.address, pte.size) == (0x70000000, 4556832)
    assert one(events, PlannedBuffers).sizes == (752640,)
    out = one(events, OutputTensor)  # "...(Skipped)" does not split the dump
    assert out.numel == 1000
    assert out.printed == 7
    assert out.values[:3] == (-0.639322, 0.169232, -0.451286)
    assert out.values[-1] == 1.203430
    assert one(events, RunSucceeded).text == "Program complete, exiting."
    assert summarize(events)["outputs"] == {"0": 1000}


def test_04_pmu_report_and_allocators():
    events = events_of("04_et_docs_v0.4_mv2_pmu_allocator.log")
    assert one(events, MethodAllocatorSetUp).size == 62914560
    pmu = one(events, PmuReport)
    assert pmu.line_no == 14
    assert pmu.npu_inferences == 1
    assert pmu.npu_cycles == 5920305
    assert pmu.cpu_cycles == 6925114
    assert pmu.operator_cycles == {"ethos-u": 1498202}
    assert pmu.operators_total == 1498202
    assert pmu.cpu_wait_for_npu_cycles == 729
    assert (pmu.cpu_ratio, pmu.npu_ratio) == (99.99, 0.01)
    assert pmu.delegations is None  # no such line before 1.0
    assert pmu.names_from == "log"
    assert pmu.counters == {
        "ETHOSU_PMU_EXT0_RD_DATA_BEAT_RECEIVED": 359921,
        "ETHOSU_PMU_EXT1_RD_DATA_BEAT_RECEIVED": 0,
        "ETHOSU_PMU_EXT0_WR_DATA_BEAT_WRITTEN": 0,
        "ETHOSU_PMU_NPU_IDLE": 503,
    }
    mem = one(events, MemoryReport)
    pool = mem.pools["method_allocator"]
    assert (pool.used, pool.size, pool.free, pool.percent) == (1355722, 62914560, 61558838, 2)
    temp = mem.pools["temp_allocator"]  # 0.5: temp_allocator_used
    assert (temp.used, temp.size) == (0, 1048576)
    assert (mem.loaded_size, mem.planned, mem.loaded, mem.input, mem.executor) == (
        4425968,
        752640,
        966,
        602116,
        0,
    )
    summary = summarize(events)
    assert summary["pmu"] == [
        {
            "npu_inferences": 1,
            "npu_cycles": 5920305,
            "cpu_cycles": 6925114,
            "counters": pmu.counters,
            "cpu_cycles_note": None,  # a figure that is not 0 needs none
        }
    ]
    assert summary["allocators"] == {
        "method_allocator": {"used": 1355722, "size": 62914560},
        "planned": 752640,
        "loaded": 966,
        "input": 602116,
        "executor": 0,
        "temp_allocator": {"size": 1048576},
    }
    assert summary["model"]["pte_size"] == 4425968
    assert summary["outputs"] == {"0": 1000}
    # Mixed prefix styles in one file: "I [executorch:…]" and "I executorch:…]".
    finished = one(events, InferenceFinished)
    assert finished.line_no == 37


def test_07_allocators_typed_outputs_and_eot():
    events = events_of("07_et_pr12353_add_u55_allocator.log")
    mem = one(events, MemoryReport)
    assert (mem.program_size, mem.loaded_size) == (2064, 2064)
    assert mem.pools["method_allocator"].used == 320
    assert mem.pools["temp_allocator"].used == 64  # 0.7: peak_temp_allocator
    out = one(events, OutputTensor)
    assert (out.dtype, out.values) == ("int", (2, 2, 2, 2, 2))
    kinds = [s.kind for s in only(events, FvpStopped)]
    assert kinds == ["eot", "stopped", "stopped", "script"]
    assert only(events, FvpStopped)[2].sim_time == "3440 ns"
    line = only(events, LogLine)[0]
    assert (line.file, line.line, line.function) == ("arm_executor_runner.cpp", 762, "main")
    summary = summarize(events)
    assert summary["allocators"] == {
        "method_allocator": {"used": 320, "size": 62914560},
        "planned": 64,
        "loaded": 232,
        "input": 24,
        "executor": 0,
        "temp_allocator": {"size": 2097152},
    }
    assert summary["model"]["pte_size"] == 2064


def test_08_zephyr_runner_variant():
    events = events_of("08_zephyr_fvp_tutorial_add_cs300_u55.log")
    pte = one(events, PteLoaded)
    assert (pte.address, pte.size) == (0x70000000, 944)
    assert one(events, MethodAllocatorSetUp).size == 512
    mem = one(events, MemoryReport)
    pool = mem.pools["method_allocator"]
    assert (pool.used, pool.size, pool.free, pool.percent) == (344, 512, 168, 67)
    assert one(events, RunSucceeded).text == "SUCCESS: Program complete, exiting."
    stop = [s for s in only(events, FvpStopped) if s.kind == "time_limit"]
    assert [s.reason for s in stop] == ["Simulated time has been exceeded"]
    assert summarize(events)["outputs"] == {}


def test_09_tail_of_run_sh_log():
    events = events_of("09_zephyr_docker_tutorial_add_u85_runsh.log")
    assert one(events, OutputTensor).numel == 5
    assert summarize(events)["errors"] == []


def test_12_hang_at_execute():
    events = events_of("12_rp2040_linear_hang_at_execute.log")
    pte = one(events, PteLoaded)
    assert (pte.address, pte.size) == (0x200014B0, 1596)
    assert one(events, PlannedBuffers).sizes == (144,)
    assert one(events, InputsPrepared).line_no == 14
    assert one(events, InferenceStarted).line_no == 15
    assert only(events, InferenceFinished) == []


def test_13_allocation_failure_0x21():
    events = events_of("13_rp2040_mv2_alloc_failed_0x21.log")
    assert one(events, PlannedBuffers).sizes == (1785600,)
    loaded = one(events, MethodLoaded)
    assert (loaded.ok, loaded.status) == (False, 0x21)
    fail = one(events, AssertFailed)
    assert (fail.function, fail.condition, fail.message) == ("CheckOk", "hasValue_", None)
    errors = summarize(events)["errors"]
    assert [(e["status"], e["status_name"]) for e in errors] == [
        (None, None),
        (None, None),
        (0x21, "MemoryAllocationFailed"),
        (None, None),
    ]
    assert errors[0]["text"].startswith("Memory allocation failed: 1785600B requested")
    assert errors[3]["text"] == "In function CheckOk(), assert failed: hasValue_"


def test_14_15_30_partial_starts():
    e14 = events_of("14_learnpath_rps_cs320_u85_partial.log")
    assert one(e14, PteLoaded).size == 433968
    assert one(e14, PlannedBuffers).sizes == (3920,)
    last = only(e14, LogLine)[-1]
    assert (last.file, last.function, last.message) == (
        "EthosUBackend.cpp",
        "init",
        "data:0x70000070",
    )
    assert one(events_of("15_learnpath_tinyml_intro_cs320_u85_partial.log"), PteLoaded).size == 3360
    e30 = events_of("30_issue13038_add2_u85_fixed_format_partial.log")
    pte = one(e30, PteLoaded)
    assert (pte.address, pte.size) == (0x74000000, 2208)
    assert one(e30, MethodSelected).name == "forward"
    assert one(e30, MethodAllocatorSetUp).size == 62914560


def test_17_zephyr_hello_output_format():
    events = events_of("17_zephyr_docs_hello_executorch_expected.log")
    out = one(events, OutputTensor)
    assert (out.index, out.dtype, out.numel, out.values) == (0, "Float", 5, (4.0,) * 5)
    assert summarize(events)["outputs"] == {"0": 5}


def test_20_literal_zu_and_no_final_newline():
    events = events_of("20_tinycnn_psoc_edge_e84_rtthread_board.log")
    lines = only(events, LogLine)
    mangled = lines[6]
    assert (mangled.level, mangled.file, mangled.line) == ("I", "EthosUBackend.cpp", None)
    assert lines[-1].end == b""
    assert lines[-1].text == "[TinyCNN] inference PASS"
    assert summarize(events)["errors"] == []


def test_22_zephyr_mv2_sample():
    events = events_of("22_et_docs_zephyr_alif_e8_mv2_v1.log")
    pte = one(events, PteLoaded)
    assert (pte.address, pte.size) == (0x8004B290, 3490912)
    assert one(events, ProgramLoaded).methods == 1
    assert one(events, MethodAllocatorSetUp).size == 1572864
    assert one(events, InferenceFinished).duration_ms == 19
    assert one(events, RunSucceeded).text == "MobileNetV2 Demo Complete"
    line = only(events, LogLine)[7]
    assert (line.file, line.line, line.function) == ("main.cpp", None, None)


def test_24_time_limit_with_no_runner_output():
    events = events_of("24_issue7568_semihosting_cpu_time_exceeded_partial.log")
    models = [b.model for b in only(events, FvpBanner)]
    assert models == ["FVP_Corstone_SSE-300_Ethos-U55", "Ethos-U"]
    stops = only(events, FvpStopped)
    assert stops[0].kind == "time_limit"
    assert stops[-1].sim_time == "1300 ns"
    assert not any(line.origin == "runtime" for line in only(events, LogLine))


def test_25_cut_pmu_report():
    events = events_of("25_issue9356_add_u55_pmu_partial.log")
    pmu = one(events, PmuReport)
    assert (pmu.npu_inferences, pmu.npu_cycles, pmu.cpu_cycles) == (1, 411, 2585)
    assert (pmu.cpu_wait_for_npu_cycles, pmu.cpu_ratio, pmu.npu_ratio) == (256, 90.10, 9.90)
    assert pmu.operator_cycles == {"ethos-u": 0}
    # The event list line is cut off: without the NPU the counter keeps its index name…
    assert pmu.counters == {"ethosu_pmu_cntr0": 6}
    # …and with it, it takes the U55 default list's name.
    named = one(events_of("25_issue9356_add_u55_pmu_partial.log", npu="ethos-u55-128"), PmuReport)
    assert named.counters == {"ETHOSU_PMU_AXI0_RD_DATA_BEAT_RECEIVED": 6}
    assert named.names_from == "default"


def test_26_missing_kernel():
    events = events_of("26_issue13399_kernel_not_found_softmax_partial.log")
    assert one(events, MissingKernel).operator == "aten::exp.out"
    assert one(events, PteLoaded).size == 4616
    assert one(events, PlannedBuffers).sizes == (48,)
    errors = summarize(events)["errors"]
    assert [(e["status"], e["status_name"]) for e in errors] == [(0x14, "OperatorMissing")]
    line = only(events, LogLine)[1]
    assert line.function == "runner_init"


def test_27_planned_buffer_allocation_assert():
    events = events_of("27_ultralytics24171_zephyr_u85_planned_buffer_alloc_failed.log")
    fail = one(events, AssertFailed)
    assert (fail.function, fail.condition) == ("main", "buffer != nullptr")
    assert fail.message == "Could not allocate memory for memory planned buffer size 6144000"
    assert one(events, RunError).text.startswith("Memory allocation failed: 6144000B")
    assert len(summarize(events)["errors"]) == 2


def test_31_fvp_never_started():
    events = events_of("31_issue22316_fvp_launch_fail_wrong_arch.log")
    stops = only(events, FvpStopped)
    assert [s.kind for s in stops] == ["launch_failed", "script"]
    assert stops[1].exit_code == 0  # run_fvp.sh's "Simulation complete, 0" is no evidence
    assert summarize(events)["verdict"] == "incomplete"


def test_33_invalid_program_0x23():
    events = events_of("33_issue2533_mbedos_nucleo_wb55_invalid_program_0x23.log")
    errors = summarize(events)["errors"]
    assert [(e["status"], e["status_name"]) for e in errors] == [
        (None, None),
        (0x23, "InvalidProgram"),
        (None, None),
    ]
    assert errors[0]["text"].startswith("Program identifier 'X")
    assert one(events, PteLoaded).size == 960


def test_35_driver_lines():
    events = events_of("35_issue16784_board_m55_u55_ethosu_driver_log.log")
    lines = only(events, LogLine)
    assert [(x.level, x.origin) for x in lines] == [("I", "driver"), ("I", "driver")]
    assert lines[0].message == "invoke_async: base_addr[0]=0x00000000_3ab80b40 size=3484864 "
    assert len(events) == 2


def test_36_custom_pal_prefix():
    events = events_of("36_learnpath_alif_e8_u85_mv2_runner_rtt.log")
    pal = [x for x in only(events, LogLine) if x.level]
    assert [(x.level, x.message) for x in pal] == [("I", "data:0x800432b0")]


# --------------------------------------------------------------------------- chunking


@pytest.mark.parametrize("name", ALL_LOGS)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_chunking_gives_the_same_events(name, data):
    log = load(name)
    whole = [e.to_json() for e in parse_log_bytes(log)]
    cuts = data.draw(st.lists(st.integers(0, len(log)), max_size=40))
    pieces = feed_in_pieces(log, cuts)
    assert [e.to_json() for e in pieces] == whole


def test_byte_by_byte_feeding_gives_the_same_events():
    for name in ALL_LOGS:
        log = load(name)
        parser = RunnerLogParser()
        events = []
        for i in range(len(log)):
            events += parser.feed(log[i : i + 1])
        events += parser.close()
        assert events == parse_log_bytes(log), name


def test_crlf_transcripts_parse_like_lf():
    for name in ALL_LOGS:
        lf = parse_log_bytes(load(name))
        crlf = parse_log_bytes(load(name).replace(b"\n", b"\r\n"))
        strip = [{k: v for k, v in e.to_json().items() if k not in ("end", "raw_hex")} for e in lf]
        assert [
            {k: v for k, v in e.to_json().items() if k not in ("end", "raw_hex")} for e in crlf
        ] == strip, name


# Bytes that stress the line splitter and the decoder.
NASTY = st.sampled_from(
    [b"\n", b"\r", b"\r\n", b"\n\r", b"\x04", b"\xff", b"\xe2\x99", b"\xa6", b"\xc3", b"\x1b[1;31m",
     b"\r" * 17, b"\r\n" * 20 + b"\n" * 3]
)  # fmt: skip
TEXT = st.sampled_from(
    [
        b"I [executorch:arm_executor_runner.cpp:12 main()] Model executed successfully.",
        b"Output[0][1]: (float) 0.5",
        b"E: NPU error",
        b"#[RUN THIS]",
        b'echo "QUJD" | base64 -d >etdump.bin',
        b"#[END]",
        b"Hard fault. irq=-13, pc=0x1, lr=0x2",
        b"abc",
        b"",
    ]
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    parts=st.lists(st.one_of(NASTY, TEXT, st.binary(max_size=12)), max_size=60),
    data=st.data(),
)
def test_exact_bytes_under_any_split(parts, data):
    log = b"".join(parts)
    cuts = data.draw(st.lists(st.integers(0, len(log)), max_size=20))
    events = feed_in_pieces(log, cuts, max_line=16)
    assert rebuilt(events) == log
    assert blank_runs_merged(events) == blank_runs_merged(parse_log_bytes(log, max_line=16))
    for line in only(events, LogLine):
        assert len(line.raw) <= 16
        if line.lines > 1:  # a run of empty lines: every terminator, counted
            assert not line.raw and line.lines >= BLANK_RUN
            assert len(re.findall(rb"\r\n|\r|\n", line.end)) == line.lines
        else:
            assert line.end in (b"", b"\n", b"\r", b"\r\n")
        assert "\x04" not in line.text


def test_line_terminators():
    events = parse_log_bytes(b"a\nb\r\nc\rd\n\re")
    lines = only(events, LogLine)
    assert [(x.text, x.end) for x in lines] == [
        ("a", b"\n"),
        ("b", b"\r\n"),
        ("c", b"\r"),
        ("d", b"\n"),
        ("", b"\r"),
        ("e", b""),
    ]
    # A CR at the end of a chunk waits for the next byte before it is a line end.
    parser = RunnerLogParser()
    assert parser.feed(b"x\r") == []
    assert parser.pending_text == "x"
    assert [e.end for e in parser.feed(b"\ny")] == [b"\r\n"]
    assert [e.text for e in parser.close()] == ["y"]


def test_invalid_utf8_keeps_raw_bytes():
    raw = b"I [executorch:main.cpp:1] caf\xc3 \xff end"
    line = only(parse_log_bytes(raw + b"\n"), LogLine)[0]
    assert line.raw == raw
    assert "\ufffd" in line.text
    assert bytes.fromhex(line.to_json()["raw_hex"]) == raw
    # A multi-byte character split across chunks decodes whole.
    events = feed_in_pieces("Output[0][0]: (float) 1.0 ✓\n".encode(), [25, 26, 27])
    assert only(events, LogLine)[0].text.endswith("✓")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=400))
def test_garbage_never_raises(data):
    events = parse_log_bytes(data)
    assert rebuilt(events) == data
    summarize(events)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_mutated_transcripts_never_raise(data):
    """Real lines with bytes flipped, dropped or repeated: the handlers see odd values."""
    name = data.draw(st.sampled_from(ALL_LOGS))
    log = bytearray(load(name))
    for _ in range(data.draw(st.integers(1, 30))):
        at = data.draw(st.integers(0, max(len(log) - 1, 0)))
        action = data.draw(st.sampled_from(["flip", "drop", "dup", "digit"]))
        if not log:
            break
        if action == "flip":
            log[at] = data.draw(st.integers(0, 255))
        elif action == "drop":
            del log[at]
        elif action == "dup":
            log[at:at] = log[at : at + data.draw(st.integers(1, 40))]
        else:
            log[at:at] = data.draw(st.sampled_from([b"zu", b"999999999999", b"-1", b"?.??", b"]"]))
    events = parse_log_bytes(bytes(log), npu="U85")
    assert rebuilt(events) == bytes(log)
    json.dumps(summarize(events))
    for event in events:
        json.dumps(event.to_json())


# --------------------------------------------------------------------------- long lines


def test_line_without_newline_is_bounded():
    parser = RunnerLogParser(max_line=1024)
    events: list[Event] = []
    sent = b""
    for i in range(2000):  # 1 MB, never a newline, in uneven chunks
        chunk = bytes([65 + i % 26]) * (1 + (i * 7) % 900)
        sent += chunk
        events += parser.feed(chunk)
        assert len(parser.pending_text) <= 1024
    events += parser.close()
    lines = only(events, LogLine)
    assert all(x.partial for x in lines)
    assert all(len(x.raw) <= 1024 for x in lines)
    assert {x.line_no for x in lines} == {1}
    assert rebuilt(events) == sent
    # The same bytes at once are cut at the same places.
    assert events == parse_log_bytes(sent, max_line=1024)


def test_long_line_is_cut_on_a_utf8_boundary_and_numbering_continues():
    text = ("é" * 40).encode() + b"\nnext\n"
    events = parse_log_bytes(text, max_line=15)
    lines = only(events, LogLine)
    assert all("\ufffd" not in x.text for x in lines)
    assert "".join(x.text for x in lines if x.line_no == 1) == "é" * 40
    assert lines[-1].text == "next"
    assert lines[-1].line_no == 2
    assert not lines[-1].partial


def test_default_limit_is_64_kib():
    line = b"x" * (64 * 1024 + 10)
    lines = only(parse_log_bytes(line + b"\n"), LogLine)
    assert [len(x.raw) for x in lines] == [64 * 1024, 10]
    assert [x.partial for x in lines] == [True, True]
    assert [x.end for x in lines] == [b"", b"\n"]


# --------------------------------------------------------------------------- ETDump


def etdump_bytes(size: int = 300) -> bytes:
    """A made-up size-prefixed flatcc buffer with the ETDump identifier."""
    body = bytes((i * 37 + 11) % 256 for i in range(size))
    return (size + 4).to_bytes(4, "little") + b"\x0c\x00\x00\x00" + b"ED00" + body


def etdump_log(blobs: dict[str, bytes], prefix: str = "I [executorch:a.cpp:1 f()] ") -> bytes:
    lines = [f"{prefix}[base64] buffer size: 123", "#[RUN THIS]"]
    for name, blob in blobs.items():
        lines.append(f"# Writing {name} [base64]")
        lines.append(f'echo "{base64.b64encode(blob).decode()}" | base64 -d >{name}')
    lines += [
        "# Generate cpu cycle table with:",
        "python3 -m devtools.inspector.inspector_cli --etdump_path etdump.bin "
        "--source_time_scale cycles --target_time_scale cycles",
        "#[END]",
        f"{prefix}Program complete, exiting.",
    ]
    return ("\n".join(lines) + "\n").encode()


def test_etdump_block_round_trip():
    dump = etdump_bytes()
    debug = bytes(range(256)) * 3
    events = parse_log_bytes(etdump_log({"debug_buffer.bin": debug, "etdump.bin": dump}))
    blocks = only(events, EtdumpBlock)
    assert [(b.file_name, b.data, b.index) for b in blocks] == [
        ("debug_buffer.bin", debug, 0),
        ("etdump.bin", dump, 0),
    ]
    assert blocks[1].identifier == "ED00"
    assert blocks[0].identifier is None
    assert only(events, EtdumpError) == []
    assert one(events, RunSucceeded)  # the block closed: later lines parse as usual
    assert summarize(events)["etdump_blocks"] == 2
    record = blocks[1].to_json()
    assert base64.b64decode(record["data"]) == dump
    assert all(x.origin == "etdump" for x in only(events, LogLine)[1:9])


def test_etdump_second_block_gets_a_numbered_name_and_unsafe_names_are_cleaned():
    log = etdump_log({"etdump.bin": b"one"}) + etdump_log({"../../x/evil name.bin": b"two"})
    blocks = only(parse_log_bytes(log), EtdumpBlock)
    assert [(b.file_name, b.data, b.index) for b in blocks] == [
        ("etdump.bin", b"one", 0),
        ("evil-1", b"two", 1),
    ]


def test_etdump_base64_longer_than_a_line_limit():
    dump = etdump_bytes(5000)
    log = etdump_log({"etdump.bin": dump})
    for cuts in ([], list(range(0, len(log), 97))):
        events = feed_in_pieces(log, cuts, max_line=256)
        assert one(events, EtdumpBlock).data == dump
        assert rebuilt(events) == log


def test_etdump_corrupt_and_cut_blocks_are_error_events():
    corrupt = b'#[RUN THIS]\necho "QUJD*RA==" | base64 -d >etdump.bin\n#[END]\n'
    error = one(parse_log_bytes(corrupt), EtdumpError)
    assert error.file_name == "etdump.bin"
    assert "base64" in error.reason
    cut = b'#[RUN THIS]\necho "QUJDRA==" | base64 -d >etdump.bin\n'  # no #[END]
    events = parse_log_bytes(cut)
    assert one(events, EtdumpBlock).data == b"ABCD"
    assert "not closed" in one(events, EtdumpError).reason
    truncated = b'#[RUN THIS]\necho "QUJDRA==\n#[END]\n'  # closing quote lost on the UART
    assert "cut" in one(parse_log_bytes(truncated), EtdumpError).reason
    one_extra = b'#[RUN THIS]\necho "QUJDR" | base64 -d >etdump.bin\n#[END]\n'  # 5 chars
    assert one(parse_log_bytes(one_extra), EtdumpError)
    too_big = etdump_log({"etdump.bin": bytes(3000)})
    events = parse_log_bytes(too_big, max_line=128, max_etdump_text=1000)
    assert "longer than" in one(events, EtdumpError).reason


def test_etdump_older_formats():
    blob = b"\x00\x01\x02 ETDump"
    b64 = base64.b64encode(blob).decode()
    v07 = f'#---\necho "{b64}" | base64 -d >etdump.bin\npython3 -m inspector\n#---\n'
    assert one(parse_log_bytes(v07.encode()), EtdumpBlock).data == blob
    v06 = (
        "I [executorch:arm_executor_runner.cpp:9] Writing etdump.bin [base64]\n"
        f'#---\nbase64 -i -d <<<"\\\n{b64[:8]}\\\n{b64[8:]}\\\n" >etdump.bin\n'
        "python3 -m inspector\n#---\n"
    )
    assert one(parse_log_bytes(v06.encode()), EtdumpBlock).data == blob


# --------------------------------------------------------------------------- formats by version


def runner(message: str, level: str = "I", where: str = "arm_executor_runner.cpp:100 main()"):
    return f"{level} [executorch:{where}] {message}"


MAIN_RUN = "\n".join(
    [
        runner("PTE @ 0x70000000 [----ET12]"),
        runner("PTE Model data loaded. Size: 2064 bytes."),
        runner("Model buffer loaded, has 2 methods"),
        runner("Running method forward"),
        runner("Setup Method allocator pool. Size: 62914560 bytes."),
        runner("Setup planned FAST_MEMORY_REGION pool. Size: 1048576 bytes."),
        runner("Setting up planned buffer with mem_id=1, size 64."),
        runner("Setting up planned buffer with mem_id=2, size 0."),
        runner("Setting up planned buffer with mem_id=3, size 4096."),
        runner("data:0x70000070", where="EthosUBackend.cpp:120 init()"),
        runner("Method 'forward' loaded."),
        runner("Preparing inputs..."),
        runner("Input prepared."),
        runner("Starting running 10 inferences..."),
        runner("NPU Inferences : 10", where="arm_perf_monitor.cpp:160 StopMeasurements()"),
        runner("NPU delegations: 20 (2.00 per inference)", where="arm_perf_monitor.cpp:1 f()"),
        runner("Profiler report, CPU cycles per operator:", where="arm_perf_monitor.cpp:2 f()"),
        runner(
            "ethos-u : cycle_cnt : 5000 cycles (500.00 per inference)",
            where="arm_perf_monitor.cpp:3 f()",
        ),
        runner(
            "Operator(s) total: 5000 CPU cycles (500.00 per inference)",
            where="arm_perf_monitor.cpp:4 f()",
        ),
        runner(
            "Inference runtime: 0 CPU cycles total (0.00 per inference)",
            where="arm_perf_monitor.cpp:5 f()",
        ),
        runner("Inference CPU ratio: ?.?? %", where="arm_perf_monitor.cpp:6 f()"),
        runner("Inference NPU ratio: ?.?? %", where="arm_perf_monitor.cpp:7 f()"),
        runner("Ethos-U PMU report:", where="arm_perf_monitor.cpp:8 f()"),
        runner("ethosu_pmu_cycle_cntr :  12345 (1234.50 per inference)", where="a.cpp:9 f()"),
        *(
            runner(f"ethosu_pmu_cntr{i} : {100 + i} ({10 + i}.00 per inference)", where="a:9 f()")
            for i in range(7)
        ),
        runner(
            "Ethos-U PMU Events:[" + ", ".join(U85_EVENTS_7) + "]",
            where="arm_perf_monitor.cpp:10 f()",
        ),
        runner("10 inferences finished"),
        runner("1 outputs: "),
        "Output[0][0]: (float) 0.250000",
        "Output[0][1]: (float) -1.500000",
        "Output[0][2]: (bool) true  (0x1)",
        runner("Model run: 1"),
        runner("Model run: 1"),
        runner("model_pte_program_size:     2064 bytes."),
        runner("model_pte_loaded_size:      2064 bytes."),
        runner("method_allocator_used:     320 / 62914560  free: 62914240 ( used: 0 % ) "),
        runner("method_allocator_planned:  64 bytes"),
        runner("planned_fast_allocator:    4096 / 1048576 free: 1044480 ( used: 0 % ) "),
        runner("planned_fast_used:         4096 bytes"),
        runner("method_allocator_loaded:   232 bytes"),
        runner("method_allocator_input:    24 bytes"),
        runner("method_allocator_executor: 0 bytes"),
        runner("temp_allocator:            2097152"),
        runner("Program complete, exiting."),
        runner("\x04"),
    ]
)


def test_main_format_end_to_end():
    events = parse_log_bytes(MAIN_RUN.encode(), npu="ethos-u85-256")
    pte = one(events, PteLoaded)
    assert (pte.address, pte.identifier, pte.size) == (0x70000000, "ET12", 2064)
    pools = [(p.pool, p.size) for p in only(events, MethodAllocatorSetUp)]
    assert pools == [("method", 62914560), ("planned_fast", 1048576)]
    planned = one(events, PlannedBuffers)
    assert (planned.count, planned.mem_ids, planned.sizes, planned.total) == (
        3,
        (1, 2, 3),
        (64, 0, 4096),
        4160,
    )
    assert one(events, MethodLoaded).name == "forward"
    assert one(events, InferenceStarted).count == 10
    assert one(events, InferenceFinished).count == 10
    pmu = one(events, PmuReport)
    assert (pmu.npu_inferences, pmu.delegations, pmu.npu_cycles) == (10, 20, 12345)
    assert (pmu.cpu_cycles, pmu.cpu_ratio, pmu.npu_ratio) == (0, None, None)
    assert list(pmu.counters) == list(U85_EVENTS_7)
    assert pmu.counters["ETHOSU_PMU_WD_ACTIVE"] == 106
    out = one(events, OutputTensor)
    assert (out.dtype, out.values, out.numel) == ("float", (0.25, -1.5, True), 3)
    mem = one(events, MemoryReport)
    assert mem.temp_allocator_size == 2097152
    assert mem.planned_fast_used == 4096
    assert mem.pools["planned_fast_allocator"].used == 4096
    assert one(events, FvpStopped).kind == "eot"
    summary = summarize(events)
    assert summary["verdict"] == "success"
    assert summary["model"] == {"pte_size": 2064, "methods": 2, "method": "forward"}
    assert summary["allocators"]["temp_allocator"] == {"size": 2097152}
    assert summary["pmu"][0]["npu_cycles"] == 12345
    assert summary["outputs"] == {"0": 3}


def test_v05_v06_formats_without_function_names():
    log = "\n".join(
        [
            "I [executorch:arm_executor_runner.cpp:412] Model in 0x70000000 $",
            "I [executorch:arm_executor_runner.cpp:414] Model PTE file loaded. Size: 3360 bytes.",
            "I [executorch:arm_executor_runner.cpp:420] PTE in 0x70000000 \x01 Size: 3360 bytes",
            "I [executorch:arm_executor_runner.cpp:421] PTE Model data loaded. Size: 3360 bytes.",
            "I [executorch:arm_executor_runner.cpp:434] Setting up planned buffer 0, size 144.",
            "I [executorch:arm_executor_runner.cpp:434] Setting up planned buffer 1, size 16.",
            "I [executorch:arm_executor_runner.cpp:467] Method loaded.",
            "I [executorch:arm_executor_runner.cpp:485] Starting the model execution...",
            "I [executorch:arm_executor_runner.cpp:490] Model executed successfully.",
            "I [executorch:arm_executor_runner.cpp:500] 1 outputs: ",
            "Output[0][0]: (char) -3",
            "Output[0][1]: (char) 4",
            "Output[1]: Not Tensor",
        ]
    )
    events = parse_log_bytes(log.encode())
    assert [(p.address, p.size) for p in only(events, PteLoaded)] == [
        (0x70000000, 3360),
        (0x70000000, 3360),
    ]
    planned = one(events, PlannedBuffers)
    assert (planned.mem_ids, planned.sizes) == ((1, 2), (144, 16))
    outs = only(events, OutputTensor)
    assert [(o.index, o.dtype, o.values, o.is_tensor) for o in outs] == [
        (0, "char", (-3, 4), True),
        (1, None, (), False),
    ]
    lines = only(events, LogLine)
    assert all(x.function is None for x in lines if x.origin == "runtime")
    assert summarize(events)["verdict"] == "success"


def test_literal_zu_everywhere():
    zu = "I [executorch:arm_executor_runner.cpp:zu main()] "
    pmu = "I [executorch:arm_perf_monitor.cpp:zu f()] "
    log = "\n".join(
        [
            zu + "PTE Model data loaded. Size: zu bytes.",
            zu + "Setting up planned buffer zu, size zu.",
            pmu + "NPU Inferences : 1",
            pmu + "ethosu_pmu_cycle_cntr : 77",
            pmu + "ethosu_pmu_cntrzd : 5",
            pmu + "ethosu_pmu_cntrzd : 6",
            pmu + "ethosu_pmu_cntrzd : 7",
            pmu + "ethosu_pmu_cntrzd : 8",
            zu + "method_allocator_used:     zu / zu  free: zu ( used: zu % ) ",
        ]
    )
    events = parse_log_bytes(log.encode())
    assert one(events, PteLoaded).size is None
    planned = one(events, PlannedBuffers)
    assert (planned.sizes, planned.mem_ids) == ((None,), (None,))
    pmu = one(events, PmuReport)
    assert pmu.counter_values == (5, 6, 7, 8)
    assert list(pmu.counters) == list(U55_EVENTS)  # four counters and no list: U55/U65
    pool = one(events, MemoryReport).pools["method_allocator"]
    assert (pool.used, pool.size) == (None, None)
    assert all(x.line is None for x in only(events, LogLine))


def test_bundleio_pass_and_fail():
    stats = [
        runner("=== Error stats for testset 0 ==="),
        runner(" mean_absolute_error: 0.001000"),
        runner(" max_absolute_error:  0.002000"),
        runner(" mean_relative_error: 0.003000"),
        runner(" max_relative_error:  0.004000"),
    ]
    passed = [
        *stats,
        runner("Model output match expected BundleIO bpte ref data."),
        runner("TEST: BundleIO index[0] Test_result: PASS"),
        runner("Program complete, exiting."),
    ]
    events = parse_log_bytes("\n".join(passed).encode())
    result = one(events, BundleIOResult)
    assert (result.index, result.passed) == (0, True)
    assert (result.mean_absolute_error, result.max_relative_error) == (0.001, 0.004)
    summary = summarize(events)
    assert summary["verdict"] == "success"
    assert summary["bundleio"][0]["passed"] is True

    failed = [
        *stats,
        runner(
            "Model output don't match expected BundleIO bpte ref data. rtol=0.010000 atol=0.020000",
            "E",
        ),
        runner("TEST: BundleIO index[0] Test_result: FAIL", "E"),
        runner("Bundle verification failed with status 0x12", "E"),
        runner("Model run: 0"),
        runner("In function main(), assert failed (model_ok == true): Problem running model", "F"),
    ]
    events = parse_log_bytes("\n".join(failed).encode())
    result = one(events, BundleIOResult)
    assert (result.passed, result.rtol, result.atol) == (False, 0.01, 0.02)
    summary = summarize(events)
    assert summary["verdict"] == "error"
    assert [(e["status"], e["status_name"]) for e in summary["errors"]] == [
        (0x12, "InvalidArgument"),
        (None, None),
        (None, None),
    ]


def test_error_lines_and_status_names():
    log = "\n".join(
        [
            runner("Loading of method forward failed with status 0x14"),
            runner("Method 'forward' loaded."),
            runner("kernel 'aten::add.out' not found.", "E", "operator_registry.cpp:256 f()"),
            runner("Missing operator: [3] aten::add.out", "E", "method.cpp:1 f()"),
            runner(
                "There are 1 instructions don't have corresponding operator registered. "
                "See logs for details",
                "E",
            ),
            runner(
                "In function run_model(), assert failed (status == Error::Ok): "
                "Execution of method forward failed with status 0x30",
                "F",
            ),
            runner("Init failed for backend EthosUBackend: 0x31", "E", "method.cpp:2 f()"),
            "E: NPU error(s) occured during inference.",
            "W: just a warning",
        ]
    )
    events = parse_log_bytes(log.encode())
    loaded = one(events, MethodLoaded)
    assert (loaded.ok, loaded.status) == (False, 0x14)
    kernels = only(events, MissingKernel)
    assert [(k.operator, k.op_index) for k in kernels] == [
        ("aten::add.out", None),
        ("aten::add.out", 3),
    ]
    fail = one(events, AssertFailed)
    assert (fail.function, fail.status, fail.status_name) == (
        "run_model",
        0x30,
        "DelegateInvalidCompatibility",
    )
    errors = summarize(events)["errors"]
    assert [(e["kind"], e["status_name"]) for e in errors] == [
        ("run_error", "OperatorMissing"),
        ("missing_kernel", "OperatorMissing"),  # the second line about the same op is merged
        ("run_error", "OperatorMissing"),
        ("assert", "DelegateInvalidCompatibility"),
        ("run_error", "DelegateMemoryAllocationFailed"),
        ("run_error", None),
    ]
    assert errors[-1]["text"] == "NPU error(s) occured during inference."
    assert summarize(events)["verdict"] == "error"


def test_hard_fault_with_registers():
    log = (
        runner("Starting running 1 inferences...") + "\n"
        "Hard fault. irq=-13, pc=0x0001a2b4, lr=0x0001a001, xpsr=0x61000000, sp=0x2007ff00\n"
        "            cfsr=0x00008200 bfar=0x50000000 mmfar=0x00000000\n"
        "Application exit code: 1.\n"
        "\x04\n"
    )
    events = parse_log_bytes(log.encode())
    fault = one(events, HardFault)
    assert fault.line_no == 2
    assert fault.registers == {
        "irq": -13,
        "pc": 0x1A2B4,
        "lr": 0x1A001,
        "xpsr": 0x61000000,
        "sp": 0x2007FF00,
        "cfsr": 0x8200,
        "bfar": 0x50000000,
        "mmfar": 0,
    }
    assert [s.kind for s in only(events, FvpStopped)] == ["exit", "eot"]
    assert summarize(events)["verdict"] == "hard_fault"


def test_zephyr_fatal_error_dump():
    log = (
        "E: ***** HARD FAULT *****\n"
        "E:   Fault escalation (see below)\n"
        "E: r0/a1:  0x00000001  r1/a2:  0x00000002  r2/a3:  0x00000003\n"
        "E: r14/lr:  0x00000005\n"
        "E: >>> ZEPHYR FATAL ERROR 0: CPU exception on CPU 0\n"
        "*** Booting Zephyr OS build v4.1 ***\n"
    )
    events = parse_log_bytes(log.encode())
    fault = one(events, HardFault)
    assert fault.registers == {"r0": 1, "r1": 2, "r2": 3, "lr": 5}
    assert only(events, RunError) == []
    assert summarize(events)["verdict"] == "hard_fault"


def test_timeout_and_success_then_time_limit():
    start = runner("Starting running 1 inferences...")
    limit = "Info: Simulation is stopping. Reason: CPU time has been exceeded."
    events = parse_log_bytes(f"{start}\n{limit}\n".encode())
    assert summarize(events)["verdict"] == "timeout"
    done = runner("Program complete, exiting.")
    events = parse_log_bytes(f"{start}\n{done}\n{limit}\n".encode())
    assert summarize(events)["verdict"] == "success"
    other = "Info: Simulation is stopping. Reason: Simulation/CPU time has been exceeded."
    assert one(parse_log_bytes(other.encode()), FvpStopped).kind == "time_limit"
    assert summarize(parse_log_bytes(b""))["verdict"] == "incomplete"


def test_ansi_colours_are_removed_from_text():
    raw = b"\x1b[1;31mE [executorch:a.cpp:1 f()] Something failed: 0x22\x1b[0m"
    events = parse_log_bytes(raw + b"\n")
    line = one(events, LogLine)
    assert (line.level, line.text.startswith("E [")) == ("E", True)
    assert line.raw == raw
    assert one(events, RunError).status_name == "AccessFailed"


def test_stream_name_is_copied():
    events = parse_log_bytes(b"hello\n", stream="uart0")
    assert one(events, LogLine).stream == "uart0"


# --------------------------------------------------------------------------- summary and codes


def test_summary_contract_keys():
    summary = summarize(events_of("04_et_docs_v0.4_mv2_pmu_allocator.log"))
    assert list(summary) == [
        "lines",
        "verdict",
        "model",
        "pmu",
        "allocators",
        "outputs",
        "errors",
        "bundleio",
        "etdump_blocks",
        "npu",
        "no_model_line",
        "inferences",
        "inference_count",
        "version_skew",
    ]
    assert list(summary["model"]) == ["pte_size", "methods", "method"]
    assert list(summary["pmu"][0]) == [
        "npu_inferences", "npu_cycles", "cpu_cycles", "counters", "cpu_cycles_note",
    ]  # fmt: skip
    assert list(summary["allocators"]) == [
        "method_allocator",
        "planned",
        "loaded",
        "input",
        "executor",
        "temp_allocator",
    ]
    assert json.loads(json.dumps(summary)) == summary


def test_summary_can_be_built_incrementally():
    events = events_of("13_rp2040_mv2_alloc_failed_0x21.log")
    live = LogSummary()
    for event in events:
        live.add(event)
    assert live.to_json() == summarize(events)
    assert live.verdict == "error"


def test_status_code_table():
    assert status_name(0x21) == "MemoryAllocationFailed"
    assert status_name(0x99) is None
    assert status_name(None) is None
    assert status_code("DelegateInvalidHandle") == 0x32
    assert len(STATUS_NAMES) == 21
    assert {0x04, 0x15, 0x16, 0x24, 0x25} <= set(STATUS_NAMES)


def test_feed_after_close_is_refused():
    parser = RunnerLogParser()
    parser.close()
    assert parser.close() == []
    with pytest.raises(ValueError):
        parser.feed(b"x")


# --------------------------------------------------------------------------- prefix parsing


LEVELS = st.sampled_from("DIEF?")
FILES = st.sampled_from(["arm_executor_runner.cpp", "main.cpp", "EthosUBackend.cpp", "a.h"])
LINE_NUMBERS = st.one_of(st.integers(0, 99999).map(str), st.just("zu"), st.none())
FUNCTIONS = st.one_of(st.none(), st.sampled_from(["main", "runner_init", "init", "f"]))
MESSAGES = st.one_of(
    st.sampled_from(["Model executed successfully.", "", " x", "Output[0][0]: 1", "a ] b"]),
    st.text(alphabet=st.characters(blacklist_categories=["Cs", "Cc", "Zl", "Zp"]), max_size=30),
)


@settings(max_examples=300, deadline=None)
@given(
    level=LEVELS,
    file=FILES,
    number=LINE_NUMBERS,
    function=FUNCTIONS,
    message=MESSAGES,
    bracket=st.booleans(),
)
def test_runtime_prefix_fields(level, file, number, function, message, bracket):
    where = file + (f":{number}" if number is not None else "")
    where += f" {function}()" if function else ""
    text = f"{level} {'[' if bracket else ''}executorch:{where}] {message}"
    events = parse_log_bytes(text.encode() + b"\n" + text.encode() + b"\n")
    first, second = only(events, LogLine)
    expected_line = int(number) if number not in (None, "zu") else None
    assert (first.level, first.file, first.line, first.function, first.message) == (
        level,
        file,
        expected_line,
        function,
        message,
    )
    assert first.origin == "runtime"
    # The second copy comes from the prefix cache: the same fields.
    assert (second.level, second.file, second.line, second.function, second.message) == (
        first.level,
        first.file,
        first.line,
        first.function,
        first.message,
    )


def test_prefix_cache_overflow_changes_nothing():
    lines = [f"I [executorch:f.cpp:{i} main()] Input prepared." for i in range(5000)]
    log = ("\n".join(lines * 2) + "\n").encode()
    events = parse_log_bytes(log)
    parsed = only(events, LogLine)
    assert [x.line for x in parsed] == list(range(5000)) * 2
    assert len(only(events, InputsPrepared)) == 10000


def test_huge_numbers_do_not_raise():
    big = "9" * 5000
    log = "\n".join(
        [
            runner(f"PTE Model data loaded. Size: {big} bytes."),
            runner(f"Setting up planned buffer {big}, size {big}."),
            runner(f"NPU Inferences : {big}"),
            runner(f"ethosu_pmu_cntr0 : {big}"),
            f"Output[{big}][0]: (int) {big}",
            f"Output[0][{big}]: (float) {big}",
            f"Hard fault. irq={big}, pc=0x{big}",
        ]
    )
    events = parse_log_bytes(log.encode())
    assert one(events, PteLoaded).size is None
    assert one(events, PmuReport).npu_inferences is None
    assert one(events, HardFault).registers["pc"] == int(big, 16)


def test_output_values_are_capped_but_counted():
    dump = "".join(f"Output[0][{i}]: (int) {i}\n" for i in range(100))
    out = one(parse_log_bytes(dump.encode(), max_output_values=10), OutputTensor)
    assert (out.values, out.printed, out.numel) == (tuple(range(10)), 100, 100)
    two = "Output[0][0]: (int) 1\nOutput[1][0]: (int) 2\nOutput[1][1]: (int) 3\n"
    outs = only(parse_log_bytes(two.encode()), OutputTensor)
    assert [(o.index, o.values) for o in outs] == [(0, (1,)), (1, (2, 3))]


def test_pmu_event_list_cut_by_the_log_limit_is_completed():
    names = ", ".join(U85_EVENTS_7)[:-8]  # "…ETHOSU_PMU_WD_AC" and no "]"
    log = "\n".join(
        [
            runner("NPU Inferences : 1", where="arm_perf_monitor.cpp:1 f()"),
            *(
                runner(f"ethosu_pmu_cntr{i} : {i}", where="arm_perf_monitor.cpp:2 f()")
                for i in range(7)
            ),
            runner("Ethos-U PMU Events:[" + names, where="arm_perf_monitor.cpp:3 f()"),
        ]
    )
    pmu = one(parse_log_bytes(log.encode()), PmuReport)
    assert list(pmu.counters) == list(U85_EVENTS_7)
    assert pmu.counters["ETHOSU_PMU_WD_ACTIVE"] == 6


@pytest.mark.parametrize("terminator", [b"\r", b"\n", b"\r\n"])
def test_a_flood_of_empty_lines_is_a_few_events_with_every_line_counted(terminator):
    """1 MiB of line ends (a UART stuck on CR, a cable with noise) used to be one event per
    byte: 60x the time and 11x the memory of a typical log. Now a run is one event."""
    before = b"I [executorch:arm_executor_runner.cpp:12 main()] before\n"
    after = b"I [executorch:arm_executor_runner.cpp:13 main()] Model executed successfully.\n"
    blanks = (1 << 20) // len(terminator)
    log = before + terminator * blanks + after
    events = feed_in_pieces(log, list(range(0, len(log), 1 << 16)))
    lines = only(events, LogLine)
    assert rebuilt(events) == log
    assert len(lines) < 2 + 2 * (len(log) >> 16)  # a run per chunk at most
    assert lines[-1].line_no == 1 + blanks + 1
    assert lines[-1].text.endswith("Model executed successfully.")
    assert sum(line.lines for line in lines) == blanks + 2
    assert summarize(events)["lines"] == blanks + 2


def test_short_runs_of_empty_lines_stay_a_line_each():
    log = b"a\n" + b"\n" * (BLANK_RUN - 1) + b"b\n"
    lines = only(parse_log_bytes(log), LogLine)
    assert [line.lines for line in lines] == [1] * (BLANK_RUN + 1)
    assert [line.line_no for line in lines] == list(range(1, BLANK_RUN + 2))


def test_the_parsers_fast_line_factory_builds_the_same_frozen_log_line():
    """``new_log_line`` builds through a twin class: the object must be a true LogLine."""
    import pickle

    args = (7, b"I [x.cpp:1] hi", b"\r\n", "I [x.cpp:1] hi", "I", "x.cpp", 1, None, "hi",
            "runtime", False, "uart0")  # fmt: skip
    fast = new_log_line(*args)
    slow = LogLine(*args)
    assert type(fast) is LogLine
    assert fast == slow and hash(fast) == hash(slow)
    assert fast.lines == 1 and fast.last_line_no == 7
    with pytest.raises(dataclasses.FrozenInstanceError):
        fast.text = "changed"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del fast.level  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(fast)) == slow
    assert dataclasses.replace(fast, text="x").text == "x"
