"""The top of the Run tab: the controls (target, ELF, time limit, run and stop), then the
simulator or board and the exact command of the run under way, else of the next run.

The header previews the next run itself (a worker looks for the simulator); the panel says
what is chosen (:meth:`RunHeader.preview_next`) and what runs (:meth:`RunHeader.show`).
The title names what is targeted: an FVP, the emulated board, or a board.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.widgets import Button, Input, Label, Select, Static

from etu.fvp.command import DEFAULT_TIMELIMIT, FvpOptions, format_command
from etu.fvp.launch import LaunchError, prepare_fvp_launch
from etu.fvp.targets import targets
from etu.parsers.errors import describe_error
from etu.runner.run_model import LaunchInfo
from etu.runner.runtime_run import NPU_LABEL, QEMU_BOARD
from etu.tui.safe_text import printable
from etu.tui.widgets.run_launch import qemu_launch
from etu.tui.widgets.run_messages import LaunchPreviewed

DEFAULT_TARGET = "ethos-u55-128"  # what `etu run` uses when nothing says otherwise


def header_title(info: LaunchInfo | None, target: str) -> str:
    """The header's title: what the shown launch (or the chosen target) runs on."""
    if info is not None and info.board:
        kind = "the emulated board" if info.emulated else "a board"
        return f"Session on {kind} (flashed from the Boards tab)"
    if target == QEMU_BOARD:
        return "Run on the emulated board (QEMU mps3-an547)"
    return "Run on a Corstone FVP"


class RunHeader(Vertical):
    """Controls, then the simulator (or board) and the exact command."""

    DEFAULT_CSS = """
    RunHeader {
        border: round $primary;
        border-title-style: bold;
        border-subtitle-color: $text-muted;
        .run-label { color: $text-muted; }
        #run-elf { text-style: bold; }
        #run-command { color: $text-muted; }
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.preview: LaunchInfo | None = None  # the next run's launch, once looked up
        self.preview_error: str | None = None  # why there is no next run (one line)
        self.pending = 0  # previews in flight
        self._request = 0
        self._shown: tuple[LaunchInfo | None, str] = (None, DEFAULT_TARGET)

    def compose(self) -> ComposeResult:
        with Horizontal(id="run-controls"):
            yield Label("Target ", classes="run-label")
            yield Select(
                [(name, name) for name in targets()]
                + [(f"{QEMU_BOARD} (emulated board)", QEMU_BOARD)],
                value=DEFAULT_TARGET,
                allow_blank=False,
                compact=True,
                id="run-target",
            )
            yield Label("   ELF ", classes="run-label")
            yield Static(id="run-elf")
            yield Label(" (e picks)", classes="run-label -wide-only")
            yield Label("   Time limit ", classes="run-label")
            yield Input(
                str(DEFAULT_TIMELIMIT), type="integer", compact=True, max_length=7,
                id="run-timelimit",
            )  # fmt: skip
            yield Label(" seconds   ", classes="run-label -wide-only")
            yield Button("▶ Run (r)", id="run-start", compact=True, variant="success")
            yield Label(" ")
            yield Button("■ Stop (s)", id="run-stop", compact=True, variant="error")
        yield Static(id="run-simulator")
        yield Static(id="run-command")

    def show_controls(self, elf_label: str | None, running: bool, can_start: bool) -> None:
        """The chosen ELF (None: none found); the controls locked while a run is under way."""
        elf = self.query_one("#run-elf", Static)
        if elf_label is None:
            elf.update(Content.styled("none found", "$text-error"))
        else:
            elf.update(printable(elf_label))
        self.query_one("#run-target", Select).disabled = running
        self.query_one("#run-timelimit", Input).disabled = running
        self.query_one("#run-start", Button).disabled = running or not can_start
        self.query_one("#run-stop", Button).disabled = not running

    def timelimit(self) -> int | None:
        """The time limit field's seconds (None: none); ValueError names what is wrong."""
        text = self.query_one("#run-timelimit", Input).value.strip()
        if not text:
            return None
        value = int(text)
        if value <= 0:
            raise ValueError("the time limit is a positive number of seconds")
        return value

    # -- the next run ------------------------------------------------------------------

    def preview_next(self, target: str, elf: Path | None, limit: int | None, no_elf: str) -> None:
        """Look up what running ``elf`` on ``target`` would start (in a worker)."""
        self._request += 1
        self.pending += 1
        self.run_worker(
            partial(self._preview_in_thread, self._request, target, elf, limit, no_elf),
            thread=True,
            group="run-preview",
            exit_on_error=False,
        )

    def _preview_in_thread(
        self, request: int, target: str, elf: Path | None, limit: int | None, no_elf: str
    ) -> None:
        launch, error = None, None
        try:
            if elf is None:
                raise LaunchError(no_elf)
            if target == QEMU_BOARD:
                launch = qemu_launch(elf)
            else:
                launch = prepare_fvp_launch(target, elf, FvpOptions(timelimit=limit))
        except LaunchError as failure:
            error = str(failure)
        except Exception as failure:  # a preview must never take the console down
            error = describe_error(failure)
        self.post_message(LaunchPreviewed(request, launch, error))

    def on_launch_previewed(self, message: LaunchPreviewed) -> None:
        self.pending = max(self.pending - 1, 0)
        if message.request != self._request:
            return
        launch = message.launch
        self.preview_error = message.error
        self.preview = (
            launch
            if launch is None or isinstance(launch, LaunchInfo)
            else LaunchInfo(
                list(launch.argv),
                simulator=str(launch.executable),
                found_via=launch.found_via,
                simulated=launch.simulated,
                target=launch.target.target,
            )
        )
        self.show(*self._shown)

    # -- showing -----------------------------------------------------------------------

    def show(self, running: LaunchInfo | None, target: str) -> None:
        """``running``: the launch of the run under way (or of a board's session while it
        is shown); None shows the next run on ``target``."""
        self._shown = (running, target)
        info = running or self.preview
        self.border_title = header_title(info, target)
        simulator = self.query_one("#run-simulator", Static)
        command = self.query_one("#run-command", Static)
        if info is None:
            error = self.preview_error
            if error:
                simulator.update(
                    Content.assemble(("✗ ", "$text-error bold"), (printable(error), "$text-error"))
                )
            else:
                simulator.update(Content.styled("Looking for the simulator…", "dim"))
            command.update("")
            return
        if info.simulated:
            tag = (" STAND-IN FVP — numbers are simulated ", "bold $background on $warning")
        elif info.emulated and info.label == NPU_LABEL:
            tag = (" EMULATED BOARD + functional Ethos-U model: outputs exact, no timing ",
                   "bold $background on $warning")  # fmt: skip
        elif info.emulated:
            tag = (" EMULATED BOARD (QEMU, no NPU) — timings are not cycles ",
                   "bold $background on $warning")  # fmt: skip
        elif info.board:
            tag = (f" BOARD {printable(info.board)} ", "bold $background on $success")
        else:
            tag = (" Arm FVP ", "bold $background on $success")
        via = f" (found via {info.found_via})" if info.found_via else ""
        simulator.update(
            Content.assemble(tag, "  ", (printable(info.simulator), "bold"), (via, "dim"))
            if info.simulator
            else Content.styled("a command, not a simulator", "dim")
        )
        command.update(Content("$ " + printable(format_command(info.command))))
