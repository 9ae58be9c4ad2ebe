"""The Outputs pane's three-way verdict (issue 22 §2, §5) on the demo, at 80×24 and 120×36.

A stand-in FVP session of the demo opened from the past runs: the pane compares it with
the host reference in a child process (the console never imports torch) and shows, per
output, the verdict line first (deployment, then quantisation from the float model the
demo's compile kept), the printed values, the int8 integers they were dequantized from and
the formula, and last that the target side is simulated.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import TabbedContent

from etu.runner.io_quantization import real_formula
from etu.tui.app import RUN_TAB, EtuApp
from etu.tui.widgets import OutputsPane, PastRunsList
from tests.console_helpers import screen_text, wait_until
from tests.history_workspace import make_workspace, record_run
from tools.screenshots import settle

pytestmark = [pytest.mark.anyio, pytest.mark.aot]


@pytest.fixture(scope="module")
def demo_session(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the demo workspace with one stand-in FVP session in it."""
    return record_run(make_workspace(tmp_path_factory.mktemp("split") / "ws"))


@pytest.mark.parametrize("size", [(80, 24), (120, 36)], ids=["80x24", "120x36"])
async def test_the_outputs_pane_leads_with_the_verdict(
    demo_session: Path, size: tuple[int, int]
) -> None:
    workspace = demo_session.parent.parent.parent
    app = EtuApp(workspace)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await pilot.press("u")
        await settle(pilot)
        assert app.query_one(TabbedContent).active == RUN_TAB
        past = app.query_one(PastRunsList)
        past.focus()
        past.highlighted = 0
        await pilot.press("enter")
        pane = app.query_one(OutputsPane)
        await wait_until(
            pilot,
            lambda: pane.record is not None and pane.record.comparison is not None,
            timeout=300,
            what="the comparison with the host reference",
        )
        await settle(pilot)
        record = pane.record.comparison
        (row,) = record["outputs"]
        assert record["simulated"] and "(target simulated)" in row["verdict"]
        header, verdict, _values, integers, *_rest, last = pane.lines
        assert header.startswith("[0] float · 10 el.")
        # The stand-in printed the host reference the demo firmware ships (still simulated):
        # the deployment side is exact, the values on the output's int8 grid.
        assert verdict.startswith("  ✓ deployment exact · quantisation SNR ")
        assert "(target simulated)" not in verdict  # the title says SIMULATED already
        formula = real_formula(row["io_quantization"])
        assert integers.startswith("  int8 ") and integers.endswith(f" = {formula}")
        assert last.startswith("  SIMULATED: printed by the etu stand-in FVP, no model")
        assert str(pane.border_title).startswith("Outputs (1) · SIMULATED · ✓")
        # On screen, not only in the pane's text: the verdict line is in view at this size.
        shown = screen_text(app)
        assert "✓ deployment exact" in shown and "quantisation" in shown


def test_a_real_targets_integers_are_shown_with_their_formula() -> None:
    from etu.tui.widgets.run_panes import integers_line, verdict_line

    grid = {"integer_dtype": "int8", "scale": 0.25, "zero_point": -12}
    verdict = "deployment exact (target simulated) · quantisation SNR 31.2 dB"
    row = {"passed": True, "verdict": verdict, "io_quantization": grid,
           "target_integers": [5, -7, None], "deployment": {"off_grid": 0}}  # fmt: skip
    assert verdict_line(row).plain == "  ✓ deployment exact · quantisation SNR 31.2 dB"
    assert integers_line(row).plain == "  int8 5 -7 ? = (q + 12) × 0.25"


async def test_with_several_outputs_a_failing_one_comes_first() -> None:
    """At 80×24 the Outputs pane shows its first lines only: a failing output leads."""
    from textual.app import App

    from etu.parsers.runner_events import OutputTensor

    class One(App):
        def compose(self):
            yield OutputsPane()

    def output(index: int) -> OutputTensor:
        return OutputTensor(line_no=index + 1, index=index, dtype="float", shape=None,
                            values=(0.5, 0.25), numel=2, printed=2)  # fmt: skip

    figures = {"max_abs_error": 0.1, "mean_abs_error": 0.05, "rmse": 0.07,
               "cosine_similarity": 0.9, "snr_db": 12.0}  # fmt: skip
    comparison = {"passed": False, "rtol": 0.01, "atol": 0.01, "outputs": [
        {"index": 0, "passed": True, "verdict": "deployment exact", **figures},
        {"index": 1, "passed": False, "verdict": "deployment 2 of 2 differ (max 9 LSB)",
         **figures},
    ]}  # fmt: skip
    async with One().run_test() as pilot:
        pane = pilot.app.query_one(OutputsPane)
        pane.show({0: output(0), 1: output(1)}, [], comparison)
        assert pane.lines[0].startswith("[1] float") and pane.lines[1].startswith("  ✗ ")
        assert any(line.startswith("[0] float") for line in pane.lines[2:])
        pane.show({0: output(0), 1: output(1)}, [])  # no comparison: in index order
        assert pane.lines[0].startswith("[0] float")
