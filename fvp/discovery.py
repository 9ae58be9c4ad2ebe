"""Finding the Corstone FVPs on this machine, and their versions.

Looked for, in order: the ``ETU_FVP_DIR`` variable, the ``fvp_dir`` setting (``etu.toml`` or
the user file, see runner/config.py), ``PATH``, and ExecuTorch's own download layout
(``examples/arm/ethos-u-scratch/FVP-corstone*/models/<platform>/``) under ``EXECUTORCH_ROOT``
or the ``executorch_src`` setting. Never in the working folder unless the user points there
(an ``ETU_FVP_DIR``/``EXECUTORCH_ROOT`` naming it, or ``--fvp-path``): relative or empty
``PATH`` entries are skipped, so an archive unpacked here cannot plant a simulator etu runs.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from etu.fvp.targets import FVP_EXECUTABLES

SCRATCH_LAYOUT = ("examples/arm/ethos-u-scratch", "examples/arm/arm-scratch")
VERSION_PATTERN = re.compile(r"Fast Models \[([^\]\s]+)")


@dataclass(frozen=True, slots=True)
class FoundFvp:
    name: str  # the executable name, e.g. FVP_Corstone_SSE-320
    path: Path
    found_via: str  # ETU_FVP_DIR / PATH / ethos-u-scratch


def _scratch_roots(env: dict[str, str], executorch_src: Path | None) -> list[Path]:
    roots = [Path(env["EXECUTORCH_ROOT"])] if env.get("EXECUTORCH_ROOT") else []
    roots += [Path(executorch_src)] if executorch_src is not None else []
    return [root / layout for root in roots for layout in SCRATCH_LAYOUT]


def _absolute_path(path: str | None) -> str:
    """``PATH`` without its relative entries (``.``, ``bin``, the empty one = cwd)."""
    entries = (path if path is not None else os.defpath).split(os.pathsep)
    return os.pathsep.join(e for e in entries if e and os.path.isabs(e))


def _executables_under(folder: Path, depth: int = 4) -> dict[str, Path]:
    found: dict[str, Path] = {}
    if not folder.is_dir():
        return found
    for name in FVP_EXECUTABLES:
        direct = folder / name
        if direct.is_file() and os.access(direct, os.X_OK):
            found[name] = direct
            continue
        for level in range(1, depth + 1):
            hits = sorted(folder.glob("/".join(["*"] * level) + f"/{name}"))
            hits = [h for h in hits if h.is_file() and os.access(h, os.X_OK)]
            if hits:
                found[name] = hits[0]
                break
    return found


def find_fvps(
    env: dict[str, str] | None = None,
    *,
    fvp_dir: Path | None = None,
    fvp_dir_origin: str = "fvp_dir setting",
    executorch_src: Path | None = None,
) -> dict[str, FoundFvp]:
    """Executable name → where it was found (the first place wins). ``fvp_dir`` is the
    settings' folder (``Settings.fvp_dir``); ``ETU_FVP_DIR`` in ``env`` still comes first."""
    env = dict(os.environ if env is None else env)
    found: dict[str, FoundFvp] = {}
    if env.get("ETU_FVP_DIR"):
        for name, path in _executables_under(Path(env["ETU_FVP_DIR"])).items():
            found.setdefault(name, FoundFvp(name, path, "ETU_FVP_DIR"))
    if fvp_dir is not None:
        for name, path in _executables_under(Path(fvp_dir)).items():
            found.setdefault(name, FoundFvp(name, path, fvp_dir_origin))
    for name in FVP_EXECUTABLES:
        on_path = shutil.which(name, path=_absolute_path(env.get("PATH")))
        if on_path and name not in found:
            found[name] = FoundFvp(name, Path(on_path), "PATH")
    for root in _scratch_roots(env, executorch_src):
        for name, path in _executables_under(root).items():
            found.setdefault(name, FoundFvp(name, path, "ethos-u-scratch"))
    return found


def fvp_version(path: Path, timeout: float = 20.0) -> str | None:
    """``FVP --version`` → e.g. ``11.27.42``; None when it does not say or does not run."""
    try:
        result = subprocess.run(
            [str(path), "--version"], capture_output=True, timeout=timeout, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = VERSION_PATTERN.search(result.stdout.decode("utf-8", "replace"))
    return match.group(1) if match else None
