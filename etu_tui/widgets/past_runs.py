"""The Run tab's list of past runs: the recorded sessions of the workspace, newest first.

It lists them, reads the chosen one (the lines first, then the reports, parsed in a child
process for a long session) and replays one into a live run, all in workers; it posts
:class:`PastRunsList.ShowRecord` for the Run panel to show and never touches the panes.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from textual import on
from textual.content import Content
from textual.message import Message
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from etu.parsers.errors import describe_error
from etu.runner.isolated import ChildError
from etu.runner.run import RunListener, RunOutcome
from etu.runner.run_model import RING_LINES, PastRun, RunRecord, list_past_runs, read_past_run
from etu.runner.run_store import FileLogStore
from etu.runner.session import RAW as RAW_LOG
from etu.runner.session_events import EventsChild
from etu.tui.widgets.run_messages import PastRunEvents, PastRunRead, PastRunsListed
from etu.tui.widgets.run_panes import REASON_MARK, session_name

LIVE_OPTION = "live"


class PastRunsList(OptionList):
    """Recorded sessions of this workspace, newest first; Enter re-reads one."""

    DEFAULT_CSS = """
    PastRunsList {
        height: 1fr;
        border: round $primary;
        border-title-style: bold;
        border-subtitle-color: $text-muted;
        &:focus { border: round $accent; }
    }
    """

    @dataclass
    class ShowRecord(Message):
        """Show this run in the panes (a past one read back); None: this console's live run."""

        record: RunRecord | None

    @dataclass
    class RecordUpdated(Message):
        """A shown past run's reports (PMU, outputs, faults) were added after its lines."""

        record: RunRecord

    def __init__(self, *, id: str | None = None, capacity: int = RING_LINES) -> None:
        super().__init__(id=id)
        self.capacity = capacity  # log lines kept on screen for a run read into memory
        self.runs: list[PastRun] = []
        self.pending = 0  # lists and session reads in flight
        self._requests = {"list": 0, "read": 0}
        self._lock = threading.Lock()
        self._closing = False
        self._children: set[EventsChild] = set()

    def on_unmount(self) -> None:
        self.close()

    def close(self) -> None:
        """Stop parsing the reports of a long session (the console is closing)."""
        with self._lock:
            self._closing = True
            children = list(self._children)
        for child in children:
            child.kill()

    # -- the list ----------------------------------------------------------------------

    def list_runs(self, root: Path, live: str | None, stable: bool) -> None:
        """List the sessions under ``root`` in a worker; ``live`` is the folder name of this
        console's current run ("" while it starts), None when there is none."""
        self._requests["list"] += 1
        self.pending += 1
        self.run_worker(
            partial(self._list_in_thread, self._requests["list"], root, live, stable),
            thread=True,
            group="run-list",
            exit_on_error=False,
        )

    def _list_in_thread(self, request: int, root: Path, live: str | None, stable: bool) -> None:
        try:
            runs = list_past_runs(root)
        except Exception:  # an unreadable sessions folder lists nothing
            runs = []
        self.post_message(PastRunsListed(request, runs, live, stable))

    def on_past_runs_listed(self, message: PastRunsListed) -> None:
        self.pending = max(self.pending - 1, 0)
        if message.request == self._requests["list"]:
            self.show_runs(message.runs, message.live, message.stable)

    def show_runs(self, runs: Sequence[PastRun], live: str | None, stable: bool) -> None:
        """``live``: the folder name of this console's current run, if there is one."""
        self.runs = list(runs)
        highlighted = self.highlighted
        self.clear_options()
        options = []
        if live is not None:
            options.append(Option(Content.styled("▶ current run", "bold"), id=LIVE_OPTION))
        for run in runs:
            if run.folder.name == live:
                continue
            mark = REASON_MARK.get(run.reason or "", "■" if run.reason else "?")
            label = Content.assemble(
                (f"{mark} ", "bold"),
                session_name(run.folder.name, stable),
                (f" {run.reason or 'no end'}", "dim"),
            )
            options.append(Option(label, id=run.folder.name))
        self.add_options(options)
        self.border_title = f"Past runs ({len(runs)})"
        self.border_subtitle = "enter opens"
        if options:
            self.highlighted = min(highlighted or 0, len(options) - 1)

    def folder(self, option_id: str | None) -> PastRun | None:
        return next((run for run in self.runs if run.folder.name == option_id), None)

    @on(OptionList.OptionSelected)
    def _selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id == LIVE_OPTION:
            self.post_message(self.ShowRecord(None))
            return
        run = self.folder(event.option.id)
        if run is not None:
            self.open(run.folder)

    # -- reading one -------------------------------------------------------------------

    def replay(self, folder: Path, listener: RunListener, timed: bool) -> None:
        """Play a recorded session into ``listener`` (the Run panel's live run): at once,
        or at the pace its raw.index recorded."""
        self.run_worker(partial(self._replay_in_thread, folder, listener, timed), thread=True,
                        group="run-replay", exit_on_error=False)  # fmt: skip

    def _replay_in_thread(self, folder: Path, listener: RunListener, timed: bool) -> None:
        from etu.runner.replay import replay_session

        try:
            replay_session(folder, listener, timed=timed)
        except Exception as error:  # a bad session must become a message, never a crash
            listener.on_end(RunOutcome("incomplete", None, f"replay failed: {error}", None))

    def open(self, folder: Path) -> None:
        """Re-read a recorded session (read-only); the record comes as ShowRecord."""
        self._requests["read"] += 1
        self.pending += 1
        self.run_worker(
            partial(self._read_in_thread, self._requests["read"], folder, self.capacity),
            thread=True,
            group="run-read",
            exit_on_error=False,
        )

    def _read_in_thread(self, request: int, folder: Path, capacity: int) -> None:
        try:
            record = read_past_run(folder, capacity, events=False)
        except Exception as error:  # a torn session must never take the console down
            record = RunRecord(folder.name, live=False)
            record.folder = folder
            record.failure = describe_error(error)
        self.post_message(PastRunRead(request, record))
        if _reports_follow(record):
            self._events_in_thread(request, record, folder)

    def _events_in_thread(self, request: int, record: RunRecord, folder: Path) -> None:
        """The lines are on screen; the reports (PMU, outputs, faults) follow."""
        npu = (record.launch.target if record.launch else "").rpartition("-")[0] or None
        try:
            child = EventsChild(folder / RAW_LOG, npu)
        except OSError as error:
            self.post_message(PastRunEvents(request, record, [], 0, describe_error(error)))
            return
        with self._lock:
            if self._closing:
                child.kill()
            self._children.add(child)
        try:
            others, errors = child.result()
        except ChildError as error:
            if not child.killed:
                self.post_message(PastRunEvents(request, record, [], 0, str(error)))
            return
        finally:
            with self._lock:
                self._children.discard(child)
        self.post_message(PastRunEvents(request, record, others, errors))

    def on_past_run_read(self, message: PastRunRead) -> None:
        if not _reports_follow(message.record):  # else still being read: its reports
            self.pending = max(self.pending - 1, 0)
        if message.request == self._requests["read"]:
            record = message.record
            self.post_message(self.ShowRecord(record))
            for warning in record.warnings:
                self.notify(warning, title=record.label, severity="warning", markup=False)

    def on_past_run_events(self, message: PastRunEvents) -> None:
        self.pending = max(self.pending - 1, 0)
        record = message.record
        if message.failure is not None:
            record.warnings.append(message.failure)
            self.notify(message.failure, title=record.label, severity="warning", markup=False)
        record.errors += message.errors
        record.add([], message.others)
        if message.request == self._requests["read"]:
            self.post_message(self.RecordUpdated(record))


def _reports_follow(record: RunRecord) -> bool:
    """A session read from its file shows its lines first; its reports (PMU, outputs,
    faults) follow from a child process, and it is being read until they are in."""
    return record.failure is None and isinstance(record.store, FileLogStore)
