"""The Run tab's log box: the log, its toolbar (filter, levels, find) and the hex view.

It owns the log keys (find, filter, follow, hex, time, next/previous match, zoom) and their
state; the Run panel only says which run's lines to show (:meth:`LogBox.show`) and when
more came (:meth:`LogBox.appended`). The time mode and the hex view are reactives: the time
mode is bound to the :class:`~etu.tui.widgets.run_log.LogView`, which follows it.
"""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.actions import SkipAction
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.reactive import reactive
from textual.timer import Timer
from textual.widgets import Checkbox, Input, Label, Static

from etu.runner.run_model import LEVELS
from etu.tui.commands import PaletteCommand
from etu.tui.keys import KeySpec, bindings, specs
from etu.tui.safe_text import printable
from etu.tui.widgets.formatting import plural
from etu.tui.widgets.run_log import TIME_MODES, HexView, LogView

FILTER_DELAY = 0.15  # seconds of typing before the filter is applied
HEX_DELAY = 0.3  # seconds between hex view redraws while following a run


class LogBox(Vertical):
    """A run's log with its find and filter fields, level boxes and hex view."""

    DEFAULT_CSS = """
    LogBox {
        border: round $primary;
        border-title-style: bold;
        border-subtitle-color: $text-muted;
        &:focus-within { border: round $accent; }
        .run-label { color: $text-muted; }
        #run-find-status { color: $text-muted; }
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = bindings("log_box")

    time_mode: reactive[str] = reactive("relative", init=False)
    hex_shown: reactive[bool] = reactive(False, init=False)
    # What the title says the lines are ("" for the live run, else the session's name).
    where: reactive[str] = reactive("", init=False)
    # The lines shown are a run under way (the hex view then redraws a few times a second).
    running: reactive[bool] = reactive(False, init=False)

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._filter_timer: Timer | None = None
        self._hex_timer: Timer | None = None

    def compose(self) -> ComposeResult:
        with Horizontal(id="run-log-bar"):
            yield Label("Filter ", classes="run-label")
            yield Input(placeholder="text (^f)", compact=True, id="run-filter")
            yield Label("  Levels ", classes="run-label")
            for level in LEVELS:
                yield Checkbox(level, True, compact=True, id=f"run-level-{level}")
            yield Label("  Find ", classes="run-label")
            yield Input(placeholder="text (/)", compact=True, id="run-find")
            yield Static(id="run-find-status")
        yield LogView(id="run-log").data_bind(LogBox.time_mode)
        yield HexView(id="run-hex")

    def on_mount(self) -> None:
        self.retitle()

    @property
    def log(self) -> LogView:
        return self.query_one(LogView)

    # -- what is shown (the Run panel says) ---------------------------------------------

    def show(self, store, started: float | None, where: str = "") -> None:
        """Show another run's lines (``store``: its LogStore or FileLogStore)."""
        self.log.show(store, started)
        self.where = where
        self.retitle()
        self._show_hex()
        self._find_stale()

    def appended(self) -> None:
        """The shown store got lines."""
        self.log.appended()
        self.retitle()

    def watch_where(self) -> None:
        self.retitle()

    def watch_time_mode(self) -> None:
        self.retitle()

    def watch_hex_shown(self, shown: bool) -> None:
        self.query_one(HexView).set_class(shown, "-shown")
        self._show_hex()

    def retitle(self) -> None:
        """The border: how many lines, how many shown, following or not, whose."""
        log = self.log
        store = log.store
        if store is None:
            self.border_title = "Log"
        else:
            kept = len(store)
            count = plural(kept, "line")
            if store.first:
                count = f"last {kept:,} of {store.total:,} lines (all in the session)"
            shown = f" · {log.row_count:,} shown" if log.filtering else ""
            if log.filter_pending:
                shown = " · filtering the session file…"
            elif log.filtering and not log.row_count and kept:
                shown = (
                    f" · no lines match {printable(log.filter_text)!r}"
                    if log.filter_text
                    else " · no lines at the chosen levels"
                )
            mode = "following" if log.follow else "paused · end follows"
            where = f" · {printable(self.where)}" if self.where else ""
            self.border_title = f"Log · {count}{shown} · {mode}{where}"
        self.border_subtitle = (
            f"time {self.time_mode} · w time · ^f filter · / find · [ ] match · h hex"
        )

    def _show_hex(self) -> None:
        if not self.hex_shown:
            return
        log = self.log
        entry = log.line(log.cursor)
        self.query_one(HexView).show_line(log.cursor, entry[1] if entry else None)

    # -- filter ------------------------------------------------------------------------

    @on(Input.Changed, "#run-filter")
    def _filter_typed(self) -> None:
        if self._filter_timer is not None:
            self._filter_timer.stop()
        self._filter_timer = self.set_timer(FILTER_DELAY, self.apply_filter)

    @on(Input.Submitted, "#run-filter")
    def _filter_submitted(self) -> None:
        self.apply_filter()
        self.log.focus()

    @on(Checkbox.Changed)
    def _level_changed(self, event: Checkbox.Changed) -> None:
        if event.checkbox.id and event.checkbox.id.startswith("run-level-"):
            self.apply_filter()

    def apply_filter(self) -> None:
        if self._filter_timer is not None:
            self._filter_timer.stop()
            self._filter_timer = None
        text = self.query_one("#run-filter", Input).value
        levels = [lv for lv in LEVELS if self.query_one(f"#run-level-{lv}", Checkbox).value]
        self.log.set_filter(text, levels)
        self.retitle()
        self._show_hex()
        self._find_stale()

    @on(LogView.FilterApplied)
    def _filter_applied(self) -> None:
        self.retitle()
        self._show_hex()
        self._find_stale()

    # -- find --------------------------------------------------------------------------

    @on(Input.Changed, "#run-find")
    def _find_typed(self, event: Input.Changed) -> None:
        self.log.search = event.value
        self.log.refresh()
        self.query_one("#run-find-status", Static).update("")

    def _find_stale(self) -> None:
        """Other lines are shown (a filter, another run): the last find's "3 of 7 · line
        120" no longer holds. Said so until the next find counts again."""
        status = self.query_one("#run-find-status", Static)
        if self.query_one("#run-find", Input).value:
            status.update(Content.styled(" Enter finds again in the lines shown", "dim"))
        else:
            status.update("")

    @on(Input.Submitted, "#run-find")
    def _find_submitted(self) -> None:
        self.find(True)

    def find(self, forward: bool = True) -> int | None:
        """The next (previous) line with the find text; the status says which of how many."""
        find = self.query_one("#run-find", Input)
        status = self.query_one("#run-find-status", Static)
        term = find.value
        if not term:
            find.focus()
            status.update("type a text to find")
            return None
        log = self.log
        seq = log.find(term, forward)
        if seq is None and log.search_pending:
            status.update(Content.styled(" searching the session file…", "dim"))
        elif seq is None:
            status.update(Content.styled(" no match", "$text-error"))
        else:
            _, line = log.store.line(seq)  # type: ignore[union-attr]
            total, rank = log.match_count(term, seq)
            matches = plural(total, "match", "matches")
            place = f"{rank:,} of {matches}" if rank else matches
            status.update(f" {place} · line {line.line_no:,}")
        return seq

    @on(LogView.SearchReady)
    def _search_ready(self, message: LogView.SearchReady) -> None:
        """A big session file has been searched: the find that waited goes on."""
        if message.failure is not None:
            status = Content.styled(f" {printable(message.failure)}", "$text-error")
            self.query_one("#run-find-status", Static).update(status)
        elif self.query_one("#run-find", Input).value.lower() == message.term:
            self.find(message.forward)

    # -- cursor and follow -------------------------------------------------------------

    @on(LogView.CursorMoved)
    def _cursor_moved(self) -> None:
        if not self.hex_shown:
            return
        if self.log.follow and self.running:
            # Following a run, the cursor moves every batch: redraw the bytes a few times a
            # second, not 20 (a resize of the hex view is a layout).
            if self._hex_timer is None:
                self._hex_timer = self.set_timer(HEX_DELAY, self._hex_later)
            return
        self._show_hex()

    def _hex_later(self) -> None:
        self._hex_timer = None
        self._show_hex()

    @on(LogView.FollowChanged)
    def _follow_changed(self) -> None:
        self.retitle()

    # -- keys --------------------------------------------------------------------------

    def action_maximize_log(self) -> None:
        screen = self.screen
        if screen.maximized is not None:
            screen.minimize()
        else:
            screen.maximize(self.log, container=False)

    def action_log_find(self) -> None:
        self.query_one("#run-find", Input).focus()

    def action_log_next(self) -> None:
        self.find(True)

    def action_log_prev(self) -> None:
        self.find(False)

    def action_log_filter(self) -> None:
        self.query_one("#run-filter", Input).focus()

    def action_log_follow(self) -> None:
        log = self.log
        log.follow = not log.follow
        log.refresh()
        self.retitle()

    def action_log_time(self) -> None:
        self.time_mode = TIME_MODES[(TIME_MODES.index(self.time_mode) + 1) % len(TIME_MODES)]

    def action_log_time_mode(self, mode: str) -> None:
        if mode in TIME_MODES:
            self.time_mode = mode

    def action_log_hex(self) -> None:
        self.hex_shown = not self.hex_shown

    def action_log_level(self, level: str) -> None:
        box = self.query_one(f"#run-level-{level}", Checkbox)
        box.value = not box.value  # Checkbox.Changed applies the filter

    def action_leave_input(self) -> None:
        focused = self.screen.focused
        if isinstance(focused, Input) and focused.id in ("run-filter", "run-find"):
            self.log.focus()
            return
        raise SkipAction()

    def palette_entries(self) -> list[PaletteCommand]:
        """The palette's log entries (actions of this box): its keys with a palette title,
        each timestamp mode and each level filter."""
        keys = [
            PaletteCommand(spec.title, f"{spec.help} (Run tab, key {self._key(spec)})", spec.action)
            for spec in specs("log_box")
            if spec.id != "leave_input"
        ]
        time = "Host arrival time of each line"
        modes = [
            PaletteCommand(f"Log: timestamps {mode}", time, f"log_time_mode({mode!r})")
            for mode in TIME_MODES
        ]
        title, what = "Log: show / hide level {} lines", "Filter the log by level"
        levels = [PaletteCommand(title.format(lv), what, f"log_level({lv!r})") for lv in LEVELS]
        return keys + modes + levels

    def _key(self, spec: KeySpec) -> str:
        keys = getattr(self.app, "keymap_in_use", {}).get(spec.id, spec.key)
        return self.app.get_key_display(Binding(keys.split(",")[0], spec.action))


__all__ = ["FILTER_DELAY", "HEX_DELAY", "LogBox"]
