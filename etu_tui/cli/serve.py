"""etu serve: the console in a web browser, through textual-serve.

Each browser tab that connects starts its own ``etu`` console process; the page talks to
it over a websocket. There is no authentication: whoever can reach the address gets the
console, which can run simulators and read and write the workspace's files, so the server
binds to 127.0.0.1 unless ``--host`` says otherwise.
"""

from __future__ import annotations

import argparse
import ipaddress
import re
import shlex
import tempfile
from pathlib import Path
from typing import TextIO

HELP = "the console in a web browser (textual-serve); 127.0.0.1 only unless --host"
# The page textual-serve ships links a web font from the internet; etu serves the page
# without that link (the same font is in textual-serve's own static folder).
_REMOTE_FONT = re.compile(r"<link\b[^>]*fonts\.googleapis\.com[^>]*>", re.DOTALL)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "path", nargs="?", type=Path,
        help="a .pte file or a workspace folder to open (default: the demo workspace)",
    )  # fmt: skip
    parser.add_argument("--port", type=int, default=8000, help="TCP port (default 8000)")
    parser.add_argument(
        "--host", default="127.0.0.1",
        help="address to listen on (default 127.0.0.1; anything else exposes the console)",
    )  # fmt: skip
    parser.add_argument(
        "--public-url",
        help="the URL browsers use to reach this server, when not http://HOST:PORT",
    )


def console_command(path: Path | None) -> str:
    """The command each connection starts. textual-serve runs it through a shell, so every
    part is quoted (shlex.join): a path cannot add shell syntax."""
    from runner.isolated import isolated_python

    argv = isolated_python("etu_tui.cli")  # -I: nothing in its working folder runs instead
    if path is not None:
        argv.append(str(path.resolve()))
    return shlex.join(argv)


def local_templates(folder: Path) -> Path | None:
    """textual-serve's page template without the remote font link, written to ``folder``;
    None to keep the installed one (its layout changed)."""
    import textual_serve

    installed = Path(textual_serve.__file__).parent / "templates"
    try:
        page = (installed / "app_index.html").read_text()
    except OSError:
        return None
    if not _REMOTE_FONT.search(page):
        return None
    (folder / "app_index.html").write_text(_REMOTE_FONT.sub("", page))
    return folder


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def run(args: argparse.Namespace, *, out: TextIO, err: TextIO) -> int:
    if args.path is not None and not args.path.exists():
        err.write(f"etu: {args.path}: no such file or folder\n")
        return 2
    if not 0 < args.port < 65536:
        err.write(f"etu: --port {args.port}: not a TCP port\n")
        return 2
    from textual_serve.server import Server

    url = args.public_url or f"http://{args.host}:{args.port}"
    if not is_loopback(args.host):
        err.write(
            f"etu: WARNING: serving on {args.host}: anyone who can reach it gets this console "
            "(it runs simulators, reads and writes files) with no password\n"
        )
    with tempfile.TemporaryDirectory(prefix="etu-serve-") as folder:
        templates = local_templates(Path(folder))
        options = {"templates_path": str(templates)} if templates else {}
        server = Server(
            console_command(args.path), host=args.host, port=args.port, title="etu",
            public_url=url, **options,
        )  # fmt: skip
        out.write(f"etu: the console is at {url}/ (Ctrl+C stops the server)\n")
        out.flush()
        try:
            server.serve()
        except OSError as error:
            err.write(f"etu: {args.host}:{args.port}: {error.strerror or error}\n")
            return 2
        except KeyboardInterrupt:
            pass
    return 0
