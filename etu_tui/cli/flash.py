"""etu flash: put firmware on a board with the board's own method, then optionally follow
its boot into a monitored session (flash → boot banner → runner log → verdict)."""

from __future__ import annotations

import argparse
import contextlib
import json
from pathlib import Path
from typing import TextIO

from etu.tui.cli.errors import CommandError, notice
from etu.tui.numbers import transfer

HELP = (
    "flash a board (XMODEM bootloader, MPS3/MPS4 USB drive, pyOCD, QEMU, a vendor's tool) "
    "and optionally monitor it"
)
FLASH_FAILED = 8


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", metavar="FILE",
                        help="firmware (ELF, .img, .bin) or FILE@ADDRESS[+OFFSET] for a file "
                             "placed at an address (e.g. model.pte@0xB7B000)")  # fmt: skip
    parser.add_argument("--board", required=True, help="board profile (see etu boards)")
    parser.add_argument("--port", help="the board's serial port or pyserial URL (default: the "
                        "one connected port that matches the profile)")  # fmt: skip
    parser.add_argument("--mcc-port", help="MPS3: the MCC's port (default: the board's first)")
    parser.add_argument("--drive", type=Path, help="MPS3: the mounted USB drive (V2M-MPS3)")
    parser.add_argument("--monitor", action="store_true",
                        help="follow the boot into a monitored, recorded session")  # fmt: skip
    parser.add_argument("--timelimit", type=float, default=None,
                        help="monitor: seconds before the run counts as a time limit")  # fmt: skip
    parser.add_argument("--sessions", type=Path, default=Path(".etu/sessions"),
                        help="where recorded sessions go (default .etu/sessions)")  # fmt: skip
    parser.add_argument("--json", action="store_true",
                        help="JSON Lines: progress records, then the result")  # fmt: skip
    parser.add_argument("--reset", choices=("dtr", "rts", "none"), default=None,
                        help="pulse this modem line on the port before flashing, to reset "
                             "the board into its bootloader (default: the profile's)")  # fmt: skip
    from etu.tui.cli.common import add_place_options

    add_place_options(parser)


# What to give when a flash method's need is missing (runner.boards.flash.NeedMissing).
OPTION_FOR_NEED = {"port": "--port", "mcc_port": "--mcc-port", "drive": "--drive"}


