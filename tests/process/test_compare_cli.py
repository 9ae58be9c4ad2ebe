"""etu compare takes a session as etu report and etu diff take it (its folder, name or a
unique name prefix), and anything else is one line saying it is no session."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import etu
from tests.history_workspace import add_v1_sessions


def _one_line(result) -> str:
    assert result.returncode == 2, (result.returncode, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "printed no Output" not in lines[0]
    return lines[0]


def test_compare_resolves_names_and_prefixes_as_report_does(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    sessions = add_v1_sessions(workspace)
    session = sessions[0]
    missing = tmp_path / "nothing.pte"
    # the name and a unique prefix reach the session: what stops them is the missing program
    for name in (session.name, session.name[:-1]):
        line = _one_line(etu("compare", name, "--pte", missing, cwd=workspace))
        assert "nothing.pte: no such program file" in line, line
        assert "no such session" not in line
    # the folder itself, from elsewhere, too
    line = _one_line(etu("compare", session, "--pte", missing, cwd=tmp_path))
    assert "nothing.pte: no such program file" in line


def test_a_non_session_says_so_naming_it_once(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    add_v1_sessions(workspace)
    (workspace / "build").mkdir()
    (workspace / "notes.txt").write_text("not a session\n")
    for name, what in (("nonexist", "no such session"), ("build", "a folder"),
                       ("notes.txt", "a file")):  # fmt: skip
        line = _one_line(etu("compare", name, cwd=workspace))
        assert line.startswith(f"etu: {name}: no such session"), line
        assert what in line and line.count(name) == 1, line
    line = _one_line(etu("compare", "20261123", cwd=workspace))
    assert "2 sessions start with it" in line, line


def test_report_says_the_same_of_a_non_session(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    add_v1_sessions(workspace)
    (workspace / "notes.txt").write_text("not a session\n")
    line = _one_line(etu("report", "notes.txt", cwd=workspace))
    assert line == "etu: notes.txt: no such session (a file, not a session folder)"
