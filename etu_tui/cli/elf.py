"""etu elf: a firmware's memory map."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TextIO

from etu.parsers.errors import ParseError
from etu.parsers.text import printable as p
from etu.tui.cli.common import add_region_options, memory_map_from_args
from etu.tui.cli.errors import CommandError

HELP = "firmware memory map: regions, sections, largest symbols, the runner's pools"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("elf", type=Path, metavar="FILE", help="the firmware ELF")
    add_region_options(parser)
    parser.add_argument("--json", action="store_true", help="one JSON object")


def run(args: argparse.Namespace, *, out: TextIO, err: TextIO) -> int:
    return elf_command(args, out=out, err=err)


def elf_command(args: argparse.Namespace, *, out: TextIO, err: TextIO) -> int:
    from etu.parsers.memory_map import elf_record

    try:
        memory_map = memory_map_from_args(args)
    except ParseError as error:
        raise CommandError(f"{p(str(error))}", 1) from None
    record = elf_record(memory_map)
    out.write((json.dumps(record) if args.json else format_elf(record)) + "\n")
    return 0


def format_elf(record: dict) -> str:
    source, origin = p(str(record.get("source", ""))), p(record.get("regions_from") or "nowhere")
    lines = [f"{source}  regions from {origin}"]
    for region in record["regions"]:
        length, used = region["length"], region["used"]
        filled = min(20, round(20 * used / length)) if length else 0
        lines.append(
            f"  {p(region['name']):<8} {'#' * filled}{'.' * (20 - filled)} "
            f"{used:>12,} / {length:>13,} B  {region.get('percent', 0):6.2f}%"
        )
    if record["pools"]:
        lines.append("  runner pools:")
        for role, pool in record["pools"].items():
            lines.append(
                f"    {p(role):<22} {p(pool['symbol'] or '(' + pool['section'] + ')'):<28} "
                f"{pool['size']:>12,} B  "
                f"at {pool['address']:#010x} in {p(pool['region'] or '?')}"
            )
    lines.append("  largest symbols:")
    for symbol in record["symbols_top"][:10]:
        lines.append(f"    {symbol['size']:>12,} B  {p(symbol['name'])}  ({p(symbol['section'])})")
    lines.extend(f"  warning: {p(w)}" for w in record["warnings"])
    return "\n".join(lines)
