"""A recorded session's reports (PMU, memory, outputs, faults), parsed from its ``raw.log``.

A long run's log is hundreds of MB and parsing it is tens of seconds of pure Python: in the
console's process that thread would hold the GIL against the UI for all of it (a 10-million
line session opened in 3.4 s instead of 0.8 s, and scrolled in jerks). :class:`EventsChild`
parses in a child process instead and gets the events back pickled; the child runs etu's own
parser, so only etu's event dataclasses cross, and nothing in the log names what is built.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import subprocess
import sys
from pathlib import Path

from etu.parsers.errors import ParseError
from etu.parsers.files import read_blocks
from etu.parsers.runner_events import Event, LogLine
from etu.parsers.runner_log import RunnerLogParser
from etu.runner.isolated import ChildError, isolated_python, last_line

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

    from etu.runner.session import LOG_CAP

    # a FIFO, a device or a link is refused; a log past the session cap too
    for block in read_blocks(path, "a session log", LOG_CAP, follow=False, block=_PARSE_BLOCK):
        keep(parser.feed(block))
    keep(parser.close())
    return others, errors


class EventsChild:
    """:func:`events_of_file` in an isolated child process, started at once; :meth:`kill`
    ends it early (the console closing must not wait out a long parse)."""

    def __init__(self, path: Path, npu: str | None) -> None:
        self.path = path
        argv = isolated_python("etu.runner.session_events", str(path), npu or "")
        self._process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.killed = False

    def result(self, timeout: float = 3600.0) -> tuple[list[Event], int]:
        """The events and E/F count. Raises ChildError (one line)."""
        try:
            out, err = self._process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            self._process.communicate()
            raise ChildError(
                f"{self.path}: reading its reports took over {timeout:.0f} s"
            ) from None
        if self.killed:
            raise ChildError(f"{self.path}: reading its reports was stopped")
        if self._process.returncode != 0 or not out:
            raise ChildError(f"{self.path}: its reports were not read ({last_line(err)})")
        # etu's own child pickled etu's own event classes: nothing in the log picks a class
        others, errors = pickle.loads(out)
        return others, errors

    def kill(self) -> None:
        self.killed = True
        with contextlib.suppress(OSError):
            self._process.kill()


def main(argv: list[str]) -> int:
    path, npu = Path(argv[0]), argv[1] or None
    with contextlib.suppress(OSError):  # the console's UI (and a search) go first
        os.nice(10)
    try:
        result = events_of_file(path, npu)
    except ParseError as error:
        print(error, file=sys.stderr)
        return 1
    except OSError as error:
        print(f"{path}: {error.strerror or error}", file=sys.stderr)
        return 1
    sys.stdout.buffer.write(pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
