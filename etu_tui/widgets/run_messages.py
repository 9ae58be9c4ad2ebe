"""What a run's listener (on the process's reader threads) and the Run tab's workers post
to the widget that started them (the panel, the past-runs list, a pane). None bubbles."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from textual.message import Message

if TYPE_CHECKING:
    from pathlib import Path

    from etu.fvp.launch import FvpLaunch
    from etu.parsers.runner_events import Event
    from etu.runner.process import ProcessStats
    from etu.runner.run import RunController, RunOutcome
    from etu.runner.run_model import Chunk, LaunchInfo, PastRun, RunRecord


class BatchAck(Protocol):
    """What posted a :class:`RunBatch` (the Run tab's RunBridge): told when the panel has
    taken it, so the next batch may go."""

    def delivered(self) -> None: ...


class RunMessage(Message, bubble=False):
    """Base of the Run panel's messages: handled there, never bubbled."""


@dataclass
class RunPreparing(RunMessage, bubble=False):
    """What the start worker is doing before the run starts (building the runner with the
    chosen inputs: each build stage)."""

    run_id: int
    text: str


@dataclass
class PreflightChecked(RunMessage, bubble=False):
    """The pre-flight of a run on chosen inputs, checked by a worker (it reads the runner
    built with them): what would make it fail, and what to know."""

    problems: list[str]
    notes: list[str]


@dataclass
class RunStarted(RunMessage, bubble=False):
    """The process of run ``run_id`` is about to start; ``controller`` can stop it."""

    run_id: int
    controller: RunController
    launch: LaunchInfo


@dataclass
class RunBatch(RunMessage, bubble=False):
    """Events of a run coalesced by its listener: ``chunks`` of (host arrival time,
    events). ``bridge.delivered()`` lets the listener post the next batch."""

    run_id: int
    chunks: list[Chunk]
    bridge: BatchAck


@dataclass
class RunStats(RunMessage, bubble=False):
    run_id: int
    stats: ProcessStats


@dataclass
class RunEnded(RunMessage, bubble=False):
    """The run ended (``outcome``: runner.run.RunOutcome); ``chunks`` are its last events."""

    run_id: int
    outcome: RunOutcome
    chunks: list[Chunk]


@dataclass
class RunFailed(RunMessage, bubble=False):
    """The run could not start (no FVP, no ELF, no session folder): one line."""

    run_id: int
    message: str


@dataclass
class LaunchPreviewed(RunMessage, bubble=False):
    """What the next run would start (an FVP's launch, or the emulated board's command),
    or why it cannot."""

    request: int
    launch: FvpLaunch | LaunchInfo | None
    error: str | None


@dataclass
class PastRunsListed(RunMessage, bubble=False):
    request: int
    runs: list[PastRun]  # newest first
    live: str | None = None  # this console's run's folder name ("" while it starts)
    stable: bool = False  # screenshots: session names masked


@dataclass
class PastRunRead(RunMessage, bubble=False):
    request: int
    record: RunRecord


@dataclass
class PastRunEvents(RunMessage, bubble=False):
    """A shown past run's reports, parsed from its log after its lines were shown."""

    request: int
    record: RunRecord  # the record they belong to
    others: list[Event]  # its events other than lines
    errors: int  # its E and F lines
    failure: str | None = None  # why there are none (the child parsing them failed)


@dataclass
class OutputsCompared(RunMessage, bubble=False):
    """The outputs of the run ``run`` against the host runtime: the `etu
    compare --json` record, or why there is none (one line)."""

    run: RunRecord
    record: dict[str, object] | None
    note: str | None


@dataclass
class OperatorsRead(RunMessage, bubble=False):
    """The per-operator table of the ETDump of the run ``run`` (``{"rows",
    "time_note"}``), or why it could not be read (one line)."""

    run: RunRecord
    table: dict[str, object] | None
    note: str | None


@dataclass
class FaultDecoded(RunMessage, bubble=False):
    """The banner's lines for the hard fault of ``run``, symbolised against ``elf``."""

    run: RunRecord
    elf: Path | None
    lines: list[str]
