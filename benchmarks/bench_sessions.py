"""`etu sessions` over 1,000 recorded sessions, whole process (Python start included).

A generated workspace: one real run of the demo firmware on the stand-in FVP (format 2:
meta.json carries the figures) copied 1,000 times with distinct start times and figures;
and a second workspace of 1,000 copies of the committed format-1 session (no figures: the
first listing re-parses each raw.log, later ones use the cache). Goal: < 1 s for format 2
and for format 1 once cached.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SESSIONS = 1_000
GOAL = 1.0


def _clone(template: Path, root: Path, count: int, new_format: bool) -> None:
    meta = json.loads((template / "meta.json").read_text())
    files = [p for p in template.iterdir() if p.name != "meta.json"]
    root.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        started = meta["started"] - 60 * (count - i)
        name = time.strftime("%Y%m%d-%H%M%S", time.localtime(started)) + f"-fvp-{i % 1000:03d}"
        folder = root / name
        folder.mkdir()
        for path in files:
            shutil.copyfile(path, folder / path.name)
        copy = dict(meta, started=started, ended=started + 0.4)
        if new_format:
            copy["summary"] = dict(meta["summary"], npu_cycles=meta["summary"]["npu_cycles"] + i)
        (folder / "meta.json").write_text(json.dumps(copy, indent=2) + "\n")


def _time_listing(workspace: Path) -> tuple[float, int]:
    best, count = float("inf"), 0
    for _ in range(3):
        start = time.perf_counter()
        result = subprocess.run(
            [sys.executable, "-m", "etu.tui.cli", "sessions", "--json"],
            cwd=workspace, capture_output=True, text=True, check=True,
            env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        )  # fmt: skip
        best = min(best, time.perf_counter() - start)
        count = len(result.stdout.splitlines())
    return best, count


def main() -> dict:
    from tests.history_workspace import V1_SESSIONS, make_workspace, record_run

    with tempfile.TemporaryDirectory() as tmp:
        ws = make_workspace(Path(tmp) / "ws2")
        template = record_run(ws)
        real = template.parent
        _clone(template, Path(tmp) / "generated", SESSIONS, new_format=True)
        shutil.rmtree(real)
        shutil.move(Path(tmp) / "generated", real)
        seconds2, count2 = _time_listing(ws)

        ws1 = Path(tmp) / "ws1"
        ws1.mkdir()
        v1 = next(p for p in sorted(V1_SESSIONS.iterdir()) if p.is_dir())
        _clone(v1, ws1 / ".etu" / "sessions", SESSIONS, new_format=False)
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "etu.tui.cli", "sessions", "--json"], cwd=ws1,
            capture_output=True, check=True, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        )  # fmt: skip
        cold1 = time.perf_counter() - start
        seconds1, count1 = _time_listing(ws1)
    result = {
        "sessions": SESSIONS,
        "format2_seconds": round(seconds2, 3),
        "format2_listed": count2,
        "format1_first_listing_seconds": round(cold1, 3),
        "format1_cached_seconds": round(seconds1, 3),
        "format1_listed": count1,
        "goal_seconds": GOAL,
        "met": seconds2 < GOAL and seconds1 < GOAL and count1 == count2 == SESSIONS,
    }
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
