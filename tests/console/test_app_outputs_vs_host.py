"""The Run tab's outputs pane compares a real run's outputs with the host runtime.

A real session: ExecuTorch's own runner built for the float CPU test program and run on
the emulated board (QEMU mps3-an547); the console opens it from the past runs and the pane
shows each output's error against the same program run by ExecuTorch's host runtime (in a
child process: the console never imports torch).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from textual.widgets import TabbedContent

from etu.runner.session import list_sessions, sessions_root
from etu.tui.app import RUN_TAB, EtuApp
from etu.tui.widgets import OperatorsPane, OutputsPane, PastRunsList
from etu.tui.widgets.run_panes import comparison_line
from tests.console_helpers import wait_until
from tests.real_runner import build, run_qemu
from tools.screenshots import settle

pytestmark = pytest.mark.anyio
SIZE = (160, 48)


def test_a_comparison_row_says_pass_or_fail_with_the_metrics() -> None:
    row = {"index": 0, "passed": False, "max_abs_error": 0.25, "mean_abs_error": 0.125,
           "rmse": 0.15, "cosine_similarity": 0.17, "snr_db": -3.5, "note": None}  # fmt: skip
    text = comparison_line(row).plain
    assert text.startswith("  ✗ host") and "max 0.25" in text and "cos 0.1700" in text
    assert "SNR -3.5 dB" in text
    same = comparison_line({**row, "passed": True, "snr_db": None, "max_abs_error": 0.0})
    assert same.plain.startswith("  ✓ host") and "SNR ∞ dB" in same.plain


def _workspace_with_a_run(tmp_path: Path, program: Path, elf: Path, env: dict) -> Path:
    """A workspace holding ``program`` and one session of ``elf`` run on QEMU."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    shutil.copyfile(program, workspace / program.name)
    status, events, session = run_qemu(elf, sessions_root(workspace), env)
    assert status == 0, events[-1]
    return session


async def _open_the_past_run(pilot) -> None:
    """Run tab, past runs list, the newest session opened."""
    await settle(pilot)
    await pilot.press("u")
    await settle(pilot)
    assert pilot.app.query_one(TabbedContent).active == RUN_TAB
    past = pilot.app.query_one(PastRunsList)
    past.focus()
    past.highlighted = 0
    await pilot.press("enter")


@pytest.mark.runtime_build
async def test_a_real_run_on_the_emulated_board_is_compared_with_the_host(
    float_firmware, float_program, runtime_env, tmp_path: Path
) -> None:
    session = _workspace_with_a_run(
        tmp_path, float_program, Path(float_firmware["elf"]), runtime_env
    )
    workspace = session.parent.parent.parent
    app = EtuApp(workspace)
    async with app.run_test(size=SIZE) as pilot:
        await _open_the_past_run(pilot)
        panel = app.run_panel
        assert [run.folder for run in app.query_one(PastRunsList).runs] == list_sessions(
            sessions_root(workspace)
        )
        pane = app.query_one(OutputsPane)
        await wait_until(
            pilot,
            lambda: panel.shown is not None and panel.shown.comparison is not None,
            timeout=300,
            what="the comparison with the host",
        )
        await settle(pilot)
        shown = panel.shown
        assert shown is not None and shown.folder == session
        record = shown.comparison
        assert record is not None and record["passed"], (record, shown.comparison_note)
        (output,) = record["outputs"]
        assert output["count"] == 10 and output["max_abs_error"] <= 5e-7 + 1e-9
        assert any(line.startswith("  ✓ host") for line in pane.lines)
        assert "match the host" in str(pane.border_title)


@pytest.mark.runtime_build
async def test_an_etdump_run_shows_its_operators_and_why_times_are_missing(
    float_program, runtime_env, tmp_path: Path
) -> None:
    """The runner built with BundleIO and the event tracer (the same tree as the unit
    test's): the Operators pane lists what ran, on the CPU, with no time on QEMU and the
    reason; the outputs pane compares the run on the inputs it was bundled with."""
    firmware = build(float_program, tmp_path / "fw", runtime_env, "--bundleio", "--etdump",
                     "--seed", "3")  # fmt: skip
    session = _workspace_with_a_run(tmp_path, float_program, Path(firmware["elf"]), runtime_env)
    app = EtuApp(session.parent.parent.parent)
    async with app.run_test(size=SIZE) as pilot:
        await _open_the_past_run(pilot)
        pane = app.query_one(OperatorsPane)
        panel = app.run_panel
        await wait_until(
            pilot,
            lambda: panel.shown is not None and panel.shown.operators is not None,
            timeout=300,
            what="the ETDump's operators",
        )
        await settle(pilot)
        assert panel.shown.folder == session
        rows = panel.shown.operators["rows"]
        assert rows and all(row["time"] is None for row in rows)
        assert pane.display and "emulated board" in str(pane.border_subtitle)
        executed = {op.split("::")[1] for op in firmware["select_ops"]}
        assert any(line.split()[0] in executed for line in pane.lines)
        assert all(" — " in line for line in pane.lines)
        await wait_until(
            pilot,
            lambda: not (panel.shown.comparison_note or "").startswith("comparing"),
            timeout=300,
            what="the comparison's verdict",
        )
        # a BundleIO run is compared on the inputs it was bundled with (#22 §3), not all ones
        comparison = panel.shown.comparison
        assert comparison is not None, panel.shown.comparison_note
        assert comparison["inputs"]["file"].endswith("inputs.npz")
