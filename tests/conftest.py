from __future__ import annotations

import os
from pathlib import Path

import pytest

from etu.runner.heap import settle_imports
from tests.durations import longest_first, recorded
from tests.real_programs import PROGRAMS, build
from tests.real_runner import build as build_runner
from tests.real_runner import runtime_environment

ROOT = Path(__file__).resolve().parent.parent
DEMO_PTE = ROOT / "etu_tui" / "demo" / "demo_cnn.pte"


def pytest_collection_finish(session) -> None:
    """What collection imported (Textual, etu, the test modules) is never garbage: keep the
    collector off it, as the console and the compile do (runner/heap.py)."""
    settle_imports()


def pytest_collection_modifyitems(config, items) -> None:
    """Longest modules first (tests/durations.py): `make test`'s workers take whole modules
    in this order, so the run ends on short ones."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    items[:] = longest_first(items, recorded(), workers)


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


@pytest.fixture(autouse=True)
def _no_user_settings(tmp_path_factory, monkeypatch) -> None:
    """Tests never read the developer's own etu settings (runner/config.py's user file),
    nor their ETU_* settings variables, nor their labgrid coordinator (LG_COORDINATOR)."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("xdg-config")))
    for name in ("ETU_TARGET", "ETU_SYSTEM_CONFIG", "ETU_MEMORY_MODE", "ETU_BOARDS_DIR",
                 "ETU_EXECUTORCH_SRC", "ETU_THEME", "LG_COORDINATOR"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="session")
def runtime_env() -> dict[str, str]:
    """The environment of every real-runner build (source found once; skips without one)."""
    return runtime_environment()


@pytest.fixture(scope="session")
def float_program(real_program) -> Path:
    return real_program("float_cpu")


@pytest.fixture(scope="session")
def float_firmware(float_program, runtime_env, tmp_path_factory) -> dict:
    """The float CPU program's runner for qemu-an547 (the shared library build)."""
    return build_runner(float_program, tmp_path_factory.mktemp("fw-float"), runtime_env)
