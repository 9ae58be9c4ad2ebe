"""The emulated board's NPU lines (``etu-npu: …``, one per Ethos-U invoke etu answered)
read by the one runner-log parser into NpuInvoke events, and summed per delegate."""

from __future__ import annotations

import json

import pytest

from etu.parsers.log_summary import LogSummary, summarize
from etu.parsers.runner_events import LogLine, NpuInvoke, RunError
from etu.parsers.runner_log import RunnerLogParser, parse_log_bytes
from etu.runner.session_fields import check_summary

PREFIX = "[executorch:etu_npu_bridge.c:176 ethosu_invoke_v3()] etu-npu: "
MODEL = ("delegate 0: 48 operations (4 conv, 36 pool, 3 dma, 1 vector product), 2234567 MACs, "
         "9120 B read, 3040 B written, executed by etu's Ethos-U model")  # fmt: skip
REFERENCE = ("delegate 2: 1 input(s) 3072 B -> 1 output(s) 40 B, computed by the TOSA reference "
             "model (command stream not executed); etu's Ethos-U model: delegate 2: operation 3 "
             "(NPU_OP_POOL): activation tanh is not supported by etu's Ethos-U model")  # fmt: skip
FAILED = ("delegate 0: operation 7 (NPU_OP_ELEMENTWISE): unary elementwise abs is not supported "
          "by etu's Ethos-U model")  # fmt: skip


def line(level: str, text: str) -> bytes:
    return f"{level} {PREFIX}{text}\n".encode()


def others(data: bytes) -> list:
    return [e for e in parse_log_bytes(data) if not isinstance(e, LogLine)]


def test_a_model_answer_is_one_typed_event_with_its_figures():
    (event,) = others(line("I", MODEL))
    assert event == NpuInvoke(
        1, 0, True, "model", operations=48,
        kinds={"conv": 4, "pool": 36, "dma": 3, "vector product": 1}, macs=2234567,
        bytes_read=9120, bytes_written=3040, text=MODEL,
    )  # fmt: skip
    assert json.loads(json.dumps(event.to_json()))["type"] == "NpuInvoke"


def test_a_reference_answer_gives_its_bytes_and_why_the_model_did_not_run():
    (event,) = others(line("I", REFERENCE))
    assert (event.delegate, event.ok, event.executor) == (2, True, "reference")
    assert (event.bytes_read, event.bytes_written) == (3072, 40)
    assert event.operations is None and event.macs is None
    assert event.fallback.startswith("delegate 2: operation 3 (NPU_OP_POOL): activation tanh")


def test_a_failed_invoke_names_its_operation_and_is_the_runs_error():
    npu, error = others(line("E", FAILED))
    assert isinstance(npu, NpuInvoke) and not npu.ok
    assert (npu.delegate, npu.operation, npu.command, npu.executor) == (
        0, 7, "NPU_OP_ELEMENTWISE", "model")  # fmt: skip
    assert npu.error.startswith("operation 7 (NPU_OP_ELEMENTWISE): unary elementwise abs")
    assert isinstance(error, RunError) and "operation 7 (NPU_OP_ELEMENTWISE)" in error.text
    assert LogSummary.from_events([npu, error]).verdict == "error"


def test_the_driver_layers_own_error_and_an_unnamed_invoke():
    outside = ("the command stream at 0x20000000 (512 B) or its 3 base addresses are outside "
               "what the bridge serves")  # fmt: skip
    npu, error = others(line("E", outside))
    assert npu.delegate is None and npu.error == outside and isinstance(error, RunError)
    (unnamed,) = [e for e in others(line("E", "invoke 4: the command stream at 0x70000000 "
                                          "(96 B) is none of the program's delegates"))
                  if isinstance(e, NpuInvoke)]  # fmt: skip
    assert (unnamed.delegate, unnamed.invoke) == (None, 4)


def test_earlier_lines_with_rounded_macs_still_read():
    old = ("delegate 0: 48 operations (36 pool, 3 dma, 4 conv, 1 vector product), 2.2 M MACs, "
           "executed by etu's Ethos-U model")  # fmt: skip
    (event,) = others(line("I", old))
    assert event.macs == 2_200_000 and event.bytes_read is None and event.operations == 48


def test_chunking_does_not_change_the_events():
    data = line("I", MODEL) + line("I", REFERENCE) + line("E", FAILED)
    whole = parse_log_bytes(data)
    parser = RunnerLogParser()
    pieces = []
    for byte in range(len(data)):
        pieces += parser.feed(data[byte : byte + 1])
    assert pieces + parser.close() == whole


@pytest.mark.parametrize(
    "text",
    ["delegate 99999999999999: 1 operations", "delegate 0: " + "9" * 80 + " MACs, executed by "
     "etu's Ethos-U model", "delegate 0: (((( operations", "", "delegate"],
)  # fmt: skip
def test_hostile_lines_never_raise(text):
    for level in "IE":
        (event,) = [e for e in others(line(level, text)) if isinstance(e, NpuInvoke)]
        assert event.macs is None and event.delegate in (None, 0)


def test_the_summary_gives_each_delegates_figures_per_invoke_and_its_first_error():
    data = line("I", MODEL) * 3 + line("I", REFERENCE) + line("E", FAILED)
    summary = summarize(parse_log_bytes(data))
    first, second = summary["npu"]
    assert first["delegate"] == 0 and (first["invokes"], first["failed"]) == (4, 1)
    assert (first["operations"], first["macs"]) == (48, 2234567)
    assert (first["bytes_read"], first["bytes_written"]) == (9120, 3040)
    assert first["command"] == "NPU_OP_ELEMENTWISE" and first["operation"] == 7
    assert first["line"] == 5 and first["executor"] == "model"
    assert second["delegate"] == 2 and second["executor"] == "reference"
    assert second["fallback"].startswith("delegate 2: operation 3")
    assert check_summary(json.loads(json.dumps(summary))) == (summary, [])


def test_a_summary_tells_apart_a_bounded_number_of_delegates():
    data = b"".join(line("I", f"delegate {i}: 1 operations (1 conv), 9 MACs, 1 B read, 1 B "
                              "written, executed by etu's Ethos-U model")
                    for i in range(300))  # fmt: skip
    assert len(summarize(parse_log_bytes(data))["npu"]) == 256


def test_a_hand_edited_npu_entry_is_dropped_field_by_field():
    summary = {"npu": [{"delegate": "zero", "macs": 5}, "junk"]}
    clean, notes = check_summary(summary)
    assert clean["npu"] == [{"macs": 5}]
    assert any("npu[0].delegate" in note for note in notes) and len(notes) == 2
