"""Opening input files without hanging or blowing up.

Where etu expects a file, only a regular file is read: a FIFO would block ``open()`` until a
writer comes (forever), ``/dev/zero`` or ``/dev/urandom`` never end, a terminal waits for
keys. Files are opened non-blocking, checked with ``fstat`` on the opened descriptor (no
race with a rename), and read up to a cap that the error message states.
"""

from __future__ import annotations

import os
import stat

from parsers.errors import ParseError, WrongKindError

MiB = 1 << 20
GiB = 1 << 30


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


def _cap_text(cap: int) -> str:
    return f"{cap // GiB} GiB" if cap >= GiB and cap % GiB == 0 else f"{cap // MiB} MiB"


def open_regular(path: str | os.PathLike[str], what: str, cap: int) -> tuple[int, int]:
    """(descriptor, size) of ``path`` opened for reading, if it is a regular file of at
    most ``cap`` bytes; else a ParseError naming the file. The caller closes the fd."""
    source = str(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except IsADirectoryError:
        raise WrongKindError(f"is a directory, not {what}", source=source) from None
    except OSError as error:
        raise ParseError(error.strerror or str(error), source=source) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise WrongKindError(f"is {_kind(info.st_mode)}, not {what}", source=source)
        if info.st_size > cap:
            raise ParseError(
                f"{info.st_size:,} bytes is larger than the {_cap_text(cap)} etu reads as {what}",
                source=source,
            )
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd, info.st_size


def read_regular(path: str | os.PathLike[str], what: str, cap: int) -> bytes:
    """The whole of a regular file of at most ``cap`` bytes (it may not grow past it while
    read either)."""
    fd, _size = open_regular(path, what, cap)
    chunks: list[bytes] = []
    total = 0
    try:
        while chunk := os.read(fd, 1 << 20):
            total += len(chunk)
            if total > cap:
                raise ParseError(
                    f"grew past the {_cap_text(cap)} etu reads as {what} while read",
                    source=str(path),
                )
            chunks.append(chunk)
    except OSError as error:
        raise ParseError(error.strerror or str(error), source=str(path)) from None
    finally:
        os.close(fd)
    return b"".join(chunks)


def check_regular(path: str | os.PathLike[str], what: str, cap: int) -> int:
    """Refuse anything but a regular file of at most ``cap`` bytes; its size."""
    fd, size = open_regular(path, what, cap)
    os.close(fd)
    return size
