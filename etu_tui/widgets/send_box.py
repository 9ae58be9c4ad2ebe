"""The Run tab's send box: a line typed to the board of a live serial session (Enter sends
it with the board's line ending), and the board's reset line pulsed (tio's and picocom's
essentials for bring-up).

It shows only while a board session is live (:meth:`SendBox.attach` / :meth:`detach`).
The port is written by one worker thread per session, in the order the lines were typed;
the UI thread never waits on the port. The worker says how it went with a message.
"""

from __future__ import annotations

import queue
from dataclasses import dataclass
from typing import ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import Input, Label
from textual.worker import get_current_worker

from etu.tui.keys import bindings
from etu.tui.safe_text import printable

DEFAULT_RESET = "dtr"  # pulsed when the board's profile names no reset line
POLL_SECONDS = 0.2  # how often an idle writer checks that its box is still there


class SendBox(Horizontal):
    """One line to the board: a prompt and an input, under the log."""

    DEFAULT_CSS = """
    SendBox {
        height: 1;
        display: none;
        &.-attached { display: block; }
        & > Label { width: auto; padding: 0 1; color: $text-muted; }
        & > Input { border: none; height: 1; padding: 0; width: 1fr; }
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = bindings("send_box")

    @dataclass
    class Said(Message):
        """The writer's word on a line sent or a line pulsed."""

        text: str
        error: bool = False

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.source = None  # the live session's byte source (runner.boards.source)
        self._queue: queue.Queue | None = None
        self.sent = 0  # lines handed to the writer this session

    def compose(self) -> ComposeResult:
        yield Label("to board ›")
        yield Input(placeholder="a line for the board; Enter sends it", id="send-input")

    @property
    def attached(self) -> bool:
        return self.source is not None

    def attach(self, source) -> None:
        """A board session is live on ``source`` (it has ``send``, ``pulse``, ``eol``)."""
        self.detach()
        self.source = source
        self.sent = 0
        self._queue = queue.Queue()
        self._writer(source, self._queue)
        self.add_class("-attached")

    def detach(self) -> None:
        """The session ended: the writer finishes what waits, the box goes."""
        if self._queue is not None:
            self._queue.put(None)
        self.source = None
        self._queue = None
        self.remove_class("-attached")
        self.query_one(Input).value = ""

    def on_unmount(self) -> None:
        if self._queue is not None:
            self._queue.put(None)
            self._queue = None

    def focus_input(self) -> None:
        if self.attached:
            self.query_one(Input).focus()

    def pulse(self) -> bool:
        """Pulse the board's reset line (its profile's, else DTR); False: no session."""
        if self._queue is None or self.source is None:
            return False
        self._queue.put(("pulse", getattr(self.source, "reset", None) or DEFAULT_RESET))
        return True

    @on(Input.Submitted, "#send-input")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if self._queue is None or self.source is None:
            return
        from etu.runner.boards.terminal import DEFAULT_EOL, typed_line

        data = typed_line(event.value, getattr(self.source, "eol", DEFAULT_EOL) or DEFAULT_EOL)
        event.input.value = ""
        self.sent += 1
        self._queue.put(("send", data))

    @work(thread=True, group="send-box", exit_on_error=False)
    def _writer(self, source, jobs: queue.Queue) -> None:
        """Write each job to the port in order until the session's end (None), or until
        the box goes (the console closing cancels the worker)."""
        worker = get_current_worker()
        while True:
            try:
                job = jobs.get(timeout=POLL_SECONDS)
            except queue.Empty:
                if worker.is_cancelled:
                    return
                continue
            if job is None:
                return
            kind, value = job
            try:
                if kind == "send":
                    source.send(value)
                    continue
                source.pulse(value)
                self.post_message(self.Said(f"{value.upper()} pulsed: the board resets"))
            except OSError as error:
                self.post_message(self.Said(str(error), error=True))

    def on_send_box_said(self, message: SendBox.Said) -> None:
        message.stop()
        severity = "warning" if message.error else "information"
        self.notify(printable(message.text), severity=severity, markup=False)

    def action_leave_send(self) -> None:
        """Escape: back to the log (the keys type into the box while it has the focus)."""
        from etu.tui.widgets.run_log import LogView

        for view in self.screen.query(LogView):
            view.focus()
            return
        self.screen.set_focus(None)
