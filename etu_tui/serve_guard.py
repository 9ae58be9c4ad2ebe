"""The doors of ``etu serve``: a per-start token, the served Origin, the served Host.

textual-serve starts a console process for every WebSocket that reaches ``/ws``. A console
compiles ``model.py`` files, which runs them, so a socket is code execution as the serving
user. WebSockets are not bound by the same-origin policy (any page the user has open can
open one to 127.0.0.1), and any other local user can reach 127.0.0.1. So, as Jupyter does:
- the page and the socket need a token (``secrets.token_urlsafe``, printed in the URL at
  start; the page turns it into a same-site cookie the socket then carries);
- the upgrade's ``Origin`` must be the page's own origin (or one the user allowed);
- ``Host`` must name the server (a DNS-rebinding page sends its own name).
A refusal is a 403 before any process starts, and one line on the server's stderr.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
import sys
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import TextIO
from urllib.parse import urlsplit

from etu.parsers.text import printable

TOKEN_ENV = "ETU_SERVE_TOKEN"
MIN_TOKEN_LENGTH = 16


class TokenError(ValueError):
    """A token that would leave the door open (empty, too short); one line."""


def new_token() -> str:
    return secrets.token_urlsafe(32)


def checked_token(given: str | None, origin: str) -> str:
    """``given`` (from --token or the environment) if it is a real secret, else a new one."""
    if given is None:
        return new_token()
    if len(given.strip()) < MIN_TOKEN_LENGTH or given != given.strip():
        raise TokenError(
            f"{origin}: a serve token needs at least {MIN_TOKEN_LENGTH} characters and no "
            "surrounding spaces (authentication cannot be turned off)"
        )
    return given


def url_host(host: str) -> str:
    """``host`` as it goes in a URL: an IPv6 literal in brackets."""
    try:
        return f"[{host}]" if ipaddress.ip_address(host).version == 6 else host
    except ValueError:
        return host


def _split_host(value: str) -> tuple[str, int | None] | None:
    """(host, port) of a Host header or the netloc of an origin; None if malformed."""
    try:
        parts = urlsplit(f"//{value}")
        return (parts.hostname or "").lower(), parts.port
    except ValueError:
        return None


def _is_ip_literal(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
WILDCARDS = frozenset({"0.0.0.0", "::", ""})


@dataclass
class Guard:
    """What a request must show to reach the console."""

    token: str
    host: str  # what the server listens on
    port: int
    public_url: str | None = None
    allowed_origins: frozenset[str] = frozenset()
    log: TextIO = field(default_factory=lambda: sys.stderr)

    @property
    def cookie_name(self) -> str:
        return f"etu_serve_token_{self.port}"

    def host_allowed(self, header: str | None) -> bool:
        """Host names this server: its listen address, a loopback name when it listens on
        loopback or everywhere, an IP literal when it listens everywhere (a rebinding page
        always sends a DNS name), or the public URL's host."""
        split = _split_host(header or "")
        if split is None or not split[0]:
            return False
        name, port = split
        public = urlsplit(self.public_url) if self.public_url else None
        if public and public.hostname and name == public.hostname.lower():
            return port == public.port
        if port != self.port:
            return False
        listen = self.host.lower().strip("[]")
        if name == listen:
            return True
        if listen in WILDCARDS:
            return name in LOOPBACK_NAMES or _is_ip_literal(name)
        return listen in LOOPBACK_NAMES and name in LOOPBACK_NAMES

    def origin_allowed(self, origin: str | None, host_header: str | None) -> bool:
        """The page's own origin (scheme and the Host it reached), the public URL's, or one
        given with --allow-origin. A request with no Origin is no browser page of ours."""
        if not origin:
            return False
        origin = origin.rstrip("/").lower()
        if origin in {o.rstrip("/").lower() for o in self.allowed_origins}:
            return True
        if self.public_url:
            public = urlsplit(self.public_url)
            if origin == f"{public.scheme}://{public.netloc}".lower():
                return True
        return bool(host_header) and origin in {
            f"http://{host_header}".lower(),
            f"https://{host_header}".lower(),
        }

    def token_matches(self, offered: Iterable[str | None]) -> bool:
        expected = self.token.encode()
        return any(
            value is not None and hmac.compare_digest(value.encode(), expected) for value in offered
        )

    def refusal(self, path: str, headers, query, cookies) -> str | None:
        """Why a request is refused (one line), or None to let it in."""
        host = headers.get("Host")
        if not self.host_allowed(host):
            return f"Host {host!r} is not this server"
        is_socket = path.rstrip("/").endswith("/ws")
        if is_socket and not self.origin_allowed(headers.get("Origin"), host):
            return f"Origin {headers.get('Origin')!r} is not the served origin"
        if not self.token_matches([query.get("token"), cookies.get(self.cookie_name)]):
            return "no token or a wrong one"
        return None

    def middleware(self) -> Callable:
        """An aiohttp middleware: refusals are 403 before any handler (or process) runs;
        the page's valid query token becomes a same-site cookie for its socket."""
        from aiohttp import web

        @web.middleware
        async def guard(request: web.Request, handler: Callable[..., Awaitable]):
            if request.path.startswith("/static/"):
                return await handler(request)
            why = self.refusal(request.path, request.headers, request.query, request.cookies)
            if why is not None:
                # a path is the requester's text: shown, never obeyed by the terminal
                self.log.write(f"etu serve: refused {printable(request.path)} from "
                               f"{request.remote}: {why}\n")  # fmt: skip
                self.log.flush()
                return web.Response(status=403, text=f"etu serve: forbidden: {why}\n")
            response = await handler(request)
            if (
                request.path == "/"
                and request.query.get("token")
                and hasattr(response, "set_cookie")
            ):
                response.set_cookie(
                    self.cookie_name, self.token, httponly=True, samesite="Strict", path="/"
                )
            return response

        return guard
