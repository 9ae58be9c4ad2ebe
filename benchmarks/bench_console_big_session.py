"""The Run tab on a 10-million-line recorded session (issue 8), beside toolong on the same file.

A session of runner log lines is written to a temp folder (one rare line near the end). Measured,
headless (``app.run_test()``): the console opening that session to the first paint of its log,
jumping to the end and finding the rare text, and the process's RSS growth against the same
steps on a 1-line session. Goals: open < 1 s, end + find < 1 s, RSS growth < 100 MB.

toolong (Textualize/toolong, whose LogLines this view follows) pins textual < 0.59, so it
cannot share the project's venv: ``make bench`` installs it into ``.bench-toolong/`` and this
bench drives its app there (run_test, open to the first paint of the file's lines, then end).
Skipped, and said so, when that venv is missing.
"""

from __future__ import annotations

import asyncio
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

LINES = 10_000_000
RARE = b"E [executorch:method.cpp:999 execute()] needle-xq7 checksum mismatch\n"
GOALS = {"open_s": 1.0, "end_find_s": 1.0, "rss_growth_mb": 100.0}
TOOLONG_PY = ROOT / ".bench-toolong" / "bin" / "python"


def _rss_mb() -> float:
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def write_session(root: Path, lines: int) -> Path:
    from etu.runner.session import SessionWriter

    writer = SessionWriter(root, "fvp", {"target": "ethos-u55-128"})
    rare_at = lines - 1000 if lines > 2000 else -1
    block = 100_000
    base = time.time()  # after the writer's start, as a real run's writes are
    for start in range(0, lines, block):
        rows = []
        for n in range(start, min(start + block, lines)):
            if n == rare_at:
                rows.append(RARE)
            elif n % 50 == 0:
                rows.append(b"D [executorch:method.cpp:42 execute()] value %d checked\n" % n)
            else:
                rows.append(b"I [executorch:method.cpp:17 execute()] step %d value %d\n" % (n, n))
        writer.write_output(b"".join(rows), when=base + start / 1e4)
    writer.finish(exit_reason="success", returncode=0)
    return writer.folder


async def _etu(workspace: Path, folder: Path) -> dict:
    from textual.widgets import Input

    from etu.tui.app import EtuApp
    from etu.tui.widgets.run_log import LogView

    app = EtuApp(workspace)
    async with app.run_test(size=(140, 45)) as pilot:
        await pilot.pause()
        await pilot.press("u")
        await pilot.pause()
        panel = app.run_panel
        rss0 = _rss_mb()
        t0 = time.perf_counter()
        panel.open_past_run(folder)
        log = app.query_one(LogView)
        while panel.shown is None or panel.shown.folder != folder:
            await pilot.pause(0.005)
        await pilot.pause()  # the frame that paints the log
        opened = time.perf_counter() - t0
        rows = log.row_count
        t1 = time.perf_counter()
        log.focus()
        await pilot.press("end")
        app.query_one("#run-find", Input).value = "needle-xq7"
        await pilot.pause()  # the find box's own Changed message, before the find
        panel.log_box.find(True)
        status = app.query_one("#run-find-status")
        while "searching" in str(status.content):  # a worker searches the file
            await pilot.pause(0.005)
        found = log.cursor
        await pilot.pause()  # the frame that paints the match
        end_find = time.perf_counter() - t1
        status = str(status.content)
        return {
            "rows": rows,
            "open_s": round(opened, 3),
            "end_find_s": round(end_find, 3),
            "found_line": found,
            "find_status": status.strip(),
            "rss_mb": round(_rss_mb() - rss0, 1),
        }


TOOLONG_DRIVER = r"""
import asyncio, json, sys, time
from toolong.ui import UI
from toolong.log_lines import LogLines

async def main(path):
    app = UI([path], merge=False)
    t0 = time.perf_counter()
    async with app.run_test(size=(140, 45)) as pilot:
        lines = None
        while lines is None or lines.line_count < 2:
            await pilot.pause(0.01)
            found = app.query(LogLines)
            lines = found.first() if found else None
            if time.perf_counter() - t0 > 600:
                break
        # toolong scans its index in the background; wait for the whole file
        while not getattr(lines, "_scanned_size", 0) >= lines.log_file.size if lines else False:
            await pilot.pause(0.05)
            if time.perf_counter() - t0 > 600:
                break
        opened = time.perf_counter() - t0
        t1 = time.perf_counter()
        await pilot.press("end")
        await pilot.pause()
        end = time.perf_counter() - t1
        print(json.dumps({"open_s": round(opened, 3), "end_s": round(end, 3),
                          "rows": lines.line_count if lines else None,
                          "find": "not measured: toolong's find is an interactive prompt"}))

asyncio.run(main(sys.argv[1]))
"""


def toolong(path: Path) -> dict:
    if not TOOLONG_PY.exists():
        return {"skipped": f"no {TOOLONG_PY.relative_to(ROOT)} (make bench installs toolong there)"}
    done = subprocess.run(
        [str(TOOLONG_PY), "-c", TOOLONG_DRIVER, str(path)],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    if done.returncode != 0:
        return {"failed": (done.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(lines: int = LINES) -> dict:
    with tempfile.TemporaryDirectory(prefix="etu-big-") as tmp:
        workspace = Path(tmp)
        from etu.runner.session import sessions_root

        t0 = time.perf_counter()
        big = write_session(sessions_root(workspace), lines)
        small = write_session(sessions_root(workspace), 1)
        written = time.perf_counter() - t0
        size_mb = (big / "raw.log").stat().st_size / 1e6
        baseline = asyncio.run(_etu(workspace, small))
        etu = asyncio.run(_etu(workspace, big))
        etu["rss_growth_mb"] = round(etu["rss_mb"] - baseline["rss_mb"], 1)
        other = toolong(big / "raw.log")
    result = {
        "lines": lines,
        "raw_log_mb": round(size_mb, 1),
        "write_s": round(written, 1),
        "etu": etu,
        "toolong": other,
        "goals": GOALS,
        "met": {key: etu.get(key, 1e9) < goal for key, goal in GOALS.items()},
    }
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else LINES)
