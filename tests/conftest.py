from __future__ import annotations

from pathlib import Path

import pytest

from tests.real_programs import PROGRAMS, build

ROOT = Path(__file__).resolve().parent.parent
DEMO_PTE = ROOT / "etu_tui" / "demo" / "demo_cnn.pte"


@pytest.fixture(scope="session")
def real_program():
    """A function: name → path of a real program (lowered once, cached across runs)."""
    return build


@pytest.fixture(scope="session", params=sorted(PROGRAMS))
def any_real_program(request) -> Path:
    return build(request.param)


@pytest.fixture(scope="session")
def demo_pte() -> Path:
    return DEMO_PTE


@pytest.fixture
def anyio_backend() -> str:
    """The Pilot tests run on asyncio (anyio's pytest plugin drives them)."""
    return "asyncio"
