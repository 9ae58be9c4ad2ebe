"""labgrid places in the console: the Boards tab's Places list against a real coordinator and
exporter on 127.0.0.1 (acquire and release by key, the holder shown, at 80×24 and 120×36),
its one line without a coordinator, and the History tab's place filter with its per-place
results over sessions recorded through places."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from textual.widgets import DataTable, Static, TabbedContent

from etu.runner.boards.place import LAB_EXTRA
from etu.tui.app import BOARDS_TAB, HISTORY_TAB, EtuApp
from etu.tui.widgets.board_places import NO_COORDINATOR, BoardPlaces
from etu.tui.widgets.history import HistoryPanel
from tests.console_helpers import screen_text, wait_until
from tests.helpers import demo_workspace
from tools.screenshots import settle

pytestmark = pytest.mark.anyio
SIZES = [(80, 24), (120, 36)]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    from tests.labgrid_lab import lab_for_module

    yield from lab_for_module(tmp_path_factory)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return demo_workspace(tmp_path / "demo", "firmware")


async def _boards_tab(pilot) -> BoardPlaces:
    await settle(pilot)
    await pilot.press("B")
    await settle(pilot)
    assert pilot.app.query_one(TabbedContent).active == BOARDS_TAB
    return pilot.app.query_one(BoardPlaces)


def _status(places: BoardPlaces) -> str:
    return str(places.query_one("#places-status", Static).render())


async def test_without_a_coordinator_the_places_list_says_so_in_one_line(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LG_COORDINATOR", raising=False)
    app = EtuApp(workspace)
    async with app.run_test(size=(80, 24)) as pilot:
        places = await _boards_tab(pilot)
        await wait_until(pilot, lambda: places.coordinator is None and places._request > 0,
                         what="the places listed")  # fmt: skip
        await settle(pilot)
        text = screen_text(app)
        assert NO_COORDINATOR in text
        assert places.region.height == 1  # one line: the ports list keeps the room
        await pilot.press("a")  # nothing selected: said, nothing acquired
        await settle(pilot)
        assert "no place selected" in _status(places)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_places_listed_acquired_and_released_from_the_boards_tab(
    lab, workspace: Path, monkeypatch: pytest.MonkeyPatch, size: tuple[int, int]
) -> None:
    """The coordinator's place desk-1 with its matched resources; a acquires it (labgrid
    says who holds it), x releases it; another user's hold is named, not taken over."""
    monkeypatch.setenv("LG_COORDINATOR", lab.address)
    app = EtuApp(workspace)
    async with app.run_test(size=size) as pilot:
        places = await _boards_tab(pilot)
        await wait_until(pilot, lambda: bool(places.places), timeout=30,
                         what=f"the places listed ({_status(places)})")  # fmt: skip
        await settle(pilot)
        text = screen_text(app)
        assert "desk-1" in text and "NetworkSerialPort" in text and "free" in text
        assert f"Places on {lab.address} (1)" in text
        table = places.query_one("#places-table", DataTable)
        assert table.region.height >= 1 and places.region.bottom <= size[1] - 1  # in view

        await pilot.press("a")
        await wait_until(pilot, lambda: lab.holder() is not None, timeout=30,
                         what=f"desk-1 acquired ({_status(places)})")  # fmt: skip
        await wait_until(pilot, lambda: "acquired" in _status(places) and not places.busy,
                         what=f"the acquire said ({_status(places)})")  # fmt: skip
        await wait_until(pilot, lambda: "(you)" in screen_text(app), timeout=15,
                         what="the holder shown as you")  # fmt: skip

        await pilot.press("x")
        await wait_until(pilot, lambda: lab.holder() is None, timeout=30,
                         what=f"desk-1 released ({_status(places)})")  # fmt: skip
        await wait_until(pilot, lambda: "free" in screen_text(app), timeout=15,
                         what="the place shown free")  # fmt: skip

        taken = lab.client("-p", "desk-1", "acquire", user="alice")
        assert taken.returncode == 0, taken.stderr
        try:
            places.refresh_places()
            await wait_until(pilot, lambda: "alice@" in screen_text(app), timeout=15,
                             what="alice shown holding it")  # fmt: skip
            await pilot.press("a")
            await wait_until(pilot, lambda: "held by alice@" in _status(places), timeout=30,
                             what=f"the holder named ({_status(places)})")  # fmt: skip
            assert lab.holder().endswith("/alice")  # still alice's
        finally:
            lab.client("-p", "desk-1", "release", user="alice")


