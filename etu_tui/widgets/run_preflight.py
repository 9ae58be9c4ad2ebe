"""The Run tab's gate before a run: the pre-flight checks on the firmware that will run,
off the UI thread when that firmware must be read (a runner built for chosen inputs), and
the question "run anyway?" when something was found; and the Layers view of the shown
session. A mixin of :class:`~etu.tui.widgets.run.RunPanel`, whose state it reads."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path

from etu.runner.preflight import inputs_preflight, preflight
from etu.tui.screens.preflight import PreflightScreen
from etu.tui.widgets.run_messages import PreflightChecked


class RunGate:
    """Pre-flight and Layers for the Run panel (``self`` is the RunPanel)."""

    def preflight(self) -> list[str]:
        """What would make the next run fail (see :func:`etu.runner.preflight.preflight`), on the
        firmware that will run: with chosen inputs, the runner built with them (blocking:
        it reads that ELF), or, not built yet, only what needs no firmware."""
        return self._preflight_check()()[0]

    def _preflight_check(self) -> Callable[[], tuple[list[str], list[str]]]:
        """The next run's pre-flight, (problems, notes), as a call that touches no widget."""
        target, program_target, program = self.target, self.program_target, self.program
        if self.inputs is None:
            firmware, elf = self.firmware, self.elf
            return lambda: (preflight(target, program_target, program, firmware, elf), [])
        return partial(inputs_preflight, target, program_target, program, self.pte, self.inputs)

    def request_run(self) -> bool:
        """Start a run after the pre-flight checks; a problem asks first (run anyway?).
        With chosen inputs a worker checks the runner built with them (False: the run
        starts, or is asked about, when it is done)."""
        if self.running or self.workspace is None or self._checking:
            return False
        check = self._preflight_check()
        if self.inputs is None:
            return self._preflight_done(*check())

        def work() -> None:
            try:
                problems, notes = check()
            except Exception as error:  # a check that cannot run never stops a run
                problems = [f"the pre-flight could not check the firmware: {error}"]
                notes = []
            self.post_message(PreflightChecked(problems, notes))

        self._checking = True
        self.run_worker(work, thread=True, group="run-preflight", exit_on_error=False)
        return False

    def on_preflight_checked(self, message: PreflightChecked) -> None:
        self._checking = False
        if not self.running:
            self._preflight_done(message.problems, message.notes)

    def _preflight_done(self, problems: list[str], notes: list[str]) -> bool:
        """Start the run when nothing was found, else ask first; True when it started."""
        if not problems:
            if self.start_run():
                self.app.refresh_bindings()
                return True
            return False

        def chosen(run_anyway: bool | None) -> None:
            if run_anyway and self.start_run():
                self.app.refresh_bindings()

        screen = PreflightScreen(problems, [*notes, *self.io_notes])
        self.app.push_screen(screen, callback=chosen)
        return False

    def layers_subject(self) -> tuple[Path | None, Path | None]:
        """What the Layers view compares: the shown session (its program, on its inputs)
        when it has ended, else the open program on all ones."""
        record = self.shown
        if record is not None and record.folder is not None and not record.running:
            return self.pte, record.folder
        return self.pte, None

    def action_show_layers(self) -> None:
        from etu.tui.screens.layers import LayersScreen

        pte, session = self.layers_subject()
        screen = LayersScreen.of(self.layer_records, pte, session, self._stable)
        if screen is None:
            self.notify("Open a program or a session first.", severity="warning")
        else:
            self.app.push_screen(screen)
