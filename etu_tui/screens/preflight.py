"""Before a run: what the checks found wrong (the program's NPU target against the run's,
the firmware's baked-in program), with the choice to run anyway."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static

from etu.tui.keys import bindings
from etu.tui.safe_text import printable
from etu.tui.widgets.formatting import plural


class PreflightScreen(ModalScreen[bool]):
    """Dismisses with True (run anyway) or False (cancel)."""

    DEFAULT_CSS = """
    PreflightScreen {
        align: center middle;
        & > Vertical {
            width: 90;
            max-width: 100%;
            height: auto;
            border: heavy $warning;
            border-title-color: $text-warning;
            border-title-style: bold;
            padding: 0 1;
            background: $surface;
        }
        & #preflight-problems { height: auto; margin-bottom: 1; }
        & #preflight-notes { height: auto; margin-bottom: 1; }
        & Horizontal { height: auto; }
        & Button { margin-right: 2; }
        & Label { color: $text-muted; }
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = bindings("preflight")

    def __init__(
        self, problems: list[str], notes: list[str] | None = None, *, action: str = "run"
    ) -> None:
        """``notes``: what to know before running (the program's integer inputs and their
        scale and zero point), shown under the problems; ``action``: what is asked for
        ("run", or "flash" from the Boards tab)."""
        super().__init__()
        self.problems = problems
        self.notes = list(notes or [])
        self.action = action

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = f"Pre-flight: {plural(len(self.problems), 'problem')}"
            yield Static(
                Content("\n").join(
                    Content.assemble(("✗ ", "$text-warning bold"), printable(problem))
                    for problem in self.problems
                ),
                id="preflight-problems",
            )
            if self.notes:
                yield Static(
                    Content("\n").join(
                        Content.assemble(("ℹ ", "$text-accent bold"), printable(note))
                        for note in self.notes
                    ),
                    id="preflight-notes",
                )
            with Horizontal():
                yield Button(f"{self.action.capitalize()} anyway (r)", id="preflight-run",
                             variant="warning")  # fmt: skip
                yield Button("Cancel (Escape)", id="preflight-cancel")
            yield Label(f"The {self.action} would likely fail the way each line says.",
                        markup=False)  # fmt: skip

    def on_mount(self) -> None:
        self.query_one("#preflight-cancel", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "preflight-run")

    def action_run_anyway(self) -> None:
        self.dismiss(True)

    def action_cancel(self) -> None:
        self.dismiss(False)