# -- History -------------------------------------------------------------------------------


def _session(root: Path, name: str, *, place: str | None, reason: str, seconds: float) -> None:
    """A recorded board session (meta.json as etu writes it, with the place's fields)."""
    folder = root / name
    folder.mkdir(parents=True)
    started = time.mktime(time.strptime(name[:15], "%Y%m%d-%H%M%S"))
    meta = {"format": 2, "kind": "board", "started": started, "ended": started + seconds,
            "target": "wiseeye2", "board": "wiseeye2", "program": "demo_cnn.pte",
            "exit_reason": reason, "proof": f"{reason} proof", "summary": {"lines": 3}}  # fmt: skip
    if place is not None:
        meta.update(place=place, exporter="lab-host", holder="ci@runner",
                    coordinator="127.0.0.1:20408")  # fmt: skip
    (folder / "meta.json").write_text(json.dumps(meta))
    (folder / "raw.log").write_bytes(b"I [executorch] Program complete, exiting.\n")


@pytest.fixture
def placed_workspace(workspace: Path) -> Path:
    sessions = workspace / ".etu" / "sessions"
    _session(sessions, "20261126-090001-board-000", place="desk-1", reason="success", seconds=2)
    _session(sessions, "20261126-090002-board-001", place="desk-1", reason="runner_error",
             seconds=4)  # fmt: skip
    _session(sessions, "20261126-090003-board-002", place="desk-2", reason="success", seconds=3)
    _session(sessions, "20261126-090004-board-003", place=None, reason="success", seconds=1)
    return workspace


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_history_filters_by_place_and_shows_each_places_results(
    placed_workspace: Path, size: tuple[int, int]
) -> None:
    app = EtuApp(placed_workspace)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await pilot.press("j")
        await settle(pilot)
        assert app.query_one(TabbedContent).active == HISTORY_TAB
        panel = app.query_one(HistoryPanel)
        await wait_until(pilot, lambda: len(panel.all_rows) == 4, what="the sessions listed")
        await settle(pilot)
        summary = str(panel.query_one("#history-places", Static).render())
        assert "desk-1 1✓ 1✗ 3.0s last runner_error" in summary
        assert "desk-2 1✓ 0✗ 3.0s last success" in summary
        assert panel.query_one("#history-places").region.height >= 1  # shown, at this size

        await pilot.press("p")  # desk-1 only
        await settle(pilot)
        assert panel.place_filter == "desk-1"
        assert {row.place for row in panel.rows} == {"desk-1"} and len(panel.rows) == 2
        assert panel.query_one("#history-table", DataTable).row_count == 2
        assert "board @desk-1" in screen_text(app)  # each row names its place
        assert "place desk-1" in str(panel.query_one("#history-status", Static).render())
        assert "▸desk-1" in str(panel.query_one("#history-places", Static).render())

        await pilot.press("p")  # desk-2 only
        await settle(pilot)
        assert [row.id for row in panel.rows] == ["20261126-090003-board-002"]

        await pilot.press("p")  # every session again
        await settle(pilot)
        assert panel.place_filter is None and len(panel.rows) == 4


