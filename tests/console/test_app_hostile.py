"""Every console view on hostile input (issue 9): a workspace whose program, Vela output,
firmware ELF and recorded session carry escape sequences, bidi controls and invisible
characters where names go (tests/hostile.py, built from real artifacts). Each tab is visited
and every rendered strip is read: no raw ESC, C0/C1 control, bidi or invisible character may
reach the terminal, and the hostile text must still show in escaped form."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from textual.widgets import TabbedContent

from etu.tui.app import EtuApp
from etu.tui.safe_text import PrintableFilter
from etu.tui.widgets.history import HistoryPanel
from tests.hostile import (
    FORBIDDEN,
    HOSTILE,
    hostile_elf,
    hostile_log,
    hostile_program,
    hostile_vela,
)
from tools.screenshots import settle

pytestmark = pytest.mark.anyio

SIZE = (140, 45)
TABS = ["program", "tensors", "delegates", "npu", "memory", "fit", "compile", "history", "run"]
PROGRAM = f"program{HOSTILE}.pte"  # a hostile file name too
FORBIDDEN_SET = frozenset(FORBIDDEN) - {"\n"}


def rendered_text(app: EtuApp) -> str:
    """Every character of every segment the screen (with its overlays) renders now."""
    update = app.screen._compositor.render_update(full=True, screen_stack=app._background_screens)
    return "\n".join("".join(segment.text for segment in strip) for strip in update.strips)


def leaks(text: str) -> list[str]:
    return sorted({hex(ord(c)) for c in text if c in FORBIDDEN_SET})


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / f"ws{HOSTILE}"
    folder.mkdir()
    hostile_program(folder / PROGRAM)
    hostile_vela(folder / "vela")
    elf = hostile_elf(tmp_path / "elf")
    (folder / "firmware").mkdir()
    shutil.copyfile(elf, folder / "firmware" / f"fw{HOSTILE}.elf")
    session = folder / ".etu" / "sessions" / "20260101-000000-fvp-000"
    session.mkdir(parents=True)
    meta = {"kind": "fvp", "target": HOSTILE, "elf": f"/x/{HOSTILE}.elf", "started": 1.0,
            "ended": 2.0, "exit_reason": "runner_error", "proof": HOSTILE}  # fmt: skip
    (session / "meta.json").write_text(json.dumps(meta))
    hostile_log(session / "raw.log")
    return folder


@pytest.mark.parametrize("boundary", [True, False], ids=["with-filter", "widgets-alone"])
async def test_no_view_lets_hostile_text_reach_the_terminal(
    workspace: Path, boundary: bool
) -> None:
    """With the app's PrintableFilter (what users get), and without it: each widget must
    route outside text through printable itself, so it is laid out at its escaped width."""
    app = EtuApp(workspace / PROGRAM)
    if not boundary:
        app._filters = [f for f in app._filters if not isinstance(f, PrintableFilter)]
    found: dict[str, list[str]] = {}
    escaped = False
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        for tab in TABS:
            app.query_one(TabbedContent).active = tab
            await settle(pilot)
            if tab == "history":
                panel = app.query_one(HistoryPanel)
                panel.query_one("#history-table").focus()
                await pilot.pause()
                await pilot.press("r")  # replay the hostile session in the Run tab
                await settle(pilot)
            text = rendered_text(app)
            escaped |= "\\x1b" in text
            if bad := leaks(text):
                found[tab] = bad
    assert not found, f"raw controls reached the terminal: {found}"
    assert escaped, "the hostile names are shown escaped, not dropped"
