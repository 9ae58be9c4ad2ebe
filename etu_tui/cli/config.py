"""etu config: the effective settings and where each one came from."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TextIO

from etu.parsers.text import printable
from etu.tui.cli.errors import CommandError, notice

HELP = "print the effective settings (etu.toml, user file, defaults, environment)"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "action", nargs="?", choices=["trust"],
        help="trust: let DIR's etu.toml choose what etu runs (fvp_dir, executorch_src), "
        "recorded by its path and content hash in your user config",
    )  # fmt: skip
    parser.add_argument("dir", nargs="?", type=Path, help="with trust: the workspace folder")
    parser.add_argument(
        "--workspace", type=Path, default=Path("."),
        help="the workspace whose etu.toml is read (default: the current folder)",
    )  # fmt: skip
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def run(args: argparse.Namespace, *, out: TextIO, err: TextIO) -> int:
    from etu.runner.config import SETTINGS, ConfigError, load_settings, user_config_file

    if args.action == "trust":
        return _trust(args.dir or args.workspace, out=out, err=err)
    if args.dir is not None:
        raise CommandError("config: a folder is given only with `trust` (use --workspace)")
    if not args.workspace.is_dir():
        raise CommandError(f"--workspace {args.workspace}: no such folder")
    try:
        settings = load_settings(args.workspace)
    except ConfigError as error:
        raise CommandError(f"{error}") from None
    unknown = unknown_bindings(settings.keymap)
    warnings = [
        f"keymap.{binding} ({settings.origin('keymap.' + binding)}): no console key has this id"
        for binding in unknown
    ] + settings.warnings
    if args.json:
        record = settings.to_json()
        record["user_file"] = str(user_config_file())
        record["warnings"] = warnings
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
    for warning in warnings:
        notice(err, f"warning: {printable(warning)}")
    if settings.env:
        out.write("\nenvironment (wins over the files)\n")
        for name, value in sorted(settings.env.items()):
            out.write(f"  {name}={value}\n")
    return 0


def _trust(folder: Path, *, out: TextIO, err: TextIO) -> int:
    from etu.runner.config import ConfigError, trust_workspace

    try:
        trusted = trust_workspace(folder)
    except (ConfigError, OSError) as error:
        raise CommandError(f"{printable(str(error))}") from None
    out.write(f"etu: trusted {printable(str(trusted))} as it is now (a change to it needs "
              "trusting again)\n")  # fmt: skip
    return 0


def known_binding_ids() -> set[str]:
    """Every binding id of the console: the rows of its one key table."""
    from etu.tui.keys import binding_ids

    return binding_ids()


def unknown_bindings(keymap: dict[str, str]) -> list[str]:
    if not keymap:
        return []
    known = known_binding_ids()
    return sorted(binding for binding in keymap if binding not in known)
