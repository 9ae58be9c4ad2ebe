"""The Run tab on a session of the emulated board with etu's NPU: the PMU pane shows the
functional model's operations, MACs and bytes per delegate beside Vela's estimate under the
session's label (never cycles); the banner's line carries them where the panes do not show
(80×24); a failed invoke names its operation. Recorded sessions, no QEMU."""

from __future__ import annotations

from pathlib import Path

import pytest

from etu.parsers.runner_events import NpuInvoke
from etu.runner.runtime_run import NPU_LABEL
from etu.runner.session import SessionWriter, sessions_root
from etu.tui.app import EtuApp
from etu.tui.widgets.npu_invoke_lines import npu_lines
from etu.tui.widgets.pmu_pane import PmuPane
from etu.tui.widgets.run_panes import RunBanner
from tests.console_helpers import SIZE, open_run_tab, screen_text, wait_until

pytestmark = pytest.mark.anyio

PREFIX = "[executorch:etu_npu_bridge.c:176 ethosu_invoke_v3()] etu-npu: "
MODEL = ("delegate 0: 48 operations (4 conv, 36 pool, 3 dma, 1 vector product), 2238784 MACs, "
         "69092 B read, 45418 B written, executed by etu's Ethos-U model")  # fmt: skip
FAILED = ("delegate 0: operation 0 (NPU_OP_POOL): activation tanh is not supported by etu's "
          "Ethos-U model")  # fmt: skip
END = "I [executorch:arm_executor_runner.cpp:1550 main()] Program complete, exiting.\n"


def session(workspace: Path, lines: list[str], reason: str, proof: str) -> Path:
    meta = {"target": "qemu-an547", "board": "qemu-an547", "label": NPU_LABEL,
            "emulated": True, "simulated": False, "npu_model": "etu's Ethos-U model"}  # fmt: skip
    writer = SessionWriter(sessions_root(workspace), "qemu", meta)
    for line in lines:
        writer.write_output(line.encode(), when=100.0)
    writer.finish(exit_reason=reason, proof=proof, returncode=0 if reason == "success" else 1)
    return writer.folder


async def show(pilot, folder: Path):
    """The session in the Run tab, once its reports (read in a child process) are in."""
    panel = await open_run_tab(pilot)
    panel.open_past_run(folder)

    def shown() -> bool:
        record = panel.shown
        return record is not None and record.folder == folder and bool(record.npu)

    await wait_until(pilot, shown, what="the session's NPU invokes in the panes")
    await wait_until(pilot, lambda: not panel.busy, what="the panes settled")
    await pilot.pause()
    return panel


async def test_the_pmu_pane_shows_the_models_counts_beside_velas_estimate(workspace: Path):
    folder = session(workspace, [f"I {PREFIX}{MODEL}\n", END], "success", END.strip())
    app = EtuApp(workspace / "demo_cnn.pte")
    async with app.run_test(size=SIZE) as pilot:
        await show(pilot, folder)
        pane = app.query_one(PmuPane)
        text = "\n".join(pane.lines)
        assert pane.lines[0] == NPU_LABEL  # the session's label, first
        assert "delegate 0 · 1 invoke · etu's Ethos-U model" in text
        assert "operations 48: 4 conv, 36 pool, 3 dma, 1 vector" in text
        # the demo's Vela folder: its one call counts the same MACs
        assert "MACs       2,238,784 = Vela's count" in text
        assert "bytes      69,092 read · 45,418 written" in text
        assert "Vela estimate 54,916 cycles" in text
        assert "NPU cycles" not in text and "No PMU report" not in text  # no invented cycles
        assert "no cycles" in str(pane.border_title)
        banner = app.query_one(RunBanner).text
        assert "NPU, no timing: 48 ops · 2.24 M MACs · 69.1 kB read · 45.4 kB written" in banner
    async with EtuApp(workspace / "demo_cnn.pte").run_test(size=(80, 24)) as pilot:
        await show(pilot, folder)  # the panes do not fit 24 rows: the banner's line does
        shown = screen_text(pilot.app)
        assert "NPU, no timing: 48 ops · 2.24 M MACs · 69.1 kB read · 45.4 kB written" in shown
        assert max(len(line.rstrip()) for line in shown.splitlines()) <= 80


async def test_a_failed_invoke_is_named_in_the_pane_and_the_ending(workspace: Path):
    line = f"E {PREFIX}{FAILED}"
    folder = session(workspace, [f"{line}\n"], "runner_error", line)
    app = EtuApp(workspace / "demo_cnn.pte")
    async with app.run_test(size=SIZE) as pilot:
        await show(pilot, folder)
        text = "\n".join(app.query_one(PmuPane).lines)
        assert "delegate 0 · failed at operation 0 (NPU_OP_POOL)" in text
        assert "activation tanh is not supported" in text
        banner = app.query_one(RunBanner).text
        assert "✗ runner_error" in banner and "operation 0 (NPU_OP_POOL)" in banner
        assert "NPU, no timing" not in banner  # the ending says it


def test_many_delegates_take_a_line_each_and_the_reference_says_what_the_model_lacks():
    def invoke(delegate: int, **fields) -> NpuInvoke:
        return NpuInvoke(1, delegate, True, **fields)

    npu = {d: invoke(d, executor="model", operations=10 + d, macs=1000 * d, bytes_read=5)
           for d in range(3)}  # fmt: skip
    lines = [line.plain for line in npu_lines(npu, {}, [(100.0, 0.0)] * 3, NPU_LABEL)]
    assert lines[0] == NPU_LABEL
    assert lines[1:4] == ["d0 · 10 ops · 0 MACs · 5 B read", "d1 · 11 ops · 1,000 MACs · 5 B read",
                          "d2 · 12 ops · 2,000 MACs · 5 B read"]  # fmt: skip
    assert lines[-1] == "Vela estimate 300 cycles"
    reference = {
        0: invoke(
            0,
            executor="reference",
            bytes_read=3072,
            bytes_written=40,
            fallback="delegate 0: operation 3 (NPU_OP_POOL): tanh \x1b[31m",
        )
    }
    lines = [line.plain for line in npu_lines(reference, {0: 2}, [(50.0, 9.0)], NPU_LABEL)]
    assert lines[1] == "delegate 0 · 2 invokes · TOSA reference model"
    assert lines[2] == "  bytes in/out 3,072 read · 40 written"
    assert lines[3].startswith("  model lacks: delegate 0: operation 3 (NPU_OP_POOL)")
    assert "\x1b" not in lines[3]  # the device's text is neutralised
    assert lines[4] == "  Vela estimate 50 cycles" and not any("MACs" in x for x in lines)
