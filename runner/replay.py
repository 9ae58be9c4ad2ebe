"""A recorded session played back through the same parser and listener as a live run.

The bytes of ``raw.log`` are fed to a fresh :class:`RunnerLogParser` line by line as
``raw.index`` says they arrived: at once, or at the recorded pace (``speed`` times faster;
silences longer than ``max_gap`` seconds are shortened to it, so an hour-long idle board
does not replay for an hour). The listener hears ``on_events`` and ``on_end`` exactly as
from :class:`etu.runner.run.RunController`, so the console's live panes (filter, search, follow)
show a replay as they show a run. The end is the recorded one (meta.json), not re-judged.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from etu.parsers.files import open_regular
from etu.parsers.log_summary import LogSummary
from etu.parsers.runner_log import RunnerLogParser
from etu.runner.history import ENDINGS, read_meta
from etu.runner.run import RunListener, RunOutcome
from etu.runner.session import INDEX, LOG_CAP, RAW, read_index

MAX_GAP = 5.0
FEED = 1 << 22  # bytes of raw.log read and fed at once (a line may be longer)


def _index(folder: Path) -> list[tuple[int, float]]:
    """raw.index's entries (a torn line skipped: the bytes are still in raw.log); none when
    there is no index. Raises ParseError when it is there but cannot be read."""
    if not os.path.lexists(folder / INDEX):
        return []
    return read_index(folder / INDEX)


def recorded_outcome(meta: dict, summary: dict) -> RunOutcome:
    reason = meta.get("exit_reason")
    if reason not in ENDINGS:  # an unknown or missing ending: the run did not finish
        reason = "incomplete"
    line = meta.get("proof_line")
    return RunOutcome(
        reason,
        meta.get("returncode") if isinstance(meta.get("returncode"), int) else None,
        str(meta.get("proof") or "no end recorded (the run or the console was killed)"),
        line if isinstance(line, int) else None,
        summary,
    )


def replay_session(
    folder: Path,
    listener: RunListener,
    *,
    timed: bool = True,
    speed: float = 1.0,
    max_gap: float = MAX_GAP,
    stop: threading.Event | None = None,
) -> RunOutcome:
    """Feed ``folder``'s recorded output to ``listener``; returns the recorded end.
    ``raw.log`` is read as it is fed, a block at a time; a session file that cannot be read
    (a FIFO, a device, a link, past its cap) is a ParseError naming it, before anything is
    fed."""
    folder = Path(folder)
    meta = read_meta(folder)
    stop = stop or threading.Event()
    with _session_log(folder) as (fd, size):
        return _feed(fd, size, folder, meta, listener, timed=timed, speed=speed,
                     max_gap=max_gap, stop=stop)  # fmt: skip


@contextlib.contextmanager
def _session_log(folder: Path) -> Iterator[tuple[int, int]]:
    """(descriptor, size) of the session's raw.log; (-1, 0) when it has none."""
    if not os.path.lexists(folder / RAW):
        yield -1, 0
        return
    fd, size = open_regular(folder / RAW, "a session log", LOG_CAP, follow=False)
    try:
        yield fd, size
    finally:
        os.close(fd)


def _feed(
    fd: int,
    size: int,
    folder: Path,
    meta: dict,
    listener: RunListener,
    *,
    timed: bool,
    speed: float,
    max_gap: float,
    stop: threading.Event,
) -> RunOutcome:
    npu = str(meta.get("target") or "").rpartition("-")[0] or None
    parser = RunnerLogParser(npu=npu)
    summary = LogSummary()
    index = _index(folder) or [(0, 0.0)]
    kept = [(offset, when) for offset, when in index if 0 <= offset <= size]
    if not kept or kept[0][0] != 0:
        kept.insert(0, (0, kept[0][1] if kept else 0.0))
    starts = [offset for offset, _ in kept]
    times = [when for _, when in kept]
    clock = time.monotonic()
    previous = times[0]
    for number, start in enumerate(starts):
        if stop.is_set():
            break
        end = starts[number + 1] if number + 1 < len(starts) else size
        if timed and number:
            gap = min(max(times[number] - previous, 0.0), max_gap) / max(speed, 1e-6)
            clock += gap
            delay = clock - time.monotonic()
            if delay > 0 and stop.wait(delay):
                break
            previous = times[number]
        events = []
        for at in range(start, end, FEED):  # a line of any length, a block at a time
            data = os.pread(fd, min(FEED, end - at), at) if fd >= 0 else b""
            events += parser.feed(data)
            if len(data) < min(FEED, end - at):
                break  # the log shrank since: what is left is fed
        for event in events:
            summary.add(event)
        if events:
            listener.on_events(events)
    tail = parser.close()
    for event in tail:
        summary.add(event)
    if tail:
        listener.on_events(tail)
    outcome = recorded_outcome(meta, summary.to_json())
    if stop.is_set():
        outcome = RunOutcome("killed", None, "replay stopped by the user", None, outcome.summary)
    listener.on_end(outcome)
    return outcome


__all__ = ["MAX_GAP", "recorded_outcome", "replay_session"]
