"""Vela's debug database for the demo program, made by the installed Vela from the demo's
own TOSA graph with the settings its compile used (etu_compile.json), for the tests of
measured per-layer NPU cycles (issue 25 §4)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "etu_tui" / "demo"
VELA = Path(sys.executable).parent / "vela"


def demo_debug_db(destination: Path) -> Path:
    """Write the demo delegate's debug database to ``destination`` (skips without Vela)."""
    if not VELA.is_file():
        pytest.skip("Vela is not installed in this environment")
    (tosa,) = DEMO.glob("vela/output_tag0_*.tosa")
    spec = json.loads((DEMO / "vela" / "etu_compile.json").read_text())["spec"]
    with tempfile.TemporaryDirectory() as scratch:
        subprocess.run(
            [str(VELA), f"--accelerator-config={spec['target']}", "--config=Arm/vela.ini",
             "--output-format=raw", f"--system-config={spec['system_config']}",
             f"--memory-mode={spec['memory_mode']}", "--enable-debug-db", str(tosa),
             f"--output-dir={scratch}"],
            check=True, capture_output=True, timeout=120,
        )  # fmt: skip
        (made,) = Path(scratch).glob("*_debug.xml")
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(made, destination)
    return destination