class ProgressPrinter:
    """A bar on a terminal, JSON Lines with --json, one line per file otherwise."""

    def __init__(self, out: TextIO, err: TextIO, as_json: bool) -> None:
        self.out, self.err, self.as_json = out, err, as_json
        self.tty = not as_json and hasattr(err, "isatty") and err.isatty()

    def status(self, text: str) -> None:
        if self.as_json:
            self.out.write(json.dumps({"type": "status", "text": text}) + "\n")
            self.out.flush()
        else:
            notice(self.err, text)

    def progress(self, p) -> None:
        if self.as_json:
            self.out.write(json.dumps(p.to_json()) + "\n")
            self.out.flush()
            return
        text = f"{p.file}: {transfer(p.sent, p.total, p.rate, p.eta, p.retries)}"
        if self.tty:
            width = 24
            filled = int(width * p.sent / max(p.total, 1))
            self.err.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {text}\x1b[K")
            if p.phase == "done" or p.sent >= p.total:
                self.err.write("\n")
            self.err.flush()
        elif p.phase == "done":
            notice(self.err, text)


def run(args: argparse.Namespace, *, out: TextIO, err: TextIO) -> int:
    from etu.tui.cli.common import stoppable

    return stoppable(lambda: _flash_command(args, out=out, err=err), err)


def flash_and_monitor(run_args: argparse.Namespace, *, out: TextIO, err: TextIO) -> int:
    """`etu run --board PROFILE --place NAME --elf FW`: this command's flash + monitor
    through the place, with the run's options."""
    args = argparse.Namespace(
        files=[str(run_args.elf)], board=run_args.board, port=None, mcc_port=None, drive=None,
        monitor=True, timelimit=float(run_args.timelimit) if run_args.timelimit else None,
        sessions=run_args.sessions, json=run_args.json, reset=None, place=run_args.place,
        coordinator=run_args.coordinator,
    )  # fmt: skip
    return _flash_command(args, out=out, err=err)


def cli_advice(error: Exception) -> str:
    """The error's line, with the option that supplies a missing need."""
    option = OPTION_FOR_NEED.get(getattr(error, "need", ""))
    return f"{error} (give {option})" if option else str(error)


def _flash_command(args: argparse.Namespace, *, out: TextIO, err: TextIO) -> int:
    """With ``--place``: the place is held around the whole flash (and monitor), released
    at the end, on an error and on a stop signal."""
    from etu.tui.cli.common import hold_place, let_go, place_wanted

    if not place_wanted(args):
        return _flash(args, out=out, err=err, place=None)
    if args.port or args.mcc_port:
        raise CommandError("--place: the place's serial port is used; drop --port/--mcc-port")
    from etu.runner.boards.profiles import ProfileError, get_profile

    with contextlib.suppress(ProfileError):  # an unknown profile: _flash says so
        if get_profile(args.board).method == "qemu":
            raise CommandError(f"--place: {args.board} is emulated here, not a labgrid place")
    printer = ProgressPrinter(out, err, args.json)
    place = hold_place(args, printer.status)
    try:
        return _flash(args, out=out, err=err, place=place)
    finally:
        let_go(place, printer.status)


def _flash(args: argparse.Namespace, *, out: TextIO, err: TextIO, place) -> int:
    from etu.runner.boards.flash import (
        FlashError,
        NeedMissing,
        flash_board,
        flashed_session_meta,
        method_resets,
        monitor_source,
        parse_file_spec,
    )
    from etu.runner.boards.ports import pick_ports
    from etu.runner.boards.profiles import ProfileError, get_profile
    from etu.tui.cli.follow import follow_board

    try:
        profile = get_profile(args.board)
        files = [parse_file_spec(spec) for spec in args.files]
    except (ProfileError, FlashError) as error:
        raise CommandError(str(error)) from None
    for file in files:
        if not file.path.is_file():
            raise CommandError(f"{file.path}: no such file")
    printer = ProgressPrinter(out, err, args.json)
    if args.reset not in (None, "none") and not method_resets(profile):
        printer.status(f"--reset: the {profile.method} method resets the board itself")
    port = args.port
    if place is not None:
        port = place.serial_url()
        _power_cycle(profile, place, printer.status)
    try:
        link = pick_ports(profile, port=port, mcc_port=args.mcc_port, drive=args.drive,
                          monitor=args.monitor)  # fmt: skip
        result = flash_board(profile, files, link, timelimit=args.timelimit,
                             status=printer.status, progress=printer.progress,
                             reset=args.reset)  # fmt: skip
    except NeedMissing as error:
        # a port nobody gave or found: bad arguments (2); a drive, probe or vendor tool not
        # there: the flash (8). A vendor tool's error line holds the command to run.
        status = 2 if error.need in ("port", "mcc_port") else FLASH_FAILED
        if args.json and hasattr(error, "to_json"):
            out.write(json.dumps(error.to_json()) + "\n")
        raise CommandError(cli_advice(error), status) from None
    except FlashError as error:
        if args.json:
            out.write(json.dumps({"type": "flash_failed", "error": str(error)}) + "\n")
        raise CommandError(str(error), FLASH_FAILED) from None
    try:
        if args.json:
            placed = place.session_meta() if place is not None else {}
            out.write(json.dumps({"type": "flashed", "board": profile.name,
                                  "port": result.port, "files": result.files,
                                  **placed}) + "\n")  # fmt: skip
        else:
            printer.status(f"flashed {', '.join(f.name for f in files)} to {profile.name}")
        if not (args.monitor or result.source is not None):
            if result.handle is not None:
                result.handle.close()
            return 0
        source_type = None
        if place is not None:
            from functools import partial

            from etu.runner.boards.place import PlaceSource

            source_type = partial(PlaceSource, place)
        source = monitor_source(profile, result, timelimit=args.timelimit,
                                source_type=source_type)  # fmt: skip
        if source is None:
            raise CommandError(f"{profile.name}: no application port to monitor (give --port)")
        meta = flashed_session_meta(profile, files, result)
        if place is not None:
            meta.update(place.session_meta())
        return follow_board(source, meta, args.sessions, as_json=args.json, out=out, err=err)
    except BaseException:  # a stop signal before the monitoring began: QEMU and the port go
        if result.source is not None:
            result.source.close()
        elif result.handle is not None:
            result.handle.close()
        raise


def _power_cycle(profile, place, say) -> None:
    """Power-cycle the place before flashing when the profile asks (``[transfer]
    power_cycle``) and the place has a power resource; a failure is a failed flash."""
    from etu.runner.boards.place import PlaceError, power_cycle_wanted, power_off_seconds

    if not power_cycle_wanted(profile):
        return
    if place.info is None or place.info.power is None:
        say(f"place {place.name}: no power resource; {profile.name} not power-cycled")
        return
    say(f"power-cycling place {place.name} ({place.info.power})")
    try:
        place.power_cycle(power_off_seconds(profile))
    except PlaceError as error:
        raise CommandError(str(error), FLASH_FAILED) from None
