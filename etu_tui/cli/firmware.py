"""etu firmware build: ExecuTorch's own arm_executor_runner around a program."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TextIO

HELP = "build ExecuTorch's arm_executor_runner (upstream sources) around a program"

# The lookup order of runner/runtime_source.find_executorch, first match wins (a test checks
# the two agree).
BUILD_HELP = (
    "Build ExecuTorch's arm_executor_runner for a board with the program baked in: the ELF"
    " etu run --board, etu fit and the console use. The runtime source is the first of:"
    " ETU_EXECUTORCH_SRC (a checkout or a source tarball); executorch_src in the workspace's"
    " etu.toml or etu config; a source mirror of the upstream archives (ETU_SOURCE_MIRROR,"
    " else shared/vendor/ in or beside etu's source checkout, e.g. ../shared/vendor/); a"
    " download of the pinned commit (ETU_NO_DOWNLOAD=1 skips it). The Ethos-U driver and"
    " CMSIS come from ETU_ETHOSU_DRIVER_SRC and ETU_CMSIS_SRC, else archives beside the"
    " ExecuTorch tarball, else the mirror."
)

BOARDS = ("qemu-an547", "corstone-300", "corstone-320")


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    build = sub.add_parser(
        "build", help="build the runner firmware for a board", description=BUILD_HELP
    )
    add_build_options(build)
    build.add_argument("pte", type=Path, help="the program (.pte) to bake into the runner")
    build.add_argument(
        "--out", type=Path,
        help="output folder (default: PROGRAM.<board>/ beside the program, where etu run"
        " --board, etu fit and the console look for it)",
    )  # fmt: skip
    build.add_argument("--json", action="store_true", help="one JSON object: ELF, commands, pools")


def add_build_options(parser: argparse.ArgumentParser, *, board_required: bool = True) -> None:
    parser.add_argument(
        "--board", choices=BOARDS, required=board_required,
        help="qemu-an547 (emulated; a U55/U65 delegate served by etu) or corstone-300/-320 "
        "(Ethos-U delegate)",
    )  # fmt: skip
    parser.add_argument(
        "--pools", default="auto",
        help="auto (fit check's need + max(25%%, 16 KiB)) or METHOD,TEMP in bytes (K/M ok)",
    )  # fmt: skip
    parser.add_argument(
        "--select-ops", default="auto",
        help="auto (the program's operators) or a comma-separated operator list",
    )  # fmt: skip
    add_inputs_option(parser)
    parser.add_argument("--bundleio", action="store_true", help="runner with BundleIO checks")
    parser.add_argument(
        "--bundle-input", type=Path, action="append", default=[], metavar="FILE",
        help="with --bundleio: an input (.npy/.pt), one per program input, in order",
    )  # fmt: skip
    parser.add_argument(
        "--seed", type=int, default=0, help="with --bundleio and no inputs: random inputs' seed"
    )
    parser.add_argument(
        "--bundle-expected", type=Path, action="append", default=[], metavar="FILE.npy",
        help="with --bundleio: expected outputs instead of the host runtime's",
    )  # fmt: skip
    parser.add_argument("--etdump", action="store_true", help="runner with the ETDump tracer")
    parser.add_argument(
        "--etdump-intermediates", action="store_true",
        help="--etdump keeping every kernel call's outputs (etu compare --layers reads them)",
    )  # fmt: skip
    parser.add_argument(
        "--num-inferences", type=int, default=1, metavar="N",
        help="the runner runs the method N times (ET_NUM_INFERENCES); its PMU report sums them",
    )  # fmt: skip
    parser.add_argument(
        "--fault-on-start", action="store_true",
        help="platform layer faults on purpose before main (to test the fault path)",
    )  # fmt: skip


def add_inputs_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--inputs", metavar="FILE.npy|FILE.npz|random:SEED",
        help="the program's inputs, bundled (BundleIO: the runner checks the host reference's "
        "outputs on them); random:SEED draws within the calibration range (default: all ones)",
    )  # fmt: skip


def inputs_line(record: dict | None) -> str:
    """One line: which inputs the firmware runs on (``etu firmware build``, ``etu run``)."""
    from etu.parsers.text import printable
    from etu.runner.compare import ONES_INPUTS, inputs_text

    return f"inputs: {printable(inputs_text(record or ONES_INPUTS))}"


def run(args: argparse.Namespace, *, out: TextIO, err: TextIO) -> int:
    from etu.runner.build_plan import RuntimeBuildError
    from etu.runner.runtime_source import SourceError
    from etu.runner.workspace import firmware_dir
    from etu.tui.cli.errors import CommandError

    if not args.pte.exists() and not args.pte.is_symlink():  # 2, as in etu run --board
        raise CommandError(f"{args.pte}: no such program file")
    folder = args.out or firmware_dir(args.pte, args.board)
    try:
        result = build_from_args(args, folder, err=None if args.json else err)
    except SourceError as error:
        raise CommandError(f"{args.pte}: {error}") from None
    except RuntimeBuildError as error:
        raise CommandError(str(error), error.status) from None
    if args.json:
        out.write(json.dumps(result.to_json()) + "\n")
        return 0
    out.write(f"configure: {_join(result.configure_command)}\n")
    out.write(f"build:     {_join(result.build_command)}\n")
    out.write(f"pools: method {result.pools['method']:,} B, temp {result.pools['temp']:,} B "
              f"({result.pool_basis})\n")  # fmt: skip
    out.write(f"operators: {','.join(result.select_ops) or '(none)'}\n")
    out.write(inputs_line(result.options.get("inputs")) + "\n")
    out.write(
        f"library cache: {'reused' if result.reused_tree else 'built'} {result.build_dir}; "
        f"{result.seconds.get('total', 0):.1f} s\n"
    )
    out.write(f"rebuild by hand: sh {folder / 'rebuild.sh'}\n")
    out.write(f"ELF: {result.elf}\n")
    return 0


def build_from_args(args: argparse.Namespace, folder: Path, *, err: TextIO | None):
    """Shared by `etu firmware build` and `etu run --board`."""
    from etu.runner.build_plan import RuntimeBuildError, parse_pools, parse_select_ops
    from etu.runner.runtime_build import build_runner
    from etu.tui.cli.errors import CommandError

    try:
        pools = parse_pools(args.pools)
    except RuntimeBuildError as error:  # an argument, refused before any build: 2 in both
        raise CommandError(str(error)) from None
    select = parse_select_ops(args.select_ops)

    def progress(text: str) -> None:
        if err is not None:
            from etu.parsers.text import printable
            from etu.tui.cli.errors import notice

            notice(err, f"firmware: {printable(text)}")
            err.flush()

    return build_runner(
        args.pte, args.board, folder, pools=pools, select_ops=select, bundleio=args.bundleio,
        etdump=args.etdump, intermediates=getattr(args, "etdump_intermediates", False),
        fault_on_start=args.fault_on_start, progress=progress,
        bundle_inputs=tuple(getattr(args, "bundle_input", ())),
        bundle_seed=getattr(args, "seed", 0),
        bundle_expected=tuple(getattr(args, "bundle_expected", ())),
        inputs=getattr(args, "inputs", None),
        num_inferences=getattr(args, "num_inferences", 1),
    )  # fmt: skip


def _join(argv: list[str]) -> str:
    import shlex

    return shlex.join(argv)
