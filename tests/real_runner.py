"""Building and running ExecuTorch's real runner from tests (shared by the unit and console
tests): the source found once, `etu firmware build` and `etu run --board qemu-an547` as
subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ETU = [sys.executable, "-m", "etu.tui.cli"]


def vendor_file(prefix: str) -> Path | None:
    for folder in [ROOT, *ROOT.parents]:
        vendor = folder / "shared" / "vendor"
        if vendor.is_dir():
            found = sorted(vendor.glob(f"{prefix}*.tar.gz"))
            if found:
                return found[-1]
    return None


def runtime_environment() -> dict[str, str]:
    """The environment of every etu build in these tests (source found once)."""
    env = source_environment()
    if not env.get("ETU_EXECUTORCH_SRC"):
        pytest.skip("no ExecuTorch runtime source (set ETU_EXECUTORCH_SRC; .ci/run does)")
    return env


def source_environment() -> dict[str, str]:
    """This environment with each mirrored source archive named (benchmarks use it too);
    ``ETU_EXECUTORCH_SRC`` is missing when none is found."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    for name, prefix in (
        ("ETU_EXECUTORCH_SRC", "executorch-runtime-src-"),
        ("ETU_ETHOSU_DRIVER_SRC", "ethos-u-core-driver-"),
        ("ETU_CMSIS_SRC", "cmsis-core-"),
        ("ETU_CMSIS_NN_SRC", "cmsis-nn-"),
    ):
        if not env.get(name):
            found = vendor_file(prefix)
            if found is not None:
                env[name] = str(found)
    return env


def etu(args: list, env: dict, cwd: Path | None = None, timeout: float = 1500):
    return subprocess.run(
        [*ETU, *map(str, args)], env=env, cwd=cwd, capture_output=True, text=True,
        timeout=timeout, check=False,
    )  # fmt: skip


def build(pte: Path, out: Path, env: dict, *extra) -> dict:
    argv = ["firmware", "build", pte, "--board", "qemu-an547", "--out", out, "--json", *extra]
    result = etu(argv, env)
    if result.returncode == 1 and "failed (status" in failure(result).split("\n", 1)[0]:
        # A compiler killed on a loaded 2-core machine (seen once in CI, at 3 workers) is
        # no verdict on etu: one more try, and the first failure is kept as a warning. A
        # real build failure fails twice.
        warnings.warn(f"real-runner build retried after: {failure(result)}", stacklevel=2)
        result = etu(argv, env)
    assert result.returncode == 0, failure(result)
    return json.loads(result.stdout)


def failure(result: subprocess.CompletedProcess) -> str:
    """A failed etu's status and its one-line error first (CI's summary keeps one line),
    then the tail of its stderr. Under ``--json`` the error is ``{"error": ...}`` on stdout."""
    errors = [line for line in result.stderr.splitlines() if line.startswith("etu:")]
    for line in (result.stdout or "").splitlines():
        try:
            reported = json.loads(line)
        except ValueError:
            continue
        if isinstance(reported, dict) and "error" in reported:
            errors.append(f"etu: {reported['error']}")
    first = errors[-1] if errors else "(no etu: line)"
    return f"status {result.returncode}: {first}\n{result.stderr[-2000:]}"


def run_qemu(elf: Path, sessions: Path, env: dict, *extra) -> tuple[int, list[dict], Path]:
    result = etu(["run", "--board", "qemu-an547", "--elf", elf, "--sessions", sessions,
                  "--timelimit", "60", "--json", *extra], env, timeout=120)  # fmt: skip
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    assert lines, result.stderr
    return result.returncode, lines, Path(lines[-1]["session"])
