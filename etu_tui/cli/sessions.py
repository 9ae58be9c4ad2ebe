"""etu sessions: every recorded run of the workspace, newest first."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TextIO

from etu.tui.cli.errors import notice
from etu.tui.numbers import number, seconds

HELP = "list the workspace's recorded sessions (simulator, emulated board, board)"


ENDING_CHOICES = ("success", "no_model", "runner_error", "hard_fault", "time_limit", "crash",
                  "killed", "incomplete", "unfinished", "failed")  # fmt: skip


def configure(parser: argparse.ArgumentParser) -> None:
    add_workspace_options(parser)
    parser.add_argument("--program", help="only this program (name, part of it, or hash prefix)")
    parser.add_argument("--target", help="only this target, e.g. ethos-u55-128")
    parser.add_argument(
        "--ending",
        choices=ENDING_CHOICES,
        metavar="ENDING",
        help="only runs that ended so: success, runner_error, hard_fault, time_limit, crash, "
        "killed, incomplete, unfinished, or failed (anything but success)",
    )
    parser.add_argument("--kind", help="only this kind of session: fvp, qemu, board")
    parser.add_argument("--place", help="only sessions on this labgrid place (its name)")
    parser.add_argument("--limit", type=_positive, help="at most this many (the newest)")
    parser.add_argument("--json", action="store_true", help="one JSON object per session")


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value}: must be 1 or more")
    return value


def add_workspace_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--workspace", type=Path, default=Path("."),
        help="the workspace (default: the current folder)",
    )  # fmt: skip
    parser.add_argument(
        "--sessions", type=Path,
        help="the sessions folder (default: WORKSPACE/.etu/sessions)",
    )  # fmt: skip


def sessions_folder(args: argparse.Namespace) -> Path:
    from etu.runner.session import sessions_root

    return args.sessions if args.sessions is not None else sessions_root(args.workspace)


def run(args: argparse.Namespace, *, out: TextIO, err: TextIO) -> int:
    from etu.runner.history import list_rows

    rows = list_rows(
        sessions_folder(args), workspace=args.workspace, program=args.program,
        target=args.target, ending=args.ending, kind=args.kind, limit=args.limit,
        place=args.place,
    )  # fmt: skip
    if args.json:
        out.write("".join(json.dumps(row.to_json()) + "\n" for row in rows))
        return 0
    if not rows:
        notice(err, f"{sessions_folder(args)}: {nothing_listed(args)}")
        return 0
    out.write(format_rows(rows))
    return 0


def nothing_listed(args: argparse.Namespace) -> str:
    """Why no row was listed: "match" only when a filter could have left some out."""
    filters = (args.program, args.target, args.ending, args.kind, getattr(args, "place", None))
    if any(value is not None for value in filters):
        return "no recorded session matches"
    return "no recorded session yet (etu run, etu monitor and the console record each run here)"


def format_rows(rows) -> str:
    from etu.parsers.text import printable

    header = ("when", "kind", "target", "program", "firmware", "ending", "NPU cycles",
              "CPU cycles", "method alloc", "temp alloc", "time", "proof")  # fmt: skip
    table = [header]
    for row in rows:
        line = row.ending["proof_line"]
        ending = row.ending["reason"] + (f" @{line}" if line else "")
        proof = row.ending["proof"]
        if row.problem:  # a session that cannot be read is listed, saying why
            ending, proof = "unreadable", row.problem
        kind = row.kind + ("*" if row.simulated else "")
        if row.place:  # a session held through a labgrid place
            kind += f" @{row.place}"
        table.append((
            row.started_text, kind, row.target,
            f"{row.program['name']} {row.program['short']}".strip(),
            f"{row.firmware['name']} {row.firmware['short']}".strip(),
            ending, number(row.npu_cycles), number(row.cpu_cycles),
            number(row.method_allocator_used), number(row.temp_allocator),
            seconds(row.duration_s),
            printable(proof),
        ))  # fmt: skip
    widths = [max(len(r[i]) for r in table) for i in range(len(header) - 1)]
    numeric = {6, 7, 8, 9, 10}
    lines = []
    for cells in table:
        parts = [
            cells[i].rjust(widths[i]) if i in numeric else cells[i].ljust(widths[i])
            for i in range(len(widths))
        ]
        lines.append("  ".join(parts) + "  " + cells[-1])
    simulated = any(row.simulated for row in rows)
    note = "\n* the etu stand-in FVP: numbers are SIMULATED\n" if simulated else "\n"
    return "\n".join(lines) + note
