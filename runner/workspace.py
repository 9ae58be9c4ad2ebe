"""A workspace, headless: its program, Vela output, firmware ELF (with the ``.map`` and
``.ld`` beside it), sessions and compile jobs, found and loaded the same way for the CLI and
the console.

Blocking functions, no widgets and no Textual: the console's workers call them off the UI
thread; ``etu elf``, ``etu fit`` and ``etu run`` call them directly. Every failure becomes a
one-line text naming files by label (relative to the workspace), never by absolute path.

A workspace is a folder (``etu init`` marks one with ``etu.toml``) holding ``*.pte``
programs, ``vela/`` (Vela's output), each program's firmware in ``PROGRAM.<board>/`` and its
own in ``firmware/*.elf`` (+ ``.map``/``.ld``, see :func:`find_firmware`), ``.etu/sessions/``
(recorded runs) and ``.etu/compile/`` (compile jobs). The demo workspace ships inside the
package, which may be read-only once installed: :func:`writable_workspace` gives a copy in
the user's data folder.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from etu.parsers.elf_map import Symbol
from etu.parsers.errors import ParseError, WrongKindError, describe_error, find_parse_error
from etu.parsers.memory_map import MemoryMap, load_memory_map
from etu.runner.session import sessions_root

if TYPE_CHECKING:  # the decoders load on first use: `etu elf` needs only the memory map
    from etu.parsers.fit import Verdict
    from etu.parsers.pte import Program
    from etu.parsers.vela import VelaReport

VELA_FOLDER = "vela"  # where `etu compile` leaves Vela's output, beside the .pte
FIRMWARE_FOLDER = "firmware"  # a workspace's own runner ELF (and its .map, .ld)
RUNNER_ELF = "arm_executor_runner.elf"  # what `etu firmware build` writes in PROGRAM.<board>/
# The boards `etu firmware build --board` builds for (runner/runtime_build.py's BOARDS).
FIRMWARE_BOARDS = ("qemu-an547", "corstone-300", "corstone-320")
DEFAULT_PRESET = "corstone-300"  # the runner's layout when nothing else names the regions
TOP_SYMBOLS = 50


# Where a workspace keeps programs below its root: compile jobs written with ``--out DIR``
# (``DIR/<job>/x.pte``) and the console's own (``.etu/compile/<job>/x.pte``).
PROGRAM_SUBFOLDERS = ("*/*.pte", "*/*/*.pte", ".etu/compile/*/*.pte")


def resolve_target(target: Path) -> Path:
    """A workspace folder opens its first ``*.pte`` by name, else the newest program in its
    sub-folders (compile jobs); a file opens as is."""
    if target.is_dir():
        programs = sorted(p for p in target.glob("*.pte") if p.is_file())
        if programs:
            return programs[0]
        nested = nested_programs(target)
        if not nested:
            name = target.name or str(target.absolute())
            raise WrongKindError("folder holds no .pte file, nor do its compile jobs", source=name)
        return max(nested, key=lambda p: (p.stat().st_mtime, str(p)))
    return target


def nested_programs(root: Path) -> list[Path]:
    """The programs in ``root``'s compile jobs (``--out DIR`` and ``.etu/compile``), by path."""
    found: set[Path] = set()
    for pattern in PROGRAM_SUBFOLDERS:
        try:
            found.update(p for p in root.glob(pattern) if p.is_file())
        except OSError:
            continue
    return sorted(found)


def error_line(error: BaseException, path: Path) -> str:
    """One line naming the file (by name, not path) and what is wrong with it."""
    return describe_error(error, path.name)


# --------------------------------------------------------------------------- Vela


