"""Helpers shared by the console tests: the default Pilot size and the screen as text.

A plain module (not a test module), so no test module imports another.
"""

from __future__ import annotations

import io

from rich.console import Console

from etu_tui.app import EtuApp

SIZE = (140, 45)


def screen_text(app: EtuApp) -> str:
    """What the terminal shows, as plain text."""
    console = Console(
        width=app.size.width,
        height=app.size.height,
        file=io.StringIO(),
        force_terminal=True,
        color_system="truecolor",
        record=True,
        legacy_windows=False,
    )
    console.print(
        app.screen._compositor.render_update(full=True, screen_stack=app._background_screens)
    )
    return console.export_text()
