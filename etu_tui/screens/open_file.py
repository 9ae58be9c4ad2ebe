"""Ask for a path; the App loads it through the same worker as the first file."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label


class OpenFileScreen(ModalScreen[Path | None]):
    """A path Input: Enter opens, Escape cancels. Dismisses with the path or None."""

    DEFAULT_CSS = """
    OpenFileScreen {
        align: center middle;
        & > Vertical {
            width: 80;
            height: auto;
            border: round $accent;
            border-title-style: bold;
            padding: 0 1;
            background: $surface;
        }
        & Label { color: $text-muted; }
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, start: str = "") -> None:
        super().__init__()
        self._start = start

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = "Open a .pte file or workspace folder"
            yield Input(self._start, placeholder="path/to/model.pte", id="path")
            yield Label("Enter open · Escape cancel · ~ and relative paths work")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        self.dismiss(Path(text).expanduser() if text else None)

    def action_cancel(self) -> None:
        self.dismiss(None)
