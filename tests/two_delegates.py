"""A real program with two Ethos-U delegates (conv → sort on the CPU → conv), made by
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


def _cache_dir() -> Path:
    digest = hashlib.sha256()
    for source in (Path(__file__), MODEL, ROOT / "runner" / "aot.py"):
        digest.update(source.read_bytes())
    for dist in ("torch", "executorch", "ethos-u-vela"):
        digest.update(f"{dist}={metadata.version(dist)};".encode())
    return CACHE_ROOT / f"two_delegates-{digest.hexdigest()[:16]}"


def build() -> Path:
    """The compile job folder: ``TwoDelegates.pte`` with its ``vela/`` output beside it."""
    done = _cache_dir()
    with cache_lock("two_delegates"):
        if not (done / "TwoDelegates.pte").is_file():
            _compile(done)
    return done


def _compile(done: Path) -> None:
    work = done.with_name(done.name + f".partial{os.getpid()}")
    shutil.rmtree(work, ignore_errors=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run(
        [sys.executable, "-m", "etu.tui.cli", "compile", f"{MODEL}:TwoDelegates",
         "--input", "1x3x16x16", "--no-cache", "--out", str(work)],
        check=True, env=env, capture_output=True, timeout=600,
    )  # fmt: skip
    (job,) = [p for p in work.iterdir() if (p / "TwoDelegates.pte").is_file()]
    shutil.rmtree(done, ignore_errors=True)
    job.rename(done)
    shutil.rmtree(work, ignore_errors=True)
