"""One number formatter (etu.tui.numbers) for the CLI and the console: the same figure reads
the same in ``etu sessions`` and the History tab, in ``etu diff`` and the History compare."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from etu.runner.history import list_rows
from etu.tui.cli.sessions import format_rows
from etu.tui.numbers import nbytes, number, percent, plural, seconds, transfer
from etu.tui.widgets.history import HistoryPanel, compare_rows

V1_SESSIONS = Path(__file__).resolve().parent.parent / "data" / "sessions" / "v1"


@pytest.mark.parametrize(
    ("value", "options", "text"),
    [
        (None, {}, "-"),
        (None, {"missing": "–"}, "–"),
        (True, {}, "yes"),
        (1234567, {}, "1,234,567"),
        (1234.5, {}, "1,234.5"),
        (0.000123456789, {}, "0.000123457"),
        (3, {"digits": 1}, "3"),  # an exact count stays exact
        (2.5e-6, {"scale": 1e6, "digits": 1}, "2.5"),
        (3, {"scale": 1e3, "digits": 0}, "3,000"),
        (-1024, {"signed": True}, "-1,024"),
        (1024, {"signed": True}, "+1,024"),
        (0.25, {"signed": True, "digits": 2}, "+0.25"),
        ("n/a", {}, "n/a"),
    ],
)
def test_number(value: object, options: dict, text: str) -> None:
    assert number(value, **options) == text


def test_units() -> None:
    assert nbytes(65536) == "65,536 B"
    assert seconds(1.26) == "1.3s" and seconds(None) == "-"
    assert percent(3.254, signed=True) == "+3.25%" and percent(None, missing="") == ""
    assert plural(1, "match", "matches") == "1 match" and plural(2_000, "line") == "2,000 lines"


def test_a_flash_reads_the_same_in_etu_flash_and_the_boards_tab() -> None:
    """Both print transfer(): bytes exact, the rate in KiB/s, the ETA and retries when any."""
    assert transfer(12_288, 65_536, 3_300.0, 16.44, 2) == (
        "12,288 / 65,536 B · 3.2 KiB/s · ETA 16.4s · 2 retries"
    )
    assert transfer(10, 10, 0.0, None, 1) == "10 / 10 B · 0.0 KiB/s · 1 retry"


def test_etu_sessions_and_the_history_tab_print_the_same_figures(tmp_path: Path) -> None:
    root = tmp_path / ".etu" / "sessions"
    shutil.copytree(V1_SESSIONS, root)
    rows = list_rows(root, workspace=tmp_path)
    assert rows
    text = format_rows(rows)
    panel = HistoryPanel()
    for row in rows:
        cells = panel._cells(row)
        figures = cells[-5:]  # NPU cycles, CPU cycles, method alloc, temp alloc, time
        line = next(line for line in text.splitlines() if line.startswith(row.started_text))
        assert [figure in line.split() for figure in figures] == [True] * 5, (figures, line)


def test_the_history_compare_signs_changes_as_etu_diff_does() -> None:
    item = {"name": "cycles", "a": 1000, "b": 1500, "delta": 500, "percent": 50.0,
            "equal": False}  # fmt: skip
    result = {"ending": {"changed": False, "a": "success", "b": "success"},
              "cycles": [item], "counters": [], "allocators": [], "outputs": [],
              "first_divergence": None}  # fmt: skip
    rows = compare_rows(result)
    assert ("≠ cycles", "1,000", "1,500", "+500", "+50.00%") in rows
