"""`etu diff` of two 1,000,000-line sessions, whole process, and its peak memory.

Two sessions made from one real stand-in run (its meta.json and summary.json) with a
raw.log of 1,000,000 runner lines (every transcript in tests/data/transcripts, repeated).
Cases: identical logs; logs that part 10 lines from the end (the whole file is read); logs
whose every line starts with a different host timestamp (every line is masked and
compared). Goal: < 5 s each, peak RSS that does not grow with the log (bounded memory).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

LINES = 1_000_000
GOAL = 5.0


def _pool() -> list[bytes]:
    pool: list[bytes] = []
    for path in sorted((ROOT / "tests" / "data" / "transcripts").glob("*.log")):
        pool.extend(path.read_bytes().splitlines())
    return pool


def _write_log(path: Path, lines: int, change_at: int | None = None, stamp: float | None = None):
    pool = _pool()
    with open(path, "wb") as handle:
        block = []
        for i in range(lines):
            line = pool[i % len(pool)]
            if change_at is not None and i == change_at:
                line = b"I [executorch:arm_perf_monitor.cpp:166 StopMeasurements()] changed 42"
            if stamp is not None:
                line = b"[%.6f] " % (stamp + i * 1e-4) + line
            block.append(line + b"\n")
            if len(block) == 10_000:
                handle.write(b"".join(block))
                block.clear()
        handle.write(b"".join(block))


def _session(template: Path, folder: Path) -> Path:
    shutil.copytree(template, folder)
    (folder / "raw.index").write_text("0 0.0\n")
    return folder


def _time(a: Path, b: Path) -> tuple[float, int, float]:
    script = (
        "import resource, subprocess, sys, time; t = time.perf_counter(); "
        "r = subprocess.run(sys.argv[1:], capture_output=True); "
        "print(time.perf_counter() - t, r.returncode, "
        "resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    )
    result = subprocess.run(
        [sys.executable, "-c", script, sys.executable, "-m", "etu.tui.cli", "diff",
         str(a), str(b), "--json"],
        capture_output=True, text=True, check=True, env={"PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    seconds, status, rss_kib = result.stdout.split()
    return float(seconds), int(status), int(rss_kib) / 1024


def main() -> dict:
    from tests.history_workspace import make_workspace, record_run

    results: dict = {"lines": LINES, "goal_seconds": GOAL}
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        template = record_run(make_workspace(base / "ws"))
        cases = {
            "identical": ({}, {}),
            "differ_at_end": ({}, {"change_at": LINES - 10}),
            "timestamped": ({"stamp": 1000.0}, {"stamp": 2000.0}),
        }
        met = True
        for name, (left, right) in cases.items():
            a = _session(template, base / f"{name}-a")
            b = _session(template, base / f"{name}-b")
            _write_log(a / "raw.log", LINES, **left)
            _write_log(b / "raw.log", LINES, **right)
            seconds, status, rss = _time(a, b)
            results[name] = {
                "seconds": round(seconds, 3),
                "exit": status,
                "peak_rss_mib": round(rss, 1),
            }
            met = met and seconds < GOAL
            shutil.rmtree(a)
            shutil.rmtree(b)
        small_a = _session(template, base / "small-a")
        small_b = _session(template, base / "small-b")
        results["small_peak_rss_mib"] = round(_time(small_a, small_b)[2], 1)
        results["met"] = met
    print(json.dumps(results))
    return results


if __name__ == "__main__":
    main()
