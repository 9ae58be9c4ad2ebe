"""etu ports: the serial ports and the board profile each matches."""

from __future__ import annotations

import argparse
import json
from typing import TextIO

HELP = "list serial ports (device, VID:PID, serial number, matching board profile)"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="one JSON object per port per line")


def run(args: argparse.Namespace, *, out: TextIO, err: TextIO) -> int:
    from etu_tui.safe_text import printable
    from runner.boards.ports import list_serial_ports
    from runner.boards.profiles import ProfileError, load_profiles

    try:
        profiles = load_profiles()
    except ProfileError as error:
        err.write(f"etu: {error}\n")
        return 2
    ports = list_serial_ports(profiles)
    if args.json:
        for port in ports:
            out.write(json.dumps(port.to_json()) + "\n")
        return 0
    if not ports:
        out.write("no serial ports\n")
        return 0
    for port in ports:
        board = ", ".join(port.profiles) or "-"
        out.write(
            f"{port.device:<20} {port.vid_pid or '-':<10} "
            f"{printable(port.serial_number or '-'):<16} {board:<24} "
            f"{printable(port.description)}\n"
        )
    return 0