@dataclass(slots=True)
class VelaResult:
    """One Vela report as the NPU tab knows it: loaded, failed, or not found.

    ``label`` names it for the views (``vela/``, ``30_u85_256_et_default_perf/``), never by
    an absolute path; it is None when the workspace has no Vela output. ``path`` is what was
    read, kept off screen.
    """

    label: str | None
    path: Path | None = None
    report: VelaReport | None = None
    error: str | None = None  # one line, when the report could not be read
    note: str | None = None  # why a Vela output found beside the program is not its own

    def relative(self, text: str) -> str:
        """``text`` with the report's absolute path replaced by its label."""
        if self.path is None or self.label is None:
            return text
        root = str(self.path)
        label = self.label.rstrip("/")
        return text.replace(root + os.sep, label + "/").replace(root, label)


def find_vela_output(folder: Path) -> Path | None:
    """Vela output of a workspace: its ``vela/`` folder, else summary CSVs beside the .pte."""
    sub = folder / VELA_FOLDER
    if sub.is_dir():
        return sub
    try:
        if any(p.is_file() for p in folder.glob("*_summary_*.csv")):
            return folder
    except OSError:
        return None
    return None


def vela_label(path: Path, workspace: Path | None = None) -> str:
    """A short name: relative to ``workspace`` when inside it; folders end with ``/``."""
    try:
        name = path.resolve().name or str(path)
    except OSError:
        name = path.name or str(path)
    if workspace is not None:
        try:
            relative = path.resolve().relative_to(workspace.resolve())
            name = str(relative) if str(relative) != "." else (workspace.resolve().name or ".")
        except (OSError, ValueError):
            pass
    return name + "/" if path.is_dir() else name


def vela_error_line(error: BaseException, path: Path, label: str) -> str:
    """One line naming the Vela file (relative to ``label``) and what is wrong with it."""
    found = find_parse_error(error)
    if found is None or not found.source:
        return describe_error(error, label)
    where = label
    source = Path(found.source)
    if path.is_dir():
        try:
            inside = source.relative_to(path)
            where = label if str(inside) == "." else f"{label.rstrip('/')}/{inside}"
        except ValueError:
            where = source.name
    elif source != path:
        where = source.name
    return describe_error(found, where)


def load_vela(path: Path, label: str) -> VelaResult:
    """Read one Vela output folder or file; any failure becomes a one-line error. Blocking."""
    from etu.parsers.vela import load_vela_report

    try:
        return VelaResult(label, path, report=load_vela_report(path))
    except Exception as error:  # a bad report must become a message, never a crash
        return VelaResult(label, path, error=vela_error_line(error, path, label))


def workspace_vela(program: Path) -> VelaResult:
    """The Vela report beside ``program`` (a .pte or a workspace folder), if there is one
    and it is that program's (see :func:`vela_owner_problem`)."""
    folder = program if program.is_dir() else program.parent
    found = find_vela_output(folder)
    if found is None:
        return VelaResult(None)
    label = vela_label(found, folder)
    if not program.is_dir():
        problem = vela_owner_problem(program, found, label)
        if problem is not None:
            return VelaResult(None, found, note=problem)
    return load_vela(found, label)


def vela_owner_problem(program: Path, found: Path, label: str) -> str | None:
    """Why the Vela output ``found`` is not ``program``'s, or None when it is (or cannot be
    told apart). Its compile record names the program it was written for (by the program's
    hash, or its delegates' payloads); without a record, a program with no Ethos-U delegate
    has no Vela report of its own."""
    from etu.parsers.errors import ParseError
    from etu.parsers.ethosu import is_ethosu_delegate
    from etu.parsers.pte import open_program
    from etu.runner.tosa_graphs import compile_record, record_is_for

    name = program.name
    try:
        record = compile_record(found if found.is_dir() else found.parent)
        if record is not None:
            if not record_is_for(program, record):
                return f"{label} holds another program's Vela report: not shown for {name}"
            if not record.get("delegates"):
                return f"{label} is {name}'s compile record: a CPU-only compile ran no Vela"
            return None
        with open_program(program) as opened:
            delegated = any(is_ethosu_delegate(d.id) for plan in opened.plans
                            for d in plan.delegates)  # fmt: skip
    except (ParseError, OSError):
        return None  # the program's own errors are shown by the Program tab
    if not delegated:
        return f"{name} has no Ethos-U delegate: the Vela report in {label} is another program's"
    return None


