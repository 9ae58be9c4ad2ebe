"""What the loading worker hands to the UI, and the messages that carry it.

The worker decodes everything the views need (delegate payloads, CPU operators, the Vela
report beside the program) off the UI thread and posts one message; handlers on the App own
all state from there.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from textual.message import Message

from parsers.errors import ParseError, WrongKindError
from parsers.program_facts import (
    CpuOperator,
    DelegateInfo,
    cpu_operators,
    delegates,
    select_ops_list,
)
from parsers.pte import DelegateCall, KernelCall, Program, open_program
from parsers.vela import VelaReport, load_vela_report

VELA_FOLDER = "vela"  # where `etu compile` leaves Vela's output, beside the .pte


@dataclass(slots=True)
class ProgramFacts:
    """A decoded program plus the derived facts every view shows."""

    path: Path
    program: Program
    delegates: list[DelegateInfo]
    cpu_ops: list[CpuOperator]
    select_ops: str
    delegate_calls: int
    kernel_calls: int
    other_instructions: int

    @property
    def name(self) -> str:
        """The file name: views show it instead of the path, so screenshots match anywhere."""
        return self.path.name


def resolve_target(target: Path) -> Path:
    """A workspace folder opens its first ``*.pte`` by name; a file opens as is."""
    if target.is_dir():
        programs = sorted(p for p in target.glob("*.pte") if p.is_file())
        if not programs:
            raise WrongKindError("folder holds no .pte file", source=target.name or str(target))
        return programs[0]
    return target


def decode_facts(path: Path) -> ProgramFacts:
    """Decode ``path`` and everything derived from it. Raises ParseError; blocking."""
    program = open_program(path)
    try:
        kernel = delegate = other = 0
        for plan in program.plans:
            for instr in plan.instructions:
                if isinstance(instr, KernelCall):
                    kernel += 1
                elif isinstance(instr, DelegateCall):
                    delegate += 1
                else:
                    other += 1
        return ProgramFacts(
            path=path,
            program=program,
            delegates=delegates(program),
            cpu_ops=cpu_operators(program),
            select_ops=select_ops_list(program),
            delegate_calls=delegate,
            kernel_calls=kernel,
            other_instructions=other,
        )
    except BaseException:
        program.close()
        raise


def error_line(error: BaseException, path: Path) -> str:
    """One line naming the file (by name, not path) and what is wrong with it."""
    found: BaseException | None = error
    while found is not None and not isinstance(found, ParseError):
        found = found.__context__  # e.g. a BufferError raised while unwinding a ParseError
    if isinstance(found, ParseError):
        return f"{path.name}: {found.detail}"
    text = str(error).splitlines()[0] if str(error) else ""
    return f"{path.name}: unexpected {type(error).__name__}" + (f": {text}" if text else "")


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
    found: BaseException | None = error
    while found is not None and not isinstance(found, ParseError):
        found = found.__context__
    if not isinstance(found, ParseError):
        text = str(error).splitlines()[0] if str(error) else ""
        return f"{label}: unexpected {type(error).__name__}" + (f": {text}" if text else "")
    where = label
    if found.source:
        source = Path(found.source)
        if path.is_dir():
            try:
                inside = source.relative_to(path)
                where = label if str(inside) == "." else f"{label.rstrip('/')}/{inside}"
            except ValueError:
                where = source.name
        elif source != path:
            where = source.name
    return f"{where}: {found.detail}"


def load_vela(path: Path, label: str) -> VelaResult:
    """Read one Vela output folder or file; any failure becomes a one-line error. Blocking."""
    try:
        return VelaResult(label, path, report=load_vela_report(path))
    except Exception as error:  # a bad report must become a message, never a crash
        return VelaResult(label, path, error=vela_error_line(error, path, label))


def workspace_vela(program: Path) -> VelaResult:
    """The Vela report beside ``program`` (a .pte or a workspace folder), if there is one."""
    folder = program if program.is_dir() else program.parent
    found = find_vela_output(folder)
    if found is None:
        return VelaResult(None)
    return load_vela(found, vela_label(found, folder))


# --------------------------------------------------------------------------- messages


class ProgramLoaded(Message):
    """A program decoded; ``request`` tells a stale load from the current one.

    ``vela`` is what the worker found beside it; None when it did not look (kept as shown).
    """

    def __init__(self, facts: ProgramFacts, request: int, vela: VelaResult | None = None) -> None:
        super().__init__()
        self.facts = facts
        self.request = request
        self.vela = vela


class ProgramFailed(Message):
    """A program could not be opened; ``message`` is one line for the user."""

    def __init__(self, path: Path, message: str, request: int) -> None:
        super().__init__()
        self.path = path
        self.message = message
        self.request = request


class VelaAdded(Message):
    """A report the user added for comparison was read (or failed: ``result.error``)."""

    def __init__(self, result: VelaResult, order: int = 0) -> None:
        super().__init__()
        self.result = result
        self.order = order  # the add request's number: reports keep the order asked
