"""The ``target`` setting reaches the console: the Run and Compile tabs start on it, and a
program that names its own NPU still runs on that one (issue 21, item 2)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from textual.widgets import Select

from etu.tui.app import EtuApp
from tools.screenshots import settle

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parent.parent.parent
DEMO = ROOT / "etu_tui" / "demo"
SIZE = (120, 36)


@pytest.mark.parametrize(
    ("program", "run_target"),
    [("demo_cnn_cpu.pte", "ethos-u85-256"), ("demo_cnn.pte", "ethos-u55-128")],
)
async def test_the_target_setting_is_the_consoles_default(
    tmp_path: Path, program: str, run_target: str
) -> None:
    shutil.copyfile(DEMO / program, tmp_path / program)
    (tmp_path / "etu.toml").write_text('target = "ethos-u85-256"\n')
    app = EtuApp(tmp_path / program)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        # a CPU program names no NPU: the setting's; the demo was built for a U55: its own
        assert app.query_one("#run-target", Select).value == run_target
        assert app.run_panel.target == run_target
        await pilot.press("k")  # the Compile form is composed when first shown
        await pilot.pause()
        assert app.query_one("#compile-target", Select).value == run_target
