"""etu flash: put firmware on a board with the board's own method, then optionally follow
its boot into a monitored session (flash → boot banner → runner log → verdict)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TextIO

HELP = "flash a board (XMODEM bootloader, MPS3 USB drive, pyOCD, QEMU) and optionally monitor it"
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
            self.err.write(f"etu: {text}\n")

    def progress(self, p) -> None:
        if self.as_json:
            self.out.write(json.dumps(p.to_json()) + "\n")
            self.out.flush()
            return
        eta = "-" if p.eta is None else f"{p.eta:.1f}s"
        text = (f"{p.file} {p.sent:,}/{p.total:,} B {p.rate / 1024:.1f} KiB/s ETA {eta}"
                f"{f' retries {p.retries}' if p.retries else ''}")  # fmt: skip
        if self.tty:
            width = 24
            filled = int(width * p.sent / max(p.total, 1))
            self.err.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {text}\x1b[K")
            if p.phase == "done" or p.sent >= p.total:
                self.err.write("\n")
            self.err.flush()
        elif p.phase == "done":
            self.err.write(f"etu: {text}\n")


def run(args: argparse.Namespace, *, out: TextIO, err: TextIO) -> int:
    from etu.tui.cli.common import stoppable

    return stoppable(lambda: _flash_command(args, out=out, err=err), err)


def _flash_command(args: argparse.Namespace, *, out: TextIO, err: TextIO) -> int:
    from etu.runner.boards.flash import FlashError, parse_file_spec
    from etu.runner.boards.profiles import ProfileError, get_profile

    try:
        profile = get_profile(args.board)
        files = [parse_file_spec(spec) for spec in args.files]
    except (ProfileError, FlashError) as error:
        err.write(f"etu: {error}\n")
        return 2
    for file in files:
        if not file.path.is_file():
            err.write(f"etu: {file.path}: no such file\n")
            return 2
    printer = ProgressPrinter(out, err, args.json)
    try:
        result = _flash(profile, files, args, printer)
    except FlashError as error:
        if args.json:
            out.write(json.dumps({"type": "flash_failed", "error": str(error)}) + "\n")
        err.write(f"etu: {error}\n")
        return FLASH_FAILED
    except _NoPort as error:
        err.write(f"etu: {error}\n")
        return 2
    try:
        if args.json:
            out.write(json.dumps({"type": "flashed", "board": profile.name,
                                  "port": result.port, "files": result.files}) + "\n")  # fmt: skip
        else:
            printer.status(f"flashed {', '.join(f.name for f in files)} to {profile.name}")
        if not (args.monitor or result.source is not None):
            if result.handle is not None:
                result.handle.close()
            return 0
        return _monitor(profile, result, args, out, err)
    except BaseException:  # a stop signal before the monitoring began: QEMU and the port go
        if result.source is not None:
            result.source.close()
        elif result.handle is not None:
            result.handle.close()
        raise


class _NoPort(Exception):
    pass


def _pick_port(profile, wanted: str | None, index: int = 0) -> str:
    from etu.runner.boards.ports import list_serial_ports, ports_for

    if wanted:
        return wanted
    matching = ports_for(profile, list_serial_ports())
    if not matching:
        raise _NoPort(f"{profile.name}: no connected port matches the profile (give --port)")
    boards = {p.serial_number for p in matching}
    if len(boards) > 1 or (len(matching) > 1 and profile.method != "mps3-drive"):
        names = ", ".join(p.device for p in matching)
        raise _NoPort(f"{profile.name}: several ports match ({names}): give --port")
    ordered = sorted(matching, key=lambda p: (p.interface or "", p.location or "", p.device))
    if index >= len(ordered):
        raise _NoPort(f"{profile.name}: the board shows {len(ordered)} ports, not {index + 1}")
    return ordered[index].device


def _flash(profile, files, args, printer):
    from etu.runner.boards.flash import flash_board

    port = mcc = None
    if profile.method == "mps3-drive":
        transfer = profile.transfer
        mcc = _pick_port(profile, args.mcc_port, int(transfer.get("mcc_port", 0)))
        port = args.port or (_pick_port(profile, None, int(transfer.get("app_port", 1)))
                             if args.monitor else None)  # fmt: skip
    elif profile.method == "xmodem-wiseeye2":
        port = _pick_port(profile, args.port)
    return flash_board(profile, files, port=port, mcc_port=mcc, drive=args.drive,
                       timelimit=args.timelimit, status=printer.status,
                       progress=printer.progress)  # fmt: skip


def _monitor(profile, result, args, out: TextIO, err: TextIO) -> int:
    from etu.runner.boards.source import SerialSource
    from etu.tui.cli.monitor import follow

    source = result.source
    if source is None:
        if result.handle is None:
            err.write(f"etu: {profile.name}: no application port to monitor (give --port)\n")
            return 2
        source = SerialSource(result.port, profile.serial_settings, timelimit=args.timelimit,
                              handle=result.handle, initial=result.initial)  # fmt: skip
    else:
        source.timelimit = args.timelimit
    meta = {"port": result.port, "board": profile.name, "baud": profile.baud,
            "label": profile.label or "board", "flashed": result.files}  # fmt: skip
    return follow(source, meta, args.sessions, as_json=args.json, out=out, err=err)