# --------------------------------------------------------------------------- firmware


@dataclass(slots=True)
class FirmwareResult:
    """One firmware ELF as the Memory and Fit tabs know it: its memory map, the verdicts of
    the fit check against the open program, or why either could not be had.

    ``label`` names the ELF for the views (``firmware/arm_executor_runner.elf`` relative to
    the workspace, else its file name); None when the workspace has no firmware. Every text
    here (warnings, errors) names files by label or name, never by an absolute path.
    """

    label: str | None
    path: Path | None = None
    memory_map: MemoryMap | None = None
    regions_text: str = ""  # where the regions came from: "from ld map arm_executor_runner.map"
    symbols: list[Symbol] = field(default_factory=list)  # the largest symbols, largest first
    warnings: list[str] = field(default_factory=list)
    verdicts: list[Verdict] | None = None  # failing first; None when the check did not run
    error: str | None = None  # one line: the ELF (so the map) could not be read
    fit_error: str | None = None  # one line: the fit check could not run
    program: str = ""  # the file name of the program the verdicts are for
    vela: str | None = None  # the label of the Vela report the check used, if any
    picked: bool = False  # chosen with the pick-ELF action, not found in the workspace
    request: int = 0  # tells a stale result from the current one


# Where a program's firmware lives (one rule for `etu firmware build`, `etu run --board`,
# `etu fit` and the Run, Boards, Memory and Fit tabs):
#   1. a firmware ELF opened as the program is its own firmware;
#   2. PROGRAM.<board>/arm_executor_runner.elf beside the program: what `etu firmware build
#      --board B PROGRAM.pte` writes (without --out) and `etu run --board B PROGRAM.pte`
#      builds into or reuses; for a given board only that board's folder, for none the
#      first of qemu-an547, corstone-300, corstone-320 that exists;
#   3. the workspace's own firmware: the first firmware/*.elf by name, else the first *.elf
#      in the workspace folder.


def firmware_dir(program: Path, board: str) -> Path:
    """The folder the runner firmware of ``program`` for ``board`` goes in and is found in:
    ``PROGRAM.<board>/`` beside the program."""
    program = Path(program)
    return program.with_name(f"{program.stem}.{board}")


def board_for_target(target: str | None) -> str | None:
    """The firmware board a run target runs on: a board is itself (the Run tab's emulated
    board is ``qemu-an547``), an Ethos-U target its Corstone FVP's (``ethos-u55-128`` →
    ``corstone-300``, ``ethos-u85-256`` → ``corstone-320``); None when unknown."""
    if not target:
        return None
    if target in FIRMWARE_BOARDS:
        return target
    from etu.fvp.targets import fvp_target

    try:
        return fvp_target(target).platform
    except ValueError:
        return None


def program_firmware(program: Path, board: str | None = None) -> Path | None:
    """The ELF ``etu firmware build`` made for ``program`` (rule 2): for ``board``, else for
    the first board that has one."""
    for each in (board,) if board else FIRMWARE_BOARDS:
        elf = firmware_dir(program, each) / RUNNER_ELF
        if elf.is_file():
            return elf
    return None


def program_target_of(program: Path) -> str | None:
    """The Ethos-U target a program file was compiled for; None when it names none or
    cannot be read (opening it says why)."""
    from etu.parsers.program_facts import decode_facts, program_target

    try:
        facts = decode_facts(program)
    except (ParseError, OSError):
        return None
    try:
        return program_target(facts)
    finally:
        facts.program.close()


def workspace_firmware(root: Path) -> Path | None:
    """A workspace's own firmware (rule 3): the first ``firmware/*.elf``, else ``*.elf``."""
    for where in (root / FIRMWARE_FOLDER, root):
        try:
            found = sorted(p for p in where.glob("*.elf") if p.is_file())
        except OSError:
            continue
        if found:
            return found[0]
    return None


