"""What a run's listener (on the process's reader threads) and the Run tab's workers post
to the widget that started them (the panel, the past-runs list, a pane). None bubbles."""

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
    launch: Any  # etu.runner.run_model.LaunchInfo


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
    runs: list  # etu.runner.run_model.PastRun, newest first
    live: str | None = None  # this console's run's folder name ("" while it starts)
    stable: bool = False  # screenshots: session names masked


@dataclass
class PastRunRead(RunMessage, bubble=False):
    request: int
    record: Any  # etu.runner.run_model.RunRecord


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
    """The outputs of the run ``run`` (a RunRecord) against the host runtime: the `etu
    compare --json` record, or why there is none (one line)."""

    run: Any
    record: dict | None
    note: str | None


@dataclass
class OperatorsRead(RunMessage, bubble=False):
    """The per-operator table of the ETDump of the run ``run`` (``{"rows",
    "time_note"}``), or why it could not be read (one line)."""

    run: Any
    table: dict | None
    note: str | None


@dataclass
class FaultDecoded(RunMessage, bubble=False):
    """The banner's lines for the hard fault of ``run``, symbolised against ``elf``."""

    run: Any
    elf: Any  # pathlib.Path | None
    lines: list[str]
