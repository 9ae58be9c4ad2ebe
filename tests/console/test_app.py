"""Pilot tests of the console on the real demo program and on real bad files.

No decoder is mocked: the app opens files from disk through its worker, and the expected
values come from the parsers on the same files.
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest
from textual.message import Message
from textual.notifications import Notify

from etu.parsers.program_facts import decode_facts, select_ops_list
from etu.parsers.pte import ExecutionPlan, Tensor, Value, open_program
from etu.tui.app import EtuApp, ProgramFailed, ProgramLoaded
from etu.tui.screens.open_file import OpenFileScreen
from etu.tui.widgets import (
    DelegatesView,
    ErrorPanel,
    InstructionsTable,
    ProgramSummary,
    SelectOps,
    ValuesTable,
)
from tests.console_helpers import SIZE, palette_search, screen_text
from tools.screenshots import settle

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parent.parent.parent
DEMO = ROOT / "etu_tui" / "demo" / "demo_cnn.pte"


def line_text(table: InstructionsTable | ValuesTable, y: int) -> str:
    return table.render_line(y).text


# --------------------------------------------------------------------- the demo file


async def test_header_shows_identifier_and_delegate() -> None:
    app = EtuApp(DEMO)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.load_state == "ready"
        summary = app.query_one(ProgramSummary)
        assert summary.border_title == "demo_cnn.pte"
        text = screen_text(app)
        assert "identifier ET12" in text
        assert "delegates 1 (EthosUBackend)" in text
        assert "1 delegate call on NPU · ○ 2 kernel calls on CPU" in text
        assert str(ROOT) not in text, "views show file names, not machine paths"


async def test_none_opens_the_demo_workspace_first_program() -> None:
    app = EtuApp(None)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.facts is not None
        assert app.facts.path == DEMO
        assert app.sub_title == "demo_cnn.pte"


async def test_instructions_one_npu_row_two_cpu_rows() -> None:
    app = EtuApp(DEMO)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        table = app.query_one(InstructionsTable)
        assert table.row_count == 3
        assert [table.target(i) for i in range(3)] == ["CPU", "NPU", "CPU"]
        rows = [line_text(table, y) for y in (1, 2, 3)]
        assert "○ CPU" in rows[0] and "quantize_per_tensor.out" in rows[0]
        assert "◆ NPU" in rows[1] and "EthosUBackend #0" in rows[1]
        assert "○ CPU" in rows[2] and "dequantize_per_tensor.out" in rows[2]
        # Colour too: the NPU row and an unselected CPU row are drawn differently.
        npu = next(iter(table.render_line(2))).style
        cpu = next(iter(table.render_line(3))).style
        assert npu is not None and cpu is not None and npu.color != cpu.color


async def test_select_ops_value_is_the_decoder_value() -> None:
    with open_program(DEMO) as program:
        expected = select_ops_list(program)
    assert expected  # the demo keeps quantize/dequantize on the CPU
    app = EtuApp(DEMO)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.query_one(SelectOps).value == expected


async def test_copy_binding_puts_select_ops_on_the_clipboard() -> None:
    with open_program(DEMO) as program:
        expected = select_ops_list(program)
    notes: list[str] = []

    def hook(message: Message) -> None:
        if isinstance(message, Notify):
            notes.append(message.notification.message)

    app = EtuApp(DEMO)
    async with app.run_test(size=SIZE, message_hook=hook) as pilot:
        await settle(pilot)
        assert app.clipboard == ""
        await pilot.press("c")
        await pilot.pause()
        assert app.clipboard == expected
        assert any("EXECUTORCH_SELECT_OPS_LIST" in note for note in notes)


async def test_palette_runs_the_same_copy_action() -> None:
    with open_program(DEMO) as program:
        expected = select_ops_list(program)
    app = EtuApp(DEMO)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await palette_search(pilot, "copy select", "Program: copy EXECUTORCH_SELECT_OPS_LIST")
        await pilot.press("enter")
        await pilot.pause()
        assert app.clipboard == expected


async def test_tabs_show_tensors_and_the_delegate_payload() -> None:
    app = EtuApp(DEMO)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("t")
        await pilot.pause()
        values = app.query_one(ValuesTable)
        assert app.focused is values
        assert values.row_count == 15
        first = line_text(values, 1)
        assert "Tensor" in first and "Float" in first and "1×3×32×32" in first
        assert "planned" in first and "input 0" in first
        await pilot.press("d")
        await pilot.pause()
        text = screen_text(app)
        assert "COP1" in text and "ethos-u55-128" in text
        assert "set by runner build" in text  # fast scratch is not in the payload
        assert "16,528 B" in text  # weights
        assert "compile_flags" in text
        assert app.query_one(DelegatesView).children


async def test_cursor_moves_with_the_keyboard() -> None:
    app = EtuApp(DEMO)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        table = app.query_one(InstructionsTable)
        assert app.focused is table
        await pilot.press("down", "down", "down")
        assert table.cursor_row == 2  # clamped at the last row
        await pilot.press("home")
        assert table.cursor_row == 0


# ----------------------------------------------------------------------- bad files


def _bad_files(tmp: Path) -> dict[str, Path]:
    empty = tmp / "empty.pte"
    empty.write_bytes(b"")
    text = tmp / "notes.pte"
    text.write_text("# not a program\nsome notes saved with the wrong extension\n")
    truncated = tmp / "cut.pte"
    truncated.write_bytes(DEMO.read_bytes()[:100])
    folder = tmp / "no_programs"
    folder.mkdir()
    files = {
        "empty": empty,
        "text": text,
        "truncated": truncated,
        "folder": folder,
        "missing": tmp / "missing.pte",
    }
    if Path("/bin/ls").is_file():
        files["elf"] = Path("/bin/ls")
    return files


@pytest.mark.parametrize("kind", ["empty", "text", "truncated", "folder", "missing", "elf"])
async def test_bad_file_shows_an_error_and_the_app_stays_up(tmp_path: Path, kind: str) -> None:
    files = _bad_files(tmp_path)
    if kind not in files:
        pytest.skip(f"no {kind} file on this machine")
    path = files[kind]
    seen: list[Message] = []
    app = EtuApp(path)
    async with app.run_test(size=SIZE, message_hook=seen.append) as pilot:
        await settle(pilot)
        assert app.is_running
        assert app.load_state == "failed"
        failed = [m for m in seen if isinstance(m, ProgramFailed)]
        assert len(failed) == 1 and not any(isinstance(m, ProgramLoaded) for m in seen)
        message = failed[0].message
        assert "\n" not in message and "Traceback" not in message
        assert message.startswith(f"{path.name}: ")
        assert app.query_one(ErrorPanel).has_class("-shown")
        assert message in screen_text(app)
        errors = [m for m in seen if isinstance(m, Notify)]
        assert errors and errors[0].notification.severity == "error"
        await pilot.press("o")  # still responsive
        await pilot.pause()
        assert isinstance(app.screen, OpenFileScreen)


async def test_open_dialog_error_keeps_the_program_shown(tmp_path: Path) -> None:
    text = tmp_path / "notes.pte"
    text.write_text("not a program\n")
    app = EtuApp(DEMO)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("o")
        await pilot.pause()
        app.screen.query_one("#path").value = str(text)  # type: ignore[attr-defined]
        await pilot.press("enter")
        await settle(pilot)
        assert app.load_state == "failed"
        assert app.is_running
        shown = screen_text(app)
        assert "notes.pte: " in shown and "text file" in shown
        assert "Still showing demo_cnn.pte" in shown
        assert app.facts is not None and app.facts.name == "demo_cnn.pte"
        # And a good file through the same dialog replaces the error.
        await pilot.press("o")
        await pilot.pause()
        app.screen.query_one("#path").value = str(DEMO.parent)  # type: ignore[attr-defined]
        await pilot.press("enter")
        await settle(pilot)
        assert app.load_state == "ready"
        assert not app.query_one(ErrorPanel).has_class("-shown")


async def test_workspace_opens_its_first_program_by_name(tmp_path: Path) -> None:
    for name in ("b_model.pte", "a_model.pte"):
        (tmp_path / name).write_bytes(DEMO.read_bytes())
    app = EtuApp(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.facts is not None and app.facts.name == "a_model.pte"


# ---------------------------------------------------------------- plans and scale


def _big_plan(n: int) -> ExecutionPlan:
    values: list[Tensor | Value] = [
        Tensor(
            scalar_type=1,
            sizes=(1, 8, i % 97 + 1),
            dim_order=(0, 1, 2),
            memory_id=1,
            memory_offset=i * 16,
        )
        for i in range(n)
    ]
    return ExecutionPlan(
        name="big",
        values=values,
        inputs=(0,),
        outputs=(n - 1,),
        chains=[],
        operators=[],
        delegates=[],
        non_const_buffer_sizes=(0, n * 16),
    )


async def test_tensor_table_stays_fast_with_100k_values() -> None:
    n = 100_000
    plan = _big_plan(n)
    app = EtuApp(DEMO)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("t")
        table = app.query_one(ValuesTable)
        table.show_plan(plan)  # speed is benchmarked; here: it formats only what is shown
        await pilot.pause()
        assert table.row_count == n

        formatted: list[int] = []
        row_cells = table.row_cells

        def counting(index: int) -> tuple[str, ...]:
            formatted.append(index)
            return tuple(row_cells(index))

        table.row_cells = counting  # type: ignore[method-assign]
        await pilot.press("end")
        await pilot.pause()
        text = screen_text(app)
        assert table.cursor_row == n - 1
        assert f"{n - 1} Tensor" in text and "output 0" in text
        # Only rows on screen were formatted, not the 100k.
        assert formatted and len(set(formatted)) <= table.size.height
        assert min(formatted) >= n - table.size.height

        await pilot.press("pageup", "pageup")
        await pilot.pause()
        cursor = table.cursor_row
        assert cursor < n - 1
        visible = [line_text(table, y) for y in range(1, table.size.height)]
        assert any(line.lstrip().startswith(f"{cursor} ") for line in visible)


async def test_next_plan_cycles_the_views() -> None:
    facts = decode_facts(DEMO)
    first = facts.program.plans[0]
    # A second plan without instructions or delegates, as a method-only helper would be.
    facts.program.plans.append(
        dataclasses.replace(first, name="second", chains=[], delegates=[], inputs=(0,))
    )
    seen: list[Message] = []
    app = EtuApp(DEMO)
    async with app.run_test(size=SIZE, message_hook=seen.append) as pilot:
        await settle(pilot)
        loaded = ProgramLoaded(facts, app._request, app.current_workspace)  # two plans
        app.post_message(loaded)
        await pilot.pause()
        assert app.query_one(InstructionsTable).row_count == 3
        await pilot.press("p")
        await pilot.pause()
        assert app.plan_index == 1
        assert app.query_one(InstructionsTable).row_count == 0
        assert "plan 'second' (2 of 2)" in str(app.query_one("#instructions-box").border_title)
        await pilot.press("d")
        await pilot.pause()
        assert "This plan has no delegates" in screen_text(app)
        await pilot.press("p")
        await pilot.pause()
        assert app.plan_index == 0


def test_importing_the_app_does_not_import_torch() -> None:
    code = (
        "import sys, etu_tui.app\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'executorch'))\n"
        "print(','.join(bad))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert result.stdout.strip() == ""
