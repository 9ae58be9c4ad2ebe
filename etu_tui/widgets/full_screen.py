"""A pane that fills the screen for a while: what the Run tab's panes and the History
chart share. At 80×24 some panes are hidden by the layout, and this is how they are read."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from weakref import WeakKeyDictionary

from textual.widget import Widget

# The pane each owner last filled the screen with, and what to call when it is restored; an
# owner in here has its watch set.
_FILLED: WeakKeyDictionary[Widget, tuple[Widget, Callable[[], None]]] = WeakKeyDictionary()


def fill_screen(owner: Widget, pane: Widget, back: Callable[[], None]) -> None:
    """Maximise ``owner``'s ``pane`` and focus it (so the owner's keys still work). When the
    layout comes back, by the owner's key (``screen.minimize()``) or Escape through Textual,
    and the focus is on that pane (hidden again) or nowhere, ``back`` gives it a home."""
    screen = owner.screen
    if owner not in _FILLED:
        owner.watch(screen, "maximized", partial(_restored, owner), init=False)
    _FILLED[owner] = (pane, back)
    screen.maximize(pane, container=False)
    pane.focus()


def _restored(owner: Widget, maximized: Widget | None) -> None:
    pane, back = _FILLED[owner]
    if maximized is None and owner.screen.focused in (None, pane):
        back()
