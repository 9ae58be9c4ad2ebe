"""The ``etu`` command: the console, and headless subcommands for shells and CI.

``etu`` opens the demo workspace, ``etu PATH`` opens a program or workspace, and
``etu COMMAND ...`` runs one headless command. Each command is a module of this package with
``HELP``, ``configure(parser)`` and ``run(args, out=, err=)``; only the chosen command's
module is imported, and none imports Textual or torch at module level, so scripting
thousands of files stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

# Command name -> module in this package. The order is the order of `etu --help`.
COMMAND_MODULES: dict[str, str] = {
    "inspect": "inspect",
    "vela": "vela",
    "elf": "elf",
    "fit": "fit",
    "run": "run",
    "log": "log",
    "compile": "compile",
    "ports": "ports",
    "boards": "boards",
    "monitor": "monitor",
    "flash": "flash",
}


def etu_version() -> str:
    try:
        return version("etu")
    except PackageNotFoundError:  # a source tree that was never installed
        return "unknown"


def command_module(name: str):
    return importlib.import_module(f"etu_tui.cli.{COMMAND_MODULES[name]}")


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in COMMAND_MODULES:
        return _run_command(argv)
    parser = _console_parser()
    args = parser.parse_args(argv)
    return _open_console(args.path)


def _console_parser() -> argparse.ArgumentParser:
    commands = "\n".join(
        f"  etu {name:<10} {command_module(name).HELP}" for name in COMMAND_MODULES
    )
    parser = argparse.ArgumentParser(
        prog="etu",
        description="etu: the Ethos-U deployment console.",
        epilog=f"commands:\n{commands}\n\n'etu COMMAND --help' describes each command.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"etu {etu_version()}")
    parser.add_argument(
        "path",
        nargs="?",
        type=Path,
        help="a .pte file or a workspace folder (default: the demo workspace)",
    )
    return parser


def _open_console(path: Path | None) -> int:
    if path is not None and not path.exists():
        print(f"etu: {path}: no such file or folder", file=sys.stderr)
        return 2
    from etu_tui.app import run_app  # Textual is imported only for the console

    return run_app(path)


def _run_command(argv: list[str]) -> int:
    name = argv[0]
    module = command_module(name)
    parser = argparse.ArgumentParser(prog=f"etu {name}", description=module.HELP)
    module.configure(parser)
    args = parser.parse_args(argv[1:])
    args.command = name
    return module.run(args, out=sys.stdout, err=sys.stderr)
