"""Flash + monitor through a labgrid place vs the same pty opened locally (issue 26).

A real ``labgrid-coordinator`` and ``labgrid-exporter`` on 127.0.0.1 export the virtual
WiseEye2 bootloader's pty (tests/board_peers.py) as a RawSerialPort, served by ser2net over
RFC 2217. ``etu flash --board wiseeye2 IMAGE --monitor`` runs against the pty itself, then
against the place (``--place desk-1``): the same bytes reach the board either way. The
place adds the coordinator's round trips (connect, acquire, release) and ser2net's relay on
every XMODEM block's turnaround. Figures: the median wall time of each over a few runs, their
ratio, and the place's cost split into etu's own (connect + acquire before the first block,
release at the end) and the relay's (the transfer's extra time: ser2net as labgrid's
exporter starts it batches what the board sends for at least 1 ms, ``chardelay``, so each
128-byte block's ACK comes a few ms later than on a pty). Goal: the place's fixed cost at
most 2.5 s, what its parts took here: importing labgrid (~0.6 s), the coordinator's
handshake and lock (~0.5 s), pyserial's RFC 2217 negotiation on open and close (~0.8 s);
the relay's cost belongs to the exporter's ser2net and is reported, not judged. Needs labgrid
(``pip install 'etu[lab]'``) and ser2net (make system-deps).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SIZE = 256 << 10
RUNS = 3
BLOCK = 128  # the wiseeye2 profile's XMODEM block
GOAL_FIXED_SECONDS = 2.5


def _flash_once(folder: Path, pty, via: list[str], image: Path) -> tuple[dict, bytes]:
    """One flash + monitor to the boot log's verdict: its phases in seconds (``start``: to
    the transfer's first block, place held; ``transfer``: the XMODEM transfer; ``tail``:
    the monitored boot, the release and exit; ``total``), and what the board received."""
    from tests.board_peers import VirtualWiseEye2, etu_argv, etu_env, runner_log

    board = VirtualWiseEye2(pty, runner_log(20)).start()
    marks: dict[str, float] = {}
    began = time.perf_counter()
    try:
        etu = subprocess.Popen(
            etu_argv("flash", "--board", "wiseeye2", *via, "--monitor", "--json",
                     "--timelimit", "120", str(image)),
            cwd=folder, env=etu_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        for line in etu.stdout:
            kind = json.loads(line).get("type")
            if kind in ("progress", "flashed") and kind not in marks:
                marks[kind] = time.perf_counter() - began
        error = etu.stderr.read()
        etu.wait(300)
    finally:
        marks["total"] = time.perf_counter() - began
        board.stop()
    if etu.returncode != 0 or board.error is not None or len(marks) < 3:
        tail = error.decode(errors="replace").strip().splitlines()[-1:]
        raise RuntimeError(f"flash via {via[0]} failed: {tail or board.error}")
    phases = {"start": marks["progress"], "transfer": marks["flashed"] - marks["progress"],
              "tail": marks["total"] - marks["flashed"], "total": marks["total"]}  # fmt: skip
    return phases, board.received[0] if board.received else b""


def main(size: int = SIZE, runs: int = RUNS) -> dict:
    try:
        import labgrid.remote.client  # noqa: F401
    except ImportError:
        print("place: labgrid missing (pip install 'etu[lab]'): not measured")
        return {"measured": False}
    if not shutil.which("ser2net"):
        print("place: ser2net missing (make system-deps): not measured")
        return {"measured": False}
    from tests.labgrid_lab import start_lab

    tmp = Path(tempfile.mkdtemp(prefix="etu-place-"))
    image = tmp / "output.img"
    data = os.urandom(size)
    image.write_bytes(data)
    lab = start_lab(tmp / "lab", power=False)
    runs_of: dict[str, list[dict]] = {"local": [], "place": []}
    intact = True
    try:
        for run in range(runs):
            ways = {"local": ["--port", lab.pty.path],
                    "place": ["--place", "desk-1", "--coordinator", lab.address]}  # fmt: skip
            for where, via in ways.items():
                folder = tmp / f"{where}-{run}"
                folder.mkdir()
                phases, received = _flash_once(folder, lab.pty, via, image)
                runs_of[where].append(phases)
                intact = intact and received.rstrip(b"\x1a") == data
    finally:
        lab.stop()
        shutil.rmtree(tmp, ignore_errors=True)

    def median(where: str, phase: str) -> float:
        return statistics.median(r[phase] for r in runs_of[where])

    local, place = median("local", "total"), median("place", "total")
    ratio = place / local
    # the place's fixed cost: connecting, acquiring, opening RFC 2217 (before the first
    # block), closing and releasing (after the boot log), beyond the same on the local pty
    fixed = (median("place", "start") - median("local", "start")
             + median("place", "tail") - median("local", "tail"))  # fmt: skip
    relay = median("place", "transfer") - median("local", "transfer")
    result = {
        "bytes": size,
        "runs": runs,
        "local_seconds": round(local, 3),
        "place_seconds": round(place, 3),
        "overhead_ratio": round(ratio, 3),
        "place_fixed_seconds": round(fixed, 3),
        "relay_seconds": round(relay, 3),
        "relay_ms_per_block": round(relay * 1000 / -(-size // BLOCK), 2),
        "phases": {
            where: {
                phase: round(median(where, phase), 3) for phase in ("start", "transfer", "tail")
            }
            for where in runs_of
        },
        "received_intact": intact,
        "meets_goal": intact and fixed <= GOAL_FIXED_SECONDS,
    }
    print(
        f"place: flash + monitor of {size:,} B, median of {runs}: local pty {local:.2f} s, "
        f"through the labgrid place {place:.2f} s (x{ratio:.2f}): the place's fixed cost "
        f"{fixed:.2f} s (goal <= {GOAL_FIXED_SECONDS:g} s), ser2net's relay {relay:.2f} s "
        f"({result['relay_ms_per_block']} ms per XMODEM block), "
        f"image {'intact' if intact else 'CORRUPT'}"
    )
    return result


if __name__ == "__main__":
    print(json.dumps(main()))
