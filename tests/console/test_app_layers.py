"""The Layers view (issue 22 §4): the Run tab's ``L`` opens, for the shown session (or the
open program on all ones), every layer in graph order against the float model, computed
in a worker (an isolated child: the console never imports torch), "computing…" until
then, an error as one line.

One test computes the demo's real layers; the others give the screen a record or an error
of their own (``compute``) to check what it shows and what it is asked for."""

from __future__ import annotations

from pathlib import Path

import pytest

from etu.runner.layers import LayersError
from etu.runner.run_model import RunRecord
from etu.tui.app import EtuApp
from etu.tui.screens.layers import LayersScreen, LayersTable
from etu.tui.widgets.run import RunPanel
from tests.console_helpers import screen_text, wait_until
from tools.screenshots import settle

pytestmark = pytest.mark.anyio


def fake_record(program: str = "/somewhere/demo_cnn.pte") -> dict:
    """A ``layers`` record as ``etu compare --layers --json`` gives it: a layer below the
    20 dB threshold, the largest drop on it."""
    names = [("tosa_rescale_default", "features.0", 41.5), ("tosa_max_pool2d_default",
             "features.2", 40.9), ("tosa_rescale_default_1", "features.3", 17.2),
             ("tosa_rescale_default_2", "classifier", 18.4)]  # fmt: skip
    rows = []
    for name, module, sqnr in names:
        rows.append({
            "name": name, "op": "CONV2D", "kind": "conv", "module": module,
            "float_node": "conv2d", "unit": "NPU", "delegate": 0, "shape": [1, 8],
            "dtype": "int8", "zero_point": -128, "scale": 0.01, "scale_source": "fitted",
            "sqnr_db": sqnr, "cosine": 0.99, "max_abs_error": 0.0123, "note": None,
            "program_scale": None, "program_scale_sqnr_db": None,
            "below_threshold": sqnr < 20, "first_below_threshold": name.endswith("_1"),
            "largest_drop": name.endswith("_1"), "weakest": name.endswith("_1"),
        })  # fmt: skip
    return {
        "program": program,
        "layers": rows,
        "layers_summary": {
            "float_model": "/somewhere/vela/etu_float_model.pt2", "inputs": "random:7",
            "sqnr_threshold_db": 20.0, "weakest": "tosa_rescale_default_1",
            "first_below_threshold": "tosa_rescale_default_1",
            "largest_drop": {"name": "tosa_rescale_default_1", "drop_db": 23.7}, "note": "",
        },
    }  # fmt: skip


async def open_run_tab(pilot) -> RunPanel:
    await settle(pilot)
    await pilot.press("u")
    await settle(pilot)
    return pilot.app.query_one(RunPanel)


@pytest.mark.aot
async def test_the_demos_layers_are_computed_in_a_worker(workspace: Path) -> None:
    app = EtuApp(workspace / "demo_cnn.pte")
    async with app.run_test(size=(80, 24)) as pilot:
        panel = await open_run_tab(pilot)
        await pilot.press("L")
        screen = app.screen
        assert isinstance(screen, LayersScreen)
        assert screen.session is None and screen.pte == workspace / "demo_cnn.pte"
        assert screen.computing and "computing…" in screen_text(app)
        await wait_until(pilot, lambda: not screen.computing, timeout=300,
                         what="the demo's layers")  # fmt: skip
        await pilot.pause()
        assert screen.error is None, screen.error
        rows = screen.query_one(LayersTable).rows
        assert [row["module"] for row in rows] == ["features.0", "features.2", "features.3",
                                                   "features.5", "features.6", "features.8",
                                                   "classifier"]  # fmt: skip
        assert {row["unit"] for row in rows} == {"NPU"}
        shown = screen_text(app)
        assert "inputs all ones" in shown and "computing" not in shown
        weakest = next(row for row in rows if row["weakest"])
        assert f"◆ weakest: {weakest['name']} ({weakest['module']})" in shown
        assert "↓ largest drop: " in shown
        # Closed and opened again: the record is kept, nothing is computed twice.
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, LayersScreen)
        await pilot.press("L")
        await pilot.pause()
        assert not app.screen.computing and app.screen.record is panel.layer_records[
            (str(workspace / "demo_cnn.pte"), "")]  # fmt: skip


