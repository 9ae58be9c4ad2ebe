"""Ask for a path; the App loads it through the same worker as the first file.

Tab completes the path as a shell does: the one entry that matches, else the longest common
start of the matches, which are listed under the input.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Input, Label, Static

from etu.tui.keys import bindings
from etu.tui.safe_text import printable

MAX_LISTED = 8  # candidates listed under the input


def complete_path(text: str) -> tuple[str, list[str]]:
    """``text`` completed against the file system, and the names that matched (folders
    end with a separator). ``~`` is expanded only to look: the text keeps what was typed.
    Hidden entries are offered once the typed name starts with a dot."""
    head, sep, prefix = text.rpartition(os.sep)
    base = head + sep
    folder = Path(os.path.expanduser(base)) if base else Path(".")
    try:
        names = sorted(
            entry.name + (os.sep if entry.is_dir() else "")
            for entry in os.scandir(folder)
            if entry.name.startswith(prefix) and (prefix.startswith(".") or entry.name[0] != ".")
        )
    except OSError:
        return text, []
    if not names:
        return text, []
    return base + _common_start(names), names


def _common_start(names: list[str]) -> str:
    """The longest start every name shares, character by character (not by path part)."""
    first, last = min(names), max(names)
    size = 0
    while size < len(first) and first[size] == last[size]:
        size += 1
    return first[:size]


class OpenFileScreen(ModalScreen[Path | None]):
    """A path Input: Enter opens, Tab completes, Escape cancels. Dismisses with the path
    or None."""

    DEFAULT_CSS = """
    OpenFileScreen {
        align: center middle;
        & > Vertical {
            width: 80;
            max-width: 100%;
            height: auto;
            border: round $accent;
            border-title-style: bold;
            padding: 0 1;
            background: $surface;
        }
        & Label { color: $text-muted; }
        & #matches { color: $text-muted; height: auto; max-height: 8; }
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = bindings("open_file")

    DIALOG_TITLE = "Open a .pte file or workspace folder"
    PLACEHOLDER = "path/to/model.pte"
    HINT = "Enter open · Tab complete · Escape cancel · ~ and relative paths work"

    def __init__(self, start: str = "") -> None:
        super().__init__()
        self._start = start
        self.matches: list[str] = []

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = self.DIALOG_TITLE
            # Typing goes on from the prefilled folder (a selected value would be replaced
            # by the first character typed).
            yield Input(self._start, placeholder=self.PLACEHOLDER, select_on_focus=False, id="path")
            yield Static(id="matches")
            yield Label(self.HINT, markup=False)

    def action_complete(self) -> None:
        field = self.query_one("#path", Input)
        text, self.matches = complete_path(field.value)
        field.value = text
        field.cursor_position = len(text)
        shown = self.query_one("#matches", Static)
        if len(self.matches) > 1:
            listed = self.matches[:MAX_LISTED]
            more = len(self.matches) - len(listed)
            lines = [printable(name) for name in listed] + ([f"… {more} more"] if more else [])
            shown.update(Content("  ".join(lines)))
        elif not self.matches:
            shown.update(Content("no match"))
        else:
            shown.update("")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        self.dismiss(Path(text).expanduser() if text else None)

    def action_cancel(self) -> None:
        self.dismiss(None)
