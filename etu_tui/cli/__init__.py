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
import json
import sys
from collections.abc import Sequence
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
    "sessions": "sessions",
    "diff": "diff",
    "report": "report",
    "serve": "serve",
    "config": "config",
    "init": "init",
    "ports": "ports",
    "boards": "boards",
    "monitor": "monitor",
    "firmware": "firmware",
    "compare": "compare",
    "reference": "reference",
    "flash": "flash",
    "matrix": "matrix",
}


def etu_version() -> str:
    from importlib.metadata import PackageNotFoundError, version  # 30 ms: only when asked

    try:
        return version("etu")
    except PackageNotFoundError:  # a source tree that was never installed
        return "unknown"


def command_module(name: str):
    return importlib.import_module(f"etu.tui.cli.{COMMAND_MODULES[name]}")


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
        from etu.parsers.text import printable
        from etu.tui.cli.errors import print_error

        message = f"{printable(str(path))}: no such file or folder"
        print_error(message, as_json=False, out=sys.stdout, err=sys.stderr)
        return 2
    from etu.runner.run import install_stop_signals, wait_all_runs
    from etu.tui import app as console  # Textual is imported only for the console

    if path is None:  # the demo: on a machine with no Arm FVP, the stand-in (labelled)
        from etu.fvp.standin import demo_standin

        standin = demo_standin()
        if standin:
            print(f"etu: {standin}", file=sys.stderr, flush=True)
    app = console.EtuApp(path)

    def exit_console(signum: int) -> None:
        """After SIGTERM/SIGHUP stopped the runs: leave the console as `q` does (the
        terminal restored), from the event loop, which a signal handler must not touch."""
        import asyncio

        loop = asyncio._get_running_loop()
        if loop is not None:
            loop.call_soon_threadsafe(lambda: app.exit(return_code=128 + signum))
        else:
            raise SystemExit(128 + signum)

    install_stop_signals(exit_console)
    app.run()
    wait_all_runs(10.0)  # every stopped run records its end before the process goes
    return app.return_code or 0


# `etu inspect ... | head -1`: the reader went away. Quiet, like other Unix tools, with the
# status a shell reports for SIGPIPE.
EXIT_BROKEN_PIPE = 141


class SafeStream:
    """The boundary every headless command writes through: whatever a formatter forgot,
    no control, bidi or invisible character from outside text reaches the terminal (newlines
    and tabs pass; JSON output is ASCII already, so it passes unchanged)."""

    def __init__(self, stream) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        from etu.parsers.text import printable_lines

        return self._stream.write(printable_lines(text))

    def flush(self) -> None:
        self._stream.flush()

    def isatty(self) -> bool:
        return self._stream.isatty()


class CommandParser(argparse.ArgumentParser):
    """A usage error is neutralised like every other output (an argument may come from a
    file name), and under ``--json`` it is ``{"error": ...}`` on stdout; status 2."""

    as_json = False

    def error(self, message: str):
        if self.as_json:
            sys.stdout.write(json.dumps({"error": f"{self.prog}: {message}"}) + "\n")
        else:
            stream = SafeStream(sys.stderr)
            stream.write(self.format_usage())
            stream.write(f"{self.prog}: error: {message}\n")
        raise SystemExit(2)


# Commands that load ExecuTorch's host runtime or torch in this process or a child: their
# stderr passes through runner.stderr_filter (third-party noise dropped).
NOISY_COMMANDS = frozenset({"reference", "compare"})


def _run_command(argv: list[str]) -> int:
    name = argv[0]
    module = command_module(name)
    parser = CommandParser(prog=f"etu {name}", description=module.HELP)
    parser.as_json = "--json" in argv[1:]
    module.configure(parser)
    args = parser.parse_args(argv[1:])
    args.command = name
    out, err = SafeStream(sys.stdout), SafeStream(sys.stderr)
    from etu.tui.cli.errors import CommandError, print_error

    as_json = bool(getattr(args, "json", False))
    try:
        try:
            if name in NOISY_COMMANDS:  # ExecuTorch's host runtime, torch: their noise
                from etu.runner.stderr_filter import filtered_stderr

                with filtered_stderr():
                    status = module.run(args, out=out, err=err)
            else:
                status = module.run(args, out=out, err=err)
        except (KeyboardInterrupt, BrokenPipeError):
            raise
        except CommandError as error:
            print_error(error.message, as_json=as_json, out=out, err=err, fields=error.fields)
            status = error.status
        except Exception as error:  # never a traceback: one line, like every other error
            from etu.parsers.errors import describe_error

            print_error(describe_error(error), as_json=as_json, out=out, err=err)
            status = 1
        sys.stdout.flush()
        return status
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_BROKEN_PIPE


def _silence_stdout() -> None:
    """After a broken pipe, the interpreter's final flush must not fail again."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
