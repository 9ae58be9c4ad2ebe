"""Issue 25 §6 in the console (Pilot): the PMU pane says what a 0 CPU-cycles figure from a
Cortex-M55 runner means, and the History chart adds the per-inference spread of a session
with several PMU reports."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from textual.app import App, ComposeResult

from etu.parsers.log_summary import CPU_CYCLES_BUG, CPU_CYCLES_UNKNOWN
from etu.parsers.runner_events import PmuReport
from etu.parsers.runner_log import parse_log_bytes
from etu.runner.run_model import RunRecord
from etu.tui.widgets.history import HistoryPanel
from etu.tui.widgets.pmu_pane import PmuPane
from tests.console_helpers import HistoryHarness, wait_until
from tests.unit.test_runner_changes_25 import log_of, pmu_report

pytestmark = pytest.mark.anyio


class PmuHarness(App):
    def compose(self) -> ComposeResult:
        yield PmuPane(id="pmu")


def past_run(folder: Path, cpu_cycles: int) -> RunRecord:
    record = RunRecord(folder.name, live=False)
    record.folder = folder
    events = parse_log_bytes(log_of(pmu_report(1, 4000, cpu_cycles)))
    record.pmu = [e for e in events if isinstance(e, PmuReport)]
    return record


def session(tmp_path: Path, name: str, meta: dict, record: dict | None = None) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    firmware = tmp_path / f"{name}-fw"
    firmware.mkdir()
    if record is not None:
        (firmware / "etu_firmware.json").write_text(json.dumps(record))
    meta = {"format": 2, "kind": "fvp", "elf": str(firmware / "runner.elf"), **meta}
    (folder / "meta.json").write_text(json.dumps(meta))
    return folder


async def test_the_pmu_pane_explains_a_zero_from_a_cortex_m55_runner(tmp_path: Path) -> None:
    old = session(tmp_path, "old", {}, {"options": {"cpu": "cortex-m55",
                                                    "cpu_cycle_counter": False}})  # fmt: skip
    unknown = session(tmp_path, "unknown", {"platform": "corstone-300"})
    fixed = session(tmp_path, "fixed", {}, {"options": {"cpu": "cortex-m55",
                                                        "cpu_cycle_counter": True}})  # fmt: skip
    app = PmuHarness()
    async with app.run_test(size=(100, 30)) as pilot:
        pane = app.query_one(PmuPane)
        for folder, cycles, expected in (
            (old, 0, f"CPU cycles {CPU_CYCLES_BUG}"),
            (unknown, 0, f"CPU cycles {CPU_CYCLES_UNKNOWN}"),
            (fixed, 0, "CPU cycles 0"),
            (old, 5000, "CPU cycles 5,000"),
        ):
            pane.show_record(past_run(folder, cycles), None)
            await pilot.pause()
            cpu = next(line for line in pane.lines if line.startswith("CPU cycles"))
            assert cpu.split(" · ")[0] == expected


def history_session(root: Path, name: str, started: float, summary: dict) -> None:
    folder = root / name
    folder.mkdir(parents=True)
    meta = {"format": 2, "kind": "fvp", "target": "ethos-u55-128", "started": started,
            "ended": started + 1, "program": "wide.pte", "program_sha256": "ab" * 32,
            "exit_reason": "success", "summary": summary}  # fmt: skip
    (folder / "meta.json").write_text(json.dumps(meta))
    (folder / "raw.log").write_bytes(b"")


async def test_history_charts_the_spread_of_several_inferences(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    root = workspace / ".etu" / "sessions"
    history_session(root, "20261126-100000-fvp-000", 1_795_000_000, {"npu_cycles": 4000})
    spread = {"npu_cycles": {"n": 3, "min": 900, "median": 1000, "max": 1200}}
    history_session(root, "20261126-100100-fvp-000", 1_795_000_060,
                    {"npu_cycles": 900, "inferences": 3, "spread": spread})  # fmt: skip
    app = HistoryHarness(workspace)
    async with app.run_test(size=(160, 45)) as pilot:
        panel = app.query_one(HistoryPanel)
        await wait_until(pilot, lambda: len(panel.rows) == 2, timeout=10, what="the listing")
        panel.query_one("#history-table").move_cursor(row=0)  # the newest: several reports
        await pilot.pause()
        assert len(panel.chart_points) == 2
        assert panel.chart_spread == [(2, {"min": 900.0, "median": 1000.0, "max": 1200.0})]
        title = str(panel.query_one("#history-chart").border_title)
        assert "min/median/max per inference" in title
        await pilot.press("g")  # CPU cycles: none recorded, no spread
        assert panel.chart_spread == []
