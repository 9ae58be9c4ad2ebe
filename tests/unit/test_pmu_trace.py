"""The FVP's PMU trace parser and its join, on traces written by hand from the documented
format (runtime_formats.md §5.4: Chrome-trace JSON, ``tid == "qread"`` events whose
``args.qread`` is the command-queue read pointer in 32-bit words) and on the real demo
program's command stream with a real Vela debug database."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from etu.parsers.errors import FormatError, TruncatedError, WrongKindError
from etu.parsers.ethosu_commands import NpuCommandStream, NpuOperation, RegisterCommand
from etu.parsers.pmu_trace import npu_layers, parse_pmu_trace, stream_units, time_units
from etu.parsers.vela_debug_db import parse_debug_db

SOURCE = "run/pmu_trace.json"


def qread(ts, word) -> dict:
    """One read-pointer event as the plugin writes it (numbers as strings)."""
    return {"name": "qread", "ph": "C", "ts": str(ts), "pid": "NPU", "tid": "qread",
            "args": {"qread": word}}  # fmt: skip


def document(*events) -> bytes:
    return json.dumps({"traceEvents": list(events)}).encode()


def three_op_stream() -> NpuCommandStream:
    """Operations whose NPU_OP commands sit at words 10, 20 and 30; NPU_OP_STOP at 40."""
    ops = [NpuOperation(i, word, "NPU_OP_POOL", "pool") for i, word in enumerate((10, 20, 30))]
    stop = RegisterCommand(40, 0, "NPU_OP_STOP", 0, None)
    return NpuCommandStream([stop], ops)


# the documented example event (runtime_formats.md §5.4)
AXI_EVENT = {"name": "axi_enabled_cycles", "ph": "X", "ts": "1029", "pid": "DMA",
             "tid": "axi_enabled_cycles", "dur": "1014"}  # fmt: skip


def test_good_trace_gives_typed_reads_and_track_totals() -> None:
    trace = parse_pmu_trace(
        document(
            qread(100, 10),
            AXI_EVENT,
            qread(400, 20),
            qread(1000, 41),
        ),
        SOURCE,
    )
    assert [(r.ts, r.offset) for r in trace.reads] == [(100, 40), (400, 80), (1000, 164)]
    assert trace.tracks == {"axi_enabled_cycles": 1014} and trace.events == 4
    assert trace.span == 900 and not trace.simulated and trace.warnings == []


def test_gzip_and_bare_list_forms_read_the_same() -> None:
    events = [qread(0, 10), qread(50, 41)]
    plain = parse_pmu_trace(json.dumps(events).encode(), SOURCE)
    packed = parse_pmu_trace(gzip.compress(document(*events)), SOURCE)
    assert plain.reads == packed.reads and len(plain.reads) == 2


def test_truncated_trace_keeps_complete_events_or_says_where() -> None:
    whole = document(qread(0, 10), qread(300, 20), qread(700, 30))
    cut = parse_pmu_trace(whole[: whole.rindex(b"{") + 5], SOURCE)
    assert len(cut.reads) == 2 and "cut short" in cut.warnings[0]
    with pytest.raises(TruncatedError) as error:
        parse_pmu_trace(b'{"traceEvents": [{"name": "qr', SOURCE)
    assert str(error.value).startswith(SOURCE) and "\n" not in str(error.value)
    with pytest.raises(TruncatedError, match="empty"):
        parse_pmu_trace(b"", SOURCE)
    with pytest.raises(TruncatedError, match="gzip"):
        parse_pmu_trace(gzip.compress(whole)[:30], SOURCE)


def test_garbled_and_wrong_kind_are_one_line_errors() -> None:
    with pytest.raises(FormatError, match="JSON"):
        parse_pmu_trace(b'{"traceEvents": [}, 1]', SOURCE)
    with pytest.raises(WrongKindError, match="traceEvents"):
        parse_pmu_trace(b'{"events": []}', SOURCE)
    with pytest.raises(WrongKindError, match="not JSON"):
        parse_pmu_trace(b"\x7fELF\x01\x01", SOURCE)
    with pytest.raises(WrongKindError):
        parse_pmu_trace(b'"just a string"', SOURCE)
    with pytest.raises(FormatError, match=r"args\.qread"):
        parse_pmu_trace(document({"tid": "qread", "ts": 1}), SOURCE)
    with pytest.raises(FormatError, match="event 1: ts"):
        parse_pmu_trace(document(qread(1, 10), qread("soon", 20)), SOURCE)
    for endless in ("inf", "nan", "1e999"):
        with pytest.raises(FormatError, match="not a number"):
            parse_pmu_trace(document(qread(endless, 10)), SOURCE)
    with pytest.raises(FormatError, match="negative"):
        parse_pmu_trace(document({"tid": "qread", "ts": -5, "args": {"qread": 1}}), SOURCE)


def test_each_operation_is_charged_until_the_pointer_reaches_the_next() -> None:
    trace = parse_pmu_trace(document(qread(0, 10), qread(300, 20), qread(350, 30),
                                     qread(1000, 41)), SOURCE)  # fmt: skip
    units, why = stream_units(0, three_op_stream())
    timing = time_units(trace, [units])
    assert why is None and timing.cycles == [[300, 50, 650]] and timing.passes == 1
    layers = npu_layers(timing)
    assert [layer.measured_cycles for layer in layers] == [300, 50, 650]
    assert layers[0].estimated_cycles is None and layers[0].ratio is None


def test_a_pointer_moving_back_starts_the_next_inference() -> None:
    reads = [qread(0, 10), qread(100, 20), qread(300, 30), qread(400, 41)]
    again = [qread(1000, 10), qread(1300, 20), qread(1400, 30), qread(1500, 41)]
    trace = parse_pmu_trace(document(*reads, *again), SOURCE)
    units, _ = stream_units(0, three_op_stream())
    timing = time_units(trace, [units])
    assert timing.passes == 2 and timing.cycles == [[400, 300, 200]]
    assert [layer.measured_cycles for layer in npu_layers(timing, inferences=2)] == [200, 150, 100]


def test_a_pass_cut_before_the_last_operation_is_flagged() -> None:
    trace = parse_pmu_trace(document(qread(0, 10), qread(100, 20)), SOURCE)
    timing = time_units(trace, [stream_units(0, three_op_stream())[0]])
    assert "before its last operation" in timing.warnings[0]


def test_a_pointer_past_the_stream_is_flagged() -> None:
    trace = parse_pmu_trace(document(qread(0, 10), qread(10, 20), qread(20, 30),
                                     qread(90, 500)), SOURCE)  # fmt: skip
    timing = time_units(trace, [stream_units(0, three_op_stream())[0]])
    assert any("past the end of the command stream" in w for w in timing.warnings)


DEBUG_DB = """<?xml version="1.0"?>
<debug source="net.tosa">
<table name="source"><![CDATA[
"id","operator","ext_key"
7,"Conv2D",3
9,"MaxPool",4
]]></table>
<table name="perf"><![CDATA[
"id","source_id","optimised_id","operator","name","npu_cycles"
50,7,1,"Conv2D","conv_out",200
51,7,2,"Conv2D","conv_out_b",100
52,9,3,"MaxPool","pool_out",400
]]></table>
<table name="group"><![CDATA[
"id","group_id"
51,50
]]></table>
<table name="queue"><![CDATA[
"offset","cmdstream_id","optimised_id","scheduled_id"
40,1,1,50
80,1,2,51
120,1,3,52
]]></table>
</debug>
"""


def test_debug_db_joins_queue_rows_to_source_operators_with_vela_estimate() -> None:
    db = parse_debug_db(DEBUG_DB.encode(), "vela/out_debug.xml")
    units, why = stream_units(0, three_op_stream(), db)
    assert why is None and units.from_debug_db
    # scheduled 51 is a sub-operation of 50 (group table): one unit ending at byte 80
    assert [(u.offset, u.operations, u.source_id) for u in units.units] == [
        (80, (0, 1), 7), (120, (2,), 9)
    ]  # fmt: skip
    trace = parse_pmu_trace(document(qread(0, 10), qread(300, 20), qread(350, 30),
                                     qread(1000, 41)), SOURCE)  # fmt: skip
    layers = npu_layers(time_units(trace, [units]))
    assert [(x.operator, x.measured_cycles, x.estimated_cycles) for x in layers] == [
        ("Conv2D", 350, 300), ("MaxPool", 650, 400)
    ]  # fmt: skip
    assert layers[1].ratio == pytest.approx(650 / 400)
    assert layers[0].to_json()["name"] == "Conv2D conv_out (source #7)"


def test_unknown_queue_offset_falls_back_to_operations_and_says_why() -> None:
    db = parse_debug_db(DEBUG_DB.replace("120,1,3,52", "124,1,3,52").encode(), "out_debug.xml")
    units, why = stream_units(0, three_op_stream(), db)
    assert not units.from_debug_db and len(units.units) == 3
    assert why is not None and "124" in why and "another stream" in why


def test_simulated_marker_is_read() -> None:
    data = json.dumps({"traceEvents": [qread(0, 1)], "otherData": {"etu_standin": True}})
    assert parse_pmu_trace(data.encode(), SOURCE).simulated


def test_standin_trace_of_the_demo_program_reads_back(tmp_path: Path) -> None:
    """The stand-in's trace of the demo program, read back: per-operation cycles sum to
    the run's NPU cycles and every operation is charged."""
    from etu.fvp.standin_trace import standin_trace
    from etu.parsers.ethosu_commands import program_operations
    from etu.parsers.program_facts import delegates
    from etu.parsers.pte import decode_program

    pte = Path(__file__).resolve().parents[2] / "etu_tui" / "demo" / "demo_cnn.pte"
    program = decode_program(pte.read_bytes(), str(pte))
    streams = [d.stream for d in program_operations(program, delegates(program)) if d.stream]
    trace = parse_pmu_trace(json.dumps(standin_trace(streams, 90_000, 3, 128)).encode(), SOURCE)
    units = [stream_units(i, s)[0] for i, s in enumerate(streams)]
    timing = time_units(trace, units)
    assert trace.simulated and timing.passes == 3 * len(streams) and timing.warnings == []
    assert 90_000 - 3 * len(units[0].units) <= timing.total <= 90_000
    assert all(c > 0 for c in timing.cycles[0])


