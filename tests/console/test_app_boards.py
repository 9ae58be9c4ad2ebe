"""The Boards tab with Textual's Pilot: the emulated board flashed and monitored for real
(QEMU mps3-an547 running the demo firmware), ports appearing on hot-plug, and a flash
that cannot start saying why in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from serial.tools import list_ports_common
from textual.widgets import ProgressBar, Select, TabbedContent

from etu.runner.session import list_sessions, sessions_root
from etu.tui.app import BOARDS_TAB, RUN_TAB, EtuApp
from etu.tui.screens.preflight import PreflightScreen
from etu.tui.widgets.boards import BoardsPanel
from tests.console_helpers import screen_text, wait_until
from tests.helpers import demo_workspace
from tools.screenshots import settle

pytestmark = pytest.mark.anyio
ROOT = Path(__file__).resolve().parent.parent.parent
DEMO = ROOT / "etu_tui" / "demo"
SMALL = (80, 24)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """The demo program and its firmware (no Vela folder)."""
    return demo_workspace(tmp_path / "demo", "firmware")


@pytest.fixture
def ports(monkeypatch: pytest.MonkeyPatch) -> list:
    """What pyserial's comports() returns: a list the test changes to plug a board in."""
    attached: list = []
    monkeypatch.setattr("serial.tools.list_ports.comports", lambda: list(attached))
    return attached


async def _wait(pilot, condition, timeout: float = 60.0, what: str = "") -> None:
    await wait_until(pilot, condition, timeout=timeout, what=what)


async def _boards_tab(pilot) -> BoardsPanel:
    await settle(pilot)
    await pilot.press("B")
    await settle(pilot)
    assert pilot.app.query_one(TabbedContent).active == BOARDS_TAB
    return pilot.app.query_one(BoardsPanel)


async def test_the_emulated_board_flashed_from_the_boards_tab_runs(workspace, ports) -> None:
    app = EtuApp(workspace)
    async with app.run_test(size=SMALL) as pilot:
        panel = await _boards_tab(pilot)
        assert app.query_one("#boards-profile", Select).value == "qemu-an547"
        assert panel.firmware == workspace / "firmware" / "arm_executor_runner.elf"
        await pilot.press("r")
        # the Run tab's pre-flight, on the firmware to be flashed: the delegated demo on a
        # firmware without an NPU driver layer is named before anything is flashed
        await _wait(pilot, lambda: isinstance(app.screen, PreflightScreen), what="pre-flight")
        assert "Flash anyway" in screen_text(app) and "no NPU driver layer" in screen_text(app)
        await pilot.press("r")  # flash anyway
        run = app.run_panel
        await _wait(
            pilot,
            lambda: run.live is not None and run.live.outcome is not None,
            what=f"the board run did not end ({panel.last_status})",
        )
        await settle(pilot)
        assert app.query_one(TabbedContent).active == RUN_TAB
        live = run.live
        # the stand-in firmware prints the runner's success line but runs no model
        assert live.outcome.reason == "no_model", live.outcome
        texts = [live.store.entry(i)[4] for i in range(live.store.total)]
        assert any("Program complete" in text for text in texts)
        # Relative times count from the session's start (before any byte a port had
        # waiting when the Run tab heard of the run): no line is stamped before it.
        started = json.loads((live.folder / "meta.json").read_text())["started"]
        assert live.started == started
        assert all(live.store.entry(i)[0] >= started for i in range(live.store.total))
        (session,) = list_sessions(sessions_root(workspace))
        meta = json.loads((session / "meta.json").read_text())
        assert meta["board"] == "qemu-an547" and meta["firmware"].endswith(".elf")
        # the program baked into the firmware, as etu inspect finds it; the board's target
        assert meta["program"] == "demo_cnn.pte" and meta["target"] == "qemu-an547"
        assert meta["program_target"] == "ethos-u55-128" and meta["firmware_sha256"]
        assert app.query_one("#boards-progress", ProgressBar).percentage == 1.0
        assert not panel.flashing


async def test_a_flash_of_a_firmware_with_another_program_baked_in_asks_first(
    workspace, ports
) -> None:
    """Boards flashes get the Run tab's pre-flight (issue 24 §3): another program baked in
    is named, and cancelling flashes nothing."""
    program = workspace / "demo_cnn.pte"
    program.write_bytes(program.read_bytes() + bytes(4096))  # a bigger program, same graph
    app = EtuApp(workspace)
    async with app.run_test(size=SMALL) as pilot:
        panel = await _boards_tab(pilot)
        await pilot.press("r")
        await _wait(pilot, lambda: isinstance(app.screen, PreflightScreen), what="pre-flight")
        problems = app.screen.problems
        assert any("model_pte" in p for p in problems), problems
        await pilot.press("escape")
        await _wait(pilot, lambda: not panel.flashing, what="the cancel")
        assert "flash cancelled" in panel.last_status
        assert app.run_panel.live is None, "nothing was flashed or monitored"


async def test_a_board_plugged_in_appears_in_the_port_list(workspace, ports) -> None:
    app = EtuApp(workspace)
    async with app.run_test(size=SMALL) as pilot:
        panel = await _boards_tab(pilot)
        assert panel.ports == []
        board = list_ports_common.ListPortInfo("/dev/ttyACM7")
        board.vid, board.pid, board.serial_number = 0x10C4, 0xEA60, "WE2-0001"
        board.description = "CP2102N USB to UART"
        ports.append(board)
        await _wait(pilot, lambda: [p.device for p in panel.ports] == ["/dev/ttyACM7"])
        await settle(pilot)
        box = str(app.query_one("#boards-ports").content)
        assert "/dev/ttyACM7" in box and "10C4:EA60" in box.upper()
        select = app.query_one("#boards-port", Select)
        assert "/dev/ttyACM7" in [value for _, value in select._options]
        ports.clear()  # unplugged
        await _wait(pilot, lambda: panel.ports == [])


async def test_a_serial_board_without_a_port_says_so(workspace, ports) -> None:
    app = EtuApp(workspace)
    async with app.run_test(size=SMALL) as pilot:
        panel = await _boards_tab(pilot)
        app.query_one("#boards-profile", Select).value = "wiseeye2"
        await settle(pilot)
        assert panel.action_flash() is False
        assert panel.last_status == (
            "wiseeye2: no connected port matches the profile: pick the board's port in Port"
        )
        assert not panel.flashing
