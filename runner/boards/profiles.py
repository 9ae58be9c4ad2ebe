"""Board profiles: TOML data, built in (``profiles/*.toml``) and the user's own folder.

A profile says how to find a board (USB VID:PID), how to talk to it (baud, framing), how
to flash it (a transfer method and its settings), what it prints and how long to wait for
each (prompts), its memory layout for ``etu elf``/``etu fit``, and what simulator or
emulator stands for it. The user's folder is ``ETU_BOARDS_DIR`` (or the one a caller
passes); a user profile with a built-in's name replaces it. Every error names the file, the
line and the key.
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from etu.runner.boards.terminal import DEFAULT_EOL, LINE_ENDINGS, RESET_LINES

BUILTIN_DIR = Path(__file__).resolve().parent / "profiles"
ENV_DIR = "ETU_BOARDS_DIR"
METHODS = ("xmodem-wiseeye2", "xmodem", "mps3-drive", "pyocd", "qemu", "vendor-tool")
FRAMING = re.compile(r"([5-8])([NEOMS])(1|1\.5|2)")
_VIDPID = re.compile(r"([0-9A-Fa-f]{4}):([0-9A-Fa-f]{4})")
_KEY = re.compile(r"\s*([A-Za-z0-9_\-]+|\"[^\"]*\")\s*=")
_TABLE = re.compile(r"\s*\[\s*([^\]]+?)\s*\]")


class ProfileError(ValueError):
    """A profile file that cannot be used: ``file:line: key: what``."""


@dataclass(frozen=True, slots=True)
class Prompt:
    """Text a board prints, and how long to wait for it."""

    name: str
    text: str
    timeout: float


@dataclass(frozen=True)
class BoardProfile:
    name: str
    description: str
    source: Path
    builtin: bool
    usb: tuple[tuple[int, int], ...]
    baud: int
    framing: str
    method: str
    transfer: dict  # the method's settings, as written
    prompts: dict[str, Prompt]
    memory_preset: str | None
    memory_regions: tuple[str, ...]  # NAME:ORIGIN:LENGTH
    standin: dict = field(default_factory=dict)
    label: str | None = None  # how runs on it are labelled (e.g. the emulated board)
    reset: str | None = None  # the modem line (dtr, rts) pulsed before flashing/monitoring
    eol: str = "crlf"  # a typed line's ending: cr, lf or crlf

    def matches(self, vid: int | None, pid: int | None) -> bool:
        return vid is not None and (vid, pid) in self.usb

    @property
    def serial_settings(self) -> dict:
        """pyserial keyword arguments for the framing."""
        m = FRAMING.fullmatch(self.framing)
        assert m is not None
        stop = {"1": 1, "1.5": 1.5, "2": 2}[m.group(3)]
        return {"baudrate": self.baud, "bytesize": int(m.group(1)), "parity": m.group(2),
                "stopbits": stop}  # fmt: skip

    @property
    def target(self) -> str | None:
        """What a session on this board records as its target when its program does not
        name one: the stand-in's target (an FVP's), or the emulated board's own name."""
        if self.standin.get("kind") == "qemu":
            return self.name
        target = self.standin.get("target")
        return target if isinstance(target, str) else None

    def prompt(self, name: str) -> Prompt | None:
        return self.prompts.get(name)

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "description": self.description,
            "source": str(self.source),
            "builtin": self.builtin,
            "usb": [f"{v:04X}:{p:04X}" for v, p in self.usb],
            "baud": self.baud,
            "framing": self.framing,
            "method": self.method,
            "transfer": self.transfer,
            "prompts": {n: {"text": p.text, "timeout": p.timeout} for n, p in self.prompts.items()},
            "memory": {"preset": self.memory_preset, "regions": list(self.memory_regions)},
            "standin": self.standin,
            "label": self.label,
            "reset": self.reset,
            "eol": self.eol,
        }


def user_boards_dir() -> Path | None:
    """The user's profile folder: ``ETU_BOARDS_DIR`` when set, else the ``boards_dir``
    setting (runner/config.py: etu.toml, the user's file, default ``boards/`` in the
    workspace); None when the settings cannot be read (``etu config`` says why)."""
    value = os.environ.get(ENV_DIR)
    if value:
        return Path(value).expanduser()
    from etu.runner.config import ConfigError, load_settings

    try:
        return load_settings(Path.cwd(), env={}).boards_dir
    except ConfigError:
        return None


