"""The one follow loop of `etu run`, `etu monitor` and `etu flash --monitor`: a started run
(an FVP, QEMU, a board's port) echoed as it goes, waited for (Ctrl+C or a stop signal stops
it and the session records why), then its ending printed; the exit status is the ending's
(runner.run.EXIT_STATUS)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from etu.tui.cli.echo import Echo
from etu.tui.cli.errors import notice


def echo(
    *, events_as_json: bool, as_json: bool, out: TextIO, err: TextIO, timestamps: str | None = None
) -> Echo:
    """The run's listener: its log lines (text), or each event as JSON Lines
    (``events_as_json``); a port lost or back is said on stderr in text mode. With
    ``timestamps`` (wall, start, delta) each text line starts with its arrival time, as
    the Run tab's log shows it in the same time mode."""
    from etu.parsers.runner_events import LogLine
    from etu.parsers.text import printable

    stamp = line_stamper(timestamps) if timestamps else None

    def render(event) -> str | None:
        if events_as_json:
            return json.dumps(event.to_json())
        if as_json:
            return None
        if isinstance(event, LogLine):
            text = printable(event.text)
            return stamp() + text if stamp is not None else text
        if type(event).__name__ in ("PortLost", "PortGap"):
            notice(err, printable(json.dumps(event.to_json())))
        return None

    return Echo(render, out, err)


# --timestamps names → the Run tab log's time modes (etu.tui.widgets.run_log.TIME_MODES).
TIME_MODE_OF = {"wall": "absolute", "start": "relative", "delta": "delta"}


def line_stamper(name: str) -> Callable[[], str]:
    """Called as each line arrives (on the reader thread): its time column, formatted by
    the Run tab log's own ``time_text`` (etu.tui.numbers) so the two never disagree."""
    import time

    from etu.tui.numbers import time_text

    mode = TIME_MODE_OF[name]
    start = time.time()
    before: list[float] = []

    def stamp() -> str:
        now = time.time()
        text = time_text(mode, now, start, before[0] if before else None)
        before[:] = [now]
        return text

    return stamp


def follow(
    controller,
    *,
    as_json: bool,
    out: TextIO,
    err: TextIO,
    record: Callable[[object, object], dict] | None = None,
) -> int:
    """Wait for the started ``controller`` (its listener an :func:`echo`) and print how the
    run ended: with ``as_json`` one JSON object (``record(controller, outcome)``, else the
    outcome and the session folder), else two notices. Returns the ending's exit status."""
    from etu.parsers.text import printable
    from etu.runner.run import stop_reason

    try:
        outcome = controller.wait()
    except KeyboardInterrupt as interrupt:
        controller.stop(stop_reason(interrupt))
        outcome = controller.wait()
    if isinstance(controller.listener, Echo):
        controller.listener.close()  # the echo prints what waits first
    if as_json:
        fields = (
            record(controller, outcome)
            if record is not None
            else {**outcome.to_json(), "session": str(controller.folder)}
        )
        out.write(json.dumps(fields) + "\n")
    else:
        line = f" (line {outcome.proof_line})" if outcome.proof_line else ""
        notice(err, f"run ended: {outcome.reason}{line}: {printable(outcome.proof)}")
        notice(err, f"session recorded in {printable(str(controller.folder))}")
    return outcome.exit_status


def board_record(controller, outcome) -> dict:
    """`etu monitor --json`'s last object: the ``etu log --json`` summary of what the board
    printed, with the session folder and how the run ended."""
    from etu.runner.session import RAW

    summary = streamed_summary(controller.folder / RAW)
    meta = controller.session.meta
    placed = {key: meta[key] for key in PLACE_FIELDS if key in meta}  # a labgrid place's
    return {**summary, "session": str(controller.folder), "reason": outcome.reason,
            "proof": outcome.proof, "exit_status": outcome.exit_status,
            "label": meta.get("label"), **placed}  # fmt: skip


PLACE_FIELDS = ("place", "exporter", "holder", "coordinator")


def streamed_summary(raw: Path) -> dict:
    """The ``etu log --json`` summary of a session's raw.log, read in blocks: a flood of
    gigabytes from a device costs the summary, not the log's size, in memory."""
    from etu.parsers.files import GiB, read_blocks
    from etu.parsers.log_summary import LogSummary
    from etu.parsers.runner_log import RunnerLogParser

    parser, summary = RunnerLogParser(), LogSummary()
    for block in read_blocks(raw, "a session log", 64 * GiB, follow=False):
        for event in parser.feed(block):
            summary.add(event)
    for event in parser.close():
        summary.add(event)
    return summary.to_json()


def follow_board(
    source,
    meta: dict,
    sessions: Path,
    *,
    as_json: bool,
    out: TextIO,
    err: TextIO,
    timestamps: str | None = None,
):
    """A board's byte source (a port, QEMU's pty) recorded as a ``board`` session and
    followed to its ending (`etu monitor`, `etu flash --monitor`)."""
    from etu.runner.run import RunController

    label = meta.get("label")
    if label and label != "board" and not as_json:
        notice(err, label)
    listener = echo(events_as_json=False, as_json=as_json, out=out, err=err,
                    timestamps=timestamps)  # fmt: skip
    try:
        controller = RunController(
            sessions=sessions, kind="board", meta=meta, listener=listener, source=source
        ).start()
    except BaseException:
        listener.close()
        raise
    return follow(controller, as_json=as_json, out=out, err=err, record=board_record)
