"""The console on a program whose Vela blocks are in a ``.ptd`` beside it (issue 25 §1): the
NPU tab decodes the external command stream, the delegate view says where each block is
or what is wrong. A real pair lowered by ExecuTorch (tests/ptd_programs.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from etu.parsers.program_facts import delegates
from etu.parsers.pte import open_program
from etu.tui.app import EtuApp
from etu.tui.widgets.delegates import payload_content
from etu.tui.widgets.npu import OperationTable
from tests import npu_programs, ptd_programs
from tests.console.test_app_npu_operations import operations_steps
from tests.console_helpers import SIZE

pytestmark = pytest.mark.aot


def inline_operations() -> int:
    from etu.parsers.ethosu_commands import program_operations

    with open_program(npu_programs.build("u55") / "program.pte") as program:
        (decoded,) = program_operations(program, delegates(program))
        return len(decoded.stream.operations)


def delegate_text(pte: Path) -> str:
    with open_program(pte) as program:
        (info,) = delegates(program)
        return payload_content(program, info).plain


@pytest.mark.anyio
async def test_the_npu_tab_decodes_the_stream_in_the_ptd(tmp_path: Path) -> None:
    pte = ptd_programs.copy_pair("ext_u55", tmp_path / "pair")
    text = delegate_text(pte)
    assert "cmd_data → program.ptd · 1,788 B ✓" in text
    assert "weight_data → program.ptd" in text
    app = EtuApp(pte)
    async with app.run_test(size=SIZE) as pilot:
        await operations_steps(pilot)
        table = app.npu_panel.query_one(OperationTable)
        assert table.row_count == inline_operations() > 0


@pytest.mark.anyio
async def test_without_the_ptd_the_tab_says_so(tmp_path: Path) -> None:
    pte = ptd_programs.copy_pair("ext_u55", tmp_path / "pair")
    pte.with_suffix(".ptd").unlink()
    text = delegate_text(pte)
    assert "✗ cmd_data is in a .ptd file" in text and "give --data FILE.ptd" in text
    app = EtuApp(pte)
    async with app.run_test(size=SIZE) as pilot:
        await operations_steps(pilot)
        assert app.npu_panel.query_one(OperationTable).row_count == 0


@pytest.mark.anyio
async def test_the_compile_tabs_ptd_payload_asks_for_external_blocks(tmp_path: Path) -> None:
    from textual.widgets import Select

    from etu.tui.app import COMPILE_TAB
    from etu.tui.widgets import CompilePanel

    pte = ptd_programs.copy_pair("ext_u55", tmp_path / "pair")
    app = EtuApp(pte)
    async with app.run_test(size=SIZE) as pilot:
        app.action_show_tab(COMPILE_TAB)
        await pilot.pause()
        panel = app.query_one(CompilePanel)
        assert panel.form_request().external_blocks == ()
        panel.query_one("#compile-payload", Select).value = "ptd"
        await pilot.pause()
        assert panel.form_request().external_blocks == ("cmd", "weights")
        panel.query_one("#compile-delegate", Select).value = "off"
        await pilot.pause()
        assert panel.check_form() is None and "not with --no-delegate" in panel.reason
