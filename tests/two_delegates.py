"""Real programs made by ``etu compile`` (job folders with Vela's files), e.g. one with two
Ethos-U delegates (conv → sort on the CPU → conv), made by
``etu compile`` (the real ExecuTorch + Vela flow) and cached like tests/real_programs.py.

Kept apart from real_programs.PROGRAMS so adding it does not rebuild every cached program.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from tests.real_programs import CACHE_ROOT, ROOT, cache_lock

MODEL = ROOT / "tests" / "data" / "models" / "two_delegates.py"


def _cache_dir(model: Path, cls: str, shape: str) -> Path:
    digest = hashlib.sha256(f"{cls}:{shape};".encode())
    for source in (
        Path(__file__),
        model,
        ROOT / "runner" / "aot.py",
        ROOT / "runner" / "compile_worker.py",
    ):
        digest.update(source.read_bytes())
    for dist in ("torch", "executorch", "ethos-u-vela"):
        digest.update(f"{dist}={metadata.version(dist)};".encode())
    return CACHE_ROOT / f"{model.stem}-{digest.hexdigest()[:16]}"


def build() -> Path:
    """The compile job folder: ``TwoDelegates.pte`` with its ``vela/`` output beside it."""
    return compile_job(MODEL, "TwoDelegates", "1x3x16x16")


def compile_job(model: Path, cls: str, shape: str) -> Path:
    """``etu compile MODEL:CLS --input SHAPE``'s job folder (``CLS.pte``, ``vela/``), once."""
    done = _cache_dir(model, cls, shape)
    with cache_lock(model.stem):
        if not (done / f"{cls}.pte").is_file():
            _compile(done, model, cls, shape)
    return done


def _compile(done: Path, model: Path, cls: str, shape: str) -> None:
    work = done.with_name(done.name + f".partial{os.getpid()}")
    shutil.rmtree(work, ignore_errors=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run(
        [sys.executable, "-m", "etu.tui.cli", "compile", f"{model}:{cls}",
         "--input", shape, "--no-cache", "--out", str(work)],
        check=True, env=env, capture_output=True, timeout=600,
    )  # fmt: skip
    (job,) = [p for p in work.iterdir() if (p / f"{cls}.pte").is_file()]
    shutil.rmtree(done, ignore_errors=True)
    job.rename(done)
    shutil.rmtree(work, ignore_errors=True)