async def test_w_monitors_the_place_in_the_run_tab_holding_it_for_the_session(
    lab, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """w: the place is held, its port (the exporter's RFC 2217) monitored in the Run tab; the
    board's log ends the session, which records the place; the place is released then."""
    from etu.runner.session import list_sessions, sessions_root
    from etu.tui.app import RUN_TAB
    from tests.board_peers import runner_log

    monkeypatch.setenv("LG_COORDINATOR", lab.address)
    app = EtuApp(workspace)
    async with app.run_test(size=(80, 24)) as pilot:
        places = await _boards_tab(pilot)
        await wait_until(pilot, lambda: bool(places.places), timeout=30,
                         what=f"the places listed ({_status(places)})")  # fmt: skip
        await pilot.press("w")
        run = app.run_panel
        await wait_until(pilot, lambda: run.live is not None, timeout=30,
                         what=f"the place monitored ({_status(places)})")  # fmt: skip
        assert app.query_one(TabbedContent).active == RUN_TAB
        assert lab.holder() is not None  # held while monitored
        lab.pty.write(runner_log(5))
        await wait_until(pilot, lambda: run.live.outcome is not None, timeout=60,
                         what="the session ended")  # fmt: skip
        assert run.live.outcome.reason == "success", run.live.outcome
        await wait_until(pilot, lambda: lab.holder() is None, timeout=30,
                         what="the place released at the session's end")  # fmt: skip
    (folder,) = list_sessions(sessions_root(workspace))
    meta = json.loads((folder / "meta.json").read_text())
    assert (meta["place"], meta["exporter"], meta["coordinator"]) == (
        "desk-1", "lab-host", lab.address)  # fmt: skip
    assert meta["port"].startswith("rfc2217://127.0.0.1:")
    assert b"Program complete" in (folder / "raw.log").read_bytes()


async def test_p_flashes_through_the_place_then_monitors_and_releases_it(
    lab, workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """p with the wiseeye2 profile: the image goes through the place's port to the virtual
    WiseEye2 bootloader, its boot log is monitored in the Run tab, the place goes back."""
    from textual.widgets import Select

    from etu.tui.widgets.boards import BoardsPanel
    from tests.board_peers import VirtualWiseEye2, runner_log

    monkeypatch.setenv("LG_COORDINATOR", lab.address)
    image = tmp_path / "output.img"
    image.write_bytes(bytes(range(256)) * 8)
    app = EtuApp(workspace)
    board = VirtualWiseEye2(lab.pty, runner_log(5)).start()
    try:
        async with app.run_test(size=(120, 36)) as pilot:
            places = await _boards_tab(pilot)
            panel = app.query_one(BoardsPanel)
            app.query_one("#boards-profile", Select).value = "wiseeye2"
            panel.take_firmware(image)
            await wait_until(pilot, lambda: bool(places.places), timeout=30,
                             what=f"the places listed ({_status(places)})")  # fmt: skip
            await pilot.press("p")
            run = app.run_panel
            await wait_until(
                pilot, lambda: run.live is not None and run.live.outcome is not None,
                timeout=90, what=f"the flashed board's session ({panel.last_status})",
            )  # fmt: skip
            assert run.live.outcome.reason == "success", run.live.outcome
            await wait_until(pilot, lambda: lab.holder() is None, timeout=30,
                             what="the place released")  # fmt: skip
    finally:
        board.stop()
    assert board.error is None, board.error
    assert board.received[0].rstrip(b"\x1a") == image.read_bytes()


@pytest.mark.parametrize("labgrid", [True, False], ids=["unreachable", "no-labgrid"])
async def test_a_coordinator_that_cannot_be_read_is_one_line(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, labgrid: bool
) -> None:
    """A coordinator set (here in etu.toml) that does not answer, or labgrid not installed:
    the Places list is one line saying which, the UI never waits on it."""
    from tests.labgrid_lab import free_port

    address = f"127.0.0.1:{free_port()}"
    (workspace / "etu.toml").write_text(f'coordinator = "{address}"\n')
    if not labgrid:
        monkeypatch.setattr("etu.runner.boards.place.labgrid_available", lambda: False)
    elif not _labgrid():
        pytest.skip("labgrid is not installed")
    app = EtuApp(workspace)
    async with app.run_test(size=(80, 24)) as pilot:
        places = await _boards_tab(pilot)
        await wait_until(pilot, lambda: places.coordinator == address, timeout=30,
                         what=f"the coordinator tried ({_status(places)})")  # fmt: skip
        await settle(pilot)
        line = _status(places)
        if labgrid:
            assert line.startswith(f"Places: coordinator {address}: ")
        else:
            assert line == f"Places: labgrid is not installed: {LAB_EXTRA} to list its places"
        assert places.region.height == 1 and line[:60] in screen_text(app)  # one line, cut


def _labgrid() -> bool:
    from tests.labgrid_lab import labgrid_installed

    return labgrid_installed()
