"""etu matrix: every program on every target (labgrid places, the emulated board), one
recorded session per cell; a table, JSON or JUnit XML for CI (runner/matrix.py)."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import TextIO

from etu.tui.cli.errors import CommandError, notice

HELP = "run each program on each board (labgrid places, the emulated board): a table and JUnit XML"
BUILD_STEP = re.compile(r": \[\d+/\d+\] ")
CELL_WIDTH = 60  # a table cell's characters (the one-line reason is cut; --json has it whole)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "programs", nargs="+", metavar="PROGRAM",
        help="a .pte (its runner is built per board), a runner ELF, or FW.img,model.pte@ADDRESS"
        " (files flashed as etu flash takes them)",
    )  # fmt: skip
    parser.add_argument(
        "--board", action="append", default=[], metavar="PROFILE:PLACE",
        help="a labgrid place and the board profile that speaks to it, repeatable",
    )  # fmt: skip
    parser.add_argument(
        "--emulated", action="store_true",
        help="also run on the emulated board (QEMU mps3-an547, the real runner)",
    )  # fmt: skip
    parser.add_argument(
        "--coordinator", metavar="HOST:PORT",
        help="the labgrid coordinator (default: LG_COORDINATOR, else labgrid's default)",
    )  # fmt: skip
    parser.add_argument("--junit", type=Path, metavar="FILE", help="write JUnit XML for CI")
    parser.add_argument(
        "--compare", action="store_true",
        help="compare each session's outputs with the host reference (etu compare)",
    )  # fmt: skip
    parser.add_argument("--timelimit", type=float, default=60.0,
                        help="seconds each run may take (default 60)")  # fmt: skip
    parser.add_argument(
        "--build-dir", type=Path, metavar="DIR",
        help="where the programs' runners go (default: PROGRAM.<board>/ beside each program)",
    )  # fmt: skip
    parser.add_argument(
        "--sessions", type=Path, default=Path(".etu/sessions"),
        help="where recorded sessions go (default .etu/sessions)",
    )  # fmt: skip
    parser.add_argument("--json", action="store_true", help="one JSON object with cells[]")


def run(args: argparse.Namespace, *, out: TextIO, err: TextIO) -> int:
    from etu.tui.cli.common import stoppable

    return stoppable(lambda: _matrix_command(args, out=out, err=err), err)


def _matrix_command(args: argparse.Namespace, *, out: TextIO, err: TextIO) -> int:
    """Exit status: 0 every cell passed, else the first failing cell's (docs/cli.md)."""
    from etu.parsers.text import printable
    from etu.runner.matrix import (
        MatrixError,
        cell_text,
        emulated_target,
        junit_xml,
        parse_program,
        parse_target,
        run_matrix,
        table_text,
    )

    try:
        targets = [parse_target(spec) for spec in args.board]
        programs = [parse_program(spec) for spec in args.programs]
    except MatrixError as error:
        raise CommandError(str(error)) from None
    if args.emulated:
        targets.append(emulated_target())
    if not targets:
        raise CommandError("matrix: no target: give --board PROFILE:PLACE or --emulated")
    if args.timelimit <= 0:
        raise CommandError(f"--timelimit {args.timelimit:g}: must be more than 0")
    names = [t.name for t in targets]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise CommandError(f"--board {repeated[0]}: given twice")
    specs = [program.spec for program in programs]
    twice = sorted({spec for spec in specs if specs.count(spec) > 1})
    if twice:
        raise CommandError(f"{twice[0]}: given twice")
    try:
        args.sessions.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        where = printable(str(error.filename or args.sessions))
        raise CommandError(f"{where}: cannot record sessions: {error.strerror or error}") from None

    def status(text: str) -> None:
        if not BUILD_STEP.search(text):  # a firmware build's every ninja step: too many
            notice(err, f"matrix: {printable(text)}")

    def on_cell(cell) -> None:
        status(f"{cell.program} on {cell.target}: {cell_text(cell)}")

    matrix = run_matrix(
        programs, targets, sessions=args.sessions, time_limit=args.timelimit,
        coordinator=args.coordinator, build_dir=args.build_dir, compare=args.compare,
        status=status, on_cell=on_cell,
    )  # fmt: skip
    if args.junit is not None:
        try:
            args.junit.write_text(junit_xml(matrix), encoding="utf-8")
        except OSError as error:
            where = printable(str(args.junit))
            raise CommandError(f"{where}: cannot write the JUnit XML: {error.strerror or error}",
                               status=2) from None  # fmt: skip
    if args.json:
        out.write(json.dumps(matrix.to_json()) + "\n")
    else:
        out.write(table_text(matrix, width=CELL_WIDTH))
        passed = sum(cell.passed for cell in matrix.cells)
        notice(err, f"matrix: {passed} of {len(matrix.cells)} passed")
    return matrix.exit_status
