"""The etu console: open a ``.pte`` and see what runs on the Ethos-U NPU and what stays on CPU.

Threading rule (from harlequin): the loading worker decodes and posts one message; it never
touches a widget. The App owns the loaded program and hands it to the panels; each panel
owns its keys and the rest of its state.
Nothing here imports torch or executorch: the console must start on a lab PC without them.
"""

from __future__ import annotations

import os
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, NamedTuple

from textual import actions, on, work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.content import Content
from textual.css.query import NoMatches
from textual.message import Message
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Header, Static, TabbedContent, TabPane
from textual.worker import Worker, WorkerState, get_current_worker

from etu.parsers.errors import describe_error
from etu.parsers.program_facts import ProgramFacts, decode_facts, output_shapes, program_target
from etu.parsers.pte import ExecutionPlan
from etu.runner.firmware import rebuild_command
from etu.runner.workspace import (
    VelaResult,
    Workspace,
    error_line,
    find_workspace,
    resolve_target,
    workspace_of,
    workspace_vela,
    writable_workspace,
)
from etu.tui.commands import EtuCommands, PaletteCommand, PanelCommands
from etu.tui.keys import KEYS, PANELS, bindings
from etu.tui.safe_text import PrintableFilter, printable
from etu.tui.screens.help import HelpScreen
from etu.tui.screens.open_file import OpenFileScreen
from etu.tui.widgets import CompilePanel, ErrorPanel, RunPanel
from etu.tui.widgets.boards import BoardMonitorRequested, BoardsPanel
from etu.tui.widgets.compile import OpenCompiled
from etu.tui.widgets.firmware_panels import (
    FirmwarePicked,
    FirmwareShown,
    FitPanel,
    MemoryPanel,
    PickElfAsked,
)
from etu.tui.widgets.first_shown import FirstShown
from etu.tui.widgets.fit import tab_label
from etu.tui.widgets.footer import EtuFooter
from etu.tui.widgets.formatting import short_path
from etu.tui.widgets.history import HistoryPanel, ReplayRequested, SessionRecorded
from etu.tui.widgets.npu_panel import NpuPanel
from etu.tui.widgets.program_panels import (
    DelegatesPanel,
    PlanStep,
    ProgramPanel,
    TensorsPanel,
)

DEMO_WORKSPACE = Path(__file__).resolve().parent / "demo"

# Tab ids (also the panels' owner names in etu_tui.keys).
PROGRAM_TAB, TENSORS_TAB, DELEGATES_TAB, NPU_TAB = "program", "tensors", "delegates", "npu"
MEMORY_TAB, FIT_TAB, RUN_TAB = "memory", "fit", "run"
COMPILE_TAB, HISTORY_TAB, BOARDS_TAB = "compile", "history", "boards"
# Tabs that need no program: usable when the file failed to decode.
NO_PROGRAM_TABS = (RUN_TAB, COMPILE_TAB, HISTORY_TAB, BOARDS_TAB)


@dataclass
class ProgramLoaded(Message):
    """A program decoded; ``request`` tells a stale load from the current one.

    ``workspace`` is the workspace it was opened in (found by the worker); ``vela`` what
    the worker found beside it; None when it did not look (kept as shown).
    """

    facts: ProgramFacts
    request: int
    workspace: Workspace
    vela: VelaResult | None = None


@dataclass
class ProgramFailed(Message):
    """A program could not be opened; ``message`` is one line for the user. ``workspace``:
    the workspace around it, when one was found (Run and Compile still work there)."""

    path: Path
    message: str
    request: int
    workspace: Workspace | None = None


CSS_SOURCES_CACHED = 256  # the console has ~80 CSS sources (its own and every widget class's)


def widen_css_cache(app: App) -> None:
    """Give the stylesheet a parse cache that holds every CSS source of the console.

    Textual keeps the last 64 parsed sources; every widget class mounted for the first time
    re-parses them all, and with more than 64 sources each re-parse misses every entry
    (measured: 43 re-parses, 0.9 s of a 3.8 s start). The cache is private to Textual, so an
    upgrade that renames it only costs the speed.
    """
    from textual.cache import LRUCache

    cache = getattr(app.stylesheet, "_parse_cache", None)
    if isinstance(cache, LRUCache) and cache.maxsize < CSS_SOURCES_CACHED:
        app.stylesheet._parse_cache = LRUCache(CSS_SOURCES_CACHED)


