"""Real programs for the tests, made by the real ExecuTorch Ethos-U flow and cached.

The cache key covers this file, the lowering code and the torch/executorch/vela versions,
so a change to any of them rebuilds; an unchanged checkout reuses the files at once.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path

from etu.runner.aot import LoweringSpec

ROOT = Path(__file__).resolve().parent.parent
CACHE_ROOT = Path(os.environ.get("ETU_TEST_ARTIFACTS", ROOT / "tests" / ".artifacts"))

# name → (example model, lowering spec)
PROGRAMS: dict[str, tuple[str, LoweringSpec]] = {
    "u55": ("cnn", LoweringSpec(target="ethos-u55-128")),
    "u65": ("cnn", LoweringSpec(target="ethos-u65-256")),
    "u85": ("cnn", LoweringSpec(target="ethos-u85-256")),
    "u55_segment": ("cnn", LoweringSpec(target="ethos-u55-128", extract_delegate_segments=True)),
    "float_cpu": ("cnn", LoweringSpec(quantize=False, delegate=False)),
    # quantized per channel, every operator on the CPU (the demo's CPU twin's shape)
    "int8_cpu": ("cnn", LoweringSpec(target="ethos-u55-128", delegate=False)),
    # float, on the CPU, through kernels upstream defines by macro (tanh, exp, erf, rsqrt)
    "macro_cpu": ("mlp_math", LoweringSpec(quantize=False, delegate=False)),
    "two_inputs": ("add2", LoweringSpec(target="ethos-u55-64")),
}
# Programs that are also written as bundled programs (.bpte, identifier BP08).
BUNDLED = {"u55"}


def keyed_dir(prefix: str, *sources: Path) -> Path:
    """A folder of the artifact cache keyed on ``sources``, etu's lowering code and the
    torch/executorch/vela versions: a change to any of them lowers again."""
    digest = hashlib.sha256()
    for source in (*sources, ROOT / "runner" / "aot.py", ROOT / "runner" / "example_models.py"):
        digest.update(source.read_bytes())
    for dist in ("torch", "executorch", "ethos-u-vela"):
        digest.update(f"{dist}={metadata.version(dist)};".encode())
    return CACHE_ROOT / f"{prefix}{digest.hexdigest()[:16]}"


def cache_dir() -> Path:
    return keyed_dir("", Path(__file__))


def build(name: str) -> Path:
    """Path of program ``name`` (``NAME.bpte`` for the bundled form), lowered once."""
    base, _, suffix = name.partition(".")
    out = cache_dir() / f"{base}.{suffix or 'pte'}"
    with cache_lock(base):
        if not out.exists():
            _lower(base, out)
    return out


@contextmanager
def cache_lock(name: str) -> Iterator[None]:
    """Test workers (pytest-xdist) share the artifact cache: one builds ``name``, the others
    wait and reuse it. Check for the artifact under the lock too: a file being written
    exists before it is whole."""
    CACHE_ROOT.mkdir(parents=True, exist_ok=True)
    with open(CACHE_ROOT / f".{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _lower(base: str, out: Path) -> None:
    from etu.runner.aot import example_inputs_for, lower_to_pte
    from etu.runner.example_models import EXAMPLES

    model_name, spec = PROGRAMS[base]
    factory, shapes = EXAMPLES[model_name]
    import torch

    torch.manual_seed(0)
    bundled = cache_dir() / f"{base}.bpte" if base in BUNDLED else None
    # A delegated program keeps Vela's files, under a name etu does not look for (it reads
    # `vela/` beside a program): tests/npu_programs.py copies them rather than lower again.
    vela = vela_folder(base) if spec.delegate else None
    lower_to_pte(factory(), example_inputs_for(shapes), spec, out.with_suffix(".pte"),
                 bundled_out=bundled, vela_dir=vela)  # fmt: skip


def vela_folder(name: str) -> Path:
    """Where Vela's files of delegated program ``name`` are kept (``build`` lowers it)."""
    return cache_dir() / f"{name}.vela"
