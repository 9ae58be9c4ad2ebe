"""A workspace with recorded sessions for the history tests: the demo workspace copied,
the stand-in FVP installed, real `etu run` subprocesses, and the committed format-1
sessions (tests/data/sessions/v1) recorded before the session format changed."""

from __future__ import annotations

import json
import shutil
from functools import partial
from pathlib import Path

from etu.fvp.standin import install_standin
from tests.helpers import etu as run_etu

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "etu_tui" / "demo"
V1_SESSIONS = ROOT / "tests" / "data" / "sessions" / "v1"
STANDIN_SETTINGS = ("ETU_STANDIN_FAULT", "ETU_STANDIN_INFERENCES", "ETU_STANDIN_LINE_DELAY",
                    "ETU_STANDIN_DRIFT", "ETU_STANDIN_ETDUMP", "ETU_STANDIN_VELA")  # fmt: skip


etu = partial(run_etu, drop=STANDIN_SETTINGS)


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


def fallback_programs() -> tuple[Path, Path]:
    """The same small network lowered for ethos-u55-128 without and with an operator the
    NPU cannot run (top-k stays on the CPU): real programs, built once and cached (the key
    is this function's own source)."""
    import hashlib
    import inspect

    from tests.real_programs import cache_dir, cache_lock

    source = inspect.getsource(fallback_programs) + inspect.getsource(_lower_fallback_programs)
    key = hashlib.sha256(source.encode()).hexdigest()[:8]
    paths = tuple(cache_dir() / f"history-fallback-{key}-{n}.pte" for n in (0, 1))
    with cache_lock(f"history-fallback-{key}"):
        if not all(p.exists() for p in paths):
            _lower_fallback_programs(paths)
    return paths


def _lower_fallback_programs(paths: tuple[Path, Path]) -> None:
    import torch
    from torch import nn

    from etu.runner.aot import LoweringSpec, example_inputs_for, lower_to_pte

    class FallbackNet(nn.Module):
        """conv/relu/linear on the NPU; with ``fallback``, a top-k the Ethos-U cannot run."""

        def __init__(self, fallback: bool) -> None:
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3, padding=1)
            self.fc = nn.Linear(8 * 8 * 8, 10)
            self.fallback = fallback

        def forward(self, x):
            x = self.fc(torch.flatten(torch.relu(self.conv(x)), 1))
            return torch.topk(x, 3).values if self.fallback else x

    for fallback, path in zip((False, True), paths, strict=True):
        torch.manual_seed(0)
        path.parent.mkdir(parents=True, exist_ok=True)
        model = FallbackNet(fallback).eval()
        lower_to_pte(model, example_inputs_for([(1, 3, 8, 8)]), LoweringSpec(), path)
