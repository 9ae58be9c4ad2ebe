"""A failed open, said plainly where the user is looking, with what to do next."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Static


class ErrorPanel(Static):
    """Hidden until a file fails to open; the previous program (if any) stays below."""

    DEFAULT_CSS = """
    ErrorPanel {
        display: none;
        height: auto;
        border: heavy $error;
        border-title-color: $text-error;
        border-title-style: bold;
        padding: 0 1;
        &.-shown { display: block; }
    }
    """

    def show_error(self, message: str, still_showing: str | None) -> None:
        self.border_title = "Could not open"
        hint = (
            f"Still showing {still_showing}. Press o to open another file."
            if still_showing
            else "Press o to open another file."
        )
        self.update(
            Content.assemble(("✗ ", "$text-error bold"), (message, "bold"), "\n", (hint, "dim"))
        )
        self.add_class("-shown")

    def clear(self) -> None:
        self.remove_class("-shown")
        self.update("")