class EtuApp(App[int]):
    """One program at a time; ``target`` is a ``.pte`` or a workspace folder.

    The App composes the tabs, switches between them, loads the program and hands it to
    the panels; every other key and state lives on the panel that owns it. A new tab is a
    panel class (its BINDINGS from :mod:`etu.tui.keys`) and one line in :attr:`TABS`.
    """

    CSS_PATH = "app.tcss"
    TITLE = "etu"
    COMMANDS: ClassVar = App.COMMANDS | {EtuCommands}

    BINDINGS: ClassVar[list[BindingType]] = bindings("app")
    # Screen classes for the layout at laptop / SSH sizes (see app.tcss).
    HORIZONTAL_BREAKPOINTS: ClassVar[list[tuple[int, str]]] = [(0, "-narrow"), (100, "-wide")]
    VERTICAL_BREAKPOINTS: ClassVar[list[tuple[int, str]]] = [(0, "-short"), (32, "-tall")]

    # (tab id, label, panel class, panel id): the tab bar, in order.
    TABS: ClassVar[list[tuple[str, str, type[Widget], str]]] = [
        (PROGRAM_TAB, "Program", ProgramPanel, "program-panel"),
        (TENSORS_TAB, "Tensors", TensorsPanel, "tensors-panel"),
        (DELEGATES_TAB, "Delegates", DelegatesPanel, "delegates-panel"),
        (NPU_TAB, "NPU", NpuPanel, "npu-panel"),
        (MEMORY_TAB, "Memory", MemoryPanel, "memory-panel"),
        (FIT_TAB, "Fit", FitPanel, "fit-panel"),
        (RUN_TAB, "Run", RunPanel, "run-panel"),
        (COMPILE_TAB, "Compile", CompilePanel, "compile-panel"),
        (HISTORY_TAB, "History", HistoryPanel, "history-panel"),
        (BOARDS_TAB, "Boards", BoardsPanel, "boards-panel"),
    ]

    def __init__(self, target: Path | None = None, keymap: dict[str, str] | None = None) -> None:
        super().__init__()
        # The demo ships in the package; an installed one is read-only: open a copy.
        self.target = writable_workspace(DEMO_WORKSPACE) if target is None else Path(target)
        self.facts: ProgramFacts | None = None
        # The open workspace (firmware, sessions, compile jobs, settings): built by the
        # loader, handed to every panel. ``workspace`` is its root folder.
        self.current_workspace: Workspace | None = None
        self.plan_index = 0
        self._request = 0  # increases per open; stale worker results are dropped
        self.load_state: str = "loading"  # loading / ready / failed: for tests and scripts
        self._user_keymap = keymap
        self.keymap_in_use: dict[str, str] = {}  # binding id -> keys, as set_keymap got it
        # The boundary to the terminal: no rendered line carries a raw control (issue 9).
        self._filters.append(PrintableFilter())
        widen_css_cache(self)

    # -- layout ------------------------------------------------------------------------

    def get_default_screen(self) -> Screen:
        """The first screen, born with the breakpoint classes of the terminal's size: the
        first resize then changes no class, so it does not restyle every widget once more."""
        screen = Screen(id="_default")
        width, height = self.size
        for size, breakpoints in ((width, self.HORIZONTAL_BREAKPOINTS),
                                  (height, self.VERTICAL_BREAKPOINTS)):  # fmt: skip
            # The class of the largest breakpoint the size reaches, as Screen's resize picks.
            reached = [(at, name) for at, name in breakpoints if size >= at]
            if reached:
                screen.add_class(max(reached)[1], update=False)
        return screen

    def compose(self) -> ComposeResult:
        yield Header()
        yield ErrorPanel(id="error")
        yield Static(id="status")
        with TabbedContent(id="body", initial=PROGRAM_TAB):
            for tab, label, panel, panel_id in self.TABS:
                with TabPane(tab_label(None) if tab == FIT_TAB else label, id=tab):
                    yield panel(id=panel_id)
        yield EtuFooter()

    def on_mount(self) -> None:
        keymap, theme, problem, default_target = console_settings(self.target)
        if default_target:  # the program's own target still wins where it has one
            self.run_panel.set_default_target(default_target)
            self.compile_panel.set_default_target(default_target)
        self.set_keymap(self._user_keymap if self._user_keymap is not None else keymap)
        if theme and theme != self.theme and theme in self.available_themes:
            self.theme = theme
        if problem:
            self.notify(f"{problem} (`etu config` shows the settings)",
                        title="Settings", severity="warning", markup=False)  # fmt: skip
        self.open_target(self.target)

    def set_keymap(self, keymap: dict[str, str]) -> None:
        """Textual's keymap, kept here too: the palette and help screen show its keys."""
        super().set_keymap(keymap)
        self.keymap_in_use = dict(keymap)

    def update_keymap(self, keymap: dict[str, str]) -> None:
        super().update_keymap(keymap)
        self.keymap_in_use = {**self.keymap_in_use, **keymap}

    def on_unmount(self) -> None:
        with suppress(Exception):
            self.query_one(RunPanel).close()  # no simulator outlives the console
        if self.facts is not None:
            _close(self.facts)

    @property
    def workspace(self) -> Path | None:
        """The open workspace's root folder (None before the first load)."""
        return self.current_workspace.root if self.current_workspace is not None else None

    # -- panels ------------------------------------------------------------------------

    def panel(self, tab: str) -> Widget:
        """The panel widget of ``tab``."""
        return self.query_one(f"#{tab}").children[0]

    @property
    def run_panel(self) -> RunPanel:
        return self.query_one(RunPanel)

    @property
    def compile_panel(self) -> CompilePanel:
        return self.query_one(CompilePanel)

    @property
    def npu_panel(self) -> NpuPanel:
        return self.query_one(NpuPanel)

    @property
    def memory_panel(self) -> MemoryPanel:
        return self.query_one(MemoryPanel)

    # -- loading -----------------------------------------------------------------------

    @property
    def busy(self) -> bool:
        """A program, a Vela report, a firmware or (Run tab) a preview or past session is
        still being read. A run under way is not: it may never end by itself."""
        if self.load_state == "loading":
            return True
        try:
            return self.npu_panel.pending > 0 or self.memory_panel.pending or self.run_panel.busy
        except Exception:  # not mounted yet
            return False

    def open_target(self, target: Path) -> None:
        """Decode ``target`` in a thread; the result arrives as a message."""
        self._request += 1
        self.load_state = "loading"
        self.query_one("#status", Static).update(Content(f"Opening {printable(target.name)}…"))
        self.query_one("#status").display = True
        self._load(target, self.workspace, self._request)

    @work(thread=True, exclusive=True, group="load", exit_on_error=False)
    def _load(self, target: Path, within: Path | None, request: int) -> None:
        """Find the workspace (``within``, the one open, keeps a program opened inside it),
        then decode its program."""
        path = target
        workspace = None
        try:
            workspace = find_workspace(target, within)
            path = workspace.program or resolve_target(target)  # no program: resolve says why
            facts = decode_facts(path)
        except Exception as error:  # any bad file must become a message, never a crash
            self.post_message(ProgramFailed(path, error_line(error, path), request, workspace))
            return
        try:
            vela = workspace_vela(path)  # its own errors stay in the NPU tab
        except Exception as error:
            text = describe_error(error)
            vela = VelaResult("Vela output", error=text)
        if get_current_worker().is_cancelled:
            _close(facts)
            return
        self.post_message(ProgramLoaded(facts, request, workspace, vela))

    @on(ProgramLoaded)
    async def _program_loaded(self, message: ProgramLoaded) -> None:
        if message.request != self._request:
            _close(message.facts)
            return
        facts = message.facts
        previous, self.facts = self.facts, facts
        if previous is not None:
            _close(previous)
        # A program in a compile job (<ws>/.etu/compile/<job>/, <ws>/build/<job>/) or a
        # firmware in PROGRAM.<board>/ belongs to its workspace: sessions, jobs and firmware
        # stay there (find_workspace).
        previous_root, workspace = self.workspace, message.workspace
        self.current_workspace = workspace
        self.plan_index = 0
        self.sub_title = printable(facts.name)
        self.query_one("#status").display = False
        self.query_one(ErrorPanel).clear()
        self.query_one(ProgramPanel).show_program(facts)
        await self._show_plan()
        npu = self.npu_panel
        npu.set_program(facts.program, facts.delegates)
        if message.vela is not None:
            npu.set_own(message.vela, printable(facts.name), short_path(facts.path.parent))
        own = npu.own_report
        if workspace.root != previous_root:
            self._default_target(workspace)
        self.memory_panel.set_program(facts, workspace, own)
        self.run_panel.set_program(
            workspace,
            target=program_target(facts),
            vela_cycles=own.report.cycles if own is not None and own.report else None,
            vela_calls=[(c.cycles, c.nn_macs) for c in own.report.calls]
            if own is not None and own.report
            else (),
            shapes=output_shapes(facts),
            program=facts.program,
            select_ops=facts.select_ops,
            pte=facts.path,
        )
        self.query_one(FitPanel).io_notes = self.run_panel.io_notes  # the pre-flight's notes
        self.compile_panel.set_program(facts.path, program_target(facts), workspace.root)
        self.query_one(HistoryPanel).set_workspace(workspace.root)
        self.query_one(BoardsPanel).set_workspace(workspace, facts.program, program_target(facts))
        self._enable_program_tabs(True)
        self.action_show_tab(self.query_one(TabbedContent).active or PROGRAM_TAB)
        self.refresh_bindings()
        self.load_state = "ready"

    @on(ProgramFailed)
    def _program_failed(self, message: ProgramFailed) -> None:
        if message.request != self._request:
            return
        self.query_one("#status").display = False
        still = self.facts.name if self.facts is not None else None
        self.query_one(ErrorPanel).show_error(message.message, still)
        self.notify(message.message, title="Could not open", severity="error", markup=False)
        if self.facts is None:
            # Nothing to show on the program's tabs: Run and Compile still work in the
            # workspace around the file.
            workspace = message.workspace
            if self.current_workspace is None and workspace and workspace.root.is_dir():
                self.current_workspace = workspace
                self._default_target(workspace)
                self.run_panel.set_program(workspace, target=None, vela_cycles=None)
                self.compile_panel.set_program(
                    workspace.root / message.path.name, None, workspace.root
                )
                self.query_one(HistoryPanel).set_workspace(workspace.root)
                self.query_one(BoardsPanel).set_workspace(workspace)
            self._enable_program_tabs(False)
            if self.query_one(TabbedContent).active not in NO_PROGRAM_TABS:
                self.action_show_tab(RUN_TAB)
        self.load_state = "failed"

    def _default_target(self, workspace: Workspace) -> None:
        """The workspace's ``target`` setting is the Run and Compile tabs' default (a
        program that names its own NPU still wins)."""
        if workspace.target:
            self.run_panel.set_default_target(workspace.target)
            self.compile_panel.set_default_target(workspace.target)

    def _enable_program_tabs(self, enabled: bool) -> None:
        tabs = self.query_one(TabbedContent)
        for tab, *_ in self.TABS:
            if tab not in NO_PROGRAM_TABS:
                if enabled:
                    tabs.enable_tab(tab)
                else:
                    tabs.disable_tab(tab)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """Last line of defence: a worker that still raised is reported, not fatal."""
        error = event.worker.error
        if event.state == WorkerState.ERROR and error is not None:
            text = describe_error(error)
            if event.worker.group == "load":
                self.post_message(ProgramFailed(self.target, text, self._request))
            else:
                self.notify(text, severity="error", markup=False)

    # -- between panels ----------------------------------------------------------------

    @on(FirmwareShown)
    async def _firmware_shown(self, message: FirmwareShown) -> None:
        try:
            fit = self.query_one(FitPanel)
        except NoMatches:  # the console is closing: the panels are already gone
            return
        rebuild = rebuild_command(message.result.path if message.result else None)
        await fit.show_fit(message, rebuild)
        self.query_one(TabbedContent).get_tab(FIT_TAB).label = tab_label(message.result)
        self.run_panel.set_firmware(message.result)
        self.refresh_bindings()

    @on(PickElfAsked)
    def _pick_elf_asked(self) -> None:
        self.memory_panel.action_pick_elf()

    @on(FirmwarePicked)
    def _firmware_picked(self, message: FirmwarePicked) -> None:
        self.query_one(BoardsPanel).take_firmware(message.elf)

    @on(BoardMonitorRequested)
    def _board_monitor_requested(self, message: BoardMonitorRequested) -> None:
        from etu.runner.run_model import LaunchInfo

        port = str(message.meta.get("port") or "")
        launch = LaunchInfo(["monitor", port], simulator=message.label,
                            emulated=message.meta.get("board") == "qemu-an547")  # fmt: skip
        self.action_show_tab(RUN_TAB)
        try:
            self.run_panel.monitor(message.source, message.meta, launch)
        except RuntimeError as error:
            message.source.stop()
            self.notify(str(error), title="Not monitored", severity="error", markup=False)

    @on(ReplayRequested)
    def _replay_requested(self, message: ReplayRequested) -> None:
        self.action_show_tab(RUN_TAB)
        self.run_panel.replay(message.folder, message.timed)

    @on(OpenCompiled)
    def _open_compiled(self, message: OpenCompiled) -> None:
        self.open_target(message.path)

    # -- plans -------------------------------------------------------------------------

    @property
    def plan(self) -> ExecutionPlan | None:
        if self.facts is None or not self.facts.program.plans:
            return None
        return self.facts.program.plans[self.plan_index]

    async def _show_plan(self) -> None:
        facts, plan = self.facts, self.plan
        if facts is None:
            return
        self.query_one(ProgramPanel).show_plan(facts, plan, self.plan_index)
        self.query_one(TensorsPanel).show_plan(facts, plan, self.plan_index)
        await self.query_one(DelegatesPanel).show_delegates(facts, plan, self.plan_index)
        self.refresh_bindings()

    @on(PlanStep)
    async def _plan_step(self) -> None:
        await self.action_next_plan()

    async def action_next_plan(self) -> None:
        if self.facts is not None and self.facts.program.plans:
            await self.action_show_plan((self.plan_index + 1) % len(self.facts.program.plans))

    async def action_show_plan(self, index: int) -> None:
        if self.facts is not None and 0 <= index < len(self.facts.program.plans):
            self.plan_index = index
            await self._show_plan()

    # -- actions -----------------------------------------------------------------------

    @on(TabbedContent.TabActivated)
    def _tab_activated(self, event: TabbedContent.TabActivated) -> None:
        self.refresh_bindings()
        if event.pane.id is not None:  # its key, a click on it or the palette
            panel = self.panel(event.pane.id)
            if isinstance(panel, FirstShown) and not panel.shown:
                self.call_next(self._show_first_time, event.pane.id)
        if event.pane.id == HISTORY_TAB:  # sessions an `etu run` elsewhere recorded, too
            self.query_one(HistoryPanel).session_recorded(None)

    @on(SessionRecorded)
    def _session_recorded(self, message: SessionRecorded) -> None:
        """A session ended (Run tab, Boards tab, stopped): History lists it at once."""
        with suppress(NoMatches):  # the console is closing
            self.query_one(HistoryPanel).session_recorded(message.folder)

    async def action_dismiss_error(self) -> None:
        self.query_one(ErrorPanel).clear()
        self.npu_panel.dismiss_error()
        self.memory_panel.dismiss_error()

    def action_open_file(self) -> None:
        start = f"{short_path(self.facts.path.parent)}{os.sep}" if self.facts else ""
        self.push_screen(OpenFileScreen(start), callback=self._open_chosen)

    def _open_chosen(self, path: Path | None) -> None:
        if path is not None:
            self.open_target(path)

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def action_show_tab(self, tab: str) -> None:
        tabs = self.query_one(TabbedContent)
        pane = tabs.get_pane(tab)
        if pane.disabled:
            self.notify(
                "No program is open: this tab needs one. Run (u) and Compile (k) work.",
                severity="warning",
            )
            return
        tabs.active = tab
        panel = self.panel(tab)
        if isinstance(panel, FirstShown) and not panel.shown:
            # Composed, then focused, on its TabActivated (_tab_activated); until then nothing
            # stays focused in the tab just left, which would switch back to it.
            self.screen.set_focus(None)
            return
        self._focus_panel(panel)

    async def _show_first_time(self, tab: str) -> None:
        """A panel composed when its tab is first shown (FirstShown): compose, then focus."""
        panel = self.panel(tab)
        if isinstance(panel, FirstShown) and not panel.shown:
            await panel.show()
            if self.query_one(TabbedContent).active == tab:
                self._focus_panel(panel)

    def _focus_panel(self, panel: Widget) -> None:
        focus = getattr(panel, "focus_main", None)
        if focus is not None:
            focus()
            return
        # A panel without a main widget: its first focusable one, so focus never stays
        # in the tab just left (which would switch back to it).
        focusable = [w for w in panel.query("*") if w.focusable]
        self.screen.set_focus(focusable[0] if focusable else None)

    async def action_on_panel(self, tab: str, action: str) -> None:
        """The palette's way to a panel's key: open its tab, then run ``action`` on the
        panel, or on the panel's widget that owns it (the Run tab's log box)."""
        self.action_show_tab(tab)
        if self.query_one(TabbedContent).active == tab:
            await self._show_first_time(tab)
            panel = self.panel(tab)
            method = f"action_{actions.parse(action)[1]}"
            owners = (widget for widget in panel.query("*") if hasattr(widget, method))
            owner = panel if hasattr(panel, method) else next(owners, panel)
            await self.run_action(action, owner)

    def palette_commands(self) -> list[PaletteCommand]:
        """The key table, each panel's own entries, and one entry per plan."""
        commands = []
        for spec in KEYS:
            if not spec.palette:
                continue
            on_app = spec.owner == "app"
            action = spec.action if on_app else f"on_panel({spec.owner!r}, {spec.action!r})"
            keys = self.keymap_in_use.get(spec.id, spec.key).split(",")[0]
            key = self.get_key_display(Binding(keys, spec.action))
            where = "" if on_app else f"{PANELS[spec.owner]} tab, "
            commands.append(PaletteCommand(spec.title, f"{spec.help} ({where}key {key})", action))
        for tab, *_ in self.TABS:
            panel = self.panel(tab)
            if isinstance(panel, PanelCommands):
                commands += [
                    PaletteCommand(entry.title, entry.help, f"on_panel({tab!r}, {entry.action!r})")
                    for entry in panel.palette_entries()
                ]
        if self.facts is not None:
            for index, plan in enumerate(self.facts.program.plans):
                commands.append(
                    PaletteCommand(
                        f"Plan: show {printable(plan.name)!r}",
                        f"plan {index + 1}",
                        f"show_plan({index})",
                    )
                )
        return commands


