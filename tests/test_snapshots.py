"""SVG snapshots of the Program and NPU views on the demo program (pytest-textual-snapshot).

Update after a reviewed UI change with ``pytest tests/test_snapshots.py --snapshot-update``.
"""

from __future__ import annotations

from pathlib import Path

from textual.pilot import Pilot

from etu_tui.app import EtuApp
from etu_tui.screenshots import COMPARE_REPORT, npu_steps, settle

DEMO = Path(__file__).resolve().parent.parent / "examples" / "demo" / "demo_cnn.pte"


def test_program_view(snap_compare) -> None:
    """Summary, instructions (1 NPU, 2 CPU rows), plan facts, CPU operators, delegates."""

    async def loaded(pilot: Pilot) -> None:
        await settle(pilot)

    assert snap_compare(EtuApp(DEMO), terminal_size=(140, 45), run_before=loaded)


def test_npu_view(snap_compare) -> None:
    """Vela summary with the estimate badge, layers by cycles, compare with a U85 run."""
    assert COMPARE_REPORT.is_dir()
    assert snap_compare(EtuApp(DEMO), terminal_size=(140, 45), run_before=npu_steps)
