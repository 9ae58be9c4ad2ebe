"""The stand-in FVP's PMU trace: the FVP plugin's Chrome-trace format (parsers/pmu_trace.py),
written from the program's own command stream so the whole measured-per-layer path runs
without an Arm model. The figures are SIMULATED: each NPU operation gets a share of the
run's NPU cycles by a rough cost (MACs over the NPU's MAC count, plus bytes moved), and the
file says so (``otherData.etu_standin``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from etu.parsers.ethosu_commands import NpuCommandStream, NpuOperation
from etu.parsers.pmu_trace import QREAD, STANDIN_KEY

STANDIN_TRACE_NOTE = "simulated by the etu stand-in FVP from the program's command stream"


def operation_cost(op: NpuOperation, num_macs: int) -> int:
    """A rough relative cost of one operation (the stand-in's, not the NPU's)."""
    if op.dma is not None:
        return 32 + op.dma.source.length // 8
    if op.ofm is None:
        return 8
    ofm = op.ofm.height * op.ofm.width * op.ofm.depth
    taps = op.kernel.height * op.kernel.width if op.kernel is not None else 1
    depth = op.ifm.depth if op.ifm is not None and op.kind in ("conv", "vector_product") else 1
    moved = ofm * op.ofm.element_size + op.weight_bytes
    if op.ifm is not None:
        moved += op.ifm.height * op.ifm.width * op.ifm.depth * op.ifm.element_size
    return 64 + (ofm * taps * depth) // max(num_macs, 1) + moved // 16


def pass_reads(
    stream: NpuCommandStream, cycles: int, num_macs: int, start: int
) -> tuple[list[tuple[int, int]], int]:
    """(ts, word) reads for one pass through ``stream`` taking ``cycles``: the pointer
    reaches each operation's command as the one before it ends, and the stream's end last."""
    operations = stream.operations
    if not operations:
        return [], start
    costs = [operation_cost(op, num_macs) for op in operations]
    total = sum(costs)
    reads, ts, spent = [], start, 0
    for op, cost in zip(operations, costs, strict=True):
        reads.append((ts, op.word))
        spent += cost
        ts = start + cycles * spent // total
    end_word = stream.commands[-1].word + 1 if stream.commands else operations[-1].word + 1
    reads.append((ts, end_word))
    return reads, ts


def standin_trace(
    streams: Sequence[NpuCommandStream], npu_cycles: int, inferences: int, num_macs: int
) -> dict:
    """The trace document: ``inferences`` passes through every stream, the run's
    ``npu_cycles`` shared by the streams in proportion to their cost."""
    events: list[dict] = []
    costs = [sum(operation_cost(op, num_macs) for op in s.operations) for s in streams]
    weight = sum(costs) or 1
    per_inference = npu_cycles // max(inferences, 1)
    ts = 0
    for _ in range(max(inferences, 1)):
        for stream, cost in zip(streams, costs, strict=True):
            reads, end = pass_reads(stream, per_inference * cost // weight, num_macs, ts)
            events += [
                {"name": QREAD, "ph": "C", "ts": str(at), "pid": "NPU", "tid": QREAD,
                 "args": {QREAD: word}}
                for at, word in reads
            ]  # fmt: skip
            if reads:
                events.append({"name": "npu_active_cycles", "ph": "X", "ts": str(ts),
                               "pid": "NPU", "tid": "npu_active_cycles",
                               "dur": str(end - ts)})  # fmt: skip
            ts = end + 500  # the CPU's turn between delegate calls
    return {"traceEvents": events, "otherData": {STANDIN_KEY: True, "note": STANDIN_TRACE_NOTE}}


def write_standin_trace(path: Path, document: dict) -> None:
    """Written whole or not at all (a reader never sees half a trace)."""
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(document))
    partial.replace(path)