def load_keymap(target: Path | None = None) -> dict[str, str]:
    """The user's keymap (``[keymap]``, binding id -> keys) from the settings."""
    return console_settings(target)[0]


class ConsoleSettings(NamedTuple):
    keymap: dict[str, str]
    theme: str | None
    problem: str | None  # one line to show: a malformed file, settings ignored
    target: str | None  # the default Ethos-U target (the ``target`` setting)


def console_settings(target: Path | None) -> ConsoleSettings:
    """What the console takes from runner/config.py's settings for the workspace of
    ``target`` (:func:`workspace_of`: the folder holding etu.toml above a program in a
    compile job): etu.toml over the user's file. A malformed file gives no settings and a
    one-line problem to show."""
    from etu.runner.config import ConfigError, load_settings

    workspace = workspace_of(target) if target is not None else None
    try:
        settings = load_settings(workspace)
    except ConfigError as error:
        return ConsoleSettings({}, None, printable(str(error)), None)
    ignored = "; ".join(printable(w) for w in settings.warnings) or None
    return ConsoleSettings(dict(settings.keymap), settings.theme, ignored, settings.target)


def _close(facts: ProgramFacts) -> None:
    # A view into the mapping may still be alive (a widget, a traceback frame); then the
    # garbage collector unmaps it later, and that is fine for a viewer.
    with suppress(BufferError):
        facts.program.close()


def run_app(target: Path | None) -> int:
    """Run the console until the user quits; returns the exit code."""
    from etu.runner.heap import settle_imports

    app = EtuApp(target)
    settle_imports()  # Textual's and etu's modules: a faster start, shorter pauses
    app.run()
    return app.return_code or 0
