"""etu run: the firmware on a Corstone FVP, streamed and recorded."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TextIO

HELP = "run the firmware on a Corstone FVP, stream and record its output"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--fvp", action="store_true", help="run on a Corstone FVP (the default)")
    parser.add_argument(
        "--target", default="ethos-u55-128", help="e.g. ethos-u55-128, ethos-u85-256"
    )
    parser.add_argument("--elf", type=Path, required=True, help="the runner firmware")
    parser.add_argument("--timelimit", type=int, default=600, help="seconds (FVP --timelimit)")
    parser.add_argument("--fast", action="store_true", help="the Ethos-U plugin's --fast mode")
    parser.add_argument("--fvp-path", type=Path, help="the simulator executable to use")
    parser.add_argument(
        "--param", action="append", default=[], metavar="NAME=VALUE",
        help="an extra FVP parameter (-C), repeatable",
    )  # fmt: skip
    parser.add_argument(
        "--sessions", type=Path, default=Path(".etu/sessions"),
        help="where recorded sessions go (default .etu/sessions)",
    )  # fmt: skip
    parser.add_argument("--dry-run", action="store_true", help="print the command, start nothing")
    parser.add_argument("--json", action="store_true", help="events as JSON Lines")


def run(args: argparse.Namespace, *, out: TextIO, err: TextIO) -> int:
    return run_command(args, out=out, err=err)


def run_command(args: argparse.Namespace, *, out: TextIO, err: TextIO) -> int:
    """Exit status says how the run ended (see runner.run.EXIT_STATUS); 2: could not start."""
    from fvp.command import FvpOptions, format_command, parse_param
    from fvp.launch import LaunchError, prepare_fvp_launch
    from parsers.text import printable

    try:
        params = tuple(parse_param(p) for p in args.param)
        options = FvpOptions(timelimit=args.timelimit, fast=args.fast, extra_params=params)
        launch = prepare_fvp_launch(args.target, args.elf, options, fvp_path=args.fvp_path)
    except (LaunchError, ValueError) as error:
        err.write(f"etu: {printable(str(error))}\n")
        return 2
    if args.dry_run:
        if args.json:
            record = {"argv": launch.argv, "simulator": str(launch.executable),
                      "simulated": launch.simulated, "found_via": launch.found_via}  # fmt: skip
            out.write(json.dumps(record) + "\n")
        else:
            out.write(printable(format_command(launch.argv)) + "\n")
        return 0
    return _stream_run(launch, args, out=out, err=err)


def _stream_run(launch, args: argparse.Namespace, *, out: TextIO, err: TextIO) -> int:
    from parsers.runner_events import LogLine
    from parsers.text import printable
    from runner.run import RunController, RunListener, install_stop_signals

    if launch.simulated:
        shown = printable(str(launch.executable))
        err.write(f"etu: {shown} is the etu stand-in FVP: numbers are SIMULATED\n")

    class Printer(RunListener):
        def on_events(self, events) -> None:
            for event in events:
                if args.json:
                    out.write(json.dumps(event.to_json()) + "\n")
                elif isinstance(event, LogLine):
                    out.write(printable(event.text) + "\n")
            out.flush()

    try:
        controller = RunController(
            launch.argv, sessions=args.sessions, kind="fvp", meta=launch.meta(),
            listener=Printer(), npu=launch.target.npu, time_limit=args.timelimit,
        )  # fmt: skip
    except OSError as error:  # --sessions is a file, read-only, on a full disk
        where = printable(str(error.filename or args.sessions))
        err.write(f"etu: {where}: cannot record a session: {error.strerror or error}\n")
        return 2
    install_stop_signals()  # SIGTERM/SIGHUP: stopped and recorded like Ctrl+C
    controller.start()
    try:
        outcome = controller.wait()
    except KeyboardInterrupt:
        controller.stop("stopped by SIGINT (Ctrl+C)")
        outcome = controller.wait()
    if args.json:
        out.write(json.dumps({**outcome.to_json(), "session": str(controller.folder)}) + "\n")
    else:
        line = f" (line {outcome.proof_line})" if outcome.proof_line else ""
        err.write(f"etu: run ended: {outcome.reason}{line}: {printable(outcome.proof)}\n")
        err.write(f"etu: session recorded in {printable(str(controller.folder))}\n")
    return outcome.exit_status
