"""A tab's panel whose widgets are composed the first time its tab is shown.

The Compile, Boards and Fit tabs hold nearly half of the console's ~320 widgets (173 are
composed at start without them). Composed at start, every start styled them, and every
screen-wide restyle (a resize, a class on the screen) styled them again, for a user who may
never open those tabs: the console started ~30% slower (the Fit tab alone, ~15%). Such a
panel keeps its state on itself until then; the App calls :meth:`show`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Iterable

from textual.widget import Widget
from textual.widgets import TabPane


class FirstShown:
    """Mixin, before the container class: ``compose_shown`` is the panel's compose and
    ``on_shown`` its ``on_mount`` (what needs the widgets: apply the state kept so far).
    A panel outside a tab (a test's harness) is shown when mounted."""

    shown = False

    def compose_shown(self) -> Iterable[Widget]:
        raise NotImplementedError

    def on_shown(self) -> Awaitable[None] | None:
        """The widgets exist: apply what was set before (may be a coroutine)."""

    def compose(self) -> Iterable[Widget]:
        if self.shown:
            yield from self.compose_shown()

    def on_mount(self) -> None:
        assert isinstance(self, Widget)
        if not isinstance(self.parent, TabPane):
            self.call_later(self.show)

    async def show(self) -> None:
        """Compose and mount the widgets, once."""
        if self.shown:
            return
        assert isinstance(self, Widget)
        self.shown = True
        await self.recompose()
        applied = self.on_shown()
        if applied is not None:
            await applied
