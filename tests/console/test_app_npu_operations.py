"""The NPU tab's operation list (issue 23 §1): each delegate's command stream decoded by
parsers.ethosu_commands, shown in place of Vela's per-layer table with ``v``. Real programs:
the demo, the two-delegate program, a demo whose command stream is corrupted."""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import ContentSwitcher

from etu.parsers.program_facts import delegates
from etu.parsers.pte import open_program
from etu.tui.app import EtuApp
from etu.tui.widgets.npu import LayerTable, OperationTable
from tests.console_helpers import SIZE
from tools.screenshots import settle

ROOT = Path(__file__).resolve().parent.parent.parent
DEMO = ROOT / "etu_tui" / "demo" / "demo_cnn.pte"


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    folder = tmp_path / "demo"
    shutil.copytree(DEMO.parent, folder, ignore=shutil.ignore_patterns(".etu", "__pycache__"))
    return folder / DEMO.name


async def operations_steps(pilot: Pilot) -> None:
    """The NPU tab, then its operation list."""
    await settle(pilot)
    await pilot.press("n")
    await settle(pilot)
    await pilot.press("v")
    await settle(pilot)


@pytest.mark.anyio
async def test_v_shows_the_demos_48_operations_and_back(demo: Path) -> None:
    app = EtuApp(demo)
    async with app.run_test(size=SIZE) as pilot:
        await operations_steps(pilot)
        panel = app.npu_panel
        table = panel.query_one(OperationTable)
        assert panel.query_one(ContentSwitcher).current == "npu-operations"
        assert table.has_focus and table.row_count == 48
        assert table.operation(35).summary == "conv 3×3/1 32×32×3 → 32×32×16, weights 608 B"
        cells = table.row_cells(35)
        assert list(cells) == ["35", "conv", "3×3/1", "32×32×3", "32×32×16", "608", ""]
        assert table.row_cells(33)[1:5] == ("dma", "", "r0+0x0", "r1+0x4c00")
        box = panel.query_one("#layers-box")
        assert str(box.border_title).startswith("NPU operations · 48: 36 pool, 3 dma,")
        assert panel.check_action("sort_layers", ()) is None  # no sorting of operations
        await pilot.press("v")
        await settle(pilot)
        assert panel.query_one(ContentSwitcher).current == "layers"
        assert panel.query_one(LayerTable).has_focus
        assert str(box.border_title).startswith("Per-layer")


@pytest.mark.anyio
async def test_a_corrupt_stream_is_one_line_and_the_tab_still_works(
    demo: Path,
) -> None:
    data = bytearray(demo.read_bytes())
    with open_program(demo) as program:
        (info,) = delegates(program)
        assert info.payload is not None and info.payload.command_stream_offset is not None
        at = program.delegate_span(info.delegate).offset + info.payload.command_stream_offset
    data[at + 12 : at + 16] = struct.pack("<I", 0x3FE)  # word 3: no such command
    demo.write_bytes(bytes(data))
    app = EtuApp(demo)
    async with app.run_test(size=SIZE) as pilot:
        await operations_steps(pilot)
        panel = app.npu_panel
        assert panel.query_one(OperationTable).row_count == 0
        box = panel.query_one("#layers-box")
        assert str(box.border_title) == (
            f"NPU operations · none: {demo}: delegate 0 command stream word 3 at offset "
            f"{at + 12:#x}: unknown command code 0x3fe"
        )
        assert "delegate 0: " in str(box.border_subtitle)


@pytest.mark.anyio
async def test_two_delegates_get_a_delegate_column() -> None:
    from tests.two_delegates import build

    app = EtuApp(build() / "TwoDelegates.pte")
    async with app.run_test(size=SIZE) as pilot:
        await operations_steps(pilot)
        table = app.npu_panel.query_one(OperationTable)
        assert table.columns[1].label == "dlg"
        owners = {table.row_cells(i)[1] for i in range(table.row_count)}
        assert owners == {"0", "1"}


def test_operations_view_at_80x24(demo: Path, snap_compare) -> None:
    assert snap_compare(EtuApp(demo), terminal_size=(80, 24), run_before=operations_steps)
