"""A failed open, said plainly where the user is looking, with what to do next."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Static


class ProblemBox(Static):
    """Hidden until something could not be read; then one ✗ line per problem, and a hint."""

    DEFAULT_CSS = """
    ProblemBox {
        display: none;
        height: auto;
        border: heavy $error;
        border-title-color: $text-error;
        border-title-style: bold;
        padding: 0 1;
        &.-shown { display: block; }
    }
    """

    def show_lines(self, title: str, lines: list[str], hint: str = "") -> None:
        if not lines:
            self.clear()
            return
        self.border_title = title
        parts = [Content.assemble(("✗ ", "$text-error bold"), (line, "bold")) for line in lines]
        if hint:
            parts.append(Content.styled(hint, "dim"))
        self.update(Content("\n").join(parts))
        self.add_class("-shown")

    def clear(self) -> None:
        self.remove_class("-shown")
        self.update("")


class ErrorPanel(ProblemBox):
    """Hidden until a file fails to open; the previous program (if any) stays below."""

    def show_error(self, message: str, still_showing: str | None) -> None:
        hint = (
            f"Still showing {still_showing}. Press o to open another file."
            if still_showing
            else "Press o to open another file."
        )
        self.show_lines("Could not open", [message], hint)
