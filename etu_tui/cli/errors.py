"""The CLI's one error type and its one printer.

A command that cannot go on raises :class:`CommandError` with the one-line message and the
exit status; ``etu.tui.cli._run_command`` prints it once: ``etu: <message>`` on stderr, or
with ``--json`` ``{"error": "<message>"}`` on stdout. Notices (progress, warnings, where a
session went) are not errors: :func:`notice` writes them to stderr, with or without
``--json``. Nothing decides what an error is from the text of a line.
"""

from __future__ import annotations

import json
from typing import TextIO


class CommandError(Exception):
    """A command stopped: ``message`` is one line, ``status`` the exit status; ``fields``:
    more of what stopped it for ``--json`` (beside ``error``, never instead of it)."""

    def __init__(self, message: str, status: int = 2, fields: dict | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.fields = dict(fields or {})

    def __str__(self) -> str:
        return self.message


def notice(err: TextIO, text: str) -> None:
    """A line for the user that is not the command's output (stderr, ``etu:`` first)."""
    err.write(f"etu: {text}\n")


def print_error(
    message: str, *, as_json: bool, out: TextIO, err: TextIO, fields: dict | None = None
) -> None:
    """The one place an error reaches the user (``fields``: added to the JSON object)."""
    text = " ".join(message.splitlines()) or "error"
    if as_json:
        out.write(json.dumps({**(fields or {}), "error": text}) + "\n")
    else:
        err.write(f"etu: {text}\n")
