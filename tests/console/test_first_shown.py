"""Panels composed the first time their tab is shown (etu_tui/widgets/first_shown.py): not
at start, then by the tab's key, a click on the tab or a palette entry, with the state set
before kept (Compile, Boards, Fit)."""

from __future__ import annotations

import pytest
from textual.widgets import Button, Select, Static

from etu.tui.app import COMPILE_TAB, FIT_TAB, EtuApp
from etu.tui.widgets.boards import BoardsPanel
from etu.tui.widgets.firmware_panels import FitPanel
from etu.tui.widgets.fit import FitChecks, FitHeadline
from tests.console_helpers import show_tab
from tests.helpers import DEMO
from tools.screenshots import settle

pytestmark = pytest.mark.anyio
SIZE = (120, 36)


async def test_the_compile_form_waits_for_its_tab_and_keeps_what_was_set() -> None:
    app = EtuApp(DEMO)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        panel = app.compile_panel
        assert not panel.shown and not panel.query("#compile-target")
        panel.set_default_target("ethos-u85-256")
        await pilot.click(f"#--content-tab-{COMPILE_TAB}")
        await pilot.pause()
        assert panel.shown
        assert app.query_one("#compile-target", Select).value == "ethos-u85-256"
        assert app.focused is app.query_one("#compile-start", Button)
        panel.set_default_target("ethos-u65-256")  # shown: straight into the field
        assert app.query_one("#compile-target", Select).value == "ethos-u65-256"


async def test_a_palette_entry_composes_the_form_before_running_its_action() -> None:
    app = EtuApp(DEMO)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        panel = app.compile_panel
        assert not panel.shown
        seen = []  # what the action found: the form, composed before it ran
        panel.action_sort_sweep = lambda: seen.append(panel.query_one("#sweep-table"))
        panel.check_action = lambda action, parameters: True
        await app.action_on_panel(COMPILE_TAB, "sort_sweep")
        await pilot.pause()
        assert panel.shown and len(seen) == 1


async def test_the_boards_tab_is_composed_by_its_key_with_the_firmware_found_before() -> None:
    app = EtuApp(DEMO)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        boards = app.query_one(BoardsPanel)
        assert not boards.shown and not boards.query("#boards-profile")
        firmware = boards.firmware  # the workspace's rule, before any widget exists
        await pilot.press("B")
        await settle(pilot)
        assert boards.shown and boards.firmware == firmware
        assert app.query_one("#boards-profile", Select).value == "qemu-an547"
        shown = str(app.query_one("#boards-firmware", Static).render())
        assert shown.startswith("Firmware ") and "e picks" in shown


async def test_the_fit_tab_is_composed_by_its_key_with_the_fit_read_before() -> None:
    app = EtuApp(DEMO)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        fit = app.query_one(FitPanel)
        assert not fit.shown and not fit.query(FitChecks)
        assert fit.result is not None and fit.firmware_shown is not None  # read at start
        await show_tab(pilot, "f", FIT_TAB)
        assert fit.shown
        checks = app.query_one(FitChecks)
        assert checks.verdicts and checks.verdicts[0].check  # filled from what was kept
        assert app.focused is checks
        assert "fits" in str(app.query_one(FitHeadline).render()).lower()
