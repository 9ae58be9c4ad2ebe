"""Keys: the one key table, the tab keys from every tab whatever has focus, the footer, the
help screen, the palette's entries, the keymap, and a file that fails to decode keeping Run
and Compile.

Real files only: the demo program, and a text file saved as ``.pte``.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from pathlib import Path

import pytest
from textual.binding import Binding
from textual.widget import Widget
from textual.widgets import Input, TabbedContent

from etu.tui.app import EtuApp
from etu.tui.keys import KEYS, OWNERS, PANELS, WIDGETS, bindings, specs
from etu.tui.screens.help import HelpScreen
from etu.tui.widgets import LogView
from etu.tui.widgets.virtual_table import VirtualTable
from tests.console_helpers import palette_search, screen_text
from tools.screenshots import settle

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parent.parent.parent
DEMO = ROOT / "etu_tui" / "demo" / "demo_cnn.pte"
SIZE = (120, 36)
TAB_KEYS = {spec.key: spec.id for spec in specs("app") if spec.group is not None}


def _footer(app: EtuApp) -> str:
    return screen_text(app).splitlines()[-1]


def test_every_binding_has_an_id_and_every_owner_a_title() -> None:
    assert all(spec.id for spec in KEYS)
    assert all(spec.owners for spec in KEYS)
    assert {owner for spec in KEYS for owner in spec.owners} <= set(OWNERS)
    # One key does one thing per owner.
    for owner in OWNERS:
        keys = [k for spec in specs(owner) for k in spec.key.split(",")]
        assert len(keys) == len(set(keys)), owner
    # No tab's key shadows a tab key.
    for spec in KEYS:
        if set(spec.owners) & (set(PANELS) - {"app"}):
            assert not set(spec.key.split(",")) & set(TAB_KEYS), spec.id


def test_a_key_is_one_row_and_only_tabs_reach_the_palette() -> None:
    """A key bound by several panels is one row naming them all (next_plan, pick_elf used
    to be three and two rows); an id shared by two rows runs different actions (a table's
    End and the log's End, which also follows). Widgets and dialogs stay out of the palette:
    it runs a key on a tab."""
    by_id: dict[str, list] = {}
    for spec in KEYS:
        by_id.setdefault(spec.id, []).append(spec)
    for rows in by_id.values():
        assert len({spec.action for spec in rows}) == len(rows), rows
        assert not set.intersection(*(set(spec.owners) for spec in rows)) or len(rows) == 1
    for spec in KEYS:
        if spec.palette:
            assert set(spec.owners) <= set(PANELS), spec.id
    assert {"table", "log", "open_file", "preflight", "help_screen"} <= set(WIDGETS)


def _etu_classes() -> list[type]:
    """Every class defined in the etu.tui package (the console, its widgets and dialogs)."""
    import etu.tui

    classes = []
    for module_info in pkgutil.walk_packages(etu.tui.__path__, "etu.tui."):
        if ".demo" in module_info.name or module_info.name.endswith("__main__"):
            continue
        module = importlib.import_module(module_info.name)
        classes += [
            value
            for value in vars(module).values()
            if inspect.isclass(value) and value.__module__ == module.__name__
        ]
    return classes


def test_every_binding_of_the_console_is_a_row_of_the_key_table() -> None:
    """No class declares a key of its own (History and Boards did, which took a second
    palette loop and a second help reader): each BINDINGS is ``bindings(owner)``."""
    tables = {owner: bindings(owner) for owner in OWNERS}
    declaring = [cls for cls in _etu_classes() if "BINDINGS" in vars(cls)]
    assert len(declaring) >= 16
    for cls in declaring:
        own = [(b.key, b.action, b.id, b.show, b.priority) for b in cls.BINDINGS]
        assert all(isinstance(b, Binding) and b.id for b in cls.BINDINGS), cls.__name__
        assert any(
            own == [(b.key, b.action, b.id, b.show, b.priority) for b in table]
            for table in tables.values()
        ), f"{cls.__qualname__} declares keys outside etu.tui.keys"


def test_the_console_reads_no_private_textual_keymap() -> None:
    """The App keeps the keymap it applied (keymap_in_use); Textual's App._keymap is
    private and may change under a Textual upgrade."""
    sources = sorted((ROOT / "etu_tui").rglob("*.py"))
    assert sources
    readers = [p.name for p in sources if "._keymap" in p.read_text(encoding="utf-8")]
    assert not readers


async def test_tab_keys_work_from_every_tab_whatever_has_focus() -> None:
    """``k`` used to move the cursor up in tables and logs. On every tab, with focus where
    the tab put it (the Program tab's table, the Run tab's log), every tab key resolves to
    the App's tab switch: the binding chain Textual walks, read without pressing all 100
    ordered pairs. Each tab key is then pressed once from the tab before it (``t`` from the
    focused table, ``k`` from the focused log). At 80 columns the footer of every tab still
    shows Quit, Help and the tab keys (they come first)."""
    focused = {"program": VirtualTable, "run": LogView}
    app = EtuApp(DEMO)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        tabs = app.query_one(TabbedContent)
        order = list(TAB_KEYS)  # i t d n m f u k j B
        assert tabs.active == TAB_KEYS[order[0]]
        for key in [*order[1:], order[0], None]:
            here = tabs.active
            assert isinstance(app.focused, focused.get(here, Widget)), here
            assert not isinstance(app.focused, Input), here  # it would take the letters
            footer = _footer(app)
            assert "q Quit" in footer and "? Help" in footer and "itdnmfukjB Tabs" in footer
            active = app.screen.active_bindings
            for other, tab in TAB_KEYS.items():
                found = active.get(other)
                assert found is not None and found.enabled, (here, other)
                assert found.binding.action == f"show_tab('{tab}')", (here, other, app.focused)
            if key is not None:
                await pilot.press(key)
                await pilot.pause()
                assert tabs.active == TAB_KEYS[key], f"{key} from {here}"


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
        # The App keeps the keymap it applied (no reading Textual's private copy), and the
        # palette names the rebound key.
        assert app.keymap_in_use == {"compile": "f7", "help": "f2"}
        helps = {command.title: command.help for command in app.palette_commands()}
        assert helps["View: compile a model"].endswith("(key f7)")


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


async def test_panels_add_palette_entries_through_one_hook() -> None:
    """The Run panel's timestamp modes and level filters come from its palette_entries();
    the palette runs them on the Run tab. Each key table row is listed once."""
    app = EtuApp(DEMO)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        commands = {command.title: command for command in app.palette_commands()}
        titles = [command.title for command in app.palette_commands()]
        assert len(titles) == len(set(titles))
        assert titles.count("Plan: next plan") == 1
        for title in ("History: replay the session", "Boards: re-read the serial ports"):
            assert title in commands
        entry = commands["Log: timestamps delta"]
        assert entry.action == "on_panel('run', \"log_time_mode('delta')\")"
        await app.run_action(entry.action)
        await pilot.pause()
        assert app.query_one(TabbedContent).active == "run"
        assert app.run_panel.log.time_mode == "delta"


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