def test_fractional_times_count_and_a_bad_figure_elsewhere_is_skipped() -> None:
    """Chrome's ``ts`` may be fractional; another track's unreadable ``dur`` does not cost
    the per-layer timing."""
    bad = {"name": "x", "ph": "X", "ts": "5", "pid": "DMA", "tid": "axi", "dur": "lots"}
    trace = parse_pmu_trace(
        document({"tid": "qread", "ts": 10.75, "args": {"qread": "10"}}, bad, qread("20.0", 41)),
        SOURCE,
    )
    assert [(r.ts, r.word) for r in trace.reads] == [(10, 10), (20, 41)]
    assert trace.tracks == {} and "skipped" in trace.warnings[0]


def test_standin_refuses_a_trace_path_split_at_a_space(capsys: pytest.CaptureFixture) -> None:
    from etu.fvp.standin import _pmu_trace_path

    def path(extra: str) -> Path | None:
        return _pmu_trace_path("FVP_Corstone_SSE-300_Ethos-U55",
                               {"params": {"ethosu.extra_args": extra}})  # fmt: skip

    assert path("--fast --pmu-trace /s/pmu_trace.json") == Path("/s/pmu_trace.json")
    assert path("--pmu-trace=/s/t.json --fast") == Path("/s/t.json")
    assert path("--pmu-trace /my ws/pmu_trace.json") is None
    assert "split at spaces" in capsys.readouterr().err
    assert path("--fast") is None
