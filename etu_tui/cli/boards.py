"""etu boards: the board profiles etu knows, built in and the user's own."""

from __future__ import annotations

import argparse
import json
from typing import TextIO

from etu.tui.cli.common import add_json_lines_option, board_profiles

HELP = "list board profiles (built in, and ETU_BOARDS_DIR's *.toml)"


def configure(parser: argparse.ArgumentParser) -> None:
    add_json_lines_option(parser, "profile")


def run(args: argparse.Namespace, *, out: TextIO, err: TextIO) -> int:

    profiles = board_profiles()
    width = max((len(name) for name in profiles), default=12)  # the names line up
    for profile in profiles.values():
        if args.json:
            out.write(json.dumps(profile.to_json()) + "\n")
            continue
        origin = "built-in" if profile.builtin else str(profile.source)
        usb = ",".join(f"{v:04X}:{p:04X}" for v, p in profile.usb) or "-"
        out.write(
            f"{profile.name:<{width}} {profile.method:<16} {profile.baud:>7} {profile.framing}"
            f"  usb {usb:<20} {origin}\n    {profile.description}\n"
        )
    return 0
