"""Opening input files without hanging or blowing up.

Where etu expects a file, only a regular file is read: a FIFO would block ``open()`` until a
writer comes (forever), ``/dev/zero`` or ``/dev/urandom`` never end, a terminal waits for
keys. Files are opened non-blocking, checked with ``fstat`` on the opened descriptor (no
race with a rename), and read up to a cap that the error message states. Every reader of a
file a user, a session or a workspace hands etu goes through here: whole (:func:`read_regular`,
:func:`read_json`), in blocks (:func:`read_blocks`, :func:`digest_regular`) or in lines of a
bounded length (:func:`read_lines`). ``follow=False`` refuses a symbolic link (the files of a
session folder, which etu writes itself and never as links).
"""

from __future__ import annotations

import errno
import json
import math
import os
import stat
from collections.abc import Iterator
from typing import Any

from etu.parsers.errors import FormatError, ParseError, WrongKindError

MiB = 1 << 20
GiB = 1 << 30
BLOCK = 1 << 20  # bytes read at once


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def cap_text(cap: int) -> str:
    """A cap as its error states it (``4 GiB``, ``16 MiB``)."""
    if cap >= GiB and cap % GiB == 0:
        return f"{cap // GiB} GiB"
    return f"{cap // MiB} MiB" if cap >= MiB else f"{cap:,} bytes"


def _open_error(path: str | os.PathLike[str], error: OSError, what: str, follow: bool):
    source = os.fsdecode(path)
    if error.errno == errno.ELOOP:
        if not follow and os.path.islink(path):
            return WrongKindError(
                f"is a symbolic link, not {what} (etu does not follow links here)", source=source
            )
        return WrongKindError(f"is a loop of symbolic links, not {what}", source=source)
    if error.errno == errno.EISDIR:
        return WrongKindError(f"is a directory, not {what}", source=source)
    return ParseError(error.strerror or str(error), source=source)


def open_regular(
    path: str | os.PathLike[str], what: str, cap: int, *, follow: bool = True
) -> tuple[int, int]:
    """(descriptor, size) of ``path`` opened for reading, if it is a regular file of at
    most ``cap`` bytes; else a ParseError naming the file. The caller closes the fd."""
    source = os.fsdecode(path)
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    if not follow:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError as error:
        raise _open_error(path, error, what, follow) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise WrongKindError(f"is {_kind(info.st_mode)}, not {what}", source=source)
        if info.st_size > cap:
            raise ParseError(
                f"{info.st_size:,} bytes is larger than the {cap_text(cap)} etu reads as {what}",
                source=source,
            )
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd, info.st_size


def read_blocks(
    path: str | os.PathLike[str],
    what: str,
    cap: int,
    *,
    follow: bool = True,
    block: int = BLOCK,
) -> Iterator[bytes]:
    """The bytes of a regular file of at most ``cap`` bytes, ``block`` at a time (it may not
    grow past the cap while read either). A read that fails is a ParseError."""
    fd, _size = open_regular(path, what, cap, follow=follow)
    total = 0
    try:
        while True:
            try:
                chunk = os.read(fd, block)
            except OSError as error:
                raise ParseError(
                    f"cannot be read: {error.strerror or error}", source=os.fsdecode(path)
                ) from None
            if not chunk:
                return
            total += len(chunk)
            if total > cap:
                raise ParseError(
                    f"grew past the {cap_text(cap)} etu reads as {what} while read",
                    source=os.fsdecode(path),
                )
            yield chunk
    finally:
        os.close(fd)


def read_regular(
    path: str | os.PathLike[str], what: str, cap: int, *, follow: bool = True
) -> bytes:
    """The whole of a regular file of at most ``cap`` bytes (it may not grow past it while
    read either)."""
    return b"".join(read_blocks(path, what, cap, follow=follow))


def digest_regular(
    digest: Any, path: str | os.PathLike[str], what: str, cap: int, *, follow: bool = True
) -> Any:
    """``digest`` (a hashlib object) updated with the file's bytes, streamed in blocks."""
    for chunk in read_blocks(path, what, cap, follow=follow):
        digest.update(chunk)
    return digest


