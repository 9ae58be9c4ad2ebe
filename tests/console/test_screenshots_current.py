"""The pictures in screenshots/ show what the console draws now (#24 §11): each tab's picture
has the same visible text as the view rendered today. A UI change that forgets
``make screenshots`` fails here.

Cheap on purpose: a picture drawn with the same steps and size as an SVG snapshot of
tests/console/test_snapshots.py is compared with that snapshot (which that test checks against the
console), with no app start; the rest are rendered again with tools/screenshots' own steps,
one app start per render (the demo's seven views share one).
"""

from __future__ import annotations

import asyncio
import difflib
import re
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from tools.screenshots import (
    SMALL_RUN,
    TAB_SCREENSHOTS,
    render_demo,
    render_fit,
    render_history,
    render_npu,
    visible_text,
)

ROOT = Path(__file__).resolve().parent.parent.parent
PICTURES = ROOT / "screenshots"
SNAPSHOTS = Path(__file__).resolve().parent / "__snapshots__" / "test_snapshots"

# Pictures drawn with the steps and size of a snapshot test_snapshots.py checks.
SNAPSHOT_TWINS = {
    "memory.svg": "test_view_at_small_sizes[memory-120x36].svg",
    "compile.svg": "test_view_at_small_sizes[compile-120x36].svg",
    "run.svg": "test_run_view_after_a_run_at_small_sizes[120x36].svg",
    SMALL_RUN: "test_run_view_after_a_run_at_small_sizes[80x24].svg",
}

Render = Callable[[Path], Awaitable[object]]
# The other tab pictures, rendered again; each renderer writes the pictures listed with it.
DEMO_PICTURES = ("program.svg", "tensors.svg", "delegate.svg", "palette.svg", "open.svg",
                 "help.svg", "boards.svg")  # fmt: skip
RENDERS: dict[str, tuple[Render, tuple[str, ...]]] = {
    "demo": (render_demo, DEMO_PICTURES),
    "npu": (render_npu, ("npu.svg",)),
    "fit": (render_fit, ("fit.svg",)),
    "history": (render_history, ("history.svg",)),
}

# The History picture's sessions are recorded when it is drawn: their dates and times differ.
_CLOCK = re.compile(r"\d{4}-\d{2}-\d{2}|\b\d{2}:\d{2}(?::\d{2})?\b")


def _text(path: Path) -> list[str]:
    return [_CLOCK.sub("<clock>", line) for line in visible_text(path.read_text("utf-8"))]


def _assert_same(picture: Path, current: Path) -> None:
    shown, now = _text(picture), _text(current)
    diff = "\n".join(difflib.unified_diff(shown, now, "picture", "console now", lineterm=""))
    assert shown == now, f"{picture.name} is stale; run `make screenshots`:\n{diff}"


def test_every_tab_picture_is_checked() -> None:
    """A new tab's picture cannot escape the checks below."""
    checked = {*SNAPSHOT_TWINS, *(name for _, names in RENDERS.values() for name in names)}
    assert {*TAB_SCREENSHOTS.values(), SMALL_RUN} <= checked


@pytest.mark.parametrize("picture", sorted(SNAPSHOT_TWINS))
def test_picture_matches_its_snapshot_twin(picture: str) -> None:
    _assert_same(PICTURES / picture, SNAPSHOTS / SNAPSHOT_TWINS[picture])


@pytest.mark.parametrize("render", sorted(RENDERS))
def test_picture_matches_a_fresh_render(render: str, tmp_path: Path) -> None:
    renderer, pictures = RENDERS[render]
    asyncio.run(renderer(tmp_path))
    for picture in pictures:
        _assert_same(PICTURES / picture, tmp_path / picture)


def test_visible_text_reads_the_characters_of_each_line() -> None:
    """Columns come from x (12.2 px a cell), lines from the clip path; entities decoded."""
    svg = (
        '<text class="terminal-r1" x="12.2" y="20" textLength="36.6" '
        'clip-path="url(#terminal-line-0)">etu</text>'
        '<text class="terminal-123-r2" x="0" y="44" textLength="24.4" '
        'clip-path="url(#terminal-123-line-1)">a&#160;</text>'
        '<text class="terminal-123-r2" x="36.6" y="44" textLength="12.2" '
        'clip-path="url(#terminal-123-line-1)">&amp;</text>'
    )
    assert visible_text(svg) == [" etu", "a  &"]
