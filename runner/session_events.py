"""A recorded session's reports (PMU, memory, outputs, faults), parsed from its ``raw.log``.

A long run's log is hundreds of MB and parsing it is tens of seconds of pure Python: in the
console's process that thread would hold the GIL against the UI for all of it (a 10-million
line session opened in 3.4 s instead of 0.3 s, and scrolled in jerks). :func:`events_in_child`
parses in a child process instead and gets the events back pickled; the child runs etu's own
parser, so only etu's event dataclasses cross, and nothing in the log names what is built.
"""

from __future__ import annotations

import pickle
import subprocess
import sys
from pathlib import Path

from parsers.runner_events import Event, LogLine
from parsers.runner_log import RunnerLogParser
from runner.isolated import ChildError, isolated_python

_PARSE_BLOCK = 1 << 22  # bytes of raw.log parsed at once


def events_of_file(path: Path, npu: str | None) -> tuple[list[Event], int]:
    """The events of a recorded log other than its lines, and how many E/F lines it has,
    parsed in blocks so a run of any length is read without holding its lines."""
    parser = RunnerLogParser(npu=npu)
    others: list[Event] = []
    errors = 0

    def keep(events: list[Event]) -> None:
        nonlocal errors
        for event in events:
            if type(event) is LogLine:
                if event.level in ("E", "F"):
                    errors += 1
            else:
                others.append(event)

    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(_PARSE_BLOCK), b""):
            keep(parser.feed(block))
    keep(parser.close())
    return others, errors


def events_in_child(
    path: Path, npu: str | None, *, timeout: float = 3600.0
) -> tuple[list[Event], int]:
    """:func:`events_of_file` in an isolated child process. Raises ChildError (one line)."""
    argv = isolated_python("runner.session_events", str(path), npu or "")
    try:
        done = subprocess.run(argv, capture_output=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise ChildError(f"{path}: reading its reports took longer than {timeout:.0f} s") from None
    if done.returncode != 0 or not done.stdout:
        tail = (done.stderr.decode("utf-8", "replace").strip().splitlines() or ["no output"])[-1]
        raise ChildError(f"{path}: its reports were not read ({tail})")
    others, errors = pickle.loads(done.stdout)
    return others, errors


def main(argv: list[str]) -> int:
    path, npu = Path(argv[0]), argv[1] or None
    try:
        result = events_of_file(path, npu)
    except OSError as error:
        print(f"{path}: {error.strerror or error}", file=sys.stderr)
        return 1
    sys.stdout.buffer.write(pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
