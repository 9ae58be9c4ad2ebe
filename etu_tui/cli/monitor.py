"""etu monitor: a board's serial output, parsed and recorded like an `etu run` session."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TextIO

HELP = "watch a board's serial port: parse the runner log live and record a session"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "port", metavar="PORT",
        help="a device path (/dev/ttyACM0) or a pyserial URL (rfc2217://host:port, "
             "socket://host:port, loop://)",
    )  # fmt: skip
    parser.add_argument("--board", help="board profile (baud, framing, label); see etu boards")
    parser.add_argument("--baud", type=int, help="baud rate (default: the board's, or 115200)")
    parser.add_argument(
        "--timelimit", type=float, default=None,
        help="seconds before the run counts as a time limit (default: none)",
    )  # fmt: skip
    parser.add_argument(
        "--settle", type=float, default=1.0,
        help="seconds of quiet after the runner's verdict before the session ends (default 1)",
    )  # fmt: skip
    parser.add_argument(
        "--sessions", type=Path, default=Path(".etu/sessions"),
        help="where recorded sessions go (default .etu/sessions)",
    )  # fmt: skip
    parser.add_argument(
        "--json", action="store_true",
        help="print the etu log --json summary with the session folder at the end",
    )  # fmt: skip


def run(args: argparse.Namespace, *, out: TextIO, err: TextIO) -> int:
    from etu.tui.cli.common import stoppable

    return stoppable(lambda: _monitor_port(args, out=out, err=err), err)


def _monitor_port(args: argparse.Namespace, *, out: TextIO, err: TextIO) -> int:
    from etu.runner.boards.profiles import ProfileError, get_profile
    from etu.runner.boards.source import PortError, SerialSource

    settings: dict = {"baudrate": 115200}
    profile = None
    if args.board:
        try:
            profile = get_profile(args.board)
        except ProfileError as error:
            err.write(f"etu: {error}\n")
            return 2
        settings = profile.serial_settings
    if args.baud:
        settings["baudrate"] = args.baud
    source = SerialSource(args.port, settings, timelimit=args.timelimit, settle=args.settle)
    try:
        source.open()
    except PortError as error:
        err.write(f"etu: {error}\n")
        return 2
    meta = {
        "port": args.port,
        "board": profile.name if profile else None,
        "baud": settings["baudrate"],
        "label": (profile.label if profile else None) or "board",
    }
    return follow(source, meta, args.sessions, as_json=args.json, out=out, err=err)


def follow(source, meta: dict, sessions: Path, *, as_json: bool, out: TextIO, err: TextIO) -> int:
    """Record and parse ``source`` until it ends; print the log (or, with --json, the
    summary) and return the exit status of `etu run` for the same ending."""
    from etu.parsers.runner_events import LogLine
    from etu.runner.run import RunController, RunListener, stop_reason
    from etu.runner.session import RAW
    from etu.tui.cli.echo import Echo
    from etu.tui.safe_text import printable

    def render(event) -> str | None:
        if isinstance(event, LogLine):
            return printable(event.text)
        if type(event).__name__ in ("PortLost", "PortGap"):
            err.write(f"etu: {printable(json.dumps(event.to_json()))}\n")
        return None

    label = meta.get("label")
    if label and label != "board" and not as_json:
        err.write(f"etu: {label}\n")
    printer = Echo(render, out, err) if not as_json else RunListener()
    controller = RunController(
        sessions=sessions, kind="board", meta=meta, listener=printer, source=source
    ).start()
    try:
        outcome = controller.wait()
    except KeyboardInterrupt as interrupt:
        controller.stop(stop_reason(interrupt))
        outcome = controller.wait()
    if isinstance(printer, Echo):
        printer.close()
    if as_json:
        summary = _streamed_summary(controller.folder / RAW)
        record = {**summary, "session": str(controller.folder), "reason": outcome.reason,
                  "proof": outcome.proof, "exit_status": outcome.exit_status,
                  "label": meta.get("label")}  # fmt: skip
        out.write(json.dumps(record) + "\n")
    else:
        line = f" (line {outcome.proof_line})" if outcome.proof_line else ""
        err.write(f"etu: run ended: {outcome.reason}{line}: {printable(outcome.proof)}\n")
        err.write(f"etu: session recorded in {controller.folder}\n")
    return outcome.exit_status


def _streamed_summary(raw: Path) -> dict:
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
