"""etu ports: the serial ports and the board profile each matches."""

from __future__ import annotations

import argparse
import json
from typing import TextIO

from etu.tui.cli.common import add_json_lines_option, board_profiles

HELP = "list serial ports (device, VID:PID, serial number, matching board profile)"


def configure(parser: argparse.ArgumentParser) -> None:
    add_json_lines_option(parser, "port")


def run(args: argparse.Namespace, *, out: TextIO, err: TextIO) -> int:
    from etu.parsers.text import printable
    from etu.runner.boards.ports import list_serial_ports

    profiles = board_profiles()
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
