"""The footer, with the keys that work everywhere first.

Textual's footer lists the focused widget's keys first and the App's last, so on an 80
column terminal Quit and the tab keys scroll off the right edge. Here the App's keys (Quit,
Help, the tab keys as one compact group) come first, then the shown panel's keys.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Footer
from textual.widgets._footer import FooterKey, FooterLabel, KeyGroup

from etu.tui.keys import specs

APP_ACTIONS = frozenset(spec.action for spec in specs("app"))


class EtuFooter(Footer):
    """Footer keys in the console's order: everywhere-keys first, then the panel's.

    Textual recomposes a footer whenever the screen's bindings are refreshed (every focus
    change, every ``refresh_bindings``), which rebuilt and restyled ~15 keys dozens of times
    while the console opened; this one recomposes only when what it shows changed."""

    _shown: tuple | None = None  # what the keys were composed from

    def _showing(self) -> tuple:
        """What :meth:`compose` builds the keys from: each binding, enabled or not, its
        tooltip and displayed key."""
        if not self._bindings_ready:
            return ()
        display = self.app.get_key_display
        return (
            self.show_command_palette,
            *(
                (binding, enabled, tooltip, display(binding))
                for _node, binding, enabled, tooltip in self.screen.active_bindings.values()
            ),
        )

    async def recompose(self) -> None:
        showing = self._showing()
        if showing == self._shown:
            return
        self._shown = showing
        await super().recompose()

    def compose(self) -> ComposeResult:
        if not self._bindings_ready:
            return
        active = self.screen.active_bindings
        first: dict[str, tuple[Binding, bool, str]] = {}
        for _node, binding, enabled, tooltip in active.values():
            if binding.show and binding.action not in first:
                first[binding.action] = (binding, enabled, tooltip)
        entries = sorted(first.values(), key=lambda entry: entry[0].action not in APP_ACTIONS)
        self.styles.grid_size_columns = len(entries) + 1
        index = 0
        while index < len(entries):
            binding, enabled, tooltip = entries[index]
            group = binding.group
            members = [entries[index]]
            while (
                group is not None
                and index + len(members) < len(entries)
                and entries[index + len(members)][0].group == group
            ):
                members.append(entries[index + len(members)])
            index += len(members)
            if group is not None and len(members) > 1:
                with KeyGroup(classes="-compact" if group.compact else ""):
                    for member, member_enabled, member_tip in members:
                        yield FooterKey(
                            member.key,
                            self.app.get_key_display(member),
                            "",
                            member.action,
                            disabled=not member_enabled,
                            tooltip=member_tip or member.description,
                            classes="-grouped",
                        ).data_bind(compact=Footer.compact)
                yield FooterLabel(group.description)
                continue
            yield FooterKey(
                binding.key,
                self.app.get_key_display(binding),
                binding.description,
                binding.action,
                disabled=not enabled,
                tooltip=tooltip,
            ).data_bind(compact=Footer.compact)
        if self.show_command_palette and self.app.ENABLE_COMMAND_PALETTE:
            found = active.get(self.app.COMMAND_PALETTE_BINDING)
            if found is not None:
                _node, binding, enabled, _tooltip = found
                yield FooterKey(
                    binding.key,
                    self.app.get_key_display(binding),
                    binding.description,
                    binding.action,
                    classes="-command-palette",
                    disabled=not enabled,
                    tooltip=binding.tooltip or binding.description,
                )
