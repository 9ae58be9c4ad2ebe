"""etu sessions: runs recorded by this etu (format 2) and by the etu before (format 1)
list together, newest first, with their figures; filters; the format-1 cache."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from etu.runner.history import SUMMARY, list_rows, resolve_session
from tests.history_workspace import add_v1_sessions, etu, make_workspace, record_run


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    ws = make_workspace(tmp_path_factory.mktemp("history") / "ws")
    add_v1_sessions(ws)
    record_run(ws)
    record_run(ws, ETU_STANDIN_FAULT="hard-fault")
    return ws


def test_new_sessions_record_their_summary(workspace: Path) -> None:
    newest = list_rows(workspace / ".etu" / "sessions")[1]  # the success run
    folder = Path(newest.folder)
    meta = json.loads((folder / "meta.json").read_text())
    assert meta["format"] == 2 and meta["program"] == "demo_cnn.pte"
    assert meta["summary"]["npu_cycles"] == newest.npu_cycles > 0
    summary = json.loads((folder / SUMMARY).read_text())
    assert summary["verdict"] == "success" and len(summary["output_values"]["0"]["values"]) == 10


def test_lists_old_and_new_sessions_newest_first(workspace: Path) -> None:
    result = etu("sessions", "--json", cwd=workspace)
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["format"] for r in rows] == [2, 2, 1, 1]
    assert [r["ending"]["reason"] for r in rows] == [
        "hard_fault", "success", "runner_error", "success"
    ]  # fmt: skip
    assert rows == sorted(rows, key=lambda r: r["id"], reverse=True)
    old_success = rows[3]
    # the format-1 session's figures come from its raw.log; its program is named by hash
    assert old_success["npu_cycles"] == 54916 and old_success["cpu_cycles"] == 94916
    assert old_success["method_allocator_used"] == 29536
    assert old_success["temp_allocator"] == 2097152
    assert old_success["program"]["name"] == "demo_cnn.pte"
    assert old_success["program"]["short"] == "dd737eeb"
    assert old_success["firmware"]["name"] == "arm_executor_runner.elf"
    assert old_success["ending"]["proof_line"] == 56
    assert "Program complete" in old_success["ending"]["proof"]
    assert rows[1]["npu_cycles"] == old_success["npu_cycles"]  # same program, same figures
    assert all(r["kind"] == "fvp" and r["simulated"] for r in rows)
    assert (workspace / ".etu" / "sessions" / ".summaries.json").is_file()  # the cache


def test_table_shows_endings_and_proofs(workspace: Path) -> None:
    text = etu("sessions", cwd=workspace).stdout
    lines = text.splitlines()
    assert lines[0].split()[:4] == ["when", "kind", "target", "program"]
    assert "hard_fault" in lines[1] and "Hard fault" in lines[1]
    assert "success @56" in lines[4] and "54,916" in lines[4]
    assert "SIMULATED" in lines[-1]


@pytest.mark.parametrize(
    ("args", "count"),
    [
        (["--ending", "success"], 2),
        (["--ending", "failed"], 2),
        (["--ending", "hard_fault"], 1),
        (["--program", "demo_cnn"], 4),
        (["--program", "dd737eeb"], 4),
        (["--program", "other"], 0),
        (["--target", "ethos-u85-256"], 0),
        (["--target", "ethos-u55-128", "--limit", "3"], 3),
    ],
)
def test_filters(workspace: Path, args: list[str], count: int) -> None:
    result = etu("sessions", "--json", *args, cwd=workspace)
    assert result.returncode == 0
    assert len(result.stdout.splitlines()) == count


def test_resolve_by_name_or_prefix(workspace: Path) -> None:
    root = workspace / ".etu" / "sessions"
    rows = list_rows(root)
    assert resolve_session(rows[0].id, root) == Path(rows[0].folder)
    assert resolve_session(rows[0].folder, root) == Path(rows[0].folder)
    assert resolve_session("20261123-213021", root) == root / "20261123-213021-fvp-000"
    assert resolve_session("nope", root) is None


def test_unreadable_meta_still_lists(tmp_path: Path) -> None:
    root = tmp_path / ".etu" / "sessions" / "20200101-000000-fvp-000"
    root.mkdir(parents=True)
    (root / "meta.json").write_text("{torn")
    (root / "raw.log").write_bytes(b"hello\n")
    rows = list_rows(root.parent)
    assert rows[0].ending["reason"] == "unfinished" and rows[0].warnings


def test_a_sessions_reports_parsed_in_a_child_equal_those_parsed_in_place(tmp_path):
    """The console parses a recorded log's reports in a child process (EventsChild): the
    same events as in place, and a killed child says so rather than hanging the console."""
    from etu.runner.isolated import ChildError
    from etu.runner.session_events import EventsChild, events_of_file

    transcript = (
        Path(__file__).parent.parent / "data/transcripts/04_et_docs_v0.4_mv2_pmu_allocator.log"
    )
    log = tmp_path / "raw.log"
    log.write_bytes(transcript.read_bytes() * 200)
    in_place = events_of_file(log, "ethos-u55")
    assert any(type(e).__name__ == "PmuReport" for e in in_place[0])
    assert EventsChild(log, "ethos-u55").result() == in_place
    child = EventsChild(log, "ethos-u55")
    child.kill()
    with pytest.raises(ChildError, match="stopped"):
        child.result()
    with pytest.raises(ChildError, match="not read"):
        EventsChild(tmp_path / "gone.log", None).result()
