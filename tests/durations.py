"""How long each test module took in a fresh clone's run, and the order that follows from it.

`make test` hands whole modules to its workers (``--dist loadfile``: a module's fixtures are
set up once), in collection order, each worker taking the next module when it is free. Started
longest first, the modules that build runner trees and lower programs overlap with everything
else and the run ends on short modules, not on one worker finishing a long one alone.

The figures are a measurement, not a contract: a stale or missing entry only changes the
order. Refresh them from a run's JUnit XML (``PYTEST_ADDOPTS=--junitxml=FILE make test``)::

    python -m tests.durations FILE
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ElementTree
from collections import defaultdict
from pathlib import Path

DURATIONS = Path(__file__).with_name("durations.json")
UNKNOWN_SECONDS = 30.0  # a module not measured yet: early enough not to end the run
# Modules that spend their time waiting on a peer's or a protocol's time-outs, not on the
# CPU (measured: under 2 % of their wall time for XMODEM, a third for the others). Two of
# them side by side leave a core idle, so they go one after another on one worker.
WAITING = frozenset({
    "tests/process/test_board_xmodem.py",
    "tests/process/test_hard_stops.py",
    "tests/process/test_board_monitor.py",
})  # fmt: skip


def recorded() -> dict[str, float]:
    """Seconds per module file (``tests/process/test_x.py``), empty when none are recorded."""
    try:
        measured = json.loads(DURATIONS.read_text())
        return {str(name): float(seconds) for name, seconds in measured.items()}
    except (OSError, ValueError, AttributeError):
        return {}


def longest_first(items: list, seconds: dict[str, float], workers: int = 1) -> list:
    """``items`` (pytest items) with whole modules ordered by ``seconds``, longest first;
    within a module, and between modules that took as long, the collection's own order.
    With several ``workers``, the WAITING modules take every ``workers``-th place from the
    first: the worker that takes the first of them is the first free again, and takes the
    next, while the others keep the cores busy."""
    by_module: dict[str, list] = {}
    for item in items:
        by_module.setdefault(module_of(item.nodeid), []).append(item)
    order = sorted(by_module, key=lambda module: -seconds.get(module, UNKNOWN_SECONDS))
    if workers > 1:
        waiting = [module for module in order if module in WAITING]
        order = [module for module in order if module not in WAITING]
        for place, module in enumerate(waiting):
            order.insert(min(place * workers, len(order)), module)
    return [item for module in order for item in by_module[module]]


def module_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def from_junit(path: Path) -> dict[str, float]:
    """Seconds per module from a JUnit XML report (setup, call and teardown of each test)."""
    seconds: dict[str, float] = defaultdict(float)
    for case in ElementTree.parse(path).getroot().iter("testcase"):
        dotted = case.get("classname") or ""
        parts = dotted.split(".")
        while parts and not parts[-1].startswith("test_"):
            parts.pop()  # a test class's name
        if parts:
            seconds["/".join(parts) + ".py"] += float(case.get("time") or 0)
    return {name: round(value, 1) for name, value in sorted(seconds.items())}


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m tests.durations JUNIT.xml", file=sys.stderr)
        return 2
    measured = from_junit(Path(argv[0]))
    DURATIONS.write_text(json.dumps(measured, indent=1, sort_keys=True) + "\n")
    print(f"{DURATIONS}: {len(measured)} modules, {sum(measured.values()):.0f} s in all")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