def load_profiles(user_dir: Path | None = None) -> dict[str, BoardProfile]:
    """Built-in profiles, then the user's (which may replace a built-in by name)."""
    profiles: dict[str, BoardProfile] = {}
    for path in sorted(BUILTIN_DIR.glob("*.toml")):
        profile = load_profile(path, builtin=True)
        profiles[profile.name] = profile
    folder = user_dir if user_dir is not None else user_boards_dir()
    if folder is not None and folder.is_dir():
        for path in sorted(folder.glob("*.toml")):
            profile = load_profile(path, builtin=False)
            profiles[profile.name] = profile
    return profiles


def get_profile(name: str, user_dir: Path | None = None) -> BoardProfile:
    profiles = load_profiles(user_dir)
    if name not in profiles:
        raise ProfileError(f"board {name!r}: known boards are {', '.join(sorted(profiles))}")
    return profiles[name]


def load_profile(path: Path, *, builtin: bool = False) -> BoardProfile:
    path = Path(path)
    from etu.parsers.errors import ParseError, describe_error
    from etu.parsers.files import MiB, read_regular

    try:
        text = read_regular(path, "a board profile", MiB).decode("utf-8")
    except ParseError as error:
        raise ProfileError(describe_error(error)) from None
    except UnicodeDecodeError as error:
        raise ProfileError(f"{path}: not UTF-8 text: {error.reason}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ProfileError(f"{path}: {error}") from None
    except RecursionError:
        raise ProfileError(f"{path}: not valid TOML: nested too deeply") from None
    return _Reader(path, text).profile(data, builtin)


class _Reader:
    """Checks each key, and names the line it is on when it is wrong."""

    def __init__(self, path: Path, text: str) -> None:
        self.path = path
        self.lines = text.splitlines()

    def line_of(self, table: str, key: str | None) -> int | None:
        current = ""
        for number, line in enumerate(self.lines, 1):
            stripped = line.split("#", 1)[0]
            header = _TABLE.match(stripped)
            if header and not stripped.lstrip().startswith("[["):
                current = header.group(1)
                if key is None and current == table:
                    return number
                continue
            found = _KEY.match(stripped)
            if key is not None and current == table and found and found.group(1) == key:
                return number
        return None

    def fail(self, table: str, key: str | None, what: str) -> ProfileError:
        line = self.line_of(table, key)
        where = f"{self.path}:{line}" if line else str(self.path)
        name = ".".join(part for part in (table, key) if part)
        return ProfileError(f"{where}: {name or 'profile'}: {what}")

    def get(self, data: dict, table: str, key: str, kind, required: bool = False, default=None):
        if key not in data:
            if required:
                raise self.fail(table, None, f"missing key {key!r}")
            return default
        value = data[key]
        kinds = kind if isinstance(kind, tuple) else (kind,)
        if isinstance(value, bool) and bool not in kinds:
            raise self.fail(table, key, f"expected {kinds[0].__name__}, got a boolean")
        if not isinstance(value, kinds):
            raise self.fail(table, key, f"expected {kinds[0].__name__}, got {value!r}")
        return value

    def table(self, data: dict, name: str) -> dict:
        value = data.get(name, {})
        if not isinstance(value, dict):
            raise self.fail("", name, "expected a table")
        return value

    def profile(self, data: dict, builtin: bool) -> BoardProfile:
        known = {"name", "description", "label", "usb", "serial", "transfer", "prompts",
                 "memory", "standin"}  # fmt: skip
        for key in data:
            if key not in known:
                raise self.fail("", key, f"unknown key (known: {', '.join(sorted(known))})")
        name = self.get(data, "", "name", str, required=True)
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name):
            raise self.fail("", "name", "letters, digits, '.', '_' and '-' only")
        usb_table = self.table(data, "usb")
        usb = []
        for item in self.get(usb_table, "usb", "match", list, default=[]):
            m = _VIDPID.fullmatch(item) if isinstance(item, str) else None
            if m is None:
                raise self.fail("usb", "match", f"{item!r} is not VID:PID (four hex digits each)")
            usb.append((int(m.group(1), 16), int(m.group(2), 16)))
        serial = self.table(data, "serial")
        baud = self.get(serial, "serial", "baud", int, default=115200)
        if baud <= 0:
            raise self.fail("serial", "baud", f"{baud} is not a baud rate")
        framing = self.get(serial, "serial", "framing", str, default="8N1")
        if not FRAMING.fullmatch(framing):
            raise self.fail("serial", "framing", f"{framing!r} is not like 8N1")
        reset = self.get(serial, "serial", "reset", str)
        if reset is not None and reset not in RESET_LINES:
            raise self.fail("serial", "reset", f"{reset!r}: the lines are {', '.join(RESET_LINES)}")
        eol = self.get(serial, "serial", "eol", str, default=DEFAULT_EOL)
        if eol not in LINE_ENDINGS:
            raise self.fail("serial", "eol", f"{eol!r}: line endings are {', '.join(LINE_ENDINGS)}")
        transfer = self.table(data, "transfer")
        method = self.get(transfer, "transfer", "method", str, required=True)
        if method not in METHODS:
            raise self.fail("transfer", "method", f"{method!r}: known methods {', '.join(METHODS)}")
        self._check_transfer(method, transfer)
        prompts = {}
        for key, value in self.table(data, "prompts").items():
            if not isinstance(value, dict):
                raise self.fail("prompts", key, "expected { text = ..., timeout = ... }")
            text = self.get(value, "prompts", "text", str, required=True)
            timeout = self.get(value, "prompts", "timeout", (int, float), default=10.0)
            if not text or timeout <= 0:
                raise self.fail("prompts", key, "needs a text and a positive timeout")
            prompts[key] = Prompt(key, text, float(timeout))
        memory = self.table(data, "memory")
        preset = self.get(memory, "memory", "preset", str)
        if preset is not None:
            from etu.parsers.memory_presets import PRESETS

            if preset not in PRESETS:
                raise self.fail("memory", "preset", f"{preset!r}: presets are {', '.join(PRESETS)}")
        regions = self.get(memory, "memory", "regions", list, default=[])
        for spec in regions:
            if not isinstance(spec, str) or spec.count(":") != 2:
                raise self.fail("memory", "regions", f"{spec!r} is not NAME:ORIGIN:LENGTH")
        return BoardProfile(
            name=name,
            description=self.get(data, "", "description", str, default=""),
            source=self.path,
            builtin=builtin,
            usb=tuple(usb),
            baud=baud,
            framing=framing,
            method=method,
            transfer=dict(transfer),
            prompts=prompts,
            memory_preset=preset,
            memory_regions=tuple(regions),
            standin=dict(self.table(data, "standin")),
            label=self.get(data, "", "label", str),
            reset=reset,
            eol=eol,
        )

    def _check_transfer(self, method: str, transfer: dict) -> None:
        if method.startswith("xmodem"):
            block = self.get(transfer, "transfer", "block", int, default=128)
            if block not in (128, 1024):
                raise self.fail("transfer", "block", f"{block}: XMODEM blocks are 128 or 1024")
            self.get(transfer, "transfer", "retries", int, default=16)
        if method == "mps3-drive":
            images_dir = self.get(transfer, "transfer", "images_dir", str, required=True)
            parts = Path(images_dir).parts
            if Path(images_dir).is_absolute() or ".." in parts or not parts:
                raise self.fail(
                    "transfer", "images_dir",
                    f"{images_dir!r}: a folder inside the board's drive (relative, no '..')",
                )  # fmt: skip
            for entry in self.get(transfer, "transfer", "address_map", list, default=[]):
                if not (isinstance(entry, dict) and {"cpu", "mcc", "size"} <= set(entry)):
                    raise self.fail("transfer", "address_map", "entries are {cpu, mcc, size}")
            update = self.get(transfer, "transfer", "update", str, default="AUTO")
            if update not in ("AUTO", "NONE", "FORCE"):
                raise self.fail("transfer", "update", f"{update!r}: AUTO, NONE or FORCE")
        if method == "vendor-tool":
            self._check_vendor_tool(transfer)

    def _check_vendor_tool(self, transfer: dict) -> None:
        """``tool`` (looked up on PATH), ``commands`` (argv lists; ``{file}``, ``{port}``),
        ``cwd = "tool"`` to run them in the tool's folder, ``vendor`` and ``folder`` to
        name them when the tool is not installed."""
        self.get(transfer, "transfer", "tool", str, required=True)
        self.get(transfer, "transfer", "vendor", str)
        self.get(transfer, "transfer", "folder", str)
        commands = self.get(transfer, "transfer", "commands", list, required=True)
        for argv in commands:
            if not (isinstance(argv, list) and argv and all(isinstance(a, str) for a in argv)):
                raise self.fail("transfer", "commands", "each command is a list of strings")
            for arg in argv:
                try:
                    arg.format_map({"file": "", "port": ""})
                except (KeyError, ValueError, IndexError) as error:
                    raise self.fail("transfer", "commands",
                                    f"{arg!r}: placeholders are {{file}} and {{port}} ({error})"
                                    ) from None  # fmt: skip
        cwd = self.get(transfer, "transfer", "cwd", str)
        if cwd not in (None, "tool"):
            raise self.fail("transfer", "cwd", f"{cwd!r}: 'tool' (the tool's folder) or unset")


__all__ = [
    "BUILTIN_DIR",
    "ENV_DIR",
    "BoardProfile",
    "ProfileError",
    "Prompt",
    "get_profile",
    "load_profile",
    "load_profiles",
    "user_boards_dir",
]
