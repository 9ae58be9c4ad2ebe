"""etu run: the firmware on a Corstone FVP, streamed and recorded."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TextIO

from etu.tui.cli.common import add_target_option, stoppable
from etu.tui.cli.errors import CommandError, notice

HELP = (
    "run the firmware on a Corstone FVP, the emulated board or a labgrid place's board, "
    "stream and record its output"
)
EMULATED_BOARD = "qemu-an547"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--fvp", action="store_true",
        help="run on a Corstone FVP: what etu run always does (boards: etu monitor / etu flash"
        " --monitor); accepted so older scripts keep working",
    )  # fmt: skip
    add_target_option(parser, "the NPU, picking the FVP (default: the target setting)")
    parser.add_argument("--elf", type=Path, help="the runner firmware")
    parser.add_argument(
        "--board", metavar="qemu-an547|PROFILE",
        help="run on the emulated board (QEMU mps3-an547; etu serves an Ethos-U55/U65 "
        "delegate's NPU part) instead of an FVP; with --place, the board profile of a "
        "labgrid place: --elf flashed through it, then its UART followed",
    )  # fmt: skip
    parser.add_argument(
        "pte", type=Path, nargs="?",
        help="with --board: a program to build the real runner for (if needed) and run; with "
        "--elf: the program meant to run, checked against the firmware's before the run",
    )  # fmt: skip
    parser.add_argument(
        "--force", action="store_true",
        help="run even when the pre-flight finds problems (version skew, another target, "
        "another program baked in): each is still printed",
    )  # fmt: skip
    parser.add_argument(
        "--build-dir", type=Path,
        help="with PTE: where the firmware goes (default: PROGRAM.<board>/ beside the program,"
        " as etu firmware build)",
    )  # fmt: skip
    parser.add_argument(
        "--pools", default="auto", help="with PTE: auto or METHOD,TEMP (see etu firmware build)"
    )
    parser.add_argument("--select-ops", default="auto", help="with PTE: auto or an operator list")
    parser.add_argument(
        "--inputs", metavar="FILE.npy|FILE.npz|random:SEED",
        help="with PTE: the program's inputs, bundled into the runner (BundleIO checks the "
        "host reference's outputs on them; default all ones); the session records them",
    )  # fmt: skip
    parser.add_argument("--timelimit", type=int, default=600, help="seconds (FVP --timelimit)")
    parser.add_argument("--fast", action="store_true", help="the Ethos-U plugin's --fast mode")
    parser.add_argument(
        "--no-pmu-trace", action="store_true",
        help="do not have the Ethos-U plugin write its PMU trace (pmu_trace.json, per-layer NPU"
        " cycles) into the session",
    )  # fmt: skip
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
    from etu.tui.cli.common import add_place_options

    add_place_options(parser)


def run(args: argparse.Namespace, *, out: TextIO, err: TextIO) -> int:
    if args.dry_run:
        return run_command(args, out=out, err=err)
    return stoppable(lambda: run_command(args, out=out, err=err), err)


def run_command(args: argparse.Namespace, *, out: TextIO, err: TextIO) -> int:
    """Exit status says how the run ended (see runner.run.EXIT_STATUS); 2: could not start."""
    from etu.tui.cli.common import place_wanted

    if place_wanted(args):
        return _place_run(args, out=out, err=err)
    if args.board and args.board != EMULATED_BOARD:
        raise CommandError(f"run: --board {args.board}: a board runs through its labgrid place "
                           f"(--place NAME) or etu flash --monitor; alone, --board runs the "
                           f"emulated board {EMULATED_BOARD}")  # fmt: skip
    if args.board:
        return _board_run(args, out=out, err=err)
    if args.elf is None:
        raise CommandError("run: --elf is required (or --board qemu-an547 with a PROGRAM.pte)")
    _check_arm_firmware(args.elf)
    from etu.fvp.command import FvpOptions, format_command, parse_param
    from etu.fvp.launch import LaunchError, prepare_fvp_launch
    from etu.parsers.text import printable
    from etu.runner.config import ConfigError, load_settings

    try:
        settings = load_settings(Path.cwd())
    except ConfigError as error:
        raise CommandError(str(error)) from None
    for warning in settings.warnings:
        notice(err, f"warning: {printable(warning)}")
    try:
        params = tuple(parse_param(p) for p in args.param)
        options = FvpOptions(
            timelimit=args.timelimit, fast=args.fast, extra_params=params,
            keep_pmu_trace=not getattr(args, "no_pmu_trace", False),
        )  # fmt: skip
        launch = prepare_fvp_launch(
            args.target or settings.target, args.elf, options,
            fvp_path=args.fvp_path, settings=settings, allow_missing=args.dry_run,
        )  # fmt: skip
    except (LaunchError, ValueError) as error:
        raise CommandError(printable(str(error))) from None
    if args.dry_run:
        if args.json:
            record = {"argv": launch.argv, "simulator": str(launch.executable),
                      "simulated": launch.simulated, "found_via": launch.found_via,
                      "found": launch.found}  # fmt: skip
            out.write(json.dumps(record) + "\n")
        else:
            out.write(printable(format_command(launch.argv)) + "\n")
            if not launch.found:
                shown = printable(str(launch.executable))
                notice(err, f"{shown} is not installed here: the command names it by its bare "
                       "name (ETU_FVP_DIR or PATH would find it)")  # fmt: skip
        return 0
    _preflight(args, Path(args.elf), launch.target.target, err=err)
    return _stream_run(launch, args, out=out, err=err)


def _preflight(args: argparse.Namespace, elf: Path, target: str, *, err: TextIO) -> None:
    """The Run tab's pre-flight before anything starts: each problem with its fix, one line
    each on stderr; any refuses the run (status 2, ``preflight`` in the JSON error) unless
    ``--force``."""
    from etu.parsers.text import printable

    problems = preflight_problems(elf, target, getattr(args, "pte", None))
    if not problems:
        return
    for problem in problems:
        notice(err, f"pre-flight: {printable(problem)}")
    if getattr(args, "force", False):
        notice(err, "pre-flight: --force: running anyway")
        return
    count = f"{len(problems)} problem{'s' if len(problems) > 1 else ''}"
    raise CommandError(
        f"run: the pre-flight found {count} (above): nothing started; --force runs anyway",
        status=2, fields={"preflight": [printable(p) for p in problems]},
    )  # fmt: skip


def preflight_problems(elf: Path, target: str, pte: Path | None = None) -> list[str]:
    """What the Run tab's pre-flight finds for a run of ``elf`` on ``target`` (an FVP's
    target or the emulated board): the program (``pte``, else the one baked into ``elf``)
    against the firmware's build record (version skew), its fit on the firmware (another
    program baked in, kernels, pools, regions, ``.ptd`` blocks) and the NPU target. A
    firmware with no program baked in is not judged; an unreadable ``pte`` is one line."""
    from etu.parsers.errors import ParseError, describe_error
    from etu.parsers.firmware_program import open_embedded_program
    from etu.parsers.program_facts import program_facts, program_target
    from etu.parsers.pte import open_program
    from etu.runner.preflight import preflight
    from etu.runner.workspace import load_firmware

    try:
        program = open_program(pte) if pte is not None else open_embedded_program(elf)
    except (ParseError, OSError) as error:
        if pte is None:
            return []
        raise CommandError(describe_error(error)) from None
    try:
        try:
            wanted = program_target(program_facts(program, pte or elf))
        except ParseError:  # a delegate that does not decode: its target is not known
            wanted = None
        firmware = load_firmware(elf, program, None, workspace=None)
        return preflight(target, wanted, program, firmware, elf)
    finally:
        program.close()


def _stream_run(launch, args: argparse.Namespace, *, out: TextIO, err: TextIO) -> int:
    from etu.parsers.text import printable
    from etu.runner.run import RunController
    from etu.tui.cli.follow import echo, follow

    if launch.simulated and not args.json:  # --json: the events say "simulated"
        notice(err, f"{printable(str(launch.executable))} is the etu stand-in FVP: numbers are "
               "SIMULATED")  # fmt: skip
    listener = echo(events_as_json=args.json, as_json=args.json, out=out, err=err)
    try:
        controller = RunController(
            launch.argv, sessions=args.sessions, kind="fvp", meta=launch.meta(),
            listener=listener, npu=launch.target.npu,
        )  # fmt: skip
    except OSError as error:  # --sessions is a file, read-only, on a full disk
        listener.close()
        where = printable(str(error.filename or args.sessions))
        raise CommandError(f"{where}: cannot record a session: {error.strerror or error}") from None
    controller.start()  # SIGTERM/SIGHUP (run()): stopped and recorded like Ctrl+C
    return follow(controller, as_json=args.json, out=out, err=err)


def _check_arm_firmware(elf: Path) -> None:
    """Checked before any simulator or QEMU starts (and for a dry run): one line if not."""
    from etu.parsers.elf_map import check_arm_firmware
    from etu.parsers.errors import ParseError, describe_error

    if not Path(elf).exists():
        raise CommandError(f"{elf}: no such firmware file")
    try:
        check_arm_firmware(elf)
    except ParseError as error:
        raise CommandError(describe_error(error)) from None


def _place_run(args: argparse.Namespace, *, out: TextIO, err: TextIO) -> int:
    """`etu run --board PROFILE --place NAME --elf FW`: the place held, the firmware flashed
    through it and its UART followed: `etu flash --monitor` through the place, by its
    other name (etu builds runners for FVPs and the emulated board, not a lab's boards)."""
    from etu.tui.cli.flash import flash_and_monitor

    if not args.board or args.board == EMULATED_BOARD:
        raise CommandError(f"run: --place needs the place's board profile (--board PROFILE; "
                           f"see etu boards); {EMULATED_BOARD} is no place")  # fmt: skip
    if args.dry_run:
        raise CommandError("run: --dry-run does not go with --place (a flash starts no command)")
    if args.elf is None or args.pte is not None or args.inputs is not None:
        raise CommandError("run: --place flashes a firmware built for its board: give --elf "
                           "FW (no PROGRAM.pte or --inputs)")  # fmt: skip
    return flash_and_monitor(args, out=out, err=err)


def _board_run(args: argparse.Namespace, *, out: TextIO, err: TextIO) -> int:
    """`etu run --board qemu-an547 [PROGRAM.pte | --elf ELF]`: build if needed, run."""
    from etu.runner.npu_bridge import BridgeError
    from etu.runner.runtime_run import QemuMissing, qemu_argv, qemu_label, run_on_qemu
    from etu.tui.cli.follow import echo, follow

    elf = args.elf
    if getattr(args, "inputs", None) is not None and (elf is not None or args.pte is None):
        raise CommandError("run: --inputs needs a PROGRAM.pte (the runner is built with them); "
                           "an --elf runs the inputs it was built with")  # fmt: skip
    if elf is None:
        if args.pte is None:
            raise CommandError("run: --board needs a PROGRAM.pte or --elf")
        elf = _build_if_needed(args, err=err)
    _check_arm_firmware(Path(elf))
    try:
        argv = qemu_argv(Path(elf))
    except QemuMissing as error:
        raise CommandError(str(error)) from None
    if args.dry_run:
        out.write((json.dumps({"argv": argv}) if args.json else " ".join(argv)) + "\n")
        return 0
    _preflight(args, Path(elf), EMULATED_BOARD, err=err)
    notice(err, qemu_label(Path(elf)))
    from etu.runner.bundleio import firmware_inputs

    inputs = firmware_inputs(Path(elf))  # the session's meta records them (qemu_meta)
    if inputs is not None:
        from etu.tui.cli.firmware import inputs_line

        notice(err, inputs_line(inputs))
    time_limit = float(args.timelimit) if args.timelimit else 60.0
    listener = echo(events_as_json=args.json, as_json=args.json, out=out, err=err)
    try:
        controller = run_on_qemu(
            Path(elf), sessions=args.sessions, listener=listener, time_limit=time_limit,
            meta={"program": str(args.pte)} if args.pte else None,
        )  # fmt: skip
    except BridgeError as error:  # the NPU part cannot be served: nothing started
        raise CommandError(f"run: {error}", status=2) from None
    status = follow(controller, as_json=args.json, out=out, err=err)
    _explain_fault(controller, Path(elf), err)
    return status


def _explain_fault(controller, elf: Path, err: TextIO) -> None:
    """A hard fault's registers decoded and PC/LR symbolised from the ELF that ran."""
    from etu.runner.runtime_run import describe_fault

    if controller.outcome is None or controller.outcome.reason != "hard_fault":
        return
    from etu.parsers.files import GiB, MiB, read_lines

    events = read_lines(controller.folder / "events.jsonl", "a session's events", GiB, MiB,
                        follow=False)  # fmt: skip
    for line, whole in events:
        if not whole or b'"HardFault"' not in line:
            continue
        event = json.loads(line)
        if isinstance(event, dict) and event.get("type") == "HardFault":
            notice(err, f"fault: {describe_fault(event.get('registers', {}), elf)}")
            return


def _build_if_needed(args: argparse.Namespace, *, err: TextIO):
    """The runner for ``args`` (program, board, inputs, pools, operators), built only when
    its request changed: the Run tab's way too (runner.run_inputs.firmware_for_inputs)."""
    from etu.parsers.text import printable
    from etu.runner.build_plan import RuntimeBuildError
    from etu.runner.bundleio import BundleError
    from etu.runner.run_inputs import firmware_for_inputs
    from etu.runner.runtime_source import SourceError

    def progress(text: str) -> None:
        notice(err, f"firmware: {printable(text)}")
        err.flush()

    try:
        elf, built = firmware_for_inputs(
            args.pte, args.board, getattr(args, "inputs", None), folder=args.build_dir,
            pools=args.pools, select_ops=args.select_ops, progress=progress,
        )  # fmt: skip
    except SourceError as error:
        raise CommandError(f"{args.pte}: {error}") from None
    except (RuntimeBuildError, BundleError) as error:  # nothing ran: 2, whatever stopped it
        raise CommandError(str(error)) from None
    notice(err, f"firmware built: {elf}" if built else f"firmware up to date: {elf}")
    return elf
