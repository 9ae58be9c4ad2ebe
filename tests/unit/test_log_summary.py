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
    "etdump_blocks", "npu", "no_model_line", "inferences", "inference_count", "version_skew",
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


def test_a_firmware_that_runs_no_model_never_succeeds() -> None:
    """etu's stand-in runner firmware prints the runner's success line, but says first that
    it runs no model: the verdict says so (issue 24 §3), and the run's ending too."""
    from etu.parsers.runner_log import parse_log_bytes
    from etu.runner.run import EXIT_STATUS, NO_MODEL_PROOF, classify

    log = (
        b"etu stand-in runner firmware: runs no model, prints what the runner prints\n"
        b"I [executorch:arm_executor_runner.cpp:1381 main()] Program complete, exiting.\n"
    )
    summary = LogSummary.from_events(parse_log_bytes(log))
    assert summary.verdict == "no_model" and summary.no_model_line == 1
    outcome = classify(summary.to_json(), [], 0, False)
    assert (outcome.reason, outcome.proof, outcome.proof_line) == ("no_model", NO_MODEL_PROOF, 1)
    assert EXIT_STATUS["no_model"] == 1
    # the same lines without the banner: the runner's success
    assert LogSummary.from_events(parse_log_bytes(log.split(b"\n", 1)[1])).verdict == "success"
