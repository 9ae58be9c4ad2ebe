"""Issue 25 §3: the Compile tab lowers the CPU part to the Cortex-M backend on request."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Select

from etu.tui.app import COMPILE_TAB, EtuApp
from etu.tui.widgets import CompilePanel
from tests.console_helpers import SIZE

ROOT = Path(__file__).resolve().parent.parent.parent
DEMO = ROOT / "etu_tui" / "demo" / "demo_cnn.pte"


@pytest.mark.anyio
async def test_the_compile_tabs_cpu_choice_asks_for_the_cortex_m_backend() -> None:
    app = EtuApp(DEMO)
    async with app.run_test(size=SIZE) as pilot:
        app.action_show_tab(COMPILE_TAB)
        await pilot.pause()
        panel = app.query_one(CompilePanel)
        assert panel.form_request().cpu_backend == "portable"
        panel.query_one("#compile-cpu-backend", Select).value = "cortex-m"
        await pilot.pause()
        assert panel.form_request().cpu_backend == "cortex-m"
        assert panel.check_form() is not None  # a valid request
        panel.query_one("#compile-quantize", Select).value = "off"
        await pilot.pause()
        assert panel.check_form() is None and "quantized operators only" in panel.reason
