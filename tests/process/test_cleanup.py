"""Clean-up found on the way (issue 9): dead options and constants either made meaningful
or gone, the stand-in's abort path honest."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
from pathlib import Path

import etu.parsers.runner_events as runner_events
from etu.parsers.runner_events import EVENT_TYPES, Event
from etu.parsers.vela_csv import LEGACY_PER_LAYER_COLUMNS, REGOR_PER_LAYER_COLUMNS
from etu.parsers.vela_debug_db import REGOR_TABLES
from tests.helpers import etu

ROOT = Path(__file__).resolve().parent.parent.parent
DEMO = ROOT / "etu_tui" / "demo"
VELA = ROOT / "tests" / "data" / "vela"
ELF = DEMO / "firmware" / "arm_executor_runner.elf"


def test_run_fvp_flag_is_accepted_documented_and_changes_nothing(tmp_path: Path) -> None:
    from etu.fvp.standin import install_standin

    (sim, *_) = install_standin(tmp_path / "fvps")
    base = ["run", "--elf", ELF, "--fvp-path", sim, "--dry-run", "--json"]
    with_flag = etu(*base, "--fvp")
    assert with_flag.returncode == 0, with_flag.stderr
    assert json.loads(with_flag.stdout) == json.loads(etu(*base).stdout)
    assert "older scripts" in etu("run", "--help").stdout


def test_documented_per_layer_columns_are_the_real_headers() -> None:
    regor = (DEMO / "vela" / "out_per-layer.csv").read_text().splitlines()[0].split(",")
    assert tuple(regor) == REGOR_PER_LAYER_COLUMNS
    legacy = next(VELA.glob("42_*/*_per-layer.csv")).read_text().splitlines()[0].split(",")
    assert tuple(c.strip() for c in legacy) == LEGACY_PER_LAYER_COLUMNS


def test_documented_debug_db_tables_cover_the_real_ones() -> None:
    from etu.parsers.vela_debug_db import parse_debug_db

    for path in VELA.rglob("*_debug.xml"):
        db = parse_debug_db(path.read_bytes(), str(path))
        if db.layout == "regor":
            assert set(db.tables) <= set(REGOR_TABLES), path


def test_event_registry_lists_every_event() -> None:
    """Every event dataclass of the module is registered (a class that only lends its slots
    to one, as LogLineSlots does to LogLine, is not an event of its own)."""
    events = {
        cls for _, cls in inspect.getmembers(runner_events, inspect.isclass)
        if issubclass(cls, Event) and cls is not Event and cls.__module__ == runner_events.__name__
        and "__dataclass_fields__" in vars(cls)
    }  # fmt: skip
    assert events == set(EVENT_TYPES)


def test_unused_target_list_is_gone() -> None:
    import etu.runner.aot

    assert not hasattr(etu.runner.aot, "ETHOS_U_TARGETS")  # runner.compile_request.TARGETS rules


def test_standin_abort_flushes_what_the_runner_said(tmp_path: Path) -> None:
    """The abort path (a fault) ends with status 1 and everything printed before it."""
    from etu.fvp.standin import install_standin

    (sim, *_) = install_standin(tmp_path / "fvps")
    result = subprocess.run(
        [str(sim), "-a", str(ELF)], capture_output=True, text=True, timeout=60, check=False,
        env={**os.environ, "ETU_STANDIN_FAULT": "alloc-failure"},
    )  # fmt: skip
    assert result.returncode == 1
    assert result.stdout.rstrip().splitlines()[-1].startswith(("E [executorch:", "F [executorch:"))
