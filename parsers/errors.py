"""Errors raised by the decoders.

One exception family, so callers can show a one-line message for any bad input without
catching broad exceptions. The message always says where: file, field and byte offset.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator


class ParseError(Exception):
    """A file (or part of one) could not be decoded."""

    def __init__(
        self,
        message: str,
        *,
        field: str | None = None,
        offset: int | None = None,
        source: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        self.offset = offset
        self.source = source

    def with_source(self, source: str) -> ParseError:
        """Attach the file name once it is known (the readers work on bytes)."""
        if self.source is None:
            self.source = source
        return self

    @property
    def detail(self) -> str:
        """Field, offset and message, without the file name (for a caller that shows it)."""
        where = []
        if self.field:
            where.append(self.field)
        if self.offset is not None:
            where.append(f"at offset {self.offset:#x}")
        return f"{' '.join(where)}: {self.message}" if where else self.message

    def __str__(self) -> str:
        return f"{self.source}: {self.detail}" if self.source else self.detail


class TruncatedError(ParseError):
    """A field or block reaches past the end of the data."""


class FormatError(ParseError):
    """The bytes are present but do not hold what the format says they must."""


class WrongKindError(ParseError):
    """The file is some other kind of file (text, ELF, a .ptd, an ETDump, ...)."""


@contextlib.contextmanager
def as_parse_errors(source: str | None = None) -> Iterator[None]:
    """Turn the low-level errors of construct and struct into one-line ParseErrors."""
    from construct import ConstructError

    try:
        yield
    except ParseError as error:
        raise (error.with_source(source) if source else error) from None
    except (ConstructError, UnicodeDecodeError, OverflowError, ValueError) as error:
        raise FormatError(str(error).splitlines()[0], source=source) from None


def find_parse_error(error: BaseException | None) -> ParseError | None:
    """The ParseError behind ``error``: itself, or one it was raised while handling (e.g. a
    BufferError from closing a map while a ParseError unwinds) or from."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, ParseError):
            return error
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return None


def first_line(text: str) -> str:
    """The first non-blank line of ``text``, stripped ("" when there is none)."""
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


def describe_error(error: BaseException, path: object | None = None) -> str:
    """The one line a user sees for any exception.

    A ParseError (or one behind ``error``) gives its field, offset and message, after
    ``path`` (how the caller names the file: a name, a label) or else the file the error
    names. Anything else gives ``unexpected <Kind>: <first line>``: never a traceback, never
    several lines. ``path`` is shown as given (``str()``), so callers choose name or label.
    """
    where = None if path is None else str(path)
    found = find_parse_error(error)
    if found is not None:
        where = where if where is not None else found.source
        return f"{where}: {found.detail}" if where else found.detail
    text = first_line(str(error))
    kind = type(error).__name__
    line = f"unexpected {kind}: {text}" if text else f"unexpected {kind}"
    return f"{where}: {line}" if where else line
