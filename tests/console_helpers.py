"""Helpers shared by the console tests: the default Pilot size and the screen as text.

A plain module (not a test module), so no test module imports another.
"""

from __future__ import annotations

import io
import time
from pathlib import Path

import pytest
from rich.console import Console
from textual.app import App, ComposeResult

from etu.tui.app import EtuApp
from etu.tui.widgets.history import HistoryPanel

SIZE = (140, 45)


def screen_text(app: EtuApp) -> str:
    """What the terminal shows, as plain text."""
    console = Console(
        width=app.size.width,
        height=app.size.height,
        file=io.StringIO(),
        force_terminal=True,
        color_system="truecolor",
        record=True,
        legacy_windows=False,
    )
    console.print(
        app.screen._compositor.render_update(full=True, screen_stack=app._background_screens)
    )
    return console.export_text()


async def wait_until(pilot, condition, *, timeout: float = 30.0, what: str = "") -> None:
    """Wait, letting the app run, until ``condition()`` holds; fail with ``what`` after
    ``timeout`` seconds. The one bounded wait of the console tests: no fixed sleeps."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"not within {timeout:g} s: {what or 'condition'}")
        await pilot.pause(0.02)


async def palette_search(pilot, query: str, title: str) -> None:
    """Open the command palette, type ``query`` and wait until it lists ``title`` (the
    palette searches in the background): no fixed pause."""
    await pilot.press("ctrl+p")
    await pilot.pause()
    await pilot.press(*query)
    await wait_until(
        pilot, lambda: title in screen_text(pilot.app), what=f"the palette to list {title!r}"
    )


async def show_tab(pilot, key: str, tab: str) -> None:
    """Press ``key`` and wait until ``tab`` is active and its panel holds the focus: a panel
    composed when first shown (FirstShown) is composed, filled and focused a few messages
    after the key, later than one pause on a loaded machine."""
    from textual.widgets import TabbedContent

    from etu.tui.widgets.first_shown import FirstShown

    app = pilot.app
    await pilot.press(key)

    def shown() -> bool:
        if app.query_one(TabbedContent).active != tab:
            return False
        panel, focused = app.panel(tab), app.focused
        if not isinstance(panel, FirstShown):
            return True
        return panel.shown and focused is not None and panel in focused.ancestors_with_self

    await wait_until(pilot, shown, what=f"the {tab} tab shown by {key!r}")


RUN_TIMEOUT = 60.0


async def open_run_tab(pilot):
    """Switch to the Run tab (key ``u``) and return its panel, settled."""
    from textual.widgets import TabbedContent

    from etu.tui.app import RUN_TAB
    from tools.screenshots import settle

    await settle(pilot)
    await pilot.press("u")
    await pilot.pause()
    await settle(pilot)
    app = pilot.app
    assert isinstance(app, EtuApp)
    assert app.query_one(TabbedContent).active == RUN_TAB
    return app.run_panel


async def wait_run(pilot, condition, timeout: float = RUN_TIMEOUT, what: str = "") -> None:
    await wait_until(pilot, condition, timeout=timeout, what=what)


async def wait_run_end(pilot, panel) -> None:
    """Until the panel's live run has ended (an outcome) or failed to start."""
    from tools.screenshots import settle

    def ended() -> bool:
        live = panel.live
        return live is not None and (live.outcome is not None or live.failure is not None)

    await wait_run(pilot, ended, what="the run did not end")
    await settle(pilot)


class HistoryHarness(App):
    """The History panel alone on ``workspace`` (its chart and list, without the App)."""

    def __init__(self, workspace: Path) -> None:
        super().__init__()
        self.workspace = workspace

    def compose(self) -> ComposeResult:
        yield HistoryPanel(id="history")

    def on_mount(self) -> None:
        self.query_one(HistoryPanel).set_workspace(self.workspace)
