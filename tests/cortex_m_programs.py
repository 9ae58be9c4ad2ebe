"""A program with a CPU fallback compiled both ways, by ``etu compile`` (the real ExecuTorch +
Vela flow): ``--cpu-backend portable`` and ``--cpu-backend cortex-m`` (the Cortex-M backend,
cortex_m::* kernels on CMSIS-NN). The model is tests/data/models/cmsis_fallback.py: conv →
relu on the Ethos-U55, a stride-4 convolution it does not take on the CPU. Cached like
tests/two_delegates.py (keyed by the model, the flow and the tool versions)."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from tests.real_programs import CACHE_ROOT, ROOT, cache_lock

MODEL = ROOT / "tests" / "data" / "models" / "cmsis_fallback.py"
CLASS = "StrideFourFallback"
SHAPE = "1x3x32x32"
BACKENDS = ("portable", "cortex-m")


def _cache_dir(backend: str, delegate: bool) -> Path:
    digest = hashlib.sha256(f"{CLASS}:{SHAPE}:{backend}:{delegate};".encode())
    for source in (Path(__file__), MODEL, ROOT / "runner" / "aot.py"):
        digest.update(source.read_bytes())
    for dist in ("torch", "executorch", "ethos-u-vela"):
        digest.update(f"{dist}={metadata.version(dist)};".encode())
    tail = "" if delegate else "-cpu"
    return CACHE_ROOT / f"cmsis_fallback-{backend}{tail}-{digest.hexdigest()[:16]}"


def compile_job(backend: str, *, delegate: bool = True) -> Path:
    """The job folder of ``etu compile`` with ``--cpu-backend BACKEND`` (``CLASS.pte`` and
    ``vela/`` with the compile record), compiled once; ``delegate=False``: everything on
    the CPU (``--no-delegate``)."""
    done = _cache_dir(backend, delegate)
    with cache_lock(done.name.rsplit("-", 1)[0]):
        if not (done / f"{CLASS}.pte").is_file():
            _compile(done, backend, delegate)
    return done


def _compile(done: Path, backend: str, delegate: bool) -> None:
    work = done.with_name(done.name + f".partial{os.getpid()}")
    shutil.rmtree(work, ignore_errors=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run(
        [sys.executable, "-m", "etu.tui.cli", "compile", f"{MODEL}:{CLASS}", "--input", SHAPE,
         "--cpu-backend", backend, *([] if delegate else ["--no-delegate"]), "--no-cache",
         "--out", str(work)],
        check=True, env=env, capture_output=True, timeout=600,
    )  # fmt: skip
    (job,) = [p for p in work.iterdir() if (p / f"{CLASS}.pte").is_file()]
    shutil.rmtree(done, ignore_errors=True)
    job.rename(done)
    shutil.rmtree(work, ignore_errors=True)
