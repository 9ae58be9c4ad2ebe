"""Options shared by several commands."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_region_options(parser: argparse.ArgumentParser) -> None:
    """Where memory regions come from, in order of preference."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--map", type=Path, help="GNU ld map file (-Map) of the link")
    group.add_argument("--ld", type=Path, help="linker script with a MEMORY block")
    group.add_argument(
        "--region",
        action="append",
        metavar="NAME:ORIGIN:LENGTH",
        help="a memory region, e.g. SRAM:0x31000000:2M (repeat for each)",
    )
    group.add_argument("--preset", choices=["corstone-300", "corstone-320"])


def memory_map_from_args(args: argparse.Namespace):
    """The regions the options name; with none, what the console reads too: the ``.map``
    beside the ELF, else its ``.ld``, else the runner's layout (runner/workspace.py)."""
    from parsers.memory_map import load_memory_map, parse_region_spec

    if not (args.map or args.ld or args.region or args.preset):
        from runner.workspace import read_memory_map

        return read_memory_map(args.elf, args.elf.name)[0]
    regions = [parse_region_spec(spec) for spec in args.region] if args.region else None
    return load_memory_map(
        args.elf, map_path=args.map, script_path=args.ld, regions=regions, preset=args.preset
    )
