"""etu config: the effective settings and where each one came from."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TextIO

HELP = "print the effective settings (etu.toml, user file, defaults, environment)"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--workspace", type=Path, default=Path("."),
        help="the workspace whose etu.toml is read (default: the current folder)",
    )  # fmt: skip
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def run(args: argparse.Namespace, *, out: TextIO, err: TextIO) -> int:
    from runner.config import SETTINGS, ConfigError, load_settings, user_config_file

    try:
        settings = load_settings(args.workspace)
    except ConfigError as error:
        err.write(f"etu: {error}\n")
        return 2
    if args.json:
        record = settings.to_json()
        record["user_file"] = str(user_config_file())
        out.write(json.dumps(record) + "\n")
        return 0
    out.write(f"workspace  {settings.workspace}\n")
    out.write(f"user file  {user_config_file()}\n")
    read = ", ".join(str(f) for f in settings.files) or "none (built-in defaults)"
    out.write(f"files read {read}\n\n")
    width = max(len(key) for key in SETTINGS)
    for key in SETTINGS:
        value = getattr(settings, key)
        shown = "(none)" if value is None else str(value)
        out.write(f"{key:<{width}}  {shown}  [{settings.origin(key)}]\n")
    out.write("\nkeymap" + ("" if settings.keymap else "  (the console's own keys)") + "\n")
    for binding, key in sorted(settings.keymap.items()):
        out.write(f"  {binding} = {key}  [{settings.origin('keymap.' + binding)}]\n")
    if settings.env:
        out.write("\nenvironment (wins over the files)\n")
        for name, value in sorted(settings.env.items()):
            out.write(f"  {name}={value}\n")
    return 0
