"""Where a workspace is: opening a program from a sub-folder keeps its workspace, and a
workspace whose programs live in compile jobs opens the newest (issue 21, item 2)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from etu.parsers.errors import WrongKindError
from etu.runner.workspace import find_workspace, resolve_target, workspace_of

ROOT = Path(__file__).resolve().parent.parent.parent
DEMO = ROOT / "etu_tui" / "demo" / "demo_cnn.pte"


@pytest.fixture
def initialised(tmp_path: Path) -> Path:
    """`etu init ws`, then a compile job written with `--out build` (as etu init suggests)."""
    subprocess.run([sys.executable, "-m", "etu.tui.cli", "init", "ws"], cwd=tmp_path,
                   env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True,
                   capture_output=True, timeout=60)  # fmt: skip
    ws = tmp_path / "ws"
    job = ws / "build" / "TinyNet-1234abcd"
    job.mkdir(parents=True)
    shutil.copyfile(DEMO, job / "TinyNet.pte")
    return ws


def test_a_program_in_a_sub_folder_keeps_its_workspace(initialised: Path) -> None:
    program = initialised / "build" / "TinyNet-1234abcd" / "TinyNet.pte"
    assert workspace_of(program) == initialised
    found = find_workspace(program)
    assert found.root == initialised and found.sessions == initialised / ".etu" / "sessions"


def test_a_workspace_of_compile_jobs_opens_the_newest(initialised: Path) -> None:
    older = initialised / ".etu" / "compile" / "old-job" / "Old.pte"
    older.parent.mkdir(parents=True)
    shutil.copyfile(DEMO, older)
    past = time.time() - 3600
    os.utime(older, (past, past))
    assert resolve_target(initialised) == initialised / "build" / "TinyNet-1234abcd" / (
        "TinyNet.pte"
    )


def test_an_empty_workspace_names_itself(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(WrongKindError) as caught:
        resolve_target(Path("."))
    assert str(caught.value).startswith(f"{tmp_path}: folder holds no .pte file")
    assert workspace_of(Path(".")) == tmp_path  # absolute: views can name it


def test_a_program_outside_any_workspace_stays_in_its_folder(tmp_path: Path) -> None:
    shutil.copyfile(DEMO, tmp_path / "x.pte")
    assert workspace_of(tmp_path / "x.pte") == tmp_path
    job = tmp_path / ".etu" / "compile" / "job"
    job.mkdir(parents=True)
    assert workspace_of(job / "x.pte") == tmp_path