def sha256_regular(
    path: str | os.PathLike[str], what: str, cap: int, *, follow: bool = True
) -> str:
    """The hex SHA-256 of a regular file of at most ``cap`` bytes, streamed."""
    import hashlib

    return digest_regular(hashlib.sha256(), path, what, cap, follow=follow).hexdigest()


def read_pieces(
    path: str | os.PathLike[str],
    what: str,
    cap: int,
    limit: int,
    *,
    follow: bool = True,
) -> Iterator[tuple[bytes, bool]]:
    """``(piece, ends_line)`` over a regular file of at most ``cap`` bytes: its lines with
    their newlines, a line longer than ``limit`` bytes in pieces of ``limit`` bytes, and
    whether a piece ends its line (a newline, or the end of the file). Memory is ``limit``
    bytes, whatever the file's lines are (a device that never sends a newline)."""
    fd, _size = open_regular(path, what, cap, follow=follow)
    source = os.fsdecode(path)
    total = 0
    try:
        with open(fd, "rb", buffering=min(max(limit, 1 << 16), BLOCK), closefd=False) as handle:
            while True:
                try:
                    piece = handle.readline(limit)
                    ends = piece.endswith(b"\n") or not handle.peek(1)
                except OSError as error:
                    raise ParseError(
                        f"cannot be read: {error.strerror or error}", source=source
                    ) from None
                if not piece:
                    return
                total += len(piece)
                if total > cap:
                    raise ParseError(
                        f"grew past the {cap_text(cap)} etu reads as {what} while read",
                        source=source,
                    )
                yield piece, ends
    finally:
        os.close(fd)


def read_lines(
    path: str | os.PathLike[str],
    what: str,
    cap: int,
    limit: int,
    *,
    follow: bool = True,
) -> Iterator[tuple[bytes, bool]]:
    """``(line, whole)`` for each line of a regular file of at most ``cap`` bytes: a line
    with its newline, at most ``limit`` bytes of it. A longer line gives its first ``limit``
    bytes with ``whole`` False and the rest is skipped, so a file without a newline costs
    ``limit`` bytes of memory, not its size."""
    skipping = False
    for piece, ends in read_pieces(path, what, cap, limit, follow=follow):
        if not skipping:
            yield piece, ends
        skipping = not ends


def check_regular(path: str | os.PathLike[str], what: str, cap: int, *, follow: bool = True) -> int:
    """Refuse anything but a regular file of at most ``cap`` bytes; its size."""
    fd, size = open_regular(path, what, cap, follow=follow)
    os.close(fd)
    return size


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is not a finite number")
    return value


def _refuse_constant(name: str) -> float:
    raise ValueError(f"{name} is not a finite number")


def loads_json(data: bytes | str, source: str | None = None, *, allow_nan: bool = False) -> Any:
    """JSON text as Python values; a FormatError (one line) when it is not JSON, is nested
    too deeply to read, or (unless ``allow_nan``) holds NaN, Infinity or a number too large
    for a float."""
    try:
        if allow_nan:
            return json.loads(data)
        return json.loads(data, parse_constant=_refuse_constant, parse_float=_finite)
    except RecursionError:
        raise FormatError("not valid JSON: nested too deeply", source=source) from None
    except UnicodeDecodeError:
        raise FormatError("not valid JSON: not UTF-8 text", source=source) from None
    except ValueError as error:
        text = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise FormatError(f"not valid JSON: {text}", source=source) from None


def read_json(
    path: str | os.PathLike[str],
    what: str,
    cap: int,
    *,
    follow: bool = True,
    allow_nan: bool = False,
) -> Any:
    """A regular JSON file of at most ``cap`` bytes, as :func:`loads_json` reads it."""
    data = read_regular(path, what, cap, follow=follow)
    return loads_json(data, os.fsdecode(path), allow_nan=allow_nan)
