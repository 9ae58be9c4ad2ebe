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
