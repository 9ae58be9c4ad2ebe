"""The runner-log modules split by concept (issue #21 §5): the report collectors, prefixes and
levels, and message values each work on their own, and the parser's public names stay."""

from __future__ import annotations

import base64
import re

import pytest

import etu.parsers.runner_log as runner_log
from etu.parsers import log_prefix, runner_reports
from etu.parsers.log_values import after, leading_float, leading_int, status_in
from etu.parsers.runner_events import EtdumpBlock, EtdumpError, HardFault
from etu.parsers.runner_reports import (
    U55_EVENTS,
    U85_EVENTS_7,
    EtdumpCollector,
    FaultCollector,
    MemoryCollector,
    OutputCollector,
    PlannedCollector,
    PmuCollector,
)


def test_the_parser_module_still_exports_what_its_importers_use() -> None:
    for name in runner_log.__all__:
        assert hasattr(runner_log, name), name
    assert runner_log.line_level is log_prefix.line_level
    assert runner_log.line_text is log_prefix.line_text
    assert runner_log.U55_EVENTS is runner_reports.U55_EVENTS


def test_pmu_collector_reads_a_report_and_ends_at_the_event_list() -> None:
    pmu = PmuCollector(7, None)
    lines = [
        "NPU Inferences : 1",
        "Profiler report, CPU cycles per operator:",
        "ethos-u : cycle_cnt : 1234 cycles",
        "Operator(s) total: 1234 CPU cycles",
        "Inference runtime: 5000 CPU cycles total",
        "NOTE: CPU cycle values and ratio calculations require FPGA and identical CPU/NPU freq",
        "Inference CPU ratio: 24.68 %",
        "Inference NPU ratio: 75.32 %",
        "cpu_wait_for_npu_cntr : 3766 CPU cycles",
        "Ethos-U PMU report:",
        "ethosu_pmu_cycle_cntr : 4000",
        *(f"ethosu_pmu_cntr{i} : {10 * i}" for i in range(4)),
    ]
    assert not any(pmu.add(line) for line in lines)
    assert pmu.add(
        "Ethos-U PMU Events:[ETHOSU_PMU_AXI0_RD_DATA_BEAT_RECEIVED, X, Y, ETHOSU_PMU_NPU"
    )
    report = pmu.finish()
    assert report.line_no == 7
    assert (report.npu_inferences, report.npu_cycles, report.cpu_cycles) == (1, 4000, 5000)
    assert (report.cpu_ratio, report.npu_ratio, report.cpu_wait_for_npu_cycles) == (
        24.68, 75.32, 3766,
    )  # fmt: skip
    assert report.operator_cycles == {"ethos-u": 1234} and report.operators_total == 1234
    # The list cut by the 255-byte log limit: its last name completed from the known lists.
    assert report.event_names[-1] == "ETHOSU_PMU_NPU_IDLE" and report.names_from == "log"
    assert report.counter_values == (0, 10, 20, 30)


@pytest.mark.parametrize(
    ("npu", "count", "names", "source"),
    [
        ("u55", 4, U55_EVENTS, "default"),
        (None, 4, U55_EVENTS, "default"),
        (None, 7, U85_EVENTS_7, "default"),
        ("u55", 6, ("ethosu_pmu_cntr0",), "index"),
    ],
)
def test_pmu_counters_without_an_event_list(npu, count, names, source) -> None:
    pmu = PmuCollector(1, npu)
    for i in range(count):
        pmu.add(f"ethosu_pmu_cntr{i} : {i}")
    report = pmu.finish()
    assert report.names_from == source
    assert list(report.counters)[: len(names)] == list(names)


def test_pmu_counters_are_capped() -> None:
    pmu = PmuCollector(1, None)
    for i in range(runner_reports.MAX_COUNTERS + 10):
        pmu.add(f"ethosu_pmu_cntr{i} : 1")
    assert len(pmu.finish().counter_values) == runner_reports.MAX_COUNTERS


def test_memory_collector() -> None:
    memory = MemoryCollector(3)
    assert memory.add("method_allocator_used:     320 / 62914560  free: 62914240 ( used: 0 % )")
    assert memory.add("temp_allocator_used:       zu / 2097152 free: zu ( used: zu % )")
    assert memory.add("method_allocator_planned:  64 bytes")
    assert not memory.add("not_a_summary_key: 12")
    report = memory.finish()
    assert report.pools["method_allocator"].used == 320
    assert report.pools["method_allocator"].size == 62914560
    assert report.pools["temp_allocator"].used is None  # %zu printed as "zu"
    assert report.planned == 64 and report.line_no == 3


def test_planned_collector_is_capped() -> None:
    planned = PlannedCollector(2)
    for i in range(runner_reports.MAX_PLANNED + 5):
        planned.add(i + 1, 64)
    report = planned.finish()
    assert report.count == runner_reports.MAX_PLANNED and report.mem_ids[:2] == (1, 2)


def test_output_collector_keeps_each_lines_type_and_counts_past_the_cap() -> None:
    output = OutputCollector(5, 0, "float", max_values=2)
    output.add(0, "0.5", "float")
    output.add(1, "true", "bool")  # a dump can change type midway
    output.add(2, "3.0", "float")  # past the cap: counted, not kept
    report = output.finish()
    assert report.values == (0.5, True)
    assert (report.numel, report.printed, report.dtype) == (3, 3, "float")


