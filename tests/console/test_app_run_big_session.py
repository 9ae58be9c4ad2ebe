"""A recorded session longer than the old 100k-line ring: the Run tab reads it from its file,
so every line is reachable and find/filter cover all of it (issue 8)."""

from __future__ import annotations

from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from textual.widgets import Checkbox, Input, Static

from etu.runner.run_model import LEVELS, RING_LINES
from etu.runner.session import SessionWriter, sessions_root
from etu.tui.app import EtuApp
from etu.tui.widgets.run_log import LogView
from tests.console.test_app import SIZE, screen_text
from tests.console_helpers import open_run_tab, wait_run_end, wait_until
from tools.screenshots import settle

pytestmark = pytest.mark.anyio

LINES = 300_000
RARE = {17: b"E: Rare-Marker at the start\n", 299_990: b"E: rare-marker near the end\n"}


def _big_session(root: Path) -> Path:
    """A finished session of LINES runner lines, two holding a rare text, written at once."""
    writer = SessionWriter(sessions_root(root), "fvp", {"target": "ethos-u55-128"})
    rows = [
        RARE.get(n) or b"I [executorch:method.cpp:%d execute()] step %d done\n" % (n % 97, n)
        for n in range(LINES)
    ]
    writer.write_output(b"".join(rows), when=100.0)
    writer.finish(exit_reason="success", returncode=0)
    return writer.folder


async def test_a_session_longer_than_the_ring_is_whole_searchable_and_filterable(
    workspace: Path,
) -> None:
    assert LINES > RING_LINES
    folder = _big_session(workspace)
    app = EtuApp(workspace)
    async with app.run_test(size=SIZE) as pilot:
        panel = await open_run_tab(pilot)
        panel.open_past_run(folder)
        await pilot.app.workers.wait_for_complete()
        await settle(pilot)
        log = app.query_one(LogView)
        assert panel.shown is not None and panel.shown.folder == folder
        assert log.row_count == LINES
        title = str(app.query_one("#run-log-box").border_title)
        assert f"{LINES:,} lines" in title and "last" not in title

        # Scrollable to its very first line (the old ring kept only the last 100,000).
        log.focus()
        await pilot.press("home")
        await pilot.pause()
        assert log.cursor == 0 and log.scroll_y == 0
        assert "step 0 done" in screen_text(app)
        await pilot.press("end")
        await pilot.pause()
        assert f"step {LINES - 1} done" in screen_text(app)

        # Find: the file is searched in a worker (the status says so), then the cursor
        # moves; the match count covers the whole session, with the match's line number.
        await pilot.press("home")
        find = app.query_one("#run-find", Input)
        find.value = "RARE-marker"
        await pilot.pause()
        assert panel.log_box.find(True) is None and log.search_pending == "rare-marker"
        assert "searching the session file" in str(app.query_one("#run-find-status").content)
        await _settled(pilot)
        assert log.cursor == 17
        status = app.query_one("#run-find-status", Static).content
        assert "1 of 2 matches · line 18" in str(status)
        assert panel.log_box.find(True) == 299_990  # searched once: the next finds are at once
        assert "2 of 2 matches · line 299,991" in str(app.query_one("#run-find-status").content)
        assert panel.log_box.find(True) == 17  # wraps around
        assert panel.log_box.find(False) == 299_990

        # Filter: the matching lines of the whole file (a worker reads it), then an empty
        # result that says so.
        await _filtered(pilot, panel, "rare-marker")
        assert [seq for seq, _ in log.rows()] == [17, 299_990]
        await _filtered(pilot, panel, "xyz")
        assert log.row_count == 0
        assert "no lines match 'xyz'" in str(app.query_one("#run-log-box").border_title)
        await _filtered(pilot, panel, "")
        assert log.row_count == LINES

        # By level alone: the file's E lines, then everything but the I lines.
        for level in ("I", "D", "F", "other"):
            app.query_one(f"#run-level-{level}", Checkbox).value = False
        await _filtered(pilot, panel, "")
        assert [seq for seq, _ in log.rows()] == [17, 299_990]
        app.query_one("#run-level-other", Checkbox).value = True
        await _filtered(pilot, panel, "")
        assert [seq for seq, _ in log.rows()] == [17, 299_990]
        app.query_one("#run-level-E", Checkbox).value = False
        await _filtered(pilot, panel, "")
        assert log.row_count == 0
        app.query_one("#run-level-I", Checkbox).value = True
        await _filtered(pilot, panel, "")
        assert log.row_count == LINES - 2
        assert panel.log_box.find(True) is None  # the find text is only on the hidden E lines


async def _settled(pilot) -> None:
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()
    await pilot.pause()


async def _filtered(pilot, panel, text: str) -> None:
    pilot.app.query_one("#run-filter", Input).value = text
    panel.log_box.apply_filter()
    await _settled(pilot)
    assert not panel.log.filter_pending


