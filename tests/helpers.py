"""What every layer of the tests shares: where the checkout is, and `etu` as a subprocess
(the installed entry point's module, with the checkout on the path)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "etu_tui" / "demo"
ETU = [sys.executable, "-m", "etu.tui.cli"]


def etu(
    *args: str | os.PathLike[str] | bytes,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 300,
    text: bool = True,
    drop: Iterable[str] = (),
) -> subprocess.CompletedProcess:
    """``etu ARGS`` in a child process; ``env`` adds to (``drop`` removes from) this one's."""
    dropped = set(drop)
    base = {k: v for k, v in os.environ.items() if k not in dropped}
    return subprocess.run(
        [*ETU, *map(os.fsdecode, args)], capture_output=True, text=text, cwd=cwd,
        env={**base, "PYTHONPATH": str(ROOT), **(env or {})}, timeout=timeout, check=False,
    )  # fmt: skip


def demo_workspace(folder: Path, *parts: str) -> Path:
    """A copy of the demo workspace in ``folder``: the program and the given sub-folders
    (``firmware``, ``vela``)."""
    folder.mkdir(parents=True)
    shutil.copyfile(DEMO / "demo_cnn.pte", folder / "demo_cnn.pte")
    for part in parts:
        shutil.copytree(DEMO / part, folder / part)
    return folder
