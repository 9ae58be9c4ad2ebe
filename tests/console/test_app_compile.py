"""Pilot tests of the Compile tab with REAL compiles of the built-in models (few: each costs
seconds). The workspace is a temporary copy of the demo program, so output lands under
``tmp_path/.etu/compile``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import Input, Select, Static, TabbedContent

from etu.parsers.program_facts import program_target
from etu.runner.compile_worker import STAGES
from etu.tui.app import COMPILE_TAB, PROGRAM_TAB, EtuApp
from etu.tui.widgets import CompilePanel
from tests.console_helpers import SIZE, screen_text, wait_until
from tools.screenshots import settle

pytestmark = [pytest.mark.anyio, pytest.mark.aot]

ROOT = Path(__file__).resolve().parent.parent.parent
DEMO = ROOT / "etu_tui" / "demo" / "demo_cnn.pte"
COMPILE_TIMEOUT = 180.0


@pytest.fixture
def program(tmp_path: Path) -> Path:
    shutil.copyfile(DEMO, tmp_path / DEMO.name)
    return tmp_path / DEMO.name


async def _compile_tab(pilot: Pilot, source: str = "add", target: str = "ethos-u55-128"):
    await settle(pilot)
    app = pilot.app
    assert isinstance(app, EtuApp)
    app.action_show_tab(COMPILE_TAB)
    await pilot.pause()
    panel = app.query_one(CompilePanel)
    panel.query_one("#compile-source", Input).value = source
    panel.query_one("#compile-target", Select).value = target
    await pilot.pause()
    panel.focus_start()
    await pilot.pause()
    return panel


async def _wait(pilot: Pilot, condition, what: str, timeout: float = COMPILE_TIMEOUT) -> None:
    await wait_until(pilot, condition, timeout=timeout, what=what)


def _plain(panel: CompilePanel, selector: str) -> str:
    return str(panel.query_one(selector, Static).content)


async def test_compile_add_shows_every_stage_and_opens_the_result(program: Path) -> None:
    app = EtuApp(program)
    async with app.run_test(size=SIZE) as pilot:
        panel = await _compile_tab(pilot)
        footer = screen_text(app).splitlines()[-1]
        for key in ("r Compile", "w Sweep", "q Quit"):
            assert key in footer, key
        assert "c Copy ops" not in footer
        await pilot.press("r")
        await pilot.pause()
        assert panel.running
        await _wait(pilot, lambda: not panel.running, "the compile did not end")
        result = panel.result
        assert result.status == "ok", result.message
        assert result.pte.is_relative_to(program.parent / ".etu" / "compile")
        stages = _plain(panel, "#compile-stages")
        assert stages.count("✓") == len(STAGES) and "pending" not in stages
        await _wait(pilot, lambda: app.facts is not None and app.facts.path == result.pte, "open")
        await settle(pilot)
        assert program_target(app.facts) == "ethos-u55-128"
        assert (
            app.npu_panel.vela is not None and app.npu_panel.vela.report is not None
        )  # vela/ beside the .pte
        assert panel.workspace == program.parent  # the workspace stays the user's
        app.action_show_tab(PROGRAM_TAB)
        await pilot.pause()
        assert result.pte.name in screen_text(app)
        # The same request again is a cache hit: it says so and opens at once.
        app.action_show_tab(COMPILE_TAB)
        await pilot.pause()
        await pilot.press("r")
        await _wait(pilot, lambda: not panel.running, "the cached compile did not end")
        assert panel.result.cached
        assert "cached" in _plain(panel, "#compile-reason")


async def test_a_refused_request_says_why_and_starts_nothing(program: Path) -> None:
    app = EtuApp(program)
    async with app.run_test(size=SIZE) as pilot:
        panel = await _compile_tab(pilot)
        panel.query_one("#compile-mode", Select).value = "Dedicated_Sram"
        await pilot.pause()
        reason = _plain(panel, "#compile-reason")
        assert "Dedicated_Sram" in reason and "OffChipFlash" in reason, reason
        await pilot.press("r")
        await pilot.pause()
        assert panel.current is None
        assert not [w for w in app.workers if w.group == "compile"]
        assert not (program.parent / ".etu").exists()


async def test_a_failing_source_marks_load_and_shows_the_traceback(
    program: Path, tmp_path: Path
) -> None:
    bad = tmp_path / "broken_model.py"
    bad.write_text("import torch\n\nclass Model(torch.nn.Module:\n    pass\n")
    app = EtuApp(program)
    async with app.run_test(size=SIZE) as pilot:
        panel = await _compile_tab(pilot, source=f"{bad}:Model")
        panel.query_one("#compile-inputs", Input).value = "1x4:float32"
        await pilot.pause()
        assert panel.start_compile()
        await _wait(pilot, lambda: not panel.running, "the compile did not end")
        result = panel.result
        assert result.status == "failed" and result.failed_stage == "load"
        assert "✗ load" in _plain(panel, "#compile-stages")
        assert panel.query_one("#compile-error").display
        error = _plain(panel, "#compile-error-text")
        assert "SyntaxError" in error and "broken_model.py" in error
        assert app.is_running and app.facts.path == program  # the console stays up


async def test_cancel_during_a_compile_ends_cancelled(program: Path) -> None:
    app = EtuApp(program)
    async with app.run_test(size=SIZE) as pilot:
        panel = await _compile_tab(pilot, source="cnn")
        await pilot.press("r")
        await _wait(pilot, lambda: panel.current.job is not None, "the job did not start")
        await _wait(pilot, lambda: bool(panel.current.stages), "no stage started", 60.0)
        await pilot.press("x")
        await _wait(pilot, lambda: not panel.running, "the cancel did not end the compile", 30.0)
        assert panel.result.status == "cancelled"
        assert "cancelled" in _plain(panel, "#compile-stages")
        assert app.facts.path == program


async def test_a_sweep_of_two_targets_fills_two_rows(program: Path) -> None:
    app = EtuApp(program)
    async with app.run_test(size=SIZE) as pilot:
        panel = await _compile_tab(pilot)
        panel.query_one("#sweep-targets", Input).value = "ethos-u85-256, ethos-u55-128"
        await pilot.pause()
        await pilot.press("w")
        await pilot.pause()
        assert panel.sweeping
        await _wait(pilot, lambda: not panel.sweeping, "the sweep did not end")
        rows = panel.sweep_rows
        assert [row["target"] for row in rows] == ["ethos-u85-256", "ethos-u55-128"]
        assert all(row["status"] == "ok" and row["cycles"] for row in rows), rows
        assert panel.query_one("#sweep-table").row_count == 2
        await pilot.press("s")
        await pilot.pause()
        cycles = [row["cycles"] for row in panel.sorted_rows()]
        assert cycles == sorted(cycles)
        assert app.query_one(TabbedContent).active == COMPILE_TAB