def find_firmware(root: Path, program: Path | None = None, board: str | None = None) -> Path | None:
    """The firmware a program of the workspace ``root`` runs in, on ``board`` when given:
    the rule above, in order; None when there is none."""
    if program is not None and program.suffix.lower() == ".elf" and program.is_file():
        return program
    if program is not None:
        built = program_firmware(program, board)
        if built is not None:
            return built
    return workspace_firmware(root)


def firmware_places(root: Path, program: Path | None, board: str | None) -> str:
    """Where :func:`find_firmware` looked, relative to ``root``, for a one-line message."""
    places = [f"{FIRMWARE_FOLDER}/*.elf", "*.elf"]
    if program is not None and program.suffix.lower() != ".elf":
        places.insert(0, file_label(firmware_dir(program, board or "<board>"), root) + "/")
    return ", ".join(places)


def sidecar(elf: Path, suffix: str) -> Path | None:
    """The file beside ``elf`` with its stem and ``suffix``, else the only ``*suffix`` there."""
    same = elf.with_suffix(suffix)
    if same.is_file():
        return same
    try:
        others = [p for p in elf.parent.glob(f"*{suffix}") if p.is_file()]
    except OSError:
        return None
    return others[0] if len(others) == 1 else None


def file_label(path: Path, workspace: Path | None) -> str:
    """``path`` relative to ``workspace`` when inside it, else its file name."""
    if workspace is not None:
        try:
            return str(path.resolve().relative_to(workspace.resolve()))
        except (OSError, ValueError):
            pass
    return path.name or str(path)


def _where(error: ParseError, names: dict[str, str], fallback: str) -> str:
    """``file: detail`` with the file named by its label."""
    source = error.source or ""
    return describe_error(error, names.get(source, Path(source).name if source else fallback))


def _relative(text: str, names: dict[str, str]) -> str:
    for path, name in sorted(names.items(), key=lambda item: -len(item[0])):
        text = text.replace(path, name)
    return text


REGIONS_FROM = {
    "ld_map": "ld map",
    "linker_script": "linker script",
    "regions": "given regions",
    "preset": "preset",
    "guessed": "guessed",
}


def read_memory_map(elf: Path, label: str) -> tuple[MemoryMap, str, list[str], dict[str, str]]:
    """The map of ``elf``, its regions from the ``.map`` beside it, else the ``.ld`` beside
    it, else the preset every section fits, else the runner's Corstone-300 layout.

    Returns (map, where the regions came from, notes, path → label). A map or script that
    cannot be read is skipped with a note; an ELF that cannot be read raises ParseError."""
    names = {str(elf): label}
    notes: list[str] = []
    memory_map: MemoryMap | None = None
    for suffix, option in ((".map", "map_path"), (".ld", "script_path")):
        extra = sidecar(elf, suffix)
        if extra is None:
            continue
        names[str(extra)] = extra.name
        try:
            memory_map = load_memory_map(elf, **{option: extra})
            break
        except ParseError as error:
            if error.source is not None and Path(error.source) == elf:
                raise
            notes.append(f"{_where(error, names, extra.name)} (not used)")
    if memory_map is None:
        memory_map = load_memory_map(elf)
        if not memory_map.regions and memory_map.elf.is_arm:
            memory_map = load_memory_map(elf, preset=DEFAULT_PRESET)
            notes.append(
                f"no .map or .ld beside {elf.name}: regions are the runner's {DEFAULT_PRESET} "
                "layout"
            )
    source = REGIONS_FROM.get(memory_map.regions_from or "", "nowhere")
    if memory_map.regions_from == "ld_map" or memory_map.regions_from == "linker_script":
        source += f" {Path(memory_map.regions_source or '').name}"
    elif memory_map.regions_from in ("preset", "guessed") and memory_map.preset:
        source += f" {memory_map.preset}"
    return memory_map, f"from {source}", notes, names


