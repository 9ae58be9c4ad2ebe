"""Which network operator each NPU operation of a command stream was compiled from.

Vela's debug database (:mod:`etu.parsers.vela_debug_db`) names, per NPU_OP command's byte
offset in the stream it wrote, the optimised operator and the input graph's operator it
came from; joined here with the decoded stream (:mod:`etu.parsers.ethosu_commands`).
"""

from __future__ import annotations

from dataclasses import dataclass

from etu.parsers.ethosu_commands import NpuCommandStream
from etu.parsers.vela_debug_db import DebugDb


@dataclass(frozen=True, slots=True)
class VelaOperator:
    """The network operator Vela compiled an NPU operation from (its debug database)."""

    operator: str  # what Vela made of it (optimised), e.g. Conv2D, Transpose
    source: str | None  # the input graph's operator, when Vela kept the link


def join_debug_db(stream: NpuCommandStream, db: DebugDb) -> dict[int, VelaOperator] | None:
    """``{operation index: its operator}`` from Vela's debug database (``queue.offset`` is
    the byte offset of each NPU_OP command; ``queue.optimised_id → optimised.source_id →
    source``). None when the database is another stream's: Vela rewrites one file per call,
    so with several delegates it holds the last one's, and an offset that is not one of
    this stream's operations gives it away."""
    queue = db.tables.get("queue") or []
    by_offset = {op.word * 4: op for op in stream.operations}
    if not queue or not stream.operations:
        return None
    optimised = {row.get("id"): row for row in db.tables.get("optimised") or []}
    sources = {row.get("id"): row for row in db.tables.get("source") or []}
    anchors: dict[int, VelaOperator] = {}
    for row in queue:
        op = by_offset.get(row.get("offset"))
        if op is None or op.ofm is None:
            return None
        made = optimised.get(row.get("optimised_id")) or {}
        source = sources.get(made.get("source_id")) or {}
        name = made.get("operator")
        if isinstance(name, str):
            anchors[op.index] = VelaOperator(name, source.get("operator"))
    # a queue entry names the last NPU operation of a scheduled operator (or of one of its
    # stripes): the block operations after the previous entry are its parts
    joined: dict[int, VelaOperator] = {}
    current = None
    for op in reversed(stream.operations):
        current = anchors.get(op.index, current)
        if current is not None and op.ofm is not None:
            joined[op.index] = current
    return joined
