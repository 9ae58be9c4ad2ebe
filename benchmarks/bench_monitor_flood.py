"""``etu monitor``'s path in the console under a flood (issue 10): a pseudo-terminal fed
20,000 lines/s for 10 s, opened with pyserial as a board's USB serial port, its bytes
through the runner-log parser into a session and the Run tab's panes (the Boards tab's
monitor path). Goals: worst event-loop lag < 100 ms, 0 lines lost in the session. The
machinery is bench_console_flood's, with the pty in place of the run's own process."""

from __future__ import annotations

import json

from benchmarks.bench_console_flood import RATE, SECONDS
from benchmarks.bench_console_flood import main as flood


def main(rate: int = RATE, seconds: float = SECONDS) -> dict:
    return flood(rate, seconds, via="pty")


if __name__ == "__main__":
    print(json.dumps(main()))
