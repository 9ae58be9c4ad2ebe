"""``?`` / F1: every key of the console, by panel, as the keymap has bound it."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Label, Static

from etu.tui.keys import OWNERS, KeySpec, bindings, specs


def key_text(spec: KeySpec, keymap: dict[str, str], display) -> str:
    """The keys that run ``spec`` now (the keymap's, else the table's), as shown."""
    keys = keymap.get(spec.id, spec.key)
    return " ".join(display(Binding(key, spec.action)) for key in keys.split(","))


def help_content(keymap: dict[str, str], display) -> Content:
    """One section per tab, widget and dialog: key, the binding id for the keymap, what
    it does (a row bound by several panels shows in each)."""
    lines: list[Content] = []
    for owner, title in OWNERS.items():
        rows = specs(owner)
        if not rows:
            continue
        if lines:
            lines.append(Content(""))
        lines.append(Content.styled(title, "bold $accent"))
        for spec in rows:
            keys = key_text(spec, keymap, display)
            lines.append(
                Content.assemble((f"  {keys:<9} ", "bold"), (f"{spec.id:<20} ", "dim"), spec.what)
            )
    return Content("\n").join(lines)


class HelpScreen(ModalScreen[None]):
    """Every key by panel; the third column is the id a ``[keymap]`` entry rebinds."""

    DEFAULT_CSS = """
    HelpScreen {
        align: center middle;
        & > Vertical {
            width: 90%;
            max-width: 92;
            height: 90%;
            border: round $accent;
            border-title-style: bold;
            background: $surface;
        }
        & VerticalScroll { height: 1fr; padding: 0 1; }
        & Label { color: $text-muted; padding: 0 1; }
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = bindings("help_screen")

    def compose(self) -> ComposeResult:
        # The keymap the App applied (EtuApp keeps it; Textual's own copy is private).
        keymap: dict[str, str] = dict(getattr(self.app, "keymap_in_use", {}))
        with Vertical() as box:
            box.border_title = "Keys"
            with VerticalScroll():
                yield Static(help_content(keymap, self.app.get_key_display), id="help-keys")
            yield Label(
                "Escape closes · [keymap] in etu.toml rebinds an id",
                markup=False,
            )

    def action_close(self) -> None:
        self.dismiss(None)
