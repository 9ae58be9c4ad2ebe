"""Options shared by several commands."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_region_options(parser: argparse.ArgumentParser) -> None:
    """Where memory regions come from, in order of preference."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--map", type=Path,
        help="GNU ld map file (-Map) of the link (default: the .map beside the ELF, else the .ld)",
    )  # fmt: skip
    group.add_argument("--ld", type=Path, help="linker script with a MEMORY block")
    group.add_argument(
        "--region",
        action="append",
        metavar="NAME:ORIGIN:LENGTH",
        help="a memory region, e.g. SRAM:0x31000000:2M (repeat for each)",
    )
    from etu.parsers.memory_presets import PRESETS

    group.add_argument(
        "--preset", choices=list(PRESETS),
        help="a known layout: the runner's (corstone-300/320) or a board's",
    )  # fmt: skip


def memory_map_from_args(args: argparse.Namespace):
    """The regions the options name; with none, what the console reads too: the ``.map``
    beside the ELF, else its ``.ld``, else the runner's layout (runner/workspace.py)."""
    from etu.parsers.memory_map import load_memory_map, parse_region_spec

    if not (args.map or args.ld or args.region or args.preset):
        from etu.runner.workspace import read_memory_map

        memory_map, _source, notes, _names = read_memory_map(args.elf, args.elf.name)
        memory_map.warnings[:0] = notes
        return memory_map

    regions = [parse_region_spec(spec) for spec in args.region] if args.region else None
    return load_memory_map(
        args.elf, map_path=args.map, script_path=args.ld, regions=regions, preset=args.preset
    )


def add_target_option(parser: argparse.ArgumentParser, what: str, **kwargs) -> None:
    """``--target`` with its values listed (the FVPs' targets, fvp/targets.py)."""
    from etu.fvp.targets import targets

    values = targets()
    parser.add_argument(
        "--target", choices=values, metavar="TARGET",
        help=f"{what}; one of: {', '.join(values)}", **kwargs,
    )  # fmt: skip


def add_vela_config_options(parser: argparse.ArgumentParser) -> None:
    """``--system-config`` and ``--memory-mode`` with their values listed
    (runner/compile_request.py: Vela's vela.ini sections the runner builds for)."""
    from etu.runner.compile_request import MEMORY_MODES, SYSTEM_CONFIGS

    parser.add_argument(
        "--system-config", choices=list(SYSTEM_CONFIGS), metavar="CONFIG",
        help=f"Vela's system config (default per target); one of: {', '.join(SYSTEM_CONFIGS)}",
    )  # fmt: skip
    parser.add_argument(
        "--memory-mode", choices=MEMORY_MODES, metavar="MODE",
        help=f"Vela's memory mode (default per target); one of: {', '.join(MEMORY_MODES)}",
    )  # fmt: skip


def add_json_lines_option(parser: argparse.ArgumentParser, what: str) -> None:
    """``--json`` for commands that print one JSON object per listed item."""
    parser.add_argument("--json", action="store_true", help=f"one JSON object per {what} per line")


def board_profiles() -> dict:
    """Every board profile (built in and the user's); a malformed profile file is a
    CommandError naming its file, line and key (exit status 2)."""
    from etu.runner.boards.profiles import ProfileError, load_profiles
    from etu.tui.cli.errors import CommandError

    try:
        return load_profiles()
    except ProfileError as error:
        raise CommandError(str(error)) from None


def stoppable(body, err) -> int:
    """``body()`` for a command that owns a child or a port (run, monitor, flash): SIGTERM
    and SIGHUP stop its run as Ctrl+C does (the child's process group stopped, the session
    ended ``killed`` with the signal named, exit status 6); one that comes before any run
    (building firmware, flashing, opening the port) stops the command there, its clean-up
    run on the way out, with the same status. An ignored SIGINT (a background job) stays
    ignored."""
    from etu.runner.run import EXIT_STATUS, install_stop_signals, stop_reason
    from etu.tui.cli.errors import CommandError

    install_stop_signals()
    try:
        return body()
    except KeyboardInterrupt as interrupt:  # StopSignal is one
        raise CommandError(stop_reason(interrupt), EXIT_STATUS["killed"]) from None


def add_place_options(parser: argparse.ArgumentParser) -> None:
    """``--place`` and ``--coordinator``: the board is a labgrid place (runner/boards/place.py)."""
    parser.add_argument("--place", metavar="NAME",
                        help="the board is this labgrid place: held for the run (labgrid's "
                             "lock), its serial port and power used (needs etu[lab])")  # fmt: skip
    parser.add_argument("--coordinator", metavar="HOST:PORT",
                        help="with --place: the labgrid coordinator (default: $LG_COORDINATOR, "
                             "else 127.0.0.1:20408)")  # fmt: skip


def place_wanted(args: argparse.Namespace) -> bool:
    """``--place`` was given; ``--coordinator`` without it is a mistake (exit status 2)."""
    from etu.tui.cli.errors import CommandError

    place, coordinator = getattr(args, "place", None), getattr(args, "coordinator", None)
    if coordinator and not place:
        raise CommandError("--coordinator goes with --place NAME")
    return bool(place)


def hold_place(args: argparse.Namespace, say):
    """The place ``--place`` names, acquired; a CommandError (exit status 2) in one line
    when labgrid is missing, the coordinator does not answer or somebody holds it."""
    from etu.runner.boards.place import Place, PlaceError
    from etu.tui.cli.errors import CommandError

    try:
        place = Place(args.place, args.coordinator)
        info = place.acquire()
    except PlaceError as error:
        raise CommandError(str(error)) from None
    say(f"holding place {info.name} ({info.serial_url} on {info.exporter}) as {info.holder}")
    return place


def let_go(place, say) -> None:
    """Release a held place, with the stop signals held off until it is done (a second
    TERM must not leave the place held); says so when it could not be released."""
    import signal

    from etu.runner.run import STOP_SIGNALS

    blocked = {signal.SIGINT, *STOP_SIGNALS}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, blocked)
    try:
        problem = place.release()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
    if problem:
        say(problem)
