"""The Run tab runs a delegated program on the emulated board: the workspace's runner was
built with etu's NPU bridge (`etu firmware build --board qemu-an547`, found by the one
firmware rule), the run starts QEMU with the bridge, and the Ethos-U part is served by etu.
Real build (cached tree), real QEMU."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from textual.widgets import Select

from etu.runner.runtime_run import NPU_LABEL
from etu.tui.app import EtuApp
from etu.tui.widgets.pmu_pane import PmuPane
from etu.tui.widgets.run_panes import RunBanner
from tests.console_helpers import SIZE, open_run_tab, wait_run, wait_run_end
from tests.helpers import demo_workspace
from tests.real_runner import build, runtime_environment

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.runtime_build,
    pytest.mark.skipif(shutil.which("qemu-system-arm") is None, reason="no qemu-system-arm"),
    pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None, reason="no cross gcc"),
]


@pytest.fixture
def bridged_workspace(tmp_path: Path) -> Path:
    """The demo program with its Vela folder and, where the rule looks first for the
    emulated board, its runner built with the NPU bridge."""
    folder = demo_workspace(tmp_path / "demo", "vela")
    env = runtime_environment()
    record = build(folder / "demo_cnn.pte", folder / "demo_cnn.qemu-an547", env)
    assert record["options"]["npu_bridge"]
    return folder


async def test_the_run_tab_runs_the_delegated_demo_on_the_emulated_board(bridged_workspace):
    app = EtuApp(bridged_workspace)
    async with app.run_test(size=SIZE) as pilot:
        panel = await open_run_tab(pilot)
        app.query_one("#run-target", Select).value = "qemu-an547"
        await wait_run(pilot, lambda: panel.elf is not None and "qemu-an547" in str(panel.elf))
        assert panel.preflight() == []  # a delegated program: this runner serves its NPU
        assert panel.start_run()
        await wait_run_end(pilot, panel)
        live = panel.live
        assert live.outcome is not None and live.outcome.reason == "success", live.outcome
        meta = json.loads((live.folder / "meta.json").read_text())
        assert "functional Ethos-U model" in meta["label"] and meta["npu_model"]
        lines = [live.store.entry(i)[4] for i in range(live.store.total)]
        assert any("etu-npu: delegate 0:" in line for line in lines)
        assert sum(line.startswith("Output[0][") for line in lines) == 10
        # the PMU pane: the model's counts beside Vela's, under the label, no cycles
        pmu = "\n".join(app.query_one(PmuPane).lines)
        assert pmu.startswith(NPU_LABEL) and "delegate 0 · 1 invoke · etu's Ethos-U model" in pmu
        assert "MACs       2,238,784 = Vela's count" in pmu and "NPU cycles" not in pmu
        assert "NPU, no timing: 48 ops · 2.24 M MACs" in app.query_one(RunBanner).text


async def test_a_delegated_program_with_a_runner_without_the_bridge_is_flagged(tmp_path):
    """The workspace's stand-in firmware has no NPU driver layer: the pre-flight says what to
    build (before, the delegated program on the emulated board was refused outright)."""
    folder = demo_workspace(tmp_path / "demo", "firmware")
    app = EtuApp(folder)
    async with app.run_test(size=SIZE) as pilot:
        panel = await open_run_tab(pilot)
        app.query_one("#run-target", Select).value = "qemu-an547"
        await wait_run(pilot, lambda: panel.elf is not None and panel.preflight() != [])
        (problem,) = panel.preflight()
        assert "no NPU driver layer" in problem and "--board qemu-an547" in problem
