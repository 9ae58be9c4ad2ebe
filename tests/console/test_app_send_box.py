"""The Run tab's send box and reset key (issue #24 §9) with Textual's Pilot, at 80×24 and
120×36: a live board session on pyserial's RFC 2217 server in front of a pty (the peer sees
the typed line and the DTR pulse), the box only while the session is live."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from textual.widgets import Input, TabbedContent

from etu.runner.boards.source import SerialSource
from etu.runner.run_model import LaunchInfo
from etu.tui.app import RUN_TAB, EtuApp
from etu.tui.widgets.send_box import SendBox
from tests.board_peers import Rfc2217Peer, runner_log
from tests.console_helpers import wait_until
from tools.screenshots import settle

pytestmark = pytest.mark.anyio
ROOT = Path(__file__).resolve().parent.parent.parent
DEMO = ROOT / "etu_tui" / "demo"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "demo"
    folder.mkdir()
    shutil.copyfile(DEMO / "demo_cnn.pte", folder / "demo_cnn.pte")
    return folder


@pytest.fixture
def peer():
    peer = Rfc2217Peer()
    yield peer
    peer.close()


def peer_read(peer: Rfc2217Peer, got: bytearray) -> bytes:
    got += peer.pty.read(0.01)
    return bytes(got)


@pytest.mark.parametrize("size", [(80, 24), (120, 36)])
async def test_a_line_typed_in_the_send_box_reaches_the_board(workspace, peer, size) -> None:
    app = EtuApp(workspace)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await pilot.press("u")
        assert app.query_one(TabbedContent).active == RUN_TAB
        box = app.query_one(SendBox)
        assert not box.display  # no board session: no box, and its keys do nothing
        await pilot.press("a")
        assert not app.query_one("#send-input", Input).has_focus

        source = SerialSource(peer.url, {"baudrate": 115200}, eol="cr", reset="dtr").open()
        run = app.run_panel
        run.monitor(source, {"board": "lab", "port": peer.url},
                    LaunchInfo(["monitor", peer.url], simulator="lab board"))  # fmt: skip
        await wait_until(pilot, lambda: run.live is not None and run.live.folder is not None)
        await pilot.pause()
        assert box.display and box.region.height == 1
        assert box.region.bottom <= size[1] and box.region.width == size[0]  # on screen

        await pilot.press("a")
        assert app.query_one("#send-input", Input).has_focus
        await pilot.press(*"help", "enter")  # typed, not taken as the console's keys
        got = bytearray()
        await wait_until(pilot, lambda: peer_read(peer, got).endswith(b"help\r"),
                         what=f"the peer got {bytes(got)!r}")  # fmt: skip
        assert bytes(got) == b"help\r"
        assert app.query_one("#send-input", Input).value == ""

        before = len(peer.line_changes("dtr"))
        await pilot.press("escape", "ctrl+t")  # back to the log; reset from the Run tab
        await wait_until(pilot, lambda: len(peer.line_changes("dtr")) >= before + 2,
                         what=f"no DTR pulse: {peer.changes}")  # fmt: skip
        assert [state for state, _ in peer.line_changes("dtr")][before:] == [False, True]

        peer.pty.write(runner_log(5))
        await wait_until(pilot, lambda: run.live.outcome is not None, timeout=30)
        await pilot.pause()
        assert run.live.outcome.reason == "success"
        assert not box.display and not box.attached  # the session ended: the box went
        await pilot.press("ctrl+t")
        assert len(peer.line_changes("dtr")) == before + 2


@pytest.mark.parametrize("size", [(80, 24), (120, 36)])
async def test_the_boards_tab_pulses_the_picked_ports_reset(workspace, peer, monkeypatch,
                                                            size) -> None:  # fmt: skip
    """ctrl+t on the Boards tab: the profile's reset line (else DTR) pulsed on the picked
    port, opened and closed by a worker; a port without modem lines says so in one line."""
    from textual.widgets import Select

    from etu.tui.widgets.boards import BoardsPanel
    from tests.board_peers import Pty, usb_port

    pty = Pty()
    monkeypatch.setattr("serial.tools.list_ports.comports",
                        lambda: [usb_port(peer.url), usb_port(pty.path)])  # fmt: skip
    app = EtuApp(workspace)
    try:
        async with app.run_test(size=size) as pilot:
            await settle(pilot)
            await pilot.press("B")
            panel = app.query_one(BoardsPanel)
            await wait_until(pilot, lambda: len(panel.ports) == 2, what="the ports listed")
            app.query_one("#boards-profile", Select).value = "wiseeye2"
            app.query_one("#boards-port", Select).value = peer.url
            await pilot.press("ctrl+t")
            await wait_until(pilot, lambda: "pulsed" in panel.last_status,
                             what=f"status: {panel.last_status}")  # fmt: skip
            assert panel.last_status == f"DTR pulsed on {peer.url}: the board resets"
            assert [state for state, _ in peer.line_changes("dtr")][-2:] == [False, True]

            app.query_one("#boards-port", Select).value = pty.path
            await pilot.press("ctrl+t")
            await wait_until(pilot, lambda: "not pulsed" in panel.last_status,
                             what=f"status: {panel.last_status}")  # fmt: skip
            assert panel.last_status.startswith(f"{pty.path}: DTR not pulsed: ")
            assert "\n" not in panel.last_status
    finally:
        pty.close()
