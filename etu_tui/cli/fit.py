"""etu fit: does a program fit a firmware?"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TextIO

from etu.parsers.errors import ParseError
from etu.parsers.text import printable as p
from etu.tui.cli.common import add_region_options, add_target_option, memory_map_from_args
from etu.tui.cli.errors import CommandError

HELP = "does a program fit a firmware? verdicts with the shortfall and the build fix"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pte", type=Path, required=True, help="the program")
    parser.add_argument(
        "--elf", type=Path,
        help="the runner firmware (default: the program's, found as the console finds it:"
        " PROGRAM.<board>/ beside it, else the workspace's firmware/*.elf, else *.elf)",
    )  # fmt: skip
    parser.add_argument(
        "--vela", type=Path,
        help="Vela's output folder for the program (default: vela/ beside it, if any)",
    )  # fmt: skip
    parser.add_argument(
        "--data", action="append", type=Path, default=None, metavar="FILE.ptd",
        help="a .ptd holding the program's external Vela blocks (repeatable; default: the "
        "*.ptd files beside the program)",
    )  # fmt: skip
    add_target_option(parser, "the NPU the run will use")
    add_region_options(parser)
    parser.add_argument("--json", action="store_true", help="one JSON object")


def run(args: argparse.Namespace, *, out: TextIO, err: TextIO) -> int:
    return fit_command(args, out=out, err=err)


def fit_command(args: argparse.Namespace, *, out: TextIO, err: TextIO) -> int:
    """Exit 1 when any check fails, 2 when an input cannot be read."""
    from etu.parsers.external_blocks import data_files_beside
    from etu.parsers.fit import FAIL, check_fit, fit_record
    from etu.parsers.ptd import open_data_file
    from etu.parsers.pte import open_program
    from etu.parsers.vela import load_vela_report

    if args.elf is None or args.vela is None:  # what the console's Fit tab finds
        from etu.runner.workspace import find_workspace, program_target_of

        workspace = find_workspace(args.pte)
        args.vela = args.vela or workspace.vela
        target = args.target or program_target_of(args.pte)
        args.elf = args.elf or workspace.firmware_for_target(target)
        if args.elf is None:
            places = workspace.firmware_places(None)
            raise CommandError(f"{p(str(args.pte))}: no firmware found (looked for {places} "
                               f"in {p(str(workspace.root))}); give --elf")  # fmt: skip
    try:
        memory_map = memory_map_from_args(args)
        vela = load_vela_report(args.vela) if args.vela else None
        with open_program(args.pte) as program:
            if args.data is not None:
                data_files = [open_data_file(path) for path in args.data]
            else:
                data_files = data_files_beside(program)
            verdicts = check_fit(
                program, memory_map, vela, target=args.target, data_files=data_files
            )
    except ParseError as error:
        raise CommandError(f"{p(str(error))}") from None
    record = fit_record(verdicts)
    if args.json:
        out.write(json.dumps(record) + "\n")
    else:
        marks = {"ok": "ok  ", "warn": "WARN", "fail": "FAIL"}
        for verdict in verdicts:
            out.write(f"{marks[verdict.status]} {verdict.check:<18} {p(verdict.message)}\n")
            if verdict.fix and verdict.status != "ok":
                out.write(f"     {'':<18} fix: {p(verdict.fix)}\n")
    return 1 if record["status"] == FAIL else 0
