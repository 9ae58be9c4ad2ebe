"""The console opening on the demo workspace, headless (Textual's Pilot), in one process.

Each start creates the App, mounts every tab, loads the demo program, its Vela report and
firmware, and waits until nothing is loading (``tools.screenshots.settle``); the first start
pays the imports and is reported apart. What is measured is the CPU time of a start and how
many times the footer was composed (it was rebuilt on every binding refresh until it
recomposed only on a change). Goal: ≤ 2.5 s CPU per start on the shared 2-core machine.
Measured back to back under load (Nov 2026): 3.3 s and 11 footer compositions per start
before, 2.1 s and 3 after. With the imported heap frozen and the young generation at 10k
(``runner/heap.py``, as ``etu`` does before its App runs): 2.73 → 2.26 s CPU per start,
back to back; the garbage collector's share of one start was 0.59 s, 0.22 s after. With the
Compile and Boards tabs composed when first shown (``FirstShown``; 319 → 217 widgets at
start): 1.74 s CPU. On a quieter host (Nov 2026): 0.65-0.72 s, and 0.53-0.60 s once the first
screen is born with its breakpoint classes (its first resize no longer restyles every widget).
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

STARTS = 5
GOAL = 2.5


async def _start(workspace: Path) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds and footer compositions of one start."""
    from etu.tui.app import EtuApp
    from etu.tui.widgets.footer import EtuFooter
    from tools.screenshots import settle

    composed = 0
    original = EtuFooter.compose

    def counted(self):
        nonlocal composed
        composed += 1
        return original(self)

    EtuFooter.compose = counted
    try:
        wall, cpu = time.perf_counter(), time.process_time()
        async with EtuApp(workspace).run_test(size=(120, 36)) as pilot:
            await pilot.pause()
            await settle(pilot)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    finally:
        EtuFooter.compose = original
    return wall, cpu, composed


def main() -> dict:
    from etu.runner.heap import settle_imports
    from tests.helpers import demo_workspace

    with tempfile.TemporaryDirectory() as tmp:
        runs = []
        for index in range(STARTS + 1):
            workspace = demo_workspace(Path(tmp) / f"demo{index}", "firmware", "vela")
            runs.append(asyncio.run(_start(workspace)))
            if index == 0:  # imports done: what `etu` does before its App runs
                settle_imports()
    first, rest = runs[0], runs[1:]
    cpu = statistics.median(run[1] for run in rest)
    result = {
        "first_start_cpu_seconds": round(first[1], 2),
        "start_cpu_seconds": round(cpu, 2),
        "start_wall_seconds": round(statistics.median(run[0] for run in rest), 2),
        "footer_compositions": statistics.median(run[2] for run in rest),
        "goal_cpu_seconds": GOAL,
        "met": cpu <= GOAL,
    }
    print(result)
    return result


if __name__ == "__main__":
    main()
