"""Settings in one place: ``etu.toml`` in the workspace, over the user's file in the
platform's config folder, over built-in defaults; environment variables win over all three.

Every value remembers where it came from (``etu config`` prints it), and a malformed file is
a ``ConfigError`` naming the file, the line and the key, never a traceback. The keymap maps
a console binding id (``start_run``, ``npu`` ...) to a Textual key string (``f5``,
``ctrl+r``, ``r,f5`` for two keys); the console checks the ids, this module the shapes.
"""

from __future__ import annotations

import difflib
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

WORKSPACE_FILE = "etu.toml"
USER_FILE = "config.toml"
APP_NAME = "etu"

# key -> (environment variable or None, kind, default, what it is)
# kind: "path" (relative paths are taken from the file's folder), "str", or a tuple of choices.
SETTINGS: dict[str, tuple[str | None, str, object, str]] = {
    "fvp_dir": (
        "ETU_FVP_DIR",
        "path",
        None,
        "folder holding the Corstone FVP executables (searched before PATH)",
    ),
    "target": ("ETU_TARGET", "target", "ethos-u55-128", "default Ethos-U target"),
    "system_config": (
        "ETU_SYSTEM_CONFIG",
        "system_config",
        None,
        "default Vela system config (none: ExecuTorch's default for the target)",
    ),
    "memory_mode": (
        "ETU_MEMORY_MODE",
        "memory_mode",
        None,
        "default Vela memory mode (none: ExecuTorch's default for the target)",
    ),
    "boards_dir": ("ETU_BOARDS_DIR", "path", "boards", "folder of board profiles"),
    "executorch_src": (
        "ETU_EXECUTORCH_SRC",
        "path",
        None,
        "an ExecuTorch source tree (runner builds, ethos-u-scratch FVPs)",
    ),
    "theme": ("ETU_THEME", "str", "textual-dark", "the console's Textual theme"),
    "coordinator": (
        "LG_COORDINATOR",
        "str",
        None,
        "the labgrid coordinator, HOST:PORT (the Boards tab's places)",
    ),
}
KEYMAP = "keymap"
# Settings that choose what etu executes (a simulator's folder, the CMake code a firmware
# build runs). A workspace file may set them only once the user trusts that file (by path
# and content hash, `etu config trust DIR`), as direnv and VS Code's workspace trust do:
# opening a cloned example must not run its code.
EXECUTING_SETTINGS = frozenset({"fvp_dir", "executorch_src"})
TRUST_FILE = "trusted_workspaces.json"
ENV_VARIABLES = {key: spec[0] for key, spec in SETTINGS.items() if spec[0]}
_KEY_STRING = re.compile(r"^[A-Za-z0-9_+\-]+(,[A-Za-z0-9_+\-]+)*$")


class ConfigError(Exception):
    """A settings file or variable that cannot be used; one line: file:line: key: what."""

    def __init__(self, file: Path | str, line: int | None, key: str | None, what: str) -> None:
        self.file, self.line, self.key, self.what = str(file), line, key, what
        where = f"{file}:{line}" if line else str(file)
        super().__init__(f"{where}: {key}: {what}" if key else f"{where}: {what}")


@dataclass(frozen=True, slots=True)
class Origin:
    """Where a value came from: ``default``, ``user`` / ``workspace`` (a file) or ``env``."""

    source: str
    detail: str = ""  # the file, or the variable's name

    def __str__(self) -> str:
        return f"{self.source} ({self.detail})" if self.detail else self.source


DEFAULT = Origin("default")