def load_firmware(
    elf: Path | None,
    program: Program | None,
    vela: VelaReport | None,
    *,
    workspace: Path | None,
    program_name: str = "",
    vela_name: str | None = None,
    picked: bool = False,
    request: int = 0,
) -> FirmwareResult:
    """Read ``elf``'s memory map and check ``program`` against it. Blocking; never raises:
    a bad file becomes a one-line error in the result."""
    if elf is None:
        return FirmwareResult(None, program=program_name, request=request)
    label = file_label(elf, workspace)
    result = FirmwareResult(
        label, elf, program=program_name, vela=vela_name, picked=picked, request=request
    )
    try:
        memory_map, source, notes, names = read_memory_map(elf, label)
    except Exception as error:  # a bad file must become a message, never a crash
        result.error = _firmware_error(error, {str(elf): label}, label)
        return result
    result.memory_map = memory_map
    result.regions_text = source
    result.symbols = memory_map.symbols_top(TOP_SYMBOLS)
    result.warnings = [_relative(w, names) for w in [*notes, *memory_map.warnings]]
    if program is None:
        result.fit_error = "no program open to check"
        return result
    from etu.parsers.external_blocks import data_files_beside
    from etu.parsers.fit import check_fit

    try:
        data_files = data_files_beside(program)
        result.verdicts = check_fit(program, memory_map, vela, data_files=data_files)
    except Exception as error:
        result.fit_error = _firmware_error(error, names, program_name or "program")
    return result


def _firmware_error(error: BaseException, names: dict[str, str], label: str) -> str:
    """One line, the files named by label (a ParseError by the file it names)."""
    found = find_parse_error(error)
    if found is not None:
        source = found.source or ""
        where = names.get(source, Path(source).name if source else label)
        return _relative(describe_error(found, where), names)
    return _relative(describe_error(error, label), names)


# --------------------------------------------------------------------------- the workspace

ETU_FOLDER = ".etu"  # etu's own state inside a workspace
COMPILE_FOLDER = "compile"
WORKSPACE_FILE = "etu.toml"  # what `etu init` writes: marks a workspace root
SESSIONS_FOLDER = "sessions"


def compile_root(workspace: Path) -> Path:
    """Where compile jobs go: ``<workspace>/.etu/compile``."""
    return Path(workspace) / ETU_FOLDER / COMPILE_FOLDER


def shared_compile_root(out: Path) -> Path | None:
    """The compile folder a compile into ``out`` shares with the console: the one of the
    workspace (a folder holding ``etu.toml``, as ``etu init`` makes) that ``out`` is in;
    None outside a workspace."""
    root = workspace_of(Path(out).absolute() / "program.pte")
    return compile_root(root) if (root / WORKSPACE_FILE).is_file() else None


def _program_folder(program: Path) -> Path:
    """The folder a program (or a folder) stands in; a firmware ELF in ``PROGRAM.<board>/``
    (:func:`firmware_dir`) stands in the program's folder."""
    folder = program if program.is_dir() else program.parent
    stem, dot, board = folder.name.rpartition(".")
    if not program.is_dir() and dot and stem and board in FIRMWARE_BOARDS:
        return folder.parent
    return folder


def workspace_of(program: Path) -> Path:
    """The workspace a program belongs to (an absolute path): a compiled result's job folder
    (``<ws>/.etu/compile/<job>/x.pte``) belongs to ``<ws>``; a firmware in
    ``PROGRAM.<board>/`` to the program's workspace; a program in a folder holding
    ``etu.toml``, or in a sub-folder of one (``<ws>/build/<job>/x.pte``), to the nearest such
    folder (never the home folder or ``/``); anything else belongs to its folder. (The
    console keeps the open workspace for a program opened inside it: :func:`find_workspace`.)"""
    program = Path(program).absolute()
    folder = _program_folder(program)
    root = folder.parent
    if root.name == COMPILE_FOLDER and root.parent.name == ETU_FOLDER:
        return root.parent.parent
    if (folder / WORKSPACE_FILE).exists():
        return folder
    home = Path.home()
    for above in folder.parents:
        if above in (home, above.parent):
            break
        if (above / WORKSPACE_FILE).is_file():
            return above
    return folder


