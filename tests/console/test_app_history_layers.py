"""History's compare of two FVP runs per layer (issue 25 §4): both stand-in runs kept a
PMU trace, joined to the Vela debug database made for the demo by the installed Vela; the
second run's NPU took the stand-in's rough figure instead of Vela's, so every layer moved."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import DataTable

from etu.tui.app import EtuApp
from etu.tui.widgets.history import HistoryPanel, compare_rows
from tests.history_workspace import make_workspace, record_run
from tests.pmu_workspace import demo_debug_db
from tools.screenshots import history_steps

pytestmark = pytest.mark.anyio


async def test_compare_lists_each_layers_measured_cycles(tmp_path: Path) -> None:
    workspace = make_workspace(tmp_path / "ws")
    demo_debug_db(workspace / "vela" / "out_debug.xml")
    record_run(workspace)
    record_run(workspace, ETU_STANDIN_VELA=str(workspace / "no-vela"))
    app = EtuApp(workspace)
    async with app.run_test(size=(140, 45)) as pilot:
        await history_steps(pilot)
        panel = app.query_one(HistoryPanel)
        layers = panel.diff["npu_layers"]
        assert len(layers) == 8 and not any(layer["equal"] for layer in layers)
        rows = [row for row in compare_rows(panel.diff) if row[0].startswith("≠ NPU ")]
        assert len(rows) == 8 and any("Conv2D" in row[0] for row in rows)
        assert all(row[3] and row[4] for row in rows)  # the change and the % change
        shown = panel.query_one("#history-compare", DataTable)
        labels = [str(shown.get_row_at(i)[0]) for i in range(shown.row_count)]
        assert sum(label.startswith("≠ NPU ") for label in labels) == 8