@dataclass(slots=True)
class Settings:
    """The effective settings; ``origins[key]`` says where each value came from (keymap
    entries under ``keymap.<id>``)."""

    fvp_dir: Path | None = None
    target: str = "ethos-u55-128"
    system_config: str | None = None
    memory_mode: str | None = None
    boards_dir: Path | None = None
    executorch_src: Path | None = None
    theme: str = "textual-dark"
    coordinator: str | None = None
    keymap: dict[str, str] = field(default_factory=dict)
    origins: dict[str, Origin] = field(default_factory=dict)
    files: list[Path] = field(default_factory=list)  # the files that were read, lowest first
    workspace: Path | None = None
    env: dict[str, str] = field(default_factory=dict)  # the ETU_* variables that were set
    # settings an untrusted workspace file set and etu ignored: key → (file, line, value)
    ignored: dict[str, tuple[str, int | None, str]] = field(default_factory=dict)

    @property
    def warnings(self) -> list[str]:
        """One line per ignored setting, naming the key and how to trust the file."""
        return [
            f"{file}{f':{line}' if line else ''}: {key} = {value!r} ignored: a workspace file "
            f"may not choose what etu runs; trust it with `etu config trust "
            f"{Path(file).parent}` or set {key} in your user config or "
            f"${ENV_VARIABLES[key]}"
            for key, (file, line, value) in sorted(self.ignored.items())
        ]

    def origin(self, key: str) -> Origin:
        return self.origins.get(key, DEFAULT)

    def to_json(self) -> dict:
        values = {key: _plain(getattr(self, key)) for key in SETTINGS}
        return {
            "workspace": _plain(self.workspace),
            "files": [str(f) for f in self.files],
            "settings": {
                key: {"value": values[key], "origin": str(self.origin(key))} for key in SETTINGS
            },
            "keymap": {
                binding: {"key": key, "origin": str(self.origin(f"{KEYMAP}.{binding}"))}
                for binding, key in sorted(self.keymap.items())
            },
            "environment": {name: os_value for name, os_value in sorted(self.env.items())},
            "ignored": {
                key: {"file": file, "line": line, "value": value}
                for key, (file, line, value) in sorted(self.ignored.items())
            },
        }


def _plain(value):
    return str(value) if isinstance(value, Path) else value


def user_config_file() -> Path:
    """``config.toml`` in the platform's config folder (``$XDG_CONFIG_HOME/etu`` on Linux)."""
    import platformdirs

    return platformdirs.user_config_path(APP_NAME) / USER_FILE


def load_settings(
    workspace: Path | None,
    *,
    env: dict[str, str] | None = None,
    user_file: Path | None = None,
) -> Settings:
    """Defaults, then the user file, then ``workspace/etu.toml``, then the environment."""
    env = dict(os.environ if env is None else env)
    settings = Settings(workspace=Path(workspace).absolute() if workspace is not None else None)
    if settings.workspace is not None:
        settings.boards_dir = settings.workspace / "boards"
    user_file = user_config_file() if user_file is None else Path(user_file)
    layers = [(user_file, "user")]
    if settings.workspace is not None:
        layers.append((settings.workspace / WORKSPACE_FILE, "workspace"))
    for path, source in layers:
        if os.path.lexists(path):  # a FIFO, a device, a folder is an error, not skipped
            trusted = source == "user" or is_trusted(path, user_file.parent)
            _apply_file(settings, path, Origin(source, str(path)), trusted=trusted)
    _apply_env(settings, env)
    return settings


def _apply_file(settings: Settings, path: Path, origin: Origin, *, trusted: bool) -> None:
    from etu.parsers.errors import ParseError
    from etu.parsers.files import MiB, read_regular

    try:
        text = read_regular(path, "a settings file", 16 * MiB).decode("utf-8")
    except ParseError as error:
        raise ConfigError(path, None, None, error.detail) from None
    except UnicodeDecodeError as error:
        raise ConfigError(path, None, None, f"not UTF-8 text: {error.reason}") from None
    try:
        data = tomllib.loads(text)
    except RecursionError:
        raise ConfigError(path, None, None, "not valid TOML: nested too deeply") from None
    except tomllib.TOMLDecodeError as error:
        line = getattr(error, "lineno", None) or _line_from_message(str(error))
        if line is None and "end of document" in str(error):
            line = max(1, len(text.splitlines()))
        what = re.sub(r" \(at (line \d+, column \d+|end of document)\)", "", str(error))
        raise ConfigError(path, line, None, f"not valid TOML: {what}") from None
    settings.files.append(path)
    for key, value in data.items():
        line = _line_of(text, None, key)
        if key == KEYMAP:
            if not isinstance(value, dict):
                raise ConfigError(path, line, key, "must be a table: [keymap] binding = 'key'")
            for binding, keys in value.items():
                where = _line_of(text, KEYMAP, binding)
                if not isinstance(keys, str) or not _KEY_STRING.match(keys.replace(" ", "")):
                    raise ConfigError(
                        path, where, f"keymap.{binding}",
                        f"must be a key string such as 'f5' or 'ctrl+r', not {keys!r}",
                    )  # fmt: skip
                settings.keymap[binding] = keys.replace(" ", "")
                settings.origins[f"{KEYMAP}.{binding}"] = origin
            continue
        if key not in SETTINGS:
            near = difflib.get_close_matches(key, [*SETTINGS, KEYMAP], n=1)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            raise ConfigError(path, line, key, f"unknown setting{hint}")
        checked = _check(key, value, path.parent, path, line)
        if key in EXECUTING_SETTINGS and not trusted:
            settings.ignored[key] = (str(path), line, str(value))
            continue
        setattr(settings, key, checked)
        settings.origins[key] = origin


