"""``?`` / F1: every key of the console, by panel, as the keymap has bound it."""

from __future__ import annotations

from typing import ClassVar

from etu.tui.keys import KEYS, PANELS, KeySpec, panel_bindings, spec_by_id
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Label, Static


def key_text(spec: KeySpec, keymap: dict[str, str], display) -> str:
    """The keys that run ``spec`` now (the keymap's, else the table's), as shown."""
    keys = keymap.get(spec.id, spec.key)
    return " ".join(display(Binding(key, spec.action)) for key in keys.split(","))


def help_content(
    keymap: dict[str, str], display, extra: dict[str, list[Binding]] | None = None
) -> Content:
    """One section per panel: key, the binding id for the keymap, what it does.
    ``extra``: a panel's own bindings that are not rows of the action table."""
    lines: list[Content] = []
    seen: set[tuple[str, str]] = set()
    extra = extra or {}
    for owner, title in PANELS.items():
        rows = [spec for spec in KEYS if spec.owner == owner]
        rows += [
            KeySpec(
                b.id or b.action,
                b.key,
                b.action,
                owner,
                b.description,
                f"{title}: {b.tooltip or b.description}",
            )
            for b in extra.get(owner, [])
        ]
        if not rows:
            continue
        if lines:
            lines.append(Content(""))
        lines.append(Content.styled(title, "bold $accent"))
        for spec in rows:
            if (owner, spec.id) in seen:
                continue
            seen.add((owner, spec.id))
            keys = key_text(spec, keymap, display)
            what = spec.title.split(": ", 1)[-1]
            lines.append(
                Content.assemble(
                    (f"  {keys:<9} ", "bold"),
                    (f"{spec.id:<20} ", "dim"),
                    what,
                )
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

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark,f1", "close", "Close", show=False, id="help_close"),
    ]

    def compose(self) -> ComposeResult:
        keymap = dict(getattr(self.app, "_keymap", {}) or {})
        extra = {
            tab: [b for b in panel_bindings(panel) if b.id and spec_by_id(b.id) is None]
            for tab, _label, panel, _panel_id in getattr(self.app, "TABS", [])
        }
        with Vertical() as box:
            box.border_title = "Keys"
            with VerticalScroll():
                yield Static(help_content(keymap, self.app.get_key_display, extra), id="help-keys")
            yield Label(
                "Escape closes · [keymap] in etu.toml rebinds an id",
                markup=False,
            )

    def action_close(self) -> None:
        self.dismiss(None)