async def test_a_live_run_that_outgrows_the_ring_reads_its_session_file(
    workspace: Path,
) -> None:
    """A real process printing 30,000 lines into a 5,000-line ring: past the ring the Run
    tab reads the run's own session file, so the first line and a find over all of it
    work."""
    import sys

    from etu.runner.run_store import FileLogStore

    script = (
        "import sys\n"
        "for n in range(30000): print(f'I [executorch:t.cpp:1 f()] live line {n}')\n"
        "print('E: rare-live marker')\n"
    )
    app = EtuApp(workspace)
    async with app.run_test(size=SIZE) as pilot:
        panel = await open_run_tab(pilot)
        panel.capacity = 5_000
        panel.run_command([sys.executable, "-c", script], sessions=sessions_root(workspace))
        await wait_run_end(pilot, panel)
        log = app.query_one(LogView)
        store = panel.live.store
        assert isinstance(store, FileLogStore) and store.folder == panel.live.folder
        assert log.store is store and log.row_count == 30_001
        assert panel.live.errors == 1  # counted from the parsed lines, as before
        log.focus()
        await pilot.press("home")
        await pilot.pause()
        assert "live line 0" in screen_text(app)
        app.query_one("#run-find", Input).value = "rare-live"
        await pilot.pause()
        assert panel.log_box.find(True) == 30_000  # 1.5 MB: searched at once
        app.query_one("#run-find", Input).value = "live line 7"
        await pilot.pause()
        assert panel.log_box.find(True) == 7


async def test_a_filter_over_a_growing_session_file_takes_each_new_line_once(
    workspace: Path,
) -> None:
    """A live run read from its file: a filter on, lines arrive (one cut mid-line by the
    read), and the rows are exactly the matching complete lines, none twice."""
    from etu.runner.run_store import FileLogStore

    writer = SessionWriter(sessions_root(workspace), "fvp", {})
    writer.write_output(b"".join(b"I [executorch:a.cpp:1] row %d %s\n" % (n, b"odd" if n % 2
                                 else b"even") for n in range(100)), when=1.0)  # fmt: skip
    store = FileLogStore(writer.folder, 1.0)
    async with _log_over(workspace, store) as (_pilot, log):
        log.set_filter("odd", LEVELS)
        assert [seq for seq, _ in log.rows()] == list(range(1, 100, 2))
        _append(writer, store, log, b"I [executorch:a.cpp:1] row 100 od")  # cut mid-line
        assert [seq for seq, _ in log.rows()][-1] == 99
        _append(writer, store, log, b"d\nE [executorch:a.cpp:2] row 101 odd\nrow 102 even\n")
        assert [seq for seq, _ in log.rows()] == [*range(1, 100, 2), 100, 101]
        assert "row 100 odd" in log.line(100)[1].text
    writer.finish()
    store.close()


async def test_lines_that_arrive_while_a_filter_worker_reads_are_filtered_after_it(
    workspace: Path,
) -> None:
    """A filter over a big file runs in a worker; lines appended meanwhile are held until
    it is done and then filtered from where it started: each matching line once, none lost.
    The worker is held once it has taken the file's size, so the lines surely come after."""
    import threading

    from etu.runner.run_store import FileLogStore
    from etu.tui.widgets.run_log import SCAN_IN_PLACE

    writer = SessionWriter(sessions_root(workspace), "fvp", {})
    row = b"I [executorch:a.cpp:1] row %d %s " + b"x" * 60 + b"\n"
    count = SCAN_IN_PLACE // 80 + 10_000  # past the in-place limit: a worker filters
    writer.write_output(b"".join(row % (n, b"hit" if n % 1000 == 0 else b"miss")
                                 for n in range(count)), when=1.0)  # fmt: skip
    store = FileLogStore(writer.folder, 1.0)
    gate, arrived = threading.Event(), threading.Event()
    search = store.raw.find_all

    def held(*args, **kwargs):
        arrived.set()  # the worker has taken the file's size and line count
        gate.wait(30)
        return search(*args, **kwargs)

    store.raw.find_all = held
    async with _log_over(workspace, store) as (pilot, log):
        log.set_filter("hit", LEVELS)
        assert log.filter_pending
        await wait_until(pilot, arrived.is_set, timeout=30, what="the filter worker")
        # held: the worker has not answered yet
        _append(writer, store, log, b"".join(row % (n, b"hit") for n in range(count, count + 5)))
        assert log.filter_pending and log.row_count == 0
        gate.set()
        await _settled(pilot)
        expected = [*range(0, count, 1000), *range(count, count + 5)]
        assert [seq for seq, _ in log.rows()] == expected
    writer.finish()
    store.close()


@asynccontextmanager
async def _log_over(folder: Path, store):
    """The console on ``folder``'s Run tab, its log showing ``store``: (pilot, log)."""
    app = EtuApp(folder)
    async with app.run_test(size=SIZE) as pilot:
        await open_run_tab(pilot)
        log = app.query_one(LogView)
        log.show(store, 1.0)
        yield pilot, log


def _append(writer: SessionWriter, store, log: LogView, data: bytes) -> None:
    """``data`` recorded, the store grown over it, the view told (as a live run does)."""
    writer.write_output(data)
    store.grow()
    log.appended()