def _inside(path: Path, root: Path) -> bool:
    try:
        Path(path).absolute().relative_to(Path(root).absolute())
    except ValueError:
        return False
    return True


@dataclass(slots=True)
class Workspace:
    """One workspace, found (not loaded): its root, the program open in it, what lies
    beside (Vela output, firmware with its ``.map``/``.ld``), its programs, the folders for
    sessions and compile jobs, and the ``target`` setting. The console's loader builds one
    and hands it to every panel; the CLI builds the same with :func:`find_workspace`."""

    root: Path
    program: Path | None
    vela: Path | None
    firmware: Path | None  # the rule's firmware for no particular board
    firmware_map: Path | None
    firmware_script: Path | None
    sessions: Path
    compile_jobs: Path
    programs: list[Path] = field(default_factory=list)  # ``*.pte`` in root, then in jobs
    target: str | None = None  # the ``target`` setting (etu.toml over the user's file)
    settings_problem: str | None = None  # one line: a settings file that could not be read

    @property
    def name(self) -> str:
        """What views call the workspace: its folder's name."""
        return self.root.name or str(self.root)

    def firmware_for(self, board: str | None) -> Path | None:
        """The firmware the program runs in on ``board`` (the rule, :func:`find_firmware`)."""
        if board is None:
            return self.firmware
        return find_firmware(self.root, self.program, board)

    def firmware_for_target(self, target: str | None) -> Path | None:
        """The firmware the program runs in for a run target (its board's, else any)."""
        return self.firmware_for(board_for_target(target))

    def firmware_places(self, board: str | None) -> str:
        """Where :meth:`firmware_for` looks, for a 'no firmware' message."""
        return firmware_places(self.root, self.program, board)

    def no_firmware(self, target: str) -> str:
        """Why no firmware was found for ``target``: the board and where the rule looked."""
        board = board_for_target(target)
        places = self.firmware_places(board)
        return f"no firmware ELF for {board or target} in {self.name} (looked for {places})"

    def label(self, path: Path) -> str:
        """``path`` relative to the workspace when inside it, else its file name."""
        return file_label(path, self.root)

    def to_json(self) -> dict:
        def text(path: Path | None) -> str | None:
            return None if path is None else str(path)

        return {
            "root": str(self.root),
            "program": text(self.program),
            "vela": text(self.vela),
            "firmware": text(self.firmware),
            "firmware_map": text(self.firmware_map),
            "firmware_script": text(self.firmware_script),
            "sessions": str(self.sessions),
            "compile_jobs": str(self.compile_jobs),
            "programs": [str(p) for p in self.programs],
            "target": self.target,
        }


def find_workspace(target: Path, within: Path | None = None) -> Workspace:
    """The workspace of ``target`` (a ``.pte``, a firmware ELF or a workspace folder) and
    what it holds. ``within``: the workspace already open; a target inside it keeps it (a
    program opened from a compile job stays in the workspace that made it) unless it lies
    in a workspace of its own below (a folder with ``etu.toml``)."""
    target = Path(target).absolute()
    root = workspace_of(target)
    if within is not None and _inside(target, within):
        within = Path(within).absolute()
        nested = root != within and _inside(root, within) and (root / WORKSPACE_FILE).is_file()
        if not nested:  # a workspace of its own inside (its etu.toml) is its own
            root = within
    program: Path | None
    if target.is_dir():
        try:
            program = resolve_target(target)
        except ParseError:
            program = None
    else:
        program = target
    vela = find_vela_output(program.parent if program is not None else root)
    if vela is None and program is not None and program.parent != root:
        vela = find_vela_output(root)
    firmware = find_firmware(root, program)
    setting, problem = _target_setting(root)
    return Workspace(
        root=root,
        program=program,
        vela=vela,
        firmware=firmware,
        firmware_map=sidecar(firmware, ".map") if firmware is not None else None,
        firmware_script=sidecar(firmware, ".ld") if firmware is not None else None,
        sessions=sessions_root(root),
        compile_jobs=compile_root(root),
        programs=workspace_programs(root),
        target=setting,
        settings_problem=problem,
    )


