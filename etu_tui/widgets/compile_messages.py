"""What the Compile panel's workers post to it (never bubbled), and the one message it
sends up: open a compiled program."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from textual.message import Message

if TYPE_CHECKING:
    from etu.runner.compile_job import CompileJob, CompileResult


class CompileMessage(Message, bubble=False):
    """Base of the Compile panel's messages: handled there, never bubbled."""


@dataclass
class CompileStarted(CompileMessage, bubble=False):
    """Compile ``job_id`` made its job: it can be cancelled now."""

    job_id: int
    job: CompileJob


@dataclass
class CompileStage(CompileMessage, bubble=False):
    job_id: int
    stage: str
    state: str  # start | done
    seconds: float | None


@dataclass
class CompileLog(CompileMessage, bubble=False):
    """A chunk of the worker's log (not split into lines, not yet made printable)."""

    job_id: int
    text: str


@dataclass
class CompileDone(CompileMessage, bubble=False):
    job_id: int
    result: CompileResult


@dataclass
class SweepRow(CompileMessage, bubble=False):
    sweep_id: int
    row: dict[str, object]  # runner.compile_job.comparison_row


@dataclass
class SweepDone(CompileMessage, bubble=False):
    sweep_id: int
    error: str | None


@dataclass
class OpenCompiled(Message):
    """Open a compiled program in the console; bubbles from the Compile panel to the App."""

    path: Path
