"""The footer is rebuilt only when the keys it shows change: Textual recomposes a footer on
every binding refresh (each focus change), which rebuilt and restyled its keys dozens of
times while the console opened (about half of the console's start-up CPU time)."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets._footer import FooterKey

from etu.tui.app import EtuApp
from etu.tui.widgets.footer import EtuFooter
from tests.console_helpers import wait_until
from tools.screenshots import settle

pytestmark = pytest.mark.anyio


def _keys(app: EtuApp) -> list[FooterKey]:
    return list(app.query_one(EtuFooter).query(FooterKey))


async def test_a_binding_refresh_that_changes_nothing_keeps_the_footers_keys(
    workspace: Path,
) -> None:
    app = EtuApp(workspace)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        before = _keys(app)
        assert before, "the footer shows keys"
        for _ in range(3):
            app.refresh_bindings()
            await pilot.pause()
        await settle(pilot)
        assert all(a is b for a, b in zip(_keys(app), before, strict=True))
        # another tab shows other keys: the footer follows
        shown = {key.description for key in before}
        await pilot.press("u")
        await wait_until(pilot, lambda: {k.description for k in _keys(app)} != shown,
                         what="the Run tab's keys in the footer")  # fmt: skip
        assert "Start" in {key.description for key in _keys(app)}
