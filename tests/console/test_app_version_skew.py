"""The Run tab names a version skew the Ethos-U driver reports (issue 25 §5): the driver's
mismatch line, read by the same model a live run feeds, becomes a line of the banner in
words (the NPU's MACs against the command stream's) with its fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from etu.runner.session import SessionWriter, sessions_root
from etu.tui.app import EtuApp
from etu.tui.widgets import RunBanner
from tests.console_helpers import SIZE, open_run_tab, wait_until
from tools.screenshots import settle

pytestmark = pytest.mark.anyio

# what the runner prints when the driver refuses a 128-MAC stream on a 256-MAC NPU
# (ethosu_device_u55_u65.c, ethosu_driver.c, EthosUBackend_Cortex_M.cpp, as the stand-in
# FVP prints them)
REFUSED = (
    b"I [executorch:arm_executor_runner.cpp:1140 run_model()] Starting running 1 inferences...\n"
    b"E: NPU config mismatch. npu.macs_per_cc=8, optimizer.macs_per_cc=7 "
    b"(ethosu_device_u55_u65.c:337)\n"
    b"E: Failed to invoke inference. (ethosu_driver.c:734)\n"
    b"E [executorch:EthosUBackend_Cortex_M.cpp:116 platform_execute()] Ethos-U invocation "
    b"failed error (-1)\n"
)


async def test_a_driver_mismatch_is_a_banner_line_with_its_fix(workspace: Path) -> None:
    writer = SessionWriter(sessions_root(workspace), "fvp", {"target": "ethos-u55-128"})
    writer.write_output(REFUSED, when=100.0)
    app = EtuApp(workspace)
    async with app.run_test(size=SIZE) as pilot:
        panel = await open_run_tab(pilot)
        panel.open_past_run(writer.folder)
        await settle(pilot)
        # the lines show first; the reports and errors are read from the log after them
        await wait_until(pilot, lambda: panel.shown is not None and panel.shown.skew,
                         what="the driver's mismatch to be read")  # fmt: skip
        (said,) = panel.shown.skew
        assert "the NPU has MACs 256, the command stream wants 128" in said
        await wait_until(pilot, lambda: "NPU config mismatch" in app.query_one(RunBanner).text,
                         what="the banner to name the mismatch")  # fmt: skip
        banner = app.query_one(RunBanner).text
        assert "NPU config mismatch" in banner and "etu compile --target" in banner