def workspace_programs(root: Path) -> list[Path]:
    """The workspace's programs: ``*.pte`` in its folder by name, then its compile jobs'."""
    try:
        own = sorted(p for p in root.glob("*.pte") if p.is_file())
    except OSError:
        own = []
    return own + nested_programs(root)


def _target_setting(root: Path) -> tuple[str | None, str | None]:
    """The ``target`` setting for ``root`` and a one-line problem when it could not be read."""
    from etu.runner.config import ConfigError, load_settings

    try:
        settings = load_settings(root)
    except ConfigError as error:
        return None, str(error)
    except OSError as error:
        return None, f"{error.filename or root}: {error.strerror or error}"
    return settings.target, "; ".join(settings.warnings) or None


def compile_jobs(workspace: Path) -> list[Path]:
    """The workspace's compile job folders, by name."""
    root = compile_root(workspace)
    try:
        return sorted(p for p in root.iterdir() if p.is_dir())
    except OSError:
        return []


# --------------------------------------------------------------------------- a writable copy

DEMO_MARK = ".etu-demo-source"  # in a copy: which package files it was copied from


def is_writable(folder: Path) -> bool:
    """True when etu may keep sessions and compile jobs in ``folder``: it is writable and
    not inside an installed package (site-packages is replaced on upgrade)."""
    folder = Path(folder)
    if any(part in ("site-packages", "dist-packages") for part in folder.resolve().parts):
        return False
    return os.access(folder, os.W_OK | os.X_OK)


def user_data_dir() -> Path:
    """etu's folder in the user's data folder (``$XDG_DATA_HOME/etu`` on Linux)."""
    from platformdirs import user_data_path

    return user_data_path("etu", appauthor=False)


def _fingerprint(source: Path) -> str:
    """Names, sizes and mtimes of ``source``'s files (not ``.etu``): a new etu version with a
    new demo makes the copy refresh its files."""
    import hashlib

    digest = hashlib.sha256()
    for path in sorted(source.rglob("*")):
        relative = path.relative_to(source)
        if relative.parts[0] in (ETU_FOLDER, "__pycache__") or not path.is_file():
            continue
        info = path.stat()
        digest.update(f"{relative}\0{info.st_size}\0{int(info.st_mtime)}\n".encode())
    return digest.hexdigest()


def writable_workspace(source: Path, copies: Path | None = None) -> Path:
    """``source`` itself when etu may write there (a source checkout), else a copy of it in
    the user's data folder (``copies``, default :func:`user_data_dir`) whose ``.etu`` (the
    sessions and compile jobs) survives upgrades; the package files are copied again when
    the package's change."""
    source = Path(source)
    if is_writable(source):
        return source
    copy = Path(copies if copies is not None else user_data_dir()) / source.name
    mark = copy / DEMO_MARK
    stamp = _fingerprint(source)
    try:
        current = mark.read_text(encoding="utf-8")
    except OSError:
        current = None
    if current != stamp:
        try:
            _copy_package_files(source, copy, mark, stamp)
        except OSError:
            return source  # no writable data folder either: runs will say where they failed
    return copy


def _copy_package_files(source: Path, copy: Path, mark: Path, stamp: str) -> None:
    import shutil

    copy.mkdir(parents=True, exist_ok=True)
    for path in sorted(source.rglob("*")):
        relative = path.relative_to(source)
        if relative.parts[0] in (ETU_FOLDER, "__pycache__"):
            continue
        target = copy / relative
        if path.is_dir():
            target.mkdir(parents=True, exist_ok=True)
        elif path.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)  # no mode bits: the copy stays writable
    mark.write_text(stamp, encoding="utf-8")
