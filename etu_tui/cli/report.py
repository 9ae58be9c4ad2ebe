"""etu report: one recorded run as a self-contained Markdown or HTML report."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TextIO

from etu.tui.cli.errors import CommandError, notice
from etu.tui.cli.sessions import add_workspace_options, sessions_folder

HELP = "a self-contained report (Markdown or one HTML file) on one recorded session"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("session", help="the session: its folder, name, or a unique name prefix")
    parser.add_argument(
        "--format", choices=("md", "html"), default="md", help="Markdown (default) or HTML"
    )
    parser.add_argument("-o", "--output", type=Path, help="write to this file (default: stdout)")
    add_workspace_options(parser)


def run(args: argparse.Namespace, *, out: TextIO, err: TextIO) -> int:
    from etu.parsers.errors import ParseError
    from etu.runner.history import resolve_session, session_problem
    from etu.runner.report import build_report
    from etu.tui.report_format import render_html, render_markdown

    root = sessions_folder(args)
    folder = resolve_session(args.session, root)
    if folder is None:
        raise CommandError(session_problem(args.session, root))
    workspace = args.workspace if args.sessions is None else None
    try:
        report = build_report(folder, workspace)
    except ParseError as error:  # a session file that cannot be read: one line
        raise CommandError(f"{error}") from None
    text = render_html(report) if args.format == "html" else render_markdown(report)
    if args.output is None:
        out.write(text)
        return 0
    try:
        args.output.write_text(text, encoding="utf-8")
    except OSError as error:
        raise CommandError(f"{args.output}: {error.strerror or error}") from None
    notice(err, f"report written to {args.output}")
    return 0