async def test_the_view_marks_the_first_layer_below_the_threshold(workspace: Path) -> None:
    app = EtuApp(workspace / "demo_cnn.pte")
    async with app.run_test(size=(80, 24)) as pilot:
        await open_run_tab(pilot)
        screen = LayersScreen(workspace / "demo_cnn.pte", compute=lambda pte, s: fake_record())
        await app.push_screen(screen)
        await wait_until(pilot, lambda: not screen.computing, what="the fake record")
        await pilot.pause()
        table = screen.query_one(LayersTable)
        texts = table.row_texts()
        assert texts[2].startswith("▼↓◆ 2 tosa_rescale_default_1 features.3 NPU 17.2")
        assert not texts[0].startswith(("▼", "↓"))
        assert table.row_class(2) == "layers--below" and table.row_class(0) is None
        assert table.row_class(3) == "layers--below"  # below, though not the first
        shown = screen_text(app)
        assert "▼ first below 20 dB: tosa_rescale_default_1 (features.3)" in shown
        assert "↓ largest drop: tosa_rescale_default_1 (features.3) −23.7 dB" in shown
        assert "demo_cnn.pte against etu_float_model.pt2 · inputs random:7" in shown


async def test_the_targets_layers_are_shown_beside_the_hosts(workspace: Path) -> None:
    """A session whose runner kept its intermediate outputs: each CPU layer says whether the
    target's integers equal the host's, and the summary says how many differ."""
    record = fake_record()
    kept = [(0, 0), (3, 2), (None, None), (None, None)]
    for row, (differing, steps) in zip(record["layers"], kept, strict=True):
        row.update(unit="CPU", target_differing=differing, target_max_lsb=steps)
    record["layers_summary"]["target"] = {
        "source": "20261126-qemu-000/debug_buffer-001.bin (ETDump intermediate outputs)",
        "cpu_layers": 4, "read": 2, "exact": 1, "note": None,
    }  # fmt: skip
    app = EtuApp(workspace / "demo_cnn.pte")
    async with app.run_test(size=(80, 24)) as pilot:
        await open_run_tab(pilot)
        screen = LayersScreen(workspace / "demo_cnn.pte", compute=lambda pte, s: record)
        await app.push_screen(screen)
        await wait_until(pilot, lambda: not screen.computing, what="the fake record")
        await pilot.pause()
        texts = screen.query_one(LayersTable).row_texts()
        assert texts[0].endswith("= host") and texts[1].endswith("≠3 ±2")
        assert texts[2].endswith("–"), "a layer the run kept nothing of"
        shown = screen_text(app)
        assert "target: 2 of 4 CPU layers read · 1 differ from the host" in shown
        assert "= host" in shown and "≠3 ±2" in shown, "the column fits at 80×24"


async def test_an_error_is_one_line_and_no_table(workspace: Path) -> None:
    def no_graph(pte, session):
        raise LayersError(f"{pte}: no TOSA graph for delegate 0 (compiled elsewhere?)\nmore")

    app = EtuApp(workspace / "demo_cnn.pte")
    async with app.run_test(size=(80, 24)) as pilot:
        await open_run_tab(pilot)
        screen = LayersScreen(workspace / "demo_cnn.pte", compute=no_graph)
        await app.push_screen(screen)
        await wait_until(pilot, lambda: not screen.computing, what="the error")
        await pilot.pause()
        assert screen.error == f"{workspace / 'demo_cnn.pte'}: no TOSA graph for delegate 0 " \
            "(compiled elsewhere?)"  # fmt: skip
        assert screen.query_one(LayersTable).rows == []
        assert "✗ " in screen_text(app) and "no TOSA graph" in screen_text(app)


async def test_the_shown_session_is_what_the_view_compares(workspace: Path) -> None:
    """A past (ended) session: its program on its inputs; a live run: the program."""
    app = EtuApp(workspace / "demo_cnn.pte")
    async with app.run_test(size=(80, 24)) as pilot:
        panel = await open_run_tab(pilot)
        assert panel.layers_subject() == (workspace / "demo_cnn.pte", None)
        past = RunRecord("a past run", live=False)
        past.folder = workspace / ".etu" / "sessions" / "20260101-000000-fvp"
        panel.shown = past
        assert panel.layers_subject() == (workspace / "demo_cnn.pte", past.folder)
        live = RunRecord("current run", live=True)
        live.folder = past.folder
        panel.shown = live  # still running: not a session to compare yet
        assert panel.layers_subject() == (workspace / "demo_cnn.pte", None)
