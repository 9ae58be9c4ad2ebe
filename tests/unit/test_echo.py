"""`etu run` and `etu monitor` echo the log from a thread of their own (etu_tui/cli/echo.py):
a stdout nobody reads never blocks the run's reader thread, and nothing waiting is lost."""

from __future__ import annotations

import io
import os
import threading

from etu.parsers.runner_events import LogLine
from etu.tui.cli.echo import Echo


def _lines(count: int) -> list[LogLine]:
    return [
        LogLine(n, b"", b"\n", f"I [executorch:t.cpp:1 f()] line {n} " + "x" * 60)
        for n in range(count)
    ]


def test_a_full_pipe_never_blocks_the_reader_and_every_line_arrives_later() -> None:
    read_end, write_end = os.pipe()
    out = os.fdopen(write_end, "w")
    err = io.StringIO()
    echo = Echo(lambda e: e.text if isinstance(e, LogLine) else None, out, err)
    lines = _lines(20_000)  # 1.8 MB: a pipe holds 64 KB
    reader = threading.Thread(target=lambda: [echo.on_events(lines[i : i + 500])
                                              for i in range(0, len(lines), 500)])  # fmt: skip
    reader.start()
    reader.join(10)
    assert not reader.is_alive(), "the run's reader waited for stdout"
    received = bytearray()
    drain = threading.Thread(target=lambda: received.extend(b"".join(iter_read(read_end))))
    drain.start()
    echo.close(timeout=30)
    out.close()
    drain.join(30)
    assert received.decode().splitlines() == [line.text for line in lines]
    assert err.getvalue() == ""


def test_past_the_backlog_lines_are_counted_and_said() -> None:
    from etu.tui.cli import echo as module

    read_end, write_end = os.pipe()
    out = os.fdopen(write_end, "w")
    err = io.StringIO()
    saved = module.BACKLOG
    module.BACKLOG = 1_000
    try:
        echo = Echo(lambda e: e.text, out, err)
    finally:
        module.BACKLOG = saved
    echo.on_events(_lines(5_000))  # nobody reads: the queue fills, the rest are counted
    assert echo.dropped > 0
    drain = threading.Thread(target=lambda: list(iter_read(read_end)))
    drain.start()
    echo.close(timeout=30)
    out.close()
    drain.join(30)
    assert f"{echo.dropped:,} lines not printed" in err.getvalue()
    assert "the session has every byte" in err.getvalue()


def iter_read(fd: int):
    with os.fdopen(fd, "rb") as handle:
        while chunk := handle.read(1 << 16):
            yield chunk
