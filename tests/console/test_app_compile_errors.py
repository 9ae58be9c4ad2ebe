"""The Compile tab on a user's usual mistake (issue 24 §8a, §8c), at 80×24 and 120×36: a
shape mistake shows its first line, where in the user's model, and the job's log file that
keeps the whole traceback; the worker log shows no third-party noise (kept in that file)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from textual.widgets import Input, RichLog, Static

from etu.tui.app import COMPILE_TAB, EtuApp
from etu.tui.widgets import CompilePanel
from tests.console_helpers import wait_until
from tools.screenshots import settle

pytestmark = [pytest.mark.anyio, pytest.mark.aot]
DEMO = Path(__file__).resolve().parent.parent.parent / "etu_tui" / "demo" / "demo_cnn.pte"
MODEL = """import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(10, 5)

    def forward(self, x):
        return self.fc(x)
"""


@pytest.mark.parametrize("size", [(80, 24), (120, 36)], ids=["80x24", "120x36"])
async def test_a_shape_mistake_in_the_compile_tab(tmp_path: Path, size) -> None:
    program = tmp_path / DEMO.name
    shutil.copyfile(DEMO, program)
    model = tmp_path / "model.py"
    model.write_text(MODEL)
    app = EtuApp(program)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        app.action_show_tab(COMPILE_TAB)
        await pilot.pause()
        panel = app.query_one(CompilePanel)
        panel.query_one("#compile-source", Input).value = str(model)  # no :Class: its one
        panel.query_one("#compile-inputs", Input).value = "1x4:float32"
        await pilot.pause()
        assert panel.start_compile()
        await wait_until(pilot, lambda: not panel.running, timeout=300, what="the compile end")
        result = panel.result
        assert result.status == "failed" and result.failed_stage == "export"
        error = str(panel.query_one("#compile-error-text", Static).content)
        assert error.splitlines()[0].startswith("RuntimeError: a and b must have same reduction")
        assert f"at {model}:10 in forward" in error
        assert f"full traceback: {result.traceback_file}" in error
        assert "torch/export" not in error and len(error.splitlines()) <= 12
        shown = "\n".join(strip.text for strip in panel.query_one("#compile-log", RichLog).lines)
        kept = Path(result.traceback_file).read_text()
        assert "Traceback (most recent call last)" in kept
        for noise in ("torchao/_C", "register_constant", "[cpuinfo"):
            assert noise not in shown, noise
        assert "torchao/_C" in kept or "register_constant" in kept
