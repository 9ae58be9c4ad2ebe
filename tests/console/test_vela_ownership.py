"""Vela's reports and estimates attach to a program only when they are that program's
(issue 24 §6): the demo's CPU twin opened beside the demo's ``vela/`` shows no report and no
estimate, and a run of another program (its session names the program it ran) gets no Vela
estimate in the PMU pane."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from textual.widgets import Static

from etu.runner.run_model import LaunchInfo, RunRecord
from etu.runner.tosa_graphs import COMPILE_RECORD
from etu.runner.workspace import workspace_vela
from etu.tui.app import EtuApp
from etu.tui.widgets.pmu_pane import PmuPane
from etu.tui.widgets.run import RunPanel
from tests.console_helpers import screen_text
from tests.helpers import DEMO, demo_workspace
from tools.screenshots import settle

pytestmark = pytest.mark.anyio


@pytest.fixture
def twin_beside_demo(tmp_path: Path) -> Path:
    """The demo workspace with its CPU twin beside the delegated program."""
    folder = demo_workspace(tmp_path / "demo", "vela")
    shutil.copyfile(DEMO / "demo_cnn_cpu.pte", folder / "demo_cnn_cpu.pte")
    return folder


def test_a_vela_report_is_the_program_its_compile_record_names(twin_beside_demo: Path):
    own = workspace_vela(twin_beside_demo / "demo_cnn.pte")
    assert own.report is not None and own.note is None
    twin = workspace_vela(twin_beside_demo / "demo_cnn_cpu.pte")
    assert twin.report is None
    assert twin.note == "vela/ holds another program's Vela report: not shown for demo_cnn_cpu.pte"
    # without a compile record, a program with no Ethos-U delegate has no Vela report
    (twin_beside_demo / "vela" / COMPILE_RECORD).unlink()
    assert workspace_vela(twin_beside_demo / "demo_cnn.pte").report is not None
    twin = workspace_vela(twin_beside_demo / "demo_cnn_cpu.pte")
    assert "has no Ethos-U delegate" in str(twin.note)


def test_a_record_naming_other_delegates_is_not_this_programs(twin_beside_demo: Path):
    record_path = twin_beside_demo / "vela" / COMPILE_RECORD
    record = json.loads(record_path.read_text())
    for delegate in record["delegates"]:
        delegate["payload_sha256"] = "0" * 64
    record["program_sha256"] = "1" * 64
    record_path.write_text(json.dumps(record))
    assert workspace_vela(twin_beside_demo / "demo_cnn.pte").note is not None


async def test_the_cpu_twin_shows_no_vela_report_and_no_estimate(twin_beside_demo: Path):
    app = EtuApp(twin_beside_demo / "demo_cnn_cpu.pte")
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        panel = app.query_one(RunPanel)
        assert panel.vela_cycles is None and panel.vela_calls == []
        await pilot.press("n")  # the NPU tab
        await settle(pilot)
        shown = screen_text(app)
        assert "vela/ holds another program's Vela report: not shown for demo_cnn_cpu.pte" in shown
        assert "54,916" not in shown


async def test_a_run_of_another_program_gets_no_vela_estimate(twin_beside_demo: Path):
    app = EtuApp(twin_beside_demo / "demo_cnn.pte")
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        panel = app.query_one(RunPanel)
        assert panel.vela_cycles, "the demo's own Vela estimate"
        pane = app.query_one(PmuPane)

        def shown_for(program_sha256: str) -> str:
            record = RunRecord("past", live=False)
            record.launch = LaunchInfo(["qemu"], program_sha256=program_sha256)
            panel._show_pmu(record)
            return str(pane.query_one("#pmu-text", Static).render())

        own = panel._program_sha256()
        assert own and "Vela estimate" in shown_for(own)
        assert "Vela estimate" in shown_for(""), "a run that names no program: the open one's"
        assert "Vela estimate" not in shown_for("f" * 64)


async def test_a_boards_session_whose_firmware_carries_another_program_gets_no_estimate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The open program differs from the one baked into the firmware (the demo's, with
    bytes appended: its own Vela report still attaches to it): after a flash + monitor of
    that firmware from the Boards tab (the emulated board, QEMU for real), the session
    names the firmware's program and the PMU pane shows no Vela estimate for it."""
    import hashlib

    from etu.tui.screens.preflight import PreflightScreen
    from tests.console_helpers import wait_until

    monkeypatch.setattr("serial.tools.list_ports.comports", lambda: [])
    folder = demo_workspace(tmp_path / "demo", "firmware", "vela")
    program = folder / "demo_cnn.pte"
    baked = hashlib.sha256(program.read_bytes()).hexdigest()  # what the firmware carries
    program.write_bytes(program.read_bytes() + bytes(4096))
    app = EtuApp(folder)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        run = app.query_one(RunPanel)
        assert run.vela_cycles, "the open program has its own Vela estimate"
        assert run._program_sha256() != baked
        await pilot.press("B")
        await settle(pilot)
        await pilot.press("r")
        await wait_until(pilot, lambda: isinstance(app.screen, PreflightScreen),
                         what="the pre-flight")  # fmt: skip
        assert any("model_pte" in problem for problem in app.screen.problems)
        await pilot.press("r")  # flash anyway
        await wait_until(pilot, lambda: run.live is not None and run.live.outcome is not None,
                         timeout=90, what="the board session to end")  # fmt: skip
        await settle(pilot)
        meta = json.loads((run.live.folder / "meta.json").read_text())
        assert meta["program_sha256"] == baked
        assert run.shown is run.live and run.live.launch.program_sha256 == baked
        shown = str(app.query_one(PmuPane).query_one("#pmu-text", Static).render())
        assert shown and "Vela estimate" not in shown, shown
        assert "54,916" not in shown
