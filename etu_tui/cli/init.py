"""etu init: a new workspace folder with a commented etu.toml, and what goes where."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TextIO

from etu.tui.cli.errors import CommandError

HELP = "create a workspace: etu.toml with commented defaults and its folders"

# folder -> what goes there
FOLDERS = {
    "vela": "Vela's output for the workspace's program (summary CSV, per-layer CSV)",
    "firmware": "the runner firmware ELF (and its .map) that `etu run` and the Fit tab use",
    "boards": "board profiles (serial port, baud rate, reset) for runs on hardware",
    ".etu/sessions": "recorded runs, one folder each (`etu sessions`, `etu diff`, `etu report`)",
}


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "dir", nargs="?", type=Path, default=Path("."),
        help="the workspace folder to create or complete (default: the current folder)",
    )  # fmt: skip


def run(args: argparse.Namespace, *, out: TextIO, err: TextIO) -> int:
    from etu.runner.config import WORKSPACE_FILE, workspace_template

    folder: Path = args.dir
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for name in FOLDERS:
            (folder / name).mkdir(parents=True, exist_ok=True)
        settings_file = folder / WORKSPACE_FILE
        existed = settings_file.exists()
        if not existed:
            settings_file.write_text(workspace_template())
    except OSError as error:
        raise CommandError(f"{folder}: {error.strerror or error}") from None
    out.write(f"workspace {folder}\n")
    state = "kept as it was" if existed else "created: every setting commented out at its default"
    out.write(f"  {WORKSPACE_FILE:<15} {state}\n")
    for name, what in FOLDERS.items():
        out.write(f"  {name + '/':<15} {what}\n")
    out.write(
        "  *.pte           the program(s): put the compiled program here "
        "(or `etu compile ... --out` this folder)\n"
    )
    out.write(
        f"Open it with `etu {folder}`; `etu config --workspace {folder}` shows its settings.\n"
    )
    return 0