def test_fault_collector_reads_registers_from_every_line() -> None:
    fault = FaultCollector(9, "Hard fault. pc=0x1000 lr=0x2001")
    fault.add(" cfsr=0x8200 r0/a1: 0x5")
    event = fault.finish()
    assert isinstance(event, HardFault) and event.line_no == 9
    assert event.registers == {"pc": 0x1000, "lr": 0x2001, "cfsr": 0x8200, "r0": 5}


def test_etdump_collector_decodes_echo_lines_and_heredocs() -> None:
    payload = b"\x00\x00\x00\x00ED00" + b"x" * 8
    b64 = base64.b64encode(payload).decode()
    out: list = []
    block = EtdumpCollector(1, "#[RUN THIS]", 0, max_text=1 << 20)
    assert block.claims("echo") and not block.claims("I [executorch:x.cpp:1] m")
    assert block.add(2, f'echo "{b64}" | base64 -d >../../etdump.bin', out)
    assert block.add(3, f'base64 -d <<<"{b64[:8]}\\', out)
    assert block.claims("I [executorch: anything inside a heredoc")
    assert block.add(4, b64[8:], out)
    assert block.add(5, '" > second.bin', out)
    assert not block.add(6, "#[END]", out)
    first, second = out
    assert isinstance(first, EtdumpBlock) and first.file_name == "etdump.bin"
    assert first.data == payload and first.identifier == "ED00"
    assert (second.line_no, second.file_name, second.data) == (3, "second.bin", payload)


def test_etdump_collector_gives_up_on_an_overlong_heredoc() -> None:
    out: list = []
    block = EtdumpCollector(1, "#---", 2, max_text=16)
    block.add(2, 'base64 -d <<<"\\', out)
    assert not block.add(3, "A" * 17, out)
    assert isinstance(out[0], EtdumpError) and "too long" in out[0].reason
    assert "not closed" in EtdumpCollector(4, "#---", 0, 16).unclosed().reason


@pytest.mark.parametrize(
    ("line", "level"),
    [
        ("I [executorch:main.cpp:12 main()] hello", "I"),
        ("[00:00:01.000,000] <err> app: E [executorch:m.cpp:3] boom", "E"),
        ("<wrn> app: careful", "W"),
        ("E: driver says no", "E"),
        ("[W] custom PAL", "W"),
        ("Info: Simulation is stopping.", None),
        ("\x1b[31mE [executorch:x.cpp:1] red\x1b[0m", "E"),
        ("plain text", None),
    ],
)
def test_line_level(line: str, level: str | None) -> None:
    assert log_prefix.line_level(line) == level


def test_message_values() -> None:
    assert (leading_int("12 bytes"), leading_int("zu"), leading_int(None)) == (12, None, None)
    assert (leading_float(" 1.5e3 %"), leading_float("?")) == (1500.0, None)
    assert (after("a: b: c", ": "), after("abc", ":")) == ("b: c", "")
    assert (status_in("failed with error 0x12"), status_in("no code")) == (0x12, None)


_INT = re.compile(r"\s*(-?\d+)")
_STATUS = re.compile(r"(?:^|[\s:(])0x([0-9A-Fa-f]{1,4})\)?\.?\s*\Z")


@pytest.mark.parametrize(
    "text",
    ["1", " 42", "\t7 bytes", "\u2003 8 x", " 12abc", "-3 ok", "\u0663\u0664 arabic", "\u00b2",
     "9" * 25, "zu", "", " ", "0x12", "1355722 / 62914560  free: 61558838"],
)  # fmt: skip
def test_leading_int_fast_path_reads_what_the_regex_reads(text: str) -> None:
    """A first word of ASCII digits is read without the regex: the same number."""
    m = _INT.match(text)
    want = int(m[1]) if m and len(m[1]) < 4300 else None
    assert leading_int(text) == want


@pytest.mark.parametrize(
    "message",
    ["failed 0x12", "0x1", "x 0x0x12", "a(0x21).", "b:0x22)  ", "0x12 0x13", "c 0x12345",
     "d 0x", "e0x12", "f 0x12\n", "g\u20030x7", "0x0x", "no code"],
)  # fmt: skip
def test_status_in_from_the_last_0x_reads_what_a_full_search_reads(message: str) -> None:
    m = _STATUS.search(message)
    assert status_in(message) == (int(m[1], 16) if m else None)


@pytest.mark.parametrize("ending", [b"\n", b"\r\n", b"telnetterminal0: Listening\n"])
def test_an_empty_or_unknown_line_ends_an_open_report(ending: bytes) -> None:
    parser = runner_log.RunnerLogParser()
    head = b"I [executorch:arm_perf_monitor.cpp:1] NPU Inferences : 1\n"
    assert not [e for e in parser.feed(head) if type(e).__name__ == "PmuReport"]
    events = parser.feed(ending)
    assert [type(e).__name__ for e in events][:2] == ["LogLine", "PmuReport"]
    assert events[0].text == ending.decode().rstrip("\r\n") and events[0].level is None
