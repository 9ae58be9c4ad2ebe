"""1 MiB over XMODEM-1K to lrzsz's ``rx`` on a pseudo-terminal (issue 10).

etu's sender (runner/boards/transfer.py, on the PyPI ``xmodem`` package's framing) writes to
the slave side of a pty; Debian's ``rx`` (under socat) receives on the other. Goodput is the
file's bytes as a share of every byte on the wire, both directions; the block format's own
share (1024 payload bytes per 1029-byte block + the ACK, EOT) is the ceiling. Goal: within
2 % of it (no resends or idle turnarounds beyond what the peer causes); the wall time is
printed too. Needs ``rx`` and ``socat`` (make system-deps).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SIZE = 1 << 20
BLOCK = 1024
GOAL_RELATIVE = 0.02


def main(size: int = SIZE, block: int = BLOCK) -> dict:
    import serial

    from etu.runner.boards.transfer import xmodem_send
    from tests.board_peers import Pty, start_rx

    if not (shutil.which("rx") and shutil.which("socat")):
        print("xmodem: rx or socat missing (make system-deps): not measured")
        return {"measured": False}
    data = os.urandom(size)
    tmp = Path(tempfile.mkdtemp(prefix="etu-xmodem-"))
    pty = Pty()
    try:
        rx = start_rx(pty, tmp / "out.bin")
        began = time.perf_counter()
        with serial.Serial(pty.path, 921600, timeout=1) as port:
            stats = xmodem_send(port, data, name="bench.bin", block_size=block)
        seconds = time.perf_counter() - began
        rx.wait(30)
        received = (tmp / "out.bin").read_bytes()[:size] == data
    finally:
        pty.close()
        shutil.rmtree(tmp, ignore_errors=True)
    share, ceiling = stats.goodput_share, stats.format_share
    result = {
        "bytes": size,
        "block_size": block,
        "blocks": stats.blocks,
        "retries": stats.retries,
        "wire_out": stats.wire_out,
        "wire_in": stats.wire_in,
        "seconds": round(seconds, 3),
        "payload_kib_per_s": round(size / 1024 / seconds, 1),
        "goodput_share": round(share, 5),
        "format_share": round(ceiling, 5),
        "received_intact": received,
        "meets_goal": received and share >= ceiling * (1 - GOAL_RELATIVE),
    }
    print(
        f"xmodem-{block // 1024}k: {size:,} B to rx in {seconds:.2f} s "
        f"({size / 1024 / seconds:,.0f} KiB/s), goodput {share:.2%} of the wire vs the "
        f"format's {ceiling:.2%} (goal within {GOAL_RELATIVE:.0%}), {stats.retries} retries, "
        f"file {'intact' if received else 'CORRUPT'}"
    )
    return result


if __name__ == "__main__":
    print(json.dumps(main()))
