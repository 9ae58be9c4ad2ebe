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

        print(f"etu: {printable(str(path))}: no such file or folder", file=sys.stderr)
        return 2
    from etu.runner.run import install_stop_signals, wait_all_runs
    from etu.tui import app as console  # Textual is imported only for the console

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


class JsonErrors:
    """``--json``: every error is JSON on stdout. What a command writes to stderr is held;
    when the command fails (a non-zero status), each ``etu: ...`` line becomes
    ``{"error": "..."}`` on stdout, and on success the held notices go to stderr as text."""

    def __init__(self, out, err, error_statuses=None) -> None:
        self._out, self._err = out, err
        self._held: list[str] = []
        # None: any non-zero status is a failure; a command whose other statuses report an
        # outcome already in its JSON (etu run: how the run ended) names its error statuses.
        self._error_statuses = error_statuses

    def write(self, text: str) -> int:
        self._held.append(text)
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def finish(self, status: int) -> None:
        text = "".join(self._held)
        self._held.clear()
        if not text:
            return
        failed = status != 0 if self._error_statuses is None else status in self._error_statuses
        if not failed:
            self._err.write(text)
            return
        for line in text.splitlines():
            if line.startswith("etu: "):
                self._out.write(json.dumps({"error": line[len("etu: ") :]}) + "\n")
            elif line.strip():
                self._err.write(line + "\n")


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


def _run_command(argv: list[str]) -> int:
    name = argv[0]
    module = command_module(name)
    parser = CommandParser(prog=f"etu {name}", description=module.HELP)
    parser.as_json = "--json" in argv[1:]
    module.configure(parser)
    args = parser.parse_args(argv[1:])
    args.command = name
    out, err = SafeStream(sys.stdout), SafeStream(sys.stderr)
    errors = None
    if getattr(args, "json", False):
        errors = JsonErrors(out, err, getattr(module, "JSON_ERROR_STATUSES", None))
    status = 1
    try:
        try:
            status = module.run(args, out=out, err=errors or err)
        except (KeyboardInterrupt, BrokenPipeError):
            raise
        except Exception as error:  # never a traceback: one line, like every other error
            from etu.parsers.errors import describe_error

            (errors or err).write(f"etu: {describe_error(error)}\n")
            status = 1
        if errors is not None:
            errors.finish(status)
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
