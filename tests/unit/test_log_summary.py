"""LogSummary in its own module: the same object and exactly today's JSON fields."""

from __future__ import annotations

from pathlib import Path

import pytest

import etu.parsers.runner_log as runner_log
from etu.parsers.log_summary import VERDICTS, LogSummary, summarize
from etu.parsers.runner_log import parse_log_bytes

TRANSCRIPTS = Path(__file__).resolve().parent.parent / "data" / "transcripts"
FIELDS = {
    "lines", "verdict", "model", "pmu", "allocators", "outputs", "errors", "bundleio",
    "etdump_blocks", "npu",
}  # fmt: skip


def test_runner_log_keeps_the_names() -> None:
    assert runner_log.LogSummary is LogSummary
    assert runner_log.summarize is summarize and runner_log.VERDICTS is VERDICTS


@pytest.mark.parametrize("path", sorted(TRANSCRIPTS.glob("*.log")), ids=lambda p: p.name)
def test_to_json_fields(path: Path) -> None:
    summary = LogSummary.from_events(parse_log_bytes(path.read_bytes()))
    record = summary.to_json()
    assert set(record) == FIELDS
    assert record["verdict"] in VERDICTS
    assert set(record["model"]) == {"pte_size", "methods", "method"}
    assert set(record["allocators"]) == {
        "method_allocator", "planned", "loaded", "input", "executor", "temp_allocator",
    }  # fmt: skip
    for error in record["errors"]:
        assert set(error) == {"status", "status_name", "text", "kind", "line"}
    assert record == summarize(parse_log_bytes(path.read_bytes()))


def test_an_error_entry_is_typed() -> None:
    data = (
        b"E [executorch:operator_registry.cpp:256 get_op_function_from_registry()] "
        b"kernel 'aten::exp.out' not found.\n"
    )
    summary = LogSummary.from_events(parse_log_bytes(data))
    assert summary.verdict == "error"
    (error,) = summary.errors
    assert error["kind"] == "missing_kernel" and error["line"] == 1
    assert error["status"] == 0x14 and error["status_name"] == "OperatorMissing"
