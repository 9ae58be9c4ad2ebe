"""The command palette mirrors the key bindings, so every action is findable by name."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Protocol, runtime_checkable

from textual.command import DiscoveryHit, Hit, Hits, Provider


@dataclass(frozen=True, slots=True)
class PaletteCommand:
    title: str
    help: str
    action: str  # an action string for App.run_action, e.g. "show_plan(1)"


@runtime_checkable
class HasPaletteCommands(Protocol):
    def palette_commands(self) -> list[PaletteCommand]: ...


@runtime_checkable
class PanelCommands(Protocol):
    """The one hook by which a panel adds palette entries beyond the key table (every key
    is a row of etu.tui.keys): entries whose ``action`` runs on the panel."""

    def palette_entries(self) -> list[PaletteCommand]: ...


class EtuCommands(Provider):
    """Commands from the App's own table; no second list to keep in step."""

    def _commands(self) -> list[PaletteCommand]:
        app = self.app
        return app.palette_commands() if isinstance(app, HasPaletteCommands) else []

    async def discover(self) -> Hits:
        for command in self._commands():
            yield DiscoveryHit(
                command.title, partial(self.app.run_action, command.action), help=command.help
            )

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for command in self._commands():
            score = matcher.match(command.title)
            if score > 0:
                yield Hit(
                    score,
                    matcher.highlight(command.title),
                    partial(self.app.run_action, command.action),
                    text=command.title,
                    help=command.help,
                )
