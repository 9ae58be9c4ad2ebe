"""What every flash method shares: the files to flash, the result the monitor takes over,
the one-line FlashError (NeedMissing: a need nobody supplied) and the prompt helpers. Its
own module so the transfer modules and flash.py's registry import it, never each other.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from etu.runner.boards.profiles import BoardProfile, Prompt
from etu.runner.boards.prompts import expect
from etu.runner.boards.transfer import Progress

PLACEMENT_MAGIC = (b"\xc0\x5a", b"\x5a\xc0")


class FlashError(RuntimeError):
    """Flashing failed; one line naming the file or port and what went wrong."""


@dataclass(frozen=True, slots=True)
class FlashFile:
    path: Path
    address: int | None = None  # FILE@ADDRESS: placed at an address (a .pte in flash)
    offset: int = 0  # FILE@ADDRESS+OFFSET

    @property
    def name(self) -> str:
        return self.path.name


def parse_file_spec(spec: str) -> FlashFile:
    """``FILE``, ``FILE@0xADDRESS`` or ``FILE@0xADDRESS+0xOFFSET``."""
    path, _, where = spec.partition("@")
    if not where:
        return FlashFile(Path(path))
    address, _, offset = where.partition("+")
    try:
        return FlashFile(Path(path), int(address, 0), int(offset, 0) if offset else 0)
    except ValueError:
        raise FlashError(
            f"{spec}: expected FILE@ADDRESS[+OFFSET] (e.g. model.pte@0xB7B000)"
        ) from None


def placement_block(address: int, offset: int = 0) -> bytes:
    """WiseEye2: the 128-byte block before a file meant for an address."""
    if not (0 <= address < 1 << 32 and 0 <= offset < 1 << 32):
        raise FlashError(f"address 0x{address:x}+0x{offset:x} does not fit 32 bits")
    head = PLACEMENT_MAGIC[0] + address.to_bytes(4, "little") + offset.to_bytes(4, "little")
    return (head + PLACEMENT_MAGIC[1]).ljust(128, b"\xff")


@dataclass
class FlashResult:
    port: str | None = None  # the application port, for the monitor
    handle: object | None = None  # ... still open
    initial: bytes = b""  # bytes read after the last prompt: the start of the boot log
    source: object | None = None  # a ready byte source (the emulated board)
    files: list[dict] = field(default_factory=list)  # per-file records for --json


Status = Callable[[str], None]
ProgressFn = Callable[[Progress], None]


def read_image(file: FlashFile) -> bytes:
    """The bytes of a file to flash; an unreadable one is a FlashError naming it."""
    try:
        return file.path.read_bytes()
    except OSError as error:
        raise FlashError(f"{file.path}: {error.strerror or error}") from None


def needed_prompt(profile: BoardProfile, name: str) -> Prompt:
    """The profile's prompt ``name``, which its method cannot do without."""
    prompt = profile.prompt(name)
    if prompt is None:
        raise FlashError(f"{profile.source}: prompts.{name}: the {profile.method} method needs it")
    return prompt


def after_prompt(handle, prompt: Prompt, already: bytes, port_name: str) -> bytes:
    """What follows ``prompt``: found in ``already`` (read with the previous prompt), else
    awaited on the port."""
    text = prompt.text.encode()
    at = already.find(text)
    if at != -1:
        return already[at + len(text) :]
    return expect(handle, prompt, port_name=port_name)


def rest_of_line(handle, after: bytes, timeout: float = 1.0) -> bytes:
    """What follows the end of the prompt's line. WE2 prints "Send data using the xmodem
    protocol from your terminal" and then its ``C``: the rest of that line must not reach
    the XMODEM sender, which counts every stray byte as an error and gives up at 16."""
    deadline = time.monotonic() + timeout
    while b"\n" not in after and time.monotonic() < deadline:
        after += handle.read(max(1, handle.in_waiting))
    return after.rsplit(b"\n", 1)[-1] if b"\n" in after else b""


# ------------------------------------------------------------------------- any board
NEEDS = ("port", "mcc_port", "drive", "probe", "tool")


class NeedMissing(FlashError):
    """A flash method's need that nobody supplied (``need`` is one of NEEDS): each front
    end adds its own advice (the CLI names its option, the Boards tab its control)."""

    def __init__(self, need: str, message: str) -> None:
        super().__init__(message)
        self.need = need
