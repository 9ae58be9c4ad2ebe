"""The Boards tab with a board flashed by its vendor's tool (issue 25 §7): picking the
profile says which tool and whether it is installed; without it, r shows the exact command
to run where it is (never an obscure failure, never a CLI option); with it (a real
executable on PATH, written by the test) r runs it and the board is flashed."""

from __future__ import annotations

import json
import os
import shlex
import stat
from pathlib import Path

import pytest
from textual.widgets import Select, TabbedContent

from etu.tui.app import BOARDS_TAB, EtuApp
from etu.tui.widgets.boards import BoardsPanel
from tests.board_peers import usb_port
from tests.console_helpers import wait_until
from tests.helpers import demo_workspace
from tools.screenshots import settle

pytestmark = pytest.mark.anyio
SMALL = (80, 24)
BOARD = "renesas-ra8p1"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return demo_workspace(tmp_path / "demo", "firmware")


@pytest.fixture
def tools(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """PATH with the basics only, plus a folder where a test may put a vendor tool."""
    folder = tmp_path / "tools"
    folder.mkdir()
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}/usr/bin{os.pathsep}/bin")
    monkeypatch.setattr("serial.tools.list_ports.comports", lambda: [usb_port("/dev/ttyACM-x")])
    return folder


async def _pick_the_board(app: EtuApp, pilot) -> BoardsPanel:
    await settle(pilot)
    await pilot.press("B")
    await settle(pilot)
    assert app.query_one(TabbedContent).active == BOARDS_TAB
    panel = app.query_one(BoardsPanel)
    await wait_until(pilot, lambda: bool(panel.ports), what="the ports to be listed")
    app.query_one("#boards-profile", Select).value = BOARD
    await settle(pilot)
    return panel


async def test_a_vendor_tool_not_installed_shows_the_command(workspace, tools) -> None:
    firmware = workspace / "firmware" / "arm_executor_runner.elf"
    app = EtuApp(workspace)
    async with app.run_test(size=SMALL) as pilot:
        panel = await _pick_the_board(app, pilot)
        assert panel.last_status == (
            f"{BOARD} flashes with Renesas Flash Programmer (rfp-cli, not installed here): "
            "r shows the command to run where it is"
        )
        panel.firmware = firmware
        await pilot.press("r")
        await wait_until(pilot, lambda: not panel.flashing, what="the flash to end")
        await settle(pilot)
        command = shlex.join(["rfp-cli", "-device", "RA", "-tool", "jlink", "-if", "swd",
                              "-auto", "-file", str(firmware.resolve())])  # fmt: skip
        assert panel.last_status == (
            f"flash failed: {BOARD}: rfp-cli (Renesas Flash Programmer) is not installed "
            f"here; flash with: {command}"
        )
        assert app.query_one(TabbedContent).active == BOARDS_TAB
        assert (tools / "calls.jsonl").exists() is False


async def test_an_installed_vendor_tool_flashes_from_the_tab(workspace, tools) -> None:
    tool = tools / "rfp-cli"
    tool.write_text(
        "#!/usr/bin/env python3\nimport json, sys\n"
        f"open({str(tools / 'calls.jsonl')!r}, 'a').write(json.dumps(sys.argv) + '\\n')\n"
    )
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    firmware = workspace / "firmware" / "arm_executor_runner.elf"
    app = EtuApp(workspace)
    async with app.run_test(size=SMALL) as pilot:
        panel = await _pick_the_board(app, pilot)
        assert panel.last_status == (
            f"{BOARD} flashes with Renesas Flash Programmer (rfp-cli): r runs it"
        )
        panel.firmware = firmware
        await pilot.press("r")
        await wait_until(pilot, lambda: not panel.flashing, what="the flash to end")
        await settle(pilot)
        assert panel.last_status == f"flashed {BOARD}; pick its UART in Port to watch it run"
    (argv,) = [json.loads(line) for line in (tools / "calls.jsonl").read_text().splitlines()]
    assert argv[1:] == ["-device", "RA", "-tool", "jlink", "-if", "swd", "-auto", "-file",
                        str(firmware.resolve())]  # fmt: skip
