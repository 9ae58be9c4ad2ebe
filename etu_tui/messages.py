"""What the loading worker hands to the UI, and the messages that carry it.

The worker decodes everything the views need (delegate payloads, CPU operators) off the
UI thread and posts one message; handlers on the App own all state from there.
"""

from __future__ import annotations

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


class ProgramLoaded(Message):
    """A program decoded; ``request`` tells a stale load from the current one."""

    def __init__(self, facts: ProgramFacts, request: int) -> None:
        super().__init__()
        self.facts = facts
        self.request = request


class ProgramFailed(Message):
    """A program could not be opened; ``message`` is one line for the user."""

    def __init__(self, path: Path, message: str, request: int) -> None:
        super().__init__()
        self.path = path
        self.message = message
        self.request = request
