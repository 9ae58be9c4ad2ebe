"""A recorded session longer than the old 100k-line ring: the Run tab reads it from its file,
so every line is reachable and find/filter cover all of it (issue 8)."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Checkbox, Input, Static

from etu_tui.app import EtuApp
from etu_tui.screenshots import settle
from etu_tui.widgets.run_log import LogView
from etu_tui.widgets.run_model import RING_LINES
from runner.session import SessionWriter, sessions_root
from tests.console.test_app import SIZE, screen_text
from tests.console.test_app_run import _run_tab, workspace  # noqa: F401 (fixture)

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
    workspace: Path,  # noqa: F811 (fixture)
) -> None:
    assert LINES > RING_LINES
    folder = _big_session(workspace)
    app = EtuApp(workspace)
    async with app.run_test(size=SIZE) as pilot:
        panel = await _run_tab(pilot)
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
        assert panel.find(True) is None and log.search_pending == "rare-marker"
        assert "searching the session file" in str(app.query_one("#run-find-status").content)
        await _settled(pilot)
        assert log.cursor == 17
        status = app.query_one("#run-find-status", Static).content
        assert "1 of 2 matches · line 18" in str(status)
        assert panel.find(True) == 299_990  # searched once: the next finds are at once
        assert "2 of 2 matches · line 299,991" in str(app.query_one("#run-find-status").content)
        assert panel.find(True) == 17  # wraps around
        assert panel.find(False) == 299_990

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
        assert panel.find(True) is None  # the find text is only on the hidden E lines


async def _settled(pilot) -> None:
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()
    await pilot.pause()


async def _filtered(pilot, panel, text: str) -> None:
    pilot.app.query_one("#run-filter", Input).value = text
    panel.apply_filter()
    await _settled(pilot)
    assert not panel.log.filter_pending
