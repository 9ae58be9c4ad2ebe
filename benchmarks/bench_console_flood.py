"""Console responsiveness under a log flood: 20,000 lines/s for 10 s into the Run tab.

The lines take the path a run takes: a generator process (``python -c``, printing runner
log lines at a steady rate) → ``StreamingProcess`` reader threads → ``RunnerLogParser`` →
``SessionWriter`` (raw.log on disk) → the Run tab's listener, which coalesces events into
one message per ~50 ms → the panel's handler → the Line-API log view, headless
(``app.run_test()``). A 10 ms interval timer on the app records how late it fires: the
worst lateness is the longest the event loop was unavailable (a key press or a frame waits
that long). Goal: worst lag < 100 ms. Lines written to the session's raw.log are counted.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

RATE = 20_000  # lines per second
SECONDS = 10.0
TICK = 0.010  # the lag probe's interval
GOAL_MS = 100.0
SIZE = (140, 45)

# Prints RATE lines/s for SECONDS in 10 ms slices (runner log lines, one D line in 50),
# then the runner's success line.
GENERATOR = r"""
import sys, time
rate, seconds = int(sys.argv[1]), float(sys.argv[2])
out = sys.stdout.buffer
step = 0.01
per = max(int(rate * step), 1)
total = int(rate * seconds)
start = time.monotonic()
n = 0
while n < total:
    lines = []
    for _ in range(min(per, total - n)):
        n += 1
        if n % 50 == 0:
            lines.append(b"D [executorch:flood.cpp:42 step()] value %d checked\n" % n)
        else:
            lines.append(b"I [executorch:flood.cpp:17 step()] step %d value %d\n" % (n, n * 7))
    out.write(b"".join(lines))
    out.flush()
    wait = start + (n / rate) - time.monotonic()
    if wait > 0:
        time.sleep(wait)
out.write(b"I [executorch:arm_executor_runner.cpp:1381 main()] Program complete, exiting.\n")
out.flush()
"""


def _start_process(panel, rate: int, seconds: float, sessions: Path):
    """The generator as the run's own process (the FVP path)."""
    argv = [sys.executable, "-c", GENERATOR, str(rate), str(seconds)]
    panel.run_command(argv, sessions=sessions, kind="bench")
    return None


def _start_pty(panel, rate: int, seconds: float, sessions: Path):
    """The generator writing into a pseudo-terminal that etu opens with pyserial, as it opens
    a board's USB serial port (the Boards tab's monitor path: SerialSource → Run panes)."""
    import os
    import subprocess
    import tty

    from etu.runner.boards.source import SerialSource
    from etu.runner.run_model import LaunchInfo

    master, slave = os.openpty()
    tty.setraw(master)
    tty.setraw(slave)
    path = os.ttyname(slave)
    source = SerialSource(path, {"baudrate": 921600}, settle=0.3)
    source.open()
    panel.monitor(source, {"port": path, "board": "bench", "label": "pty flood"},
                  LaunchInfo(["monitor", path], simulator="pty flood"))  # fmt: skip
    generator = subprocess.Popen([sys.executable, "-c", GENERATOR, str(rate), str(seconds)],
                                 stdout=master)  # fmt: skip
    return generator, master, slave


async def _flood(
    workspace: Path, sessions: Path, rate: int, seconds: float, start=_start_process
) -> dict:
    from etu.tui.app import EtuApp
    from tools.screenshots import settle

    app = EtuApp(workspace)
    lateness: list[float] = []
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("u")
        await settle(pilot)
        panel = app.run_panel
        loop = asyncio.get_running_loop()
        last = loop.time()

        def tick() -> None:
            nonlocal last
            now = loop.time()
            lateness.append(max(now - last - TICK, 0.0))
            last = now

        began = time.perf_counter()
        started = start(panel, rate, seconds, sessions)
        last = loop.time()
        timer = app.set_interval(TICK, tick)
        deadline = began + seconds * 4 + 30
        while panel.running:
            if time.perf_counter() > deadline:
                raise TimeoutError("the generator did not finish")
            await asyncio.sleep(0.05)
        elapsed = time.perf_counter() - began
        timer.stop()
        if started is not None:  # the pty: the writer, then both ends
            import os

            generator, *fds = started
            generator.wait(10)
            for fd in fds:
                os.close(fd)
        await settle(pilot)
        live = panel.live
        assert live is not None
        shown = live.store.total
        kept = len(live.store)
        outcome = live.outcome.reason if live.outcome else live.failure
        folder = live.folder
        responsive = time.perf_counter()
        await pilot.press("w")  # a key after the flood
        key_ms = (time.perf_counter() - responsive) * 1000
    written = (folder / "raw.log").read_bytes().count(b"\n") if folder else 0
    return {
        "lateness": lateness,
        "elapsed": elapsed,
        "lines_shown": shown,
        "lines_kept": kept,
        "lines_written": written,
        "outcome": outcome,
        "session": folder.name if folder else None,
        "key_ms": key_ms,
    }


def main(rate: int = RATE, seconds: float = SECONDS, via: str = "process") -> dict:
    """``via``: ``process`` (the run's own process, as an FVP) or ``pty`` (a serial port,
    as a board monitored from the Boards tab)."""
    tmp = Path(tempfile.mkdtemp(prefix="etu-flood-"))
    start = _start_pty if via == "pty" else _start_process
    try:
        workspace = tmp / "demo"
        workspace.mkdir()
        shutil.copyfile(ROOT / "etu_tui" / "demo" / "demo_cnn.pte", workspace / "demo_cnn.pte")
        run = asyncio.run(_flood(workspace, tmp / "sessions", rate, seconds, start))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    lateness = sorted(run["lateness"]) or [0.0]
    worst = lateness[-1] * 1000
    p99 = lateness[min(int(len(lateness) * 0.99), len(lateness) - 1)] * 1000
    expected = int(rate * seconds) + 1
    result = {
        "lines_per_second_asked": rate,
        "seconds": seconds,
        "lines_expected": expected,
        "lines_written_to_session": run["lines_written"],
        "lines_shown": run["lines_shown"],
        "lines_kept_on_screen": run["lines_kept"],
        "run_outcome": run["outcome"],
        "run_seconds": round(run["elapsed"], 2),
        "worst_loop_lag_ms": round(worst, 1),
        "p99_loop_lag_ms": round(p99, 1),
        "mean_loop_lag_ms": round(statistics.fmean(lateness) * 1000, 2),
        "lag_samples": len(run["lateness"]),
        "key_after_flood_ms": round(run["key_ms"], 1),
        "goal_worst_lag_ms": GOAL_MS,
        "meets_goal": worst < GOAL_MS and run["lines_written"] == expected,
    }
    result["via"] = via
    source = "a serial port (pty)" if via == "pty" else "a process"
    print(
        f"console flood ({source}): {rate:,} lines/s for {seconds:g} s "
        f"→ {run['lines_written']:,} lines "
        f"in the session's raw.log, {run['lines_shown']:,} shown ({run['outcome']}); "
        f"event-loop lag worst {worst:.1f} ms, p99 {p99:.1f} ms "
        f"(goal < {GOAL_MS:.0f} ms) over {len(run['lateness']):,} ticks"
    )
    return result


if __name__ == "__main__":
    print(json.dumps(main()))
