"""etu serve: the console in a web browser, through textual-serve.

Each browser tab that connects starts its own ``etu`` console process; the page talks to
it over a websocket. A console runs simulators, compiles ``model.py`` files and reads and
writes the workspace, so every request must carry the per-start token and a socket must come
from the served origin (``etu.tui.serve_guard``); the server binds to 127.0.0.1 unless
``--host`` says otherwise. Serving the demo (no path) gives its consoles what ``etu`` and
``make run`` give it: on a machine with no Arm FVP, the stand-in (``etu.fvp.standin``).
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import re
import shlex
import tempfile
from pathlib import Path
from typing import TextIO

from etu.tui.cli.errors import CommandError, notice
from etu.tui.serve_guard import TOKEN_ENV, Guard, TokenError, checked_token, url_host

HELP = "the console in a web browser (textual-serve); 127.0.0.1 only unless --host"
# The page textual-serve ships links a web font from the internet; etu serves the page
# without that link (the same font is in textual-serve's own static folder).
# Listen addresses that mean "every address", and the loopback a local browser opens.
EVERYWHERE = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}
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
    parser.add_argument(
        "--token",
        help=f"the access token (default: ${TOKEN_ENV}, else a new random one per start)",
    )
    parser.add_argument(
        "--allow-origin", action="append", default=[], metavar="ORIGIN",
        help="another page origin allowed to open the console's socket (repeatable)",
    )  # fmt: skip


def console_command(path: Path | None) -> str:
    """The command each connection starts. textual-serve runs it through a shell, so every
    part is quoted (shlex.join): a path cannot add shell syntax."""
    from etu.runner.isolated import isolated_python

    argv = isolated_python("etu.tui.cli")  # -I: nothing in its working folder runs instead
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


def browse_url(host: str, port: int, public_url: str | None = None) -> str:
    """The address to open: the public URL, else the listen address; a server listening
    everywhere (0.0.0.0, ::) is opened on this machine's loopback (0.0.0.0 is no address
    a browser reaches)."""
    if public_url:
        return public_url.rstrip("/")
    open_on = EVERYWHERE.get(host.strip("[]"), host)
    return f"http://{url_host(open_on)}:{port}"


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def run(args: argparse.Namespace, *, out: TextIO, err: TextIO) -> int:
    if args.path is not None and not args.path.exists():
        raise CommandError(f"{args.path}: no such file or folder")
    if not 0 < args.port < 65536:
        raise CommandError(f"--port {args.port}: not a TCP port")
    given, origin = (
        (args.token, "--token")
        if args.token is not None
        else (os.environ.get(TOKEN_ENV), TOKEN_ENV)
    )
    try:
        token = checked_token(given, origin)
    except TokenError as error:
        raise CommandError(f"{error}") from None
    url = browse_url(args.host, args.port, args.public_url)
    if not is_loopback(args.host):
        notice(err, f"WARNING: serving on {args.host}: anyone who can reach it and holds the "
               "token gets this console (it runs simulators, reads and writes files); the "
               "token travels unencrypted over plain http")  # fmt: skip
    if args.path is None:  # the demo, as `etu` and `make run` open it (etu.fvp.standin)
        from etu.fvp.standin import demo_standin

        standin = demo_standin()  # ETU_FVP_DIR for every console this server starts
        if standin:
            notice(err, standin)
    guard = Guard(
        token=token, host=args.host, port=args.port, public_url=args.public_url,
        allowed_origins=frozenset(args.allow_origin), log=err,
    )  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="etu-serve-") as folder:
        templates = local_templates(Path(folder))
        options = {"templates_path": str(templates)} if templates else {}
        server = guarded_server(guard)(
            console_command(args.path), host=args.host, port=args.port, title="etu",
            public_url=url, **options,
        )  # fmt: skip
        out.write(f"etu: the console is at {url}/?token={token} (Ctrl+C stops the server)\n")
        if not args.public_url and args.host.strip("[]") in EVERYWHERE:
            out.write("etu: it listens on every address: from another machine, put this "
                      "machine's name or address in that URL\n")  # fmt: skip
        out.flush()
        try:
            server.serve()
        except OSError as error:
            raise CommandError(f"{args.host}:{args.port}: {error.strerror or error}") from None
        except KeyboardInterrupt:
            pass
    return 0


def guarded_server(guard: Guard) -> type:
    """textual-serve's Server behind ``guard``; the page's URLs follow the Host it was
    reached by (checked by the guard), so a page opened as localhost talks to localhost."""
    import aiohttp_jinja2
    from textual_serve.server import Server, to_int

    class GuardedServer(Server):
        async def on_startup(self, app) -> None:
            """Quiet: etu printed the address to open (textual-serve's own banner shows the
            shell-quoted command inside quotes, and the listen address)."""

        async def _make_app(self):
            app = await super()._make_app()
            app.middlewares.append(guard.middleware())
            return app

        async def handle_index(self, request):
            base = self.public_url
            if guard.public_url is None:
                base = f"{request.scheme}://{request.host}"
            router = request.app.router
            socket = base + str(router["websocket"].url_for())
            context = {
                "font_size": to_int(request.query.get("fontsize", "16"), 16),
                "app_websocket_url": ("wss:" if base.startswith("https") else "ws:")
                + socket.split(":", 1)[1],
                "config": {"static": {
                    "url": base + str(router["static"].url_for(filename="/")).rstrip("/") + "/"
                }},
                "application": {"name": self.title},
            }  # fmt: skip
            return aiohttp_jinja2.render_template("app_index.html", request, context)

    return GuardedServer
