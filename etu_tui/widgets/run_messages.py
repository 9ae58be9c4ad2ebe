"""What a run's listener (on the process's reader threads) and the Run panel's workers post
to the Run panel, which owns the run's state. None of them bubbles past the panel."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from textual.message import Message


class RunMessage(Message, bubble=False):
    """Base of the Run panel's messages: handled there, never bubbled."""


@dataclass
class RunStarted(RunMessage, bubble=False):
    """The process of run ``run_id`` is about to start; ``controller`` can stop it."""

    run_id: int
    controller: Any  # runner.run.RunController
    launch: Any  # etu_tui.widgets.run_model.LaunchInfo


@dataclass
class RunBatch(RunMessage, bubble=False):
    """Events of a run coalesced by its listener: ``chunks`` of (host arrival time,
    events). ``bridge.delivered()`` lets the listener post the next batch."""

    run_id: int
    chunks: list
    bridge: Any  # etu_tui.widgets.run.RunBridge


@dataclass
class RunStats(RunMessage, bubble=False):
    run_id: int
    stats: Any  # runner.process.ProcessStats


@dataclass
class RunEnded(RunMessage, bubble=False):
    """The run ended (``outcome``: runner.run.RunOutcome); ``chunks`` are its last events."""

    run_id: int
    outcome: Any
    chunks: list


@dataclass
class RunFailed(RunMessage, bubble=False):
    """The run could not start (no FVP, no ELF, no session folder): one line."""

    run_id: int
    message: str


@dataclass
class LaunchPreviewed(RunMessage, bubble=False):
    """What the next run would start (``launch``: fvp.launch.FvpLaunch), or why it cannot."""

    request: int
    launch: Any
    error: str | None


@dataclass
class PastRunsListed(RunMessage, bubble=False):
    request: int
    runs: list  # etu_tui.widgets.run_model.PastRun, newest first


@dataclass
class PastRunRead(RunMessage, bubble=False):
    request: int
    record: Any  # etu_tui.widgets.run_model.RunRecord


@dataclass
class PastRunEvents(RunMessage, bubble=False):
    """A shown past run's reports, parsed from its log after its lines were shown."""

    request: int
    record: Any  # the RunRecord they belong to
    others: list  # its events other than lines
    errors: int  # its E and F lines
    failure: str | None = None  # why there are none (the child parsing them failed)


@dataclass
class OutputsCompared(RunMessage, bubble=False):
    """The outputs of the session in ``folder`` against the host runtime: the `etu compare
    --json` record, or why there is none (one line)."""

    folder: Any  # pathlib.Path
    record: dict | None
    note: str | None


@dataclass
class OperatorsRead(RunMessage, bubble=False):
    """The per-operator table of the ETDump in ``folder`` (``{"rows", "time_note"}``), or
    why it could not be read (one line)."""

    folder: Any  # pathlib.Path
    table: dict | None
    note: str | None
