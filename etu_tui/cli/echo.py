"""A run's log echoed to stdout from a thread of its own (`etu run`, `etu monitor`).

The listener is called on the run's reader thread. Writing there would let a reader of
stdout that stops (a paused pager, a slow pipe) stall the reader, and with it the simulator
or the board's port; the session keeps every byte whatever stdout does. So lines wait in a
queue for a writer thread, and past BACKLOG waiting lines they are counted, not printed.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Callable
from typing import TextIO

from etu.parsers.runner_events import Event
from etu.runner.run import RunListener

BACKLOG = 100_000  # lines waiting for a slow stdout before further ones are only counted


class Echo(RunListener):
    """Each event ``render`` turns into text goes to ``out``, in order, off the reader."""

    def __init__(self, render: Callable[[Event], str | None], out: TextIO, err: TextIO) -> None:
        self.render = render
        self.out, self.err = out, err
        self.lines: queue.Queue[str | None] = queue.Queue(maxsize=BACKLOG)
        self.dropped = 0
        self.thread = threading.Thread(target=self._write, name="etu-echo", daemon=True)
        self.thread.start()

    def on_events(self, events: list[Event]) -> None:
        for event in events:
            text = self.render(event)
            if text is None:
                continue
            try:
                self.lines.put_nowait(text)
            except queue.Full:
                self.dropped += 1

    def _write(self) -> None:
        with contextlib.suppress(OSError, ValueError):  # stdout closed: the session has it
            while (text := self.lines.get()) is not None:
                self.out.write(text + "\n")
                if self.lines.empty():
                    self.out.flush()
            self.out.flush()

    def close(self, timeout: float = 5.0) -> None:
        """Print what waits (for up to ``timeout`` s), then say how many lines were not."""
        with contextlib.suppress(queue.Full):
            self.lines.put(None, timeout=timeout)
        self.thread.join(timeout)
        if self.dropped:
            from etu.tui.cli.errors import notice

            notice(self.err, f"{self.dropped:,} lines not printed (stdout did not keep up); "
                   "the session has every byte")  # fmt: skip
