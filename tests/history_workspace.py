"""A workspace with recorded sessions for the history tests: the demo workspace copied,
the stand-in FVP installed, real `etu run` subprocesses, and the committed format-1
sessions (tests/data/sessions/v1) recorded before the session format changed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from fvp.standin import install_standin

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "etu_tui" / "demo"
V1_SESSIONS = ROOT / "tests" / "data" / "sessions" / "v1"
STANDIN_SETTINGS = ("ETU_STANDIN_FAULT", "ETU_STANDIN_INFERENCES", "ETU_STANDIN_LINE_DELAY",
                    "ETU_STANDIN_DRIFT", "ETU_STANDIN_ETDUMP", "ETU_STANDIN_VELA")  # fmt: skip


def etu(*args: str, cwd: Path, env: dict | None = None, timeout: float = 120):
    base = {k: v for k, v in os.environ.items() if k not in STANDIN_SETTINGS}
    return subprocess.run(
        [sys.executable, "-m", "etu_tui.cli", *args], capture_output=True, text=True,
        cwd=cwd, env={**base, "PYTHONPATH": str(ROOT), **(env or {})},
        timeout=timeout, check=False,
    )  # fmt: skip


def make_workspace(folder: Path) -> Path:
    """The demo workspace (program, Vela output, firmware) and the stand-in FVPs."""
    shutil.copytree(DEMO, folder, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    install_standin(folder / "fvps")
    return folder


def record_run(workspace: Path, **env: str) -> Path:
    """One `etu run` of the workspace's firmware; the session folder it recorded."""
    workspace = workspace.resolve()
    result = etu(
        "run", "--elf", "firmware/arm_executor_runner.elf", "--json",
        cwd=workspace, env={"ETU_FVP_DIR": str(workspace / "fvps"), **env},
    )  # fmt: skip
    assert result.returncode != 2, result.stderr
    last = json.loads(result.stdout.splitlines()[-1])
    return workspace / last["session"]


def add_v1_sessions(workspace: Path) -> list[Path]:
    root = workspace / ".etu" / "sessions"
    root.mkdir(parents=True, exist_ok=True)
    copied = []
    for folder in sorted(V1_SESSIONS.iterdir()):
        if folder.is_dir():
            shutil.copytree(folder, root / folder.name)
            copied.append(root / folder.name)
    return copied
