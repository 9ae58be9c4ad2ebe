"""Fixtures of the console tests: a copy of the demo workspace, the stand-in FVP."""

from __future__ import annotations

from pathlib import Path

import pytest

from etu.fvp.standin import install_standin
from tests.helpers import demo_workspace

STANDIN_ENV = ("ETU_STANDIN_FAULT", "ETU_STANDIN_INFERENCES", "ETU_STANDIN_LINE_DELAY")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A copy of the demo workspace: program, firmware, Vela output (sessions land here)."""
    return demo_workspace(tmp_path / "demo", "firmware", "vela")


@pytest.fixture
def standin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The stand-in FVP installed under the real FVP names, found through ETU_FVP_DIR."""
    folder = tmp_path / "fvp"
    install_standin(folder)
    monkeypatch.setenv("ETU_FVP_DIR", str(folder))
    for name in STANDIN_ENV:
        monkeypatch.delenv(name, raising=False)
    return folder