def _file_hash(path: Path) -> str:
    from etu.parsers.files import MiB, sha256_regular

    return sha256_regular(path, "a settings file", 16 * MiB)


def _trust_records(config_folder: Path) -> dict[str, str]:
    import json

    try:
        data = json.loads((config_folder / TRUST_FILE).read_text())
    except (OSError, ValueError, RecursionError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, str)}


def is_trusted(workspace_file: Path, config_folder: Path) -> bool:
    """The user trusted this very file (its absolute path and its current content)."""
    recorded = _trust_records(config_folder).get(str(Path(workspace_file).resolve()))
    if recorded is None:
        return False
    from etu.parsers.errors import ParseError

    try:
        return recorded == _file_hash(workspace_file)
    except ParseError:
        return False


def trust_workspace(workspace: Path, config_folder: Path | None = None) -> Path:
    """Record ``workspace/etu.toml`` (path and content hash) as trusted; its file."""
    import json

    folder = config_folder or user_config_file().parent
    target = (Path(workspace) / WORKSPACE_FILE).resolve()
    if not target.is_file():
        raise ConfigError(target, None, None, "no such workspace file to trust")
    records = _trust_records(folder)
    records[str(target)] = _file_hash(target)
    folder.mkdir(parents=True, exist_ok=True)
    partial = folder / (TRUST_FILE + ".partial")
    partial.write_text(json.dumps(records, indent=2, sort_keys=True) + "\n")
    os.replace(partial, folder / TRUST_FILE)
    return target


def _apply_env(settings: Settings, env: dict[str, str]) -> None:
    settings.env = {name: value for name, value in env.items() if name.startswith("ETU_")}
    for key, name in ENV_VARIABLES.items():
        if env.get(name):
            setattr(settings, key, _check(key, env[name], Path.cwd(), f"${name}", None))
            settings.origins[key] = Origin("env", name)


def _check(key: str, value, base: Path, file, line: int | None):
    """The value in its type, or ConfigError naming what was expected."""
    kind = SETTINGS[key][1]
    if not isinstance(value, str):
        raise ConfigError(file, line, key, f"must be a string, not {type(value).__name__}")
    if kind == "path":
        path = Path(value).expanduser()
        return path if path.is_absolute() else base / path
    if kind in ("target", "system_config", "memory_mode"):
        from etu.runner.compile_request import MEMORY_MODES, SYSTEM_CONFIGS, TARGETS

        choices = {"target": TARGETS, "system_config": SYSTEM_CONFIGS, "memory_mode": MEMORY_MODES}
        if value not in choices[kind]:
            raise ConfigError(
                file, line, key, f"unknown value {value!r}; one of {', '.join(choices[kind])}"
            )
    return value


def _line_from_message(message: str) -> int | None:
    match = re.search(r"at line (\d+)", message)
    return int(match.group(1)) if match else None


def _line_of(text: str, table: str | None, key: str) -> int | None:
    """The line where ``key`` is set in ``table`` (None: the top level), for messages."""
    current: str | None = None
    pattern = re.compile(rf"^\s*(\"{re.escape(key)}\"|'{re.escape(key)}'|{re.escape(key)})\s*=")
    for number, line in enumerate(text.splitlines(), 1):
        header = re.match(r"^\s*\[([^\]]+)\]", line)
        if header:
            current = header.group(1).strip()
            if current == key and table is None:
                return number
            continue
        if current == table and pattern.match(line):
            return number
    return None


def workspace_template(settings: Settings | None = None) -> str:
    """The commented ``etu.toml`` that ``etu init`` writes: every setting at its default."""
    lines = [
        f"# etu workspace settings. They override your user file ({user_config_file()}),",
        "# and ETU_* environment variables override both. `etu config` shows the result.",
        "# Relative paths are taken from this folder.",
        "",
    ]
    for key, (variable, _kind, default, what) in SETTINGS.items():
        lines.append(f"# {what}" + (f" (environment: {variable})" if variable else ""))
        shown = "" if default is None else str(default)
        lines.append(f'# {key} = "{shown}"')
        lines.append("")
    lines += [
        "# Console keys: binding id = key string (see the footer and `etu config`).",
        "[keymap]",
        '# start_run = "f5"',
        '# stop_run = "f6"',
        "",
    ]
    return "\n".join(lines)


__all__ = [
    "ENV_VARIABLES",
    "SETTINGS",
    "WORKSPACE_FILE",
    "ConfigError",
    "Origin",
    "Settings",
    "load_settings",
    "user_config_file",
    "workspace_template",
]
