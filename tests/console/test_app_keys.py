"""Keys: the tab keys from every tab whatever has focus, the footer, the help screen, the
palette's entries, the keymap, and a file that fails to decode keeping Run and Compile.

Real files only: the demo program, and a text file saved as ``.pte``.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from etu.tui.app import EtuApp
from etu.tui.keys import KEYS, PANELS, specs
from etu.tui.screens.help import HelpScreen
from etu.tui.widgets import LogView
from etu.tui.widgets.virtual_table import VirtualTable
from textual.binding import Binding
from textual.widgets import Input, TabbedContent

from tests.console_helpers import palette_search, screen_text
from tools.screenshots import settle

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parent.parent.parent
DEMO = ROOT / "etu_tui" / "demo" / "demo_cnn.pte"
SIZE = (120, 36)
TAB_KEYS = {spec.key: spec.id for spec in specs("app") if spec.group is not None}


def euler_circuit(nodes: list[str]) -> list[str]:
    """A walk that takes every ordered pair (a, b) of ``nodes``, a == b included, exactly
    once: an Eulerian circuit of the complete directed graph with loops (Hierholzer), so
    each key press both ends one pair and starts the next."""
    unused = {a: list(nodes) for a in nodes}
    stack, circuit = [nodes[0]], []
    while stack:
        node = stack[-1]
        if unused[node]:
            stack.append(unused[node].pop())
        else:
            circuit.append(stack.pop())
    return circuit[::-1]


def test_euler_circuit_takes_every_ordered_pair_once() -> None:
    nodes = list(TAB_KEYS)
    circuit = euler_circuit(nodes)
    pairs = list(itertools.pairwise(circuit))
    assert len(pairs) == len(nodes) ** 2
    assert set(pairs) == {(a, b) for a in nodes for b in nodes}


def _footer(app: EtuApp) -> str:
    return screen_text(app).splitlines()[-1]


def test_every_binding_has_an_id_and_every_panel_a_title() -> None:
    assert all(spec.id for spec in KEYS)
    assert {spec.owner for spec in KEYS} <= set(PANELS)
    # One key does one thing per owner.
    for owner in PANELS:
        keys = [k for spec in specs(owner) for k in spec.key.split(",")]
        assert len(keys) == len(set(keys)), owner
    # No panel key shadows a tab key.
    for spec in KEYS:
        if spec.owner != "app":
            assert not set(spec.key.split(",")) & set(TAB_KEYS), spec.id


async def test_tab_keys_work_from_every_tab_with_a_table_or_log_focused() -> None:
    """``k`` used to move the cursor up in tables and logs: now every tab key switches
    tabs from every tab, focus wherever the tab put it."""
    app = EtuApp(DEMO)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        tabs = app.query_one(TabbedContent)
        circuit = euler_circuit(list(TAB_KEYS))
        await pilot.press(circuit[0])
        await pilot.pause()
        assert tabs.active == TAB_KEYS[circuit[0]]
        for start_key, key in itertools.pairwise(circuit):
            start, tab = TAB_KEYS[start_key], TAB_KEYS[key]
            assert tabs.active == start
            await pilot.press(key)
            await pilot.pause()
            assert tabs.active == tab, f"{key} from {start}"
        await pilot.press("u")
        await pilot.pause()
        assert isinstance(app.focused, LogView)
        await pilot.press("k")
        await pilot.pause()
        assert tabs.active == "compile"
        await pilot.press("i")
        await pilot.pause()
        assert isinstance(app.focused, VirtualTable)
        await pilot.press("k")
        await pilot.pause()
        assert tabs.active == "compile"


async def test_typing_in_an_input_does_not_switch_tabs() -> None:
    app = EtuApp(DEMO)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("u", "slash")
        await pilot.pause()
        assert isinstance(app.focused, Input)
        await pilot.press(*"kind")
        await pilot.pause()
        assert app.query_one(TabbedContent).active == "run"
        assert app.focused.value == "kind"


async def test_footer_shows_the_tab_keys_quit_and_help_at_80_columns() -> None:
    app = EtuApp(DEMO)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        for key in TAB_KEYS:
            await pilot.press(key)
            await pilot.pause()
            footer = _footer(app)
            assert "q Quit" in footer and "? Help" in footer and "itdnmfukjB Tabs" in footer


async def test_help_screen_lists_every_key_by_panel() -> None:
    app = EtuApp(DEMO)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        text = app.screen.query_one("#help-keys").render().plain  # type: ignore[union-attr]
        for title in PANELS.values():
            assert title in text
        for spec in KEYS:
            assert spec.id in text
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, HelpScreen)
        await pilot.press("f1")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)


async def test_keymap_rebinds_a_key_by_id_and_the_help_shows_it() -> None:
    app = EtuApp(DEMO, keymap={"compile": "f7", "help": "f2"})
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("f7")
        await pilot.pause()
        assert app.query_one(TabbedContent).active == "compile"
        await pilot.press("f2")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        text = app.screen.query_one("#help-keys").render().plain  # type: ignore[union-attr]
        assert "F7" in text or "f7" in text


@pytest.mark.parametrize(
    ("query", "title"),
    [
        ("help", "Help: keys"),
        ("session", "Run: past sessions of this workspace"),
        ("history", "View: history of sessions"),
    ],
)
async def test_palette_finds_help_session_and_history(query: str, title: str) -> None:
    app = EtuApp(DEMO)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        titles = [command.title for command in app.palette_commands()]
        assert title in titles
        await palette_search(pilot, query, title)  # fails if it never lists the title
        await pilot.press("escape")


async def test_palette_help_opens_the_help_screen() -> None:
    app = EtuApp(DEMO)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await app.run_action("help")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)


async def test_a_file_that_fails_to_decode_keeps_run_and_compile(tmp_path: Path) -> None:
    bad = tmp_path / "notes.pte"
    bad.write_text("not a program: a text file saved with the wrong extension\n")
    app = EtuApp(bad)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.load_state == "failed"
        text = screen_text(app)
        assert "notes.pte: " in text  # the error is shown, not a blank screen
        tabs = app.query_one(TabbedContent)
        assert tabs.active == "run"
        assert "Run on a Corstone FVP" in text
        assert app.run_panel.workspace == tmp_path
        await pilot.press("k")
        await pilot.pause()
        assert tabs.active == "compile"
        assert app.compile_panel.workspace == tmp_path
        await pilot.press("n")  # needs a program: says so, stays
        await pilot.pause()
        assert tabs.active == "compile"
        # A good program afterwards enables every tab again.
        app.open_target(DEMO)
        await settle(pilot)
        await pilot.press("n")
        await pilot.pause()
        assert tabs.active == "npu"


def test_complete_path_completes_one_match_and_the_common_start(tmp_path: Path) -> None:
    from etu.tui.screens.open_file import complete_path

    (tmp_path / "model_a.pte").write_bytes(b"")
    (tmp_path / "model_b.pte").write_bytes(b"")
    (tmp_path / "firmware").mkdir()
    (tmp_path / ".hidden").write_bytes(b"")
    base = f"{tmp_path}/"
    assert complete_path(base + "fi") == (base + "firmware/", ["firmware/"])
    assert complete_path(base + "mo") == (base + "model_", ["model_a.pte", "model_b.pte"])
    assert complete_path(base + "zz") == (base + "zz", [])
    assert ".hidden" not in complete_path(base)[1]
    assert complete_path(base + ".h")[1] == [".hidden"]


@pytest.mark.parametrize("key", ["o", "e"])
async def test_tab_completes_the_path_in_the_open_and_pick_elf_dialogs(
    tmp_path: Path, key: str
) -> None:
    from etu.tui.screens.open_file import OpenFileScreen

    (tmp_path / "firmware").mkdir()
    elf = tmp_path / "firmware" / "runner.elf"
    elf.write_bytes(b"")
    app = EtuApp(DEMO)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        if key == "e":
            await pilot.press("m")
            await pilot.pause()
        await pilot.press(key)
        await pilot.pause()
        assert isinstance(app.screen, OpenFileScreen)
        field = app.screen.query_one("#path", Input)
        field.value = f"{tmp_path}/fi"
        await pilot.press("tab")
        await pilot.pause()
        assert field.value == f"{tmp_path}/firmware/"
        assert app.screen.focused is field  # Tab completed, it did not move focus
        await pilot.press("tab")
        await pilot.pause()
        assert field.value == str(elf)


def test_every_binding_of_the_console_has_an_id() -> None:
    """The keymap rebinds by id: every binding of the panels, dialogs, tables and logs has
    one (the History panel's come from its own module)."""
    from etu.tui.screens.help import HelpScreen
    from etu.tui.screens.open_file import OpenFileScreen
    from etu.tui.screens.preflight import PreflightScreen
    from etu.tui.widgets.virtual_table import VirtualTable
    from textual.binding import Binding

    owners = [EtuApp, *(panel for _t, _l, panel, _i in EtuApp.TABS)]
    owners += [HelpScreen, OpenFileScreen, PreflightScreen, VirtualTable, LogView]
    for owner in owners:
        for binding in owner.BINDINGS:
            assert isinstance(binding, Binding) and binding.id, (owner.__name__, binding)


async def test_etu_toml_keymap_rebinds_a_history_key(tmp_path: Path) -> None:
    """History's binding ids are plain (no dots), so ``[keymap]`` in etu.toml can name them
    as bare TOML keys and rebind them like any other panel's."""
    from etu.tui.widgets.history import HistoryPanel

    ids = [b.id for b in HistoryPanel.BINDINGS if isinstance(b, Binding)]
    assert ids and all(i and i.isidentifier() for i in ids)
    (tmp_path / DEMO.name).write_bytes(DEMO.read_bytes())
    (tmp_path / "etu.toml").write_text('[keymap]\nsort_sessions = "o"\n')
    app = EtuApp(tmp_path / DEMO.name)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.query_one(TabbedContent).active = "history"
        await pilot.pause()
        panel = app.query_one(HistoryPanel)
        panel.query_one("#history-table").focus()
        await pilot.pause()
        column = panel.sort.column
        await pilot.press("s")
        await pilot.pause()
        assert panel.sort.column == column, "s is no longer bound to sort"
        await pilot.press("o")
        await pilot.pause()
        assert panel.sort.column != column, "o sorts"
