"""A full flash from the Boards tab for every built-in profile, against the virtual peers the
CLI tests use (tests/board_peers.py): the WiseEye2 bootloader and its XMODEM receiver on a
pty, the MPS3's MCC and USB drive (AN552 and AN555), a pyOCD stand-in with and without the
probe's UART; the emulated board is tests/console/test_app_boards.py's. Each flash goes
through the one flash path (runner.boards.flash.flash_board with ports from pick_ports), the
boot is followed in the Run tab to the runner's verdict, and the session records the board,
the program baked into the firmware, its target and the firmware's hash."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from textual.widgets import Select, TabbedContent

from etu.runner.session import list_sessions, sessions_root
from etu.tui.app import BOARDS_TAB, RUN_TAB, EtuApp
from etu.tui.widgets.boards import BoardsPanel
from tests.board_peers import (
    Pty,
    PyocdStandIn,
    VirtualMps3,
    VirtualWiseEye2,
    runner_log,
    usb_port,
)
from tests.console_helpers import wait_until
from tests.helpers import demo_workspace
from tools.screenshots import settle

pytestmark = pytest.mark.anyio
ROOT = Path(__file__).resolve().parent.parent.parent
DEMO = ROOT / "etu_tui" / "demo"
SMALL = (80, 24)
PROGRAM_SHA256 = hashlib.sha256((DEMO / "demo_cnn.pte").read_bytes()).hexdigest()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """The demo program and its firmware (no Vela folder)."""
    return demo_workspace(tmp_path / "demo", "firmware")


@pytest.fixture
def ports(monkeypatch: pytest.MonkeyPatch) -> list:
    attached: list = []
    monkeypatch.setattr("serial.tools.list_ports.comports", lambda: list(attached))
    return attached


async def _flash_from_the_tab(
    app: EtuApp, pilot, workspace: Path, profile: str, port: str | None = None
) -> BoardsPanel:
    """Pick the profile (and a port), flash the workspace's firmware with r."""
    await settle(pilot)
    await pilot.press("B")
    await settle(pilot)
    assert app.query_one(TabbedContent).active == BOARDS_TAB
    panel = app.query_one(BoardsPanel)
    await wait_until(pilot, lambda: bool(panel.ports), what="the stand-in ports to be listed")
    app.query_one("#boards-profile", Select).value = profile
    await settle(pilot)
    if port is not None:
        app.query_one("#boards-port", Select).value = port
        await settle(pilot)
    panel.firmware = workspace / "firmware" / "arm_executor_runner.elf"
    await pilot.press("r")
    return panel


async def _followed_to_success(app: EtuApp, pilot, workspace: Path, panel: BoardsPanel) -> dict:
    """The Run tab follows the boot to the runner's verdict; the session's meta."""
    run = app.run_panel
    await wait_until(
        pilot,
        lambda: (
            (run.live is not None and run.live.outcome is not None)
            or panel.last_status.startswith("flash failed")
        ),
        timeout=90,
        what="the board run to end",
    )
    assert not panel.last_status.startswith("flash failed"), panel.last_status
    await settle(pilot)
    assert app.query_one(TabbedContent).active == RUN_TAB
    assert run.live.outcome.reason == "success", run.live.outcome
    assert not panel.flashing
    (session,) = list_sessions(sessions_root(workspace))
    assert (session / "raw.log").read_bytes().endswith(runner_log(20))
    return json.loads((session / "meta.json").read_text())


def _records_the_program(meta: dict, board: str, workspace: Path) -> None:
    elf = workspace / "firmware" / "arm_executor_runner.elf"
    assert meta["kind"] == "board" and meta["board"] == board
    assert meta["firmware"] == str(elf)
    assert meta["firmware_sha256"] == hashlib.sha256(elf.read_bytes()).hexdigest()
    assert meta["elf_sha256"] == meta["firmware_sha256"]
    assert meta["program"] == "demo_cnn.pte" and meta["program_sha256"] == PROGRAM_SHA256
    assert meta["target"] == "ethos-u55-128"  # the program's delegate says so


async def test_wiseeye2_flashed_from_the_tab_boots_into_the_run_tab(workspace, ports) -> None:
    pty = Pty()
    ports.append(usb_port(pty.path, "1A86:55D2", "WE2-0001"))
    board = VirtualWiseEye2(pty, runner_log(20)).start()
    try:
        app = EtuApp(workspace)
        async with app.run_test(size=SMALL) as pilot:
            panel = await _flash_from_the_tab(
                app, pilot, workspace, "wiseeye2"
            )  # its one port is found
            meta = await _followed_to_success(app, pilot, workspace, panel)
    finally:
        board.stop()
        pty.close()
    assert board.error is None, board.error
    elf = (workspace / "firmware" / "arm_executor_runner.elf").read_bytes()
    assert board.received[0].rstrip(b"\x1a") == elf.rstrip(b"\x1a")
    _records_the_program(meta, "wiseeye2", workspace)
    assert meta["port"] == pty.path and meta["baud"] == 921600
    assert [Path(f["file"]).name for f in meta["flashed"]] == ["arm_executor_runner.elf"]


