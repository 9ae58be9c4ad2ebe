"""The NPU tab's measured view (issue 25 §4): after an FVP run that kept a PMU trace (the
stand-in FVP, through ``etu run``), ``v`` twice shows each layer's measured cycles beside
Vela's estimate from the debug database made by the installed Vela for the demo."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from textual.widgets import ContentSwitcher

from etu.tui.app import EtuApp
from etu.tui.widgets.npu import LayerTable
from etu.tui.widgets.npu_measured import MeasuredTable
from tests.console_helpers import SIZE
from tests.pmu_workspace import demo_debug_db
from tools.screenshots import settle


def run_standin(workspace: Path) -> Path:
    result = subprocess.run(
        [sys.executable, "-m", "etu.tui.cli", "run", "--elf",
         "firmware/arm_executor_runner.elf", "--json"],
        capture_output=True, text=True, cwd=workspace, timeout=120, check=True,
    )  # fmt: skip
    return workspace / json.loads(result.stdout.splitlines()[-1])["session"]


@pytest.mark.anyio
async def test_v_twice_shows_measured_beside_estimate(workspace: Path, standin: Path) -> None:
    demo_debug_db(workspace / "vela" / "out_debug.xml")
    session = run_standin(workspace)
    app = EtuApp(workspace / "demo_cnn.pte")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("n")
        await settle(pilot)
        panel = app.npu_panel
        assert panel.measured is not None and panel.measured[0] == session
        await pilot.press("v", "v")
        await settle(pilot)
        table = panel.query_one(MeasuredTable)
        assert panel.query_one(ContentSwitcher).current == "npu-measured" and table.has_focus
        assert table.row_count == 8, panel.measured[1].to_json()
        assert [c.label for c in table.columns] == ["#", "layer", "measured", "", "Vela est.",
                                                    "ratio"]  # fmt: skip
        conv = next(i for i in range(8) if table.layer(i)["operator"] == "Conv2D")
        cells = table.row_cells(conv)
        row = table.layer(conv)
        assert (
            cells[2] == f"{row['measured_cycles']:,}" and cells[4] == f"{row['estimated_cycles']:,}"
        )
        assert cells[5] == f"×{row['ratio']:.2f}"
        title = str(panel.query_one("#layers-box").border_title)
        assert "8 layers" in title and "SIMULATED" in title and session.name in title
        await pilot.press("v")
        await settle(pilot)
        assert panel.query_one(ContentSwitcher).current == "layers"
        assert panel.query_one(LayerTable).has_focus


@pytest.mark.anyio
async def test_without_a_traced_session_v_keeps_two_views(workspace: Path) -> None:
    app = EtuApp(workspace / "demo_cnn.pte")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("n", "v")
        await settle(pilot)
        panel = app.npu_panel
        assert panel.measured is None
        assert panel.query_one(ContentSwitcher).current == "npu-operations"
        await pilot.press("v")
        await settle(pilot)
        assert panel.query_one(ContentSwitcher).current == "layers"


@pytest.mark.anyio
async def test_a_run_made_while_the_console_is_open_shows_when_the_tab_does(
    workspace: Path, standin: Path
) -> None:
    """The tab reads the newest traced session again each time it is shown."""
    app = EtuApp(workspace / "demo_cnn.pte")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("n")
        await settle(pilot)
        panel = app.npu_panel
        assert panel.measured is None
        session = run_standin(workspace)  # another console (or etu run) recorded a run
        await pilot.press("i", "n")
        await settle(pilot)
        assert panel.measured is not None and panel.measured[0] == session
        # no debug database here: one layer per NPU operation, no estimate
        assert panel.measured[1].debug_db is None and len(panel.measured[1].layers) == 48
        await pilot.press("v", "v")
        await settle(pilot)
        table = panel.query_one(MeasuredTable)
        assert table.row_count == 48 and table.row_cells(0)[4:] == ("—", "—")
        assert "per NPU operation (no debug DB)" in str(panel.query_one("#layers-box").border_title)
