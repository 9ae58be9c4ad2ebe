"""etu monitor: a board's serial output, parsed and recorded like an `etu run` session."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TextIO

HELP = "watch a board's serial port: parse the runner log live and record a session"
# --timestamps: the Run tab log's time modes (absolute, relative, delta), by the CLI's names.
TIMESTAMPS = ("wall", "start", "delta")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "port", metavar="PORT", nargs="?",
        help="a device path (/dev/ttyACM0) or a pyserial URL (rfc2217://host:port, "
             "socket://host:port, loop://); with --place, left out",
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
    parser.add_argument(
        "--reset", choices=("dtr", "rts", "none"), default=None,
        help="pulse this modem line before monitoring, to reset the board (default: the "
             "board profile's reset, else none)",
    )  # fmt: skip
    parser.add_argument(
        "--eol", choices=("crlf", "cr", "lf"), default=None,
        help="the line ending sent after each line typed on stdin (default: the board "
             "profile's, else crlf)",
    )  # fmt: skip
    parser.add_argument(
        "--timestamps", choices=TIMESTAMPS, default=None,
        help="prefix each printed line with its arrival time: wall (clock time), start "
             "(seconds since the start), delta (seconds since the line before)",
    )  # fmt: skip
    from etu.tui.cli.common import add_place_options

    add_place_options(parser)


def run(args: argparse.Namespace, *, out: TextIO, err: TextIO) -> int:
    from etu.tui.cli.common import stoppable

    return stoppable(lambda: _monitor_port(args, out=out, err=err), err)


def _monitor_port(args: argparse.Namespace, *, out: TextIO, err: TextIO) -> int:
    """With ``--place``: the place is held while the port is monitored, and released at the
    end, on an error and on a stop signal."""
    from etu.tui.cli.common import hold_place, let_go, place_wanted
    from etu.tui.cli.errors import CommandError, notice

    if not place_wanted(args):
        if not args.port:
            raise CommandError("monitor: give a PORT (or --place NAME)")
        return _monitor(args, out=out, err=err, place=None)
    if args.port:
        raise CommandError("monitor: give a PORT or --place NAME, not both")
    place = hold_place(args, lambda text: notice(err, text))
    try:
        return _monitor(args, out=out, err=err, place=place)
    finally:
        let_go(place, lambda text: notice(err, text))


def _monitor(args: argparse.Namespace, *, out: TextIO, err: TextIO, place) -> int:
    from etu.runner.boards.profiles import ProfileError, get_profile
    from etu.runner.boards.source import PortError, SerialSource
    from etu.runner.boards.terminal import DEFAULT_EOL, StdinPump
    from etu.runner.session import board_session_meta
    from etu.tui.cli.errors import CommandError, notice
    from etu.tui.cli.follow import follow_board

    settings: dict = {"baudrate": 115200}
    profile = None
    if args.board:
        try:
            profile = get_profile(args.board)
        except ProfileError as error:
            raise CommandError(str(error)) from None
        settings = profile.serial_settings
    if args.baud:
        settings["baudrate"] = args.baud
    port = args.port
    make = SerialSource
    if place is not None:
        from functools import partial

        from etu.runner.boards.place import PlaceSource

        port, make = place.serial_url(), partial(PlaceSource, place)
    source = make(port, settings, timelimit=args.timelimit, settle=args.settle,
                  eol=profile.eol if profile else DEFAULT_EOL,
                  reset=profile.reset if profile else None)  # fmt: skip
    try:
        source.open()
    except PortError as error:
        raise CommandError(str(error)) from None
    try:
        line = args.reset or (profile.reset if profile else None)
        if line and line != "none":
            notice(err, f"pulsing {line.upper()} on {port}")
            try:
                source.pulse(line)
            except PortError as error:
                raise CommandError(str(error)) from None
        eol = args.eol or (profile.eol if profile else DEFAULT_EOL)
        StdinPump(source.send, eol=eol, say=lambda text: notice(err, text)).start()
    except BaseException:
        source.close()
        raise
    meta = board_session_meta(
        board=profile.name if profile else None, label=profile.label if profile else None,
        port=port, baud=settings["baudrate"], target=profile.target if profile else None,
    )  # fmt: skip
    if place is not None:
        meta.update(place.session_meta())
    return follow_board(source, meta, args.sessions, as_json=args.json, out=out, err=err,
                        timestamps=args.timestamps)  # fmt: skip
