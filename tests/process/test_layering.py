"""The layering contracts (pyproject.toml [tool.importlinter]) hold, and can fail."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
LINT = Path(sys.executable).with_name("lint-imports")
pytestmark = pytest.mark.skipif(not LINT.exists(), reason="import-linter is not installed")


def lint(root: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(
        [str(LINT), "--config", str(root / "pyproject.toml")],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_the_tree_keeps_its_contracts() -> None:
    result = lint(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "broken" in result.stdout and " 0 broken" in result.stdout


@pytest.mark.parametrize(
    ("module", "line", "contract"),
    [
        ("parsers/text.py", "from etu.tui import safe_text", "parsers import no runner"),
        ("runner/session.py", "import etu.tui.app", "runner and fvp import no etu_tui"),
        ("etu_tui/cli/inspect.py", "import torch", "torch and executorch only"),
        ("parsers/pte.py", "from textual import app", "no Textual below the console"),
        # what `etu run` did: a headless check imported from a widget module
        (
            "etu_tui/cli/run.py",
            "from etu.tui.widgets import run_launch",
            "no Textual in the CLI's commands",
        ),
    ],
)
def test_a_violation_breaks_a_contract(tmp_path: Path, module: str, line: str, contract: str):
    # the folders laid out as they install: etu.tui, etu.parsers, etu.runner, etu.fvp
    for package, name in (("parsers", "parsers"), ("runner", "runner"), ("fvp", "fvp"),
                          ("etu_tui", "tui")):  # fmt: skip
        shutil.copytree(
            ROOT / package,
            tmp_path / "etu" / name,
            ignore=shutil.ignore_patterns("demo", "__pycache__", "*.c", "*.h"),
        )
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    folder, rest = module.split("/", 1)
    target = tmp_path / "etu" / ("tui" if folder == "etu_tui" else folder) / rest
    target.write_text(target.read_text() + f"\n\ndef _late():\n    {line}\n")
    result = lint(tmp_path)
    assert result.returncode != 0
    assert f"{contract}" in result.stdout and "BROKEN" in result.stdout


def test_nothing_imports_the_folders_by_their_bare_names() -> None:
    """The folders install as etu.tui/etu.parsers/etu.runner/etu.fvp; a bare `import runner`
    would load tosa-tools' package (or a second copy of etu's from the checkout)."""
    tracked = subprocess.run(["git", "ls-files", "*.py"], cwd=ROOT, capture_output=True,
                             text=True, check=True).stdout.split()  # fmt: skip
    bare = re.compile(r"^\s*(?:from|import)\s+(?:runner|parsers|fvp|etu_tui)\b", re.M)
    offenders = [name for name in tracked if bare.search((ROOT / name).read_text())]
    assert not offenders