@pytest.mark.parametrize("profile", ["mps3-an552", "mps3-an555"])
async def test_mps3_flashed_from_the_tab_finds_its_mcc_port_and_drive(
    profile, workspace, ports, tmp_path, monkeypatch
) -> None:
    """The bug this guards: the tab gave no MCC port, so an MPS3 always failed with CLI
    advice. The board's four ports are listed; the MCC's and the application's are found by
    their order, the drive by its volume label among the mounts."""
    from etu.runner.boards.profiles import get_profile

    drive = tmp_path / "media" / "V2M-MPS3"
    drive.mkdir(parents=True)
    mounts = tmp_path / "mounts"
    mounts.write_text(f"/dev/sdz1 {drive} vfat rw 0 0\n")
    monkeypatch.setattr("etu.runner.boards.flash_mps3.MOUNTS", mounts)
    mcc, uart = Pty(), Pty()
    for n, device in enumerate([mcc.path, uart.path, "/dev/ttyUSB-AN-2", "/dev/ttyUSB-AN-3"]):
        ports.append(usb_port(device, "0403:6011", "MPS3-0001", f"1-1:1.{n}"))
    images_dir = str(get_profile(profile).transfer["images_dir"])
    board = VirtualMps3(mcc, uart, drive, images_dir, runner_log(20)).start()
    try:
        app = EtuApp(workspace)
        async with app.run_test(size=SMALL) as pilot:
            panel = await _flash_from_the_tab(app, pilot, workspace, profile)
            meta = await _followed_to_success(app, pilot, workspace, panel)
    finally:
        board.stop()
        mcc.close()
        uart.close()
    assert board.error is None, board.error
    assert board.images and (drive / images_dir / "images.txt").is_file()
    _records_the_program(meta, profile, workspace)
    assert meta["port"] == uart.path  # the application's UART, not the MCC's


async def test_pyocd_flashed_from_the_tab_follows_the_probes_uart(
    workspace, ports, monkeypatch
) -> None:
    uart = Pty()
    ports.append(usb_port(uart.path))  # the probe's VCOM: no profile matches it
    probe = PyocdStandIn(uart, runner_log(20))
    probe.install(monkeypatch)
    try:
        app = EtuApp(workspace)
        async with app.run_test(size=SMALL) as pilot:
            panel = await _flash_from_the_tab(app, pilot, workspace, "pyocd", port=uart.path)
            meta = await _followed_to_success(app, pilot, workspace, panel)
    finally:
        uart.close()
    elf = workspace / "firmware" / "arm_executor_runner.elf"
    assert probe.programmed == [(str(elf), None, elf.read_bytes())] and probe.resets == 1
    assert probe.options == {"target_override": "cortex_m"}
    _records_the_program(meta, "pyocd", workspace)
    assert meta["port"] == uart.path


async def test_pyocd_flashed_from_the_tab_without_a_port_is_flashed_not_failed(
    workspace, ports, monkeypatch
) -> None:
    """The bug this guards: a successful pyOCD flash with no port to follow was reported as
    "flash failed"."""
    ports.append(usb_port("/dev/ttyACM-other"))
    probe = PyocdStandIn(None, b"")
    probe.install(monkeypatch)
    app = EtuApp(workspace)
    async with app.run_test(size=SMALL) as pilot:
        panel = await _flash_from_the_tab(app, pilot, workspace, "pyocd")
        await wait_until(pilot, lambda: not panel.flashing, what="the flash to end")
        await settle(pilot)
        assert panel.last_status.startswith("flashed pyocd"), panel.last_status
        assert "failed" not in panel.last_status
        assert app.query_one(TabbedContent).active == BOARDS_TAB
    assert len(probe.programmed) == 1 and probe.resets == 1


async def test_pyocd_without_a_probe_says_so_without_cli_advice(
    workspace, ports, monkeypatch
) -> None:
    ports.append(usb_port("/dev/ttyACM-other"))
    PyocdStandIn(None, b"", probe=False).install(monkeypatch)
    app = EtuApp(workspace)
    async with app.run_test(size=SMALL) as pilot:
        panel = await _flash_from_the_tab(app, pilot, workspace, "pyocd")
        await wait_until(pilot, lambda: not panel.flashing, what="the flash to end")
        assert panel.last_status.startswith("flash failed: pyocd: no debug probe found")
        assert "--" not in panel.last_status  # no command-line option in the console


async def test_mps3_without_its_drive_names_the_drive_not_an_option(
    workspace, ports, tmp_path, monkeypatch
) -> None:
    mounts = tmp_path / "mounts"
    mounts.write_text("/dev/sda1 / ext4 rw 0 0\n")
    monkeypatch.setattr("etu.runner.boards.flash_mps3.MOUNTS", mounts)
    for n in range(4):
        ports.append(usb_port(f"/dev/ttyUSB-AN-{n}", "0403:6011", "MPS3-0002", f"1-2:1.{n}"))
    app = EtuApp(workspace)
    async with app.run_test(size=SMALL) as pilot:
        panel = await _flash_from_the_tab(app, pilot, workspace, "mps3-an552")
        await wait_until(pilot, lambda: not panel.flashing, what="the flash to end")
        assert panel.last_status == (
            "flash failed: V2M-MPS3: the board's USB drive is not mounted: mount the board's "
            "USB drive"
        )
