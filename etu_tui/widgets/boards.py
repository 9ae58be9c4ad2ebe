"""The Boards tab: the serial ports (refreshed on hot-plug), a board profile, the baud, and
a flash action with a progress bar. Once flashed, the board's port is handed to the Run tab,
whose live panes (log first, PMU, allocators, outputs, ending) show it as they show any run,
and the session lands in the History like every other.

The headless side is runner/boards (profiles, ports, flashing, byte sources); workers here
call it and post messages; the panel owns the state.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.message import Message
from textual.widgets import Button, Input, Label, ProgressBar, Select, Static

from etu.parsers.errors import describe_error
from etu.runner.workspace import FIRMWARE_BOARDS, Workspace
from etu.tui.keys import bindings
from etu.tui.numbers import transfer
from etu.tui.safe_text import printable
from etu.tui.screens.open_file import OpenFileScreen
from etu.tui.widgets.board_places import BoardPlaces
from etu.tui.widgets.first_shown import FirstShown

if TYPE_CHECKING:  # runner.boards.transfer needs pyserial: imported when a flash starts
    from etu.runner.boards.ports import PortInfo
    from etu.runner.boards.profiles import BoardProfile
    from etu.runner.boards.transfer import Progress
    from etu.runner.run import ByteSource

PORT_POLL_SECONDS = 1.5  # how often the port list is re-read (hot-plug)
EMULATED = "qemu-an547"  # the emulated board's profile: QEMU, no port to pick
EMULATED_PORT = "(QEMU's own pty)"


@dataclass
class PortsListed(Message):
    """The serial ports now attached, when they changed."""

    ports: list[PortInfo]


@dataclass
class FlashStatus(Message):
    text: str


@dataclass
class FlashProgressed(Message):
    progress: Progress


@dataclass
class Flashed(Message):
    """Flashing ended; ``source`` (an open byte source) follows the board's boot, None
    when the board has no port to follow."""

    source: ByteSource | None
    meta: dict[str, object]
    label: str


@dataclass
class FlashFailed(Message):
    error: str


@dataclass(frozen=True)
class FlashRequest:
    """One flash the user asked for: the profile, the firmware, the picked ports, the baud
    typed (None: the profile's)."""

    profile: BoardProfile
    firmware: Path
    link: object  # what runner.boards.ports.pick_ports chose
    baud: int | None


@dataclass
class FlashChecked(Message):
    """The pre-flight of ``request``: what would make the flashed board fail ([]: none)."""

    request: FlashRequest
    problems: list[str]


@dataclass
class ResetPulsed(Message):
    """A reset pulse on the picked port ended: what happened, in one line."""

    text: str
    error: bool = False


@dataclass
class BoardMonitorRequested(Message):
    """For the App: show the Run tab and feed its panes from ``source``."""

    source: ByteSource
    meta: dict[str, object]
    label: str


TAB_ADVICE = {
    "port": "pick the board's port in Port",
    "mcc_port": "pick one of the board's ports in Port (its MCC port is found beside it)",
    "drive": "mount the board's USB drive",
    "probe": "connect a debug probe",
}


def tab_advice(error: BaseException) -> str:
    """One line for the status: the error, and what to do about it in this tab (a flash
    method's missing need, runner.boards.flash.NeedMissing), never a CLI option."""
    from etu.parsers.errors import first_line
    from etu.runner.boards.flash import FlashError
    from etu.runner.boards.source import PortError

    # the flash path's own errors are one line already; anything else is named by its kind
    expected = isinstance(error, FlashError | PortError)
    text = first_line(str(error)) if expected else describe_error(error)
    advice = TAB_ADVICE.get(getattr(error, "need", ""))
    return f"{text}: {advice}" if advice and advice not in text else text


class FirmwareScreen(OpenFileScreen):
    """The open-file modal, asking for the firmware to flash."""

    DIALOG_TITLE = "Firmware to flash"
    PLACEHOLDER = "path/to/firmware.elf (or .img, .bin)"
    HINT = "Enter pick · Tab complete · Escape cancel"


class BoardsPanel(FirstShown, Vertical):
    """Ports, profile, baud, firmware, flash; the keys of the Boards tab."""

    DEFAULT_CSS = """
    BoardsPanel {
        & #boards-controls, #boards-file { height: auto; }
        & .boards-label { color: $text-muted; padding: 0 0; }
        & #boards-profile { width: 30; }
        & #boards-port { width: 22; }
        & #boards-baud { width: 8; }
        & #boards-firmware { width: 1fr; height: 1; padding: 0 1; }
        & #boards-progress { height: 1; padding: 0 1; }
        & #boards-status { height: auto; padding: 0 1; }
        & #boards-ports { height: 1fr; border: round $primary; padding: 0 1; }
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = bindings("boards")

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.ports: list = []
        self.profiles: dict = {}
        self.firmware: Path | None = None
        self.firmware_picked = False  # picked here or on the Run tab: kept over the rule's
        self.workspace: Path | None = None
        self.opened: Workspace | None = None  # the App's workspace: firmware by its rule
        self.flashing = False
        self.program = None  # the open program: a flash's pre-flight checks it
        self.program_target: str | None = None
        self.last_status = ""
        self.profile_error: str | None = None
        self.baud_filled: str | None = None  # the profile's baud, as put in the field

    def compose_shown(self) -> ComposeResult:
        with Horizontal(id="boards-controls"):
            yield Label("Board ", classes="boards-label")
            yield Select([], allow_blank=True, compact=True, id="boards-profile")
            yield Label(" Port ", classes="boards-label")
            yield Select([], allow_blank=True, compact=True, id="boards-port")
            yield Label(" Baud ", classes="boards-label")
            yield Input("", type="integer", compact=True, max_length=8, id="boards-baud")
        with Horizontal(id="boards-file"):
            yield Static(id="boards-firmware")
            yield Button("⚡ Flash + monitor (r)", id="boards-flash", compact=True,
                         variant="success")  # fmt: skip
        yield ProgressBar(total=None, show_eta=True, id="boards-progress")
        yield Static(id="boards-status")
        yield Static(id="boards-ports")
        yield BoardPlaces(id="boards-places")

    def on_shown(self) -> None:
        from etu.runner.boards.profiles import ProfileError, load_profiles

        try:
            self.profiles = load_profiles()
        except ProfileError as error:
            self.profile_error = str(error)
        options = [(name, name) for name in self.profiles]
        select = self.query_one("#boards-profile", Select)
        select.set_options(options)
        if EMULATED in self.profiles:
            select.value = EMULATED
        self.query_one("#boards-progress", ProgressBar).display = False
        self._show_ports()
        self._show_firmware()
        self._status(self.profile_error or "Pick a board and press r: flash, then watch it run.")
        self.set_interval(PORT_POLL_SECONDS, self.action_refresh_ports)
        self.action_refresh_ports()
        if self.workspace is not None:
            self.query_one(BoardPlaces).set_workspace(self.workspace)

    # -- the workspace ---------------------------------------------------------------------

    def set_workspace(
        self, workspace: Workspace, program=None, program_target: str | None = None
    ) -> None:
        """The program's firmware for the chosen board (the workspace's rule,
        :func:`etu.runner.workspace.find_firmware`) is flashed unless a file was picked;
        ``program`` (parsers.pte.Program, its NPU ``program_target``) is what a flash's
        pre-flight checks the firmware against."""
        self.program, self.program_target = program, program_target
        if workspace.root != self.workspace:
            self.firmware_picked = False
        self.workspace, self.opened = workspace.root, workspace
        self._find_firmware()
        if self.shown:
            self.query_one(BoardPlaces).set_workspace(workspace.root)

    def take_firmware(self, elf: Path) -> None:
        """The ELF picked on the Run tab: what runs there is what is flashed here."""
        self.firmware, self.firmware_picked = Path(elf), True
        self._show_firmware()

    def firmware_board(self) -> str | None:
        """The firmware board of the chosen profile: its name when etu builds firmware for
        it (qemu-an547), else its memory preset (mps3-an552 runs a corstone-300 build)."""
        # before the tab is first shown, the profile it will preselect (FirstShown)
        name = self.query_one("#boards-profile", Select).value if self.shown else EMULATED
        if not isinstance(name, str):
            return None
        if name in FIRMWARE_BOARDS:
            return name
        profile = self.profiles.get(name)
        return getattr(profile, "memory_preset", None)

    def _find_firmware(self) -> None:
        if self.opened is not None and not self.firmware_picked:
            self.firmware = self.opened.firmware_for(self.firmware_board())
        self._show_firmware()

    @on(Select.Changed, "#boards-profile")
    def _profile_changed(self) -> None:
        self._find_firmware()
        self._show_baud()
        self._show_vendor_tool()

    def _show_vendor_tool(self) -> None:
        """A profile flashed by its vendor's tool says which, and whether it is installed
        here: without it, r shows the exact command to run where it is."""
        import shutil

        name = self.query_one("#boards-profile", Select).value
        profile = self.profiles.get(name) if isinstance(name, str) else None
        if profile is None or profile.method != "vendor-tool":
            return
        tool = str(profile.transfer.get("tool"))
        vendor = profile.transfer.get("vendor") or tool
        if shutil.which(tool):
            self._status(f"{profile.name} flashes with {vendor} ({tool}): r runs it")
        else:
            self._status(f"{profile.name} flashes with {vendor} ({tool}, not installed here): "
                         "r shows the command to run where it is")  # fmt: skip

    def _show_baud(self) -> None:
        """The chosen profile's baud in the field (an empty field said nothing of it);
        typed over, the typed one is used for the next flash."""
        name = self.query_one("#boards-profile", Select).value
        profile = self.profiles.get(name) if isinstance(name, str) else None
        if profile is not None:
            self.baud_filled = str(profile.baud)
            self.query_one("#boards-baud", Input).value = self.baud_filled

    def _show_firmware(self) -> None:
        if not self.shown:
            return
        shown = printable(self.firmware.name) if self.firmware else "none (e picks a file)"
        self.query_one("#boards-firmware", Static).update(
            Content.assemble(("Firmware ", "dim"), (shown, "bold"), (" · e picks another", "dim"))
        )

    def action_pick_firmware(self) -> None:
        start = self.firmware.parent if self.firmware else (self.workspace or Path.cwd())

        def chosen(path: Path | None) -> None:
            if path is not None:
                self.take_firmware(Path(path))

        self.app.push_screen(FirmwareScreen(str(start) + "/"), chosen)

    # -- ports (hot-plug) ------------------------------------------------------------------

    def action_refresh_ports(self) -> None:
        self.run_worker(self._list_ports, thread=True, group="boards-ports", exclusive=True,
                        exit_on_error=False)  # fmt: skip

    def _list_ports(self) -> None:
        from etu.runner.boards.ports import list_serial_ports

        try:
            ports = list_serial_ports(self.profiles or None)
        except Exception:  # a port listing that fails keeps the last list
            return
        if [p.to_json() for p in ports] != [p.to_json() for p in self.ports]:
            self.post_message(PortsListed(ports))

    def on_ports_listed(self, message: PortsListed) -> None:
        self.ports = message.ports
        self._show_ports()

    def _show_ports(self) -> None:
        select = self.query_one("#boards-port", Select)
        current = select.value
        options = [(EMULATED_PORT, EMULATED_PORT)] + [
            (printable(p.device), p.device) for p in self.ports
        ]
        select.set_options(options)
        devices = {value for _, value in options}
        select.value = current if current in devices else EMULATED_PORT
        emulated = "  qemu-an547 · QEMU mps3-an547 (Cortex-M55, no NPU)"
        lines = [Content.assemble(("emulated board", "bold"), (emulated, "dim"))]
        for port in self.ports:
            boards = ", ".join(port.profiles) or "no profile matches"
            lines.append(
                Content.assemble(
                    (printable(port.device), "bold"),
                    (f"  {port.vid_pid or '-'}  {printable(port.serial_number or '-')}  ", "dim"),
                    printable(port.description or ""),
                    (f"  → {boards}", "dim"),
                )
            )
        if not self.ports:
            lines.append(Content.styled("no serial ports attached (plug a board in)", "dim"))
        box = self.query_one("#boards-ports", Static)
        box.border_title = f"Ports ({len(self.ports)})"
        box.update(Content("\n").join(lines))

    # -- flashing --------------------------------------------------------------------------

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "boards-flash":
            event.stop()
            self.action_flash()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("flash", "flash_place"):
            return None if self.flashing else True
        return True

    def action_flash(self) -> bool:
        """Flash the firmware with the chosen profile; False when it cannot start."""
        if self.flashing:
            return False
        name = self.query_one("#boards-profile", Select).value
        profile = self.profiles.get(name) if isinstance(name, str) else None
        if profile is None:
            self._status("pick a board profile first", error=True)
            return False
        if self.firmware is None:
            self._status("no firmware to flash: press e to pick one", error=True)
            return False
        picked = self.query_one("#boards-port", Select).value
        picked = None if picked in (EMULATED_PORT, Select.BLANK) else str(picked)
        baud_text = self.query_one("#boards-baud", Input).value.strip()
        # The profile's own baud (filled in, not typed) is the profile's: None says so.
        typed = baud_text.isdigit() and baud_text != self.baud_filled
        baud = int(baud_text) if typed else None
        from etu.runner.boards.flash import FlashError
        from etu.runner.boards.ports import pick_ports

        try:
            link = pick_ports(profile, self.ports, port=picked)
        except FlashError as error:
            self._status(tab_advice(error), error=True)
            return False
        self.flashing = True
        self.app.refresh_bindings()
        request = FlashRequest(profile, self.firmware, link, baud)
        if self.program is None:  # nothing to check the firmware against
            self._start_flash(request)
            return True
        self._status(f"checking {self.firmware.name} against the open program…")
        self.run_worker(partial(self._check_in_thread, request), thread=True,
                        group="boards-flash", exit_on_error=False)  # fmt: skip
        return True

    def _check_in_thread(self, request: FlashRequest) -> None:
        """The Run tab's pre-flight on the firmware to be flashed (it reads the ELF)."""
        from etu.runner.preflight import flash_preflight

        try:
            problems = flash_preflight(self.program, self.program_target, request.firmware,
                                       request.profile.name)  # fmt: skip
        except Exception as error:  # a check that cannot run never stops a flash
            problems = [f"the pre-flight could not check the firmware: {describe_error(error)}"]
        self.post_message(FlashChecked(request, problems))

    def on_flash_checked(self, message: FlashChecked) -> None:
        if not message.problems:
            self._start_flash(message.request)
            return
        from etu.tui.screens.preflight import PreflightScreen

        def chosen(flash_anyway: bool | None) -> None:
            if flash_anyway:
                self._start_flash(message.request)
                return
            self.flashing = False
            self._status("flash cancelled: the pre-flight found problems (r asks again)")
            self.app.refresh_bindings()

        self._status(f"pre-flight: {len(message.problems)} problem(s) with this firmware")
        self.app.push_screen(PreflightScreen(message.problems, action="flash"), callback=chosen)

    def _start_flash(self, request: FlashRequest) -> None:
        bar = self.query_one("#boards-progress", ProgressBar)
        bar.display = True
        bar.update(total=None, progress=0)
        self._status(f"flashing {request.firmware.name} to {request.profile.name}…")
        self.run_worker(partial(self._flash_in_thread, request.profile, request.firmware,
                                request.link, request.baud),
                        thread=True, group="boards-flash", exit_on_error=False)  # fmt: skip

    def _flash_in_thread(self, profile, firmware: Path, link, baud: int | None) -> None:
        """Flash through the one flash path (runner.boards.flash.flash_board) and hand the
        board's boot, with its session meta, to the Run tab."""
        from etu.runner.boards.flash import (
            FlashFile,
            flash_board,
            flashed_session_meta,
            monitor_source,
        )

        files = [FlashFile(firmware)]
        try:
            result = flash_board(
                profile, files, link,
                status=lambda text: self.post_message(FlashStatus(text)),
                progress=lambda p: self.post_message(FlashProgressed(p)),
            )  # fmt: skip
            source = monitor_source(profile, result, baud=baud)
            meta = flashed_session_meta(profile, files, result, baud=baud)
        except Exception as error:  # every failure is one line, never a traceback
            self.post_message(FlashFailed(tab_advice(error)))
            return
        label = profile.label or profile.name
        if source is None:  # flashed (pyOCD) with no port picked to follow the boot
            self.post_message(Flashed(None, meta, label))
            return
        if result.source is not None:
            meta["port"] = meta["port"] or EMULATED_PORT
        self.post_message(Flashed(source, meta, label))

    def on_flash_status(self, message: FlashStatus) -> None:
        self._status(message.text)

    def on_flash_progressed(self, message: FlashProgressed) -> None:
        p = message.progress
        bar = self.query_one("#boards-progress", ProgressBar)
        bar.update(total=max(p.total, 1), progress=p.sent)
        self._status(f"{printable(p.file)}: {transfer(p.sent, p.total, p.rate, p.eta, p.retries)}")

    def on_flash_failed(self, message: FlashFailed) -> None:
        self.flashing = False
        self.query_one("#boards-progress", ProgressBar).display = False
        self._status(f"flash failed: {message.error}", error=True)
        self.app.refresh_bindings()

    def on_flashed(self, message: Flashed) -> None:
        self.flashing = False
        bar = self.query_one("#boards-progress", ProgressBar)
        bar.update(total=1, progress=1)
        self.app.refresh_bindings()
        if message.source is None:
            self._status(f"flashed {message.label}; pick its UART in Port to watch it run")
            return
        self._status(f"flashed; monitoring {message.label} in the Run tab")
        self.post_message(BoardMonitorRequested(message.source, message.meta, message.label))

    # -- labgrid places (the Places list: etu.tui.widgets.board_places) -------------------

    def action_acquire_place(self) -> bool:
        return self.query_one(BoardPlaces).acquire()

    def action_release_place(self) -> bool:
        return self.query_one(BoardPlaces).release()

    def _picked_place(self):
        places = self.query_one(BoardPlaces)
        place = places.selected()
        if place is None or places.coordinator is None:
            self._status("pick a place in Places first (a labgrid coordinator lists them)",
                         error=True)  # fmt: skip
            return None, None
        return place, places.coordinator

    def action_flash_place(self) -> bool:
        """Flash the firmware with the chosen profile through the selected place (held for
        the run, released when its session ends); False when it cannot start."""
        place, coordinator = self._picked_place()
        if place is None or self.flashing:
            return False
        name = self.query_one("#boards-profile", Select).value
        profile = self.profiles.get(name) if isinstance(name, str) else None
        if profile is None or self.firmware is None:
            self._status("pick a board profile and a firmware (e) first", error=True)
            return False
        baud_text = self.query_one("#boards-baud", Input).value.strip()
        typed = baud_text.isdigit() and baud_text != self.baud_filled
        from etu.tui.widgets.board_places import flash_place_in_thread

        self.flashing = True
        self.app.refresh_bindings()
        bar = self.query_one("#boards-progress", ProgressBar)
        bar.display = True
        bar.update(total=None, progress=0)
        self._status(f"flashing {self.firmware.name} to place {place.name} ({profile.name})…")
        self.run_worker(partial(flash_place_in_thread, self, profile, self.firmware,
                                int(baud_text) if typed else None, place.name, coordinator),
                        thread=True, group="boards-flash", exit_on_error=False)  # fmt: skip
        return True

    def action_monitor_place(self) -> bool:
        """Monitor the selected place's serial port in the Run tab (the picked profile's
        framing unless it is the emulated board's), the place held for the session."""
        place, coordinator = self._picked_place()
        if place is None:
            return False
        name = self.query_one("#boards-profile", Select).value
        profile = self.profiles.get(name) if isinstance(name, str) and name != EMULATED else None
        baud_text = self.query_one("#boards-baud", Input).value.strip()
        typed = baud_text.isdigit() and baud_text != self.baud_filled
        from etu.tui.widgets.board_places import monitor_place_in_thread

        places = self.query_one(BoardPlaces)
        places.say(f"holding place {place.name} to monitor it…")
        self.run_worker(partial(monitor_place_in_thread, places, profile,
                                int(baud_text) if typed else None, place.name, coordinator),
                        thread=True, group="boards-place-monitor", exit_on_error=False)  # fmt: skip
        return True

    # -- reset -----------------------------------------------------------------------------

    def action_pulse_reset(self) -> bool:
        """Pulse the profile's reset line (else DTR) on the picked port, from a worker: the
        board restarts (into its bootloader, for a flash by hand). False: nothing to pulse."""
        if self.flashing:
            self._status("flashing: the port is busy", error=True)
            return False
        picked = self.query_one("#boards-port", Select).value
        if picked in (EMULATED_PORT, Select.BLANK):
            self._status("pick a serial port to reset (the emulated board has no lines)",
                         error=True)  # fmt: skip
            return False
        name = self.query_one("#boards-profile", Select).value
        profile = self.profiles.get(name) if isinstance(name, str) else None
        line = (profile.reset if profile else None) or "dtr"
        settings = profile.serial_settings if profile else {"baudrate": 115200}
        self._status(f"pulsing {line.upper()} on {printable(str(picked))}…")
        self.run_worker(partial(self._pulse_in_thread, str(picked), settings, line),
                        thread=True, group="boards-reset", exit_on_error=False)  # fmt: skip
        return True

    def _pulse_in_thread(self, port: str, settings: dict, line: str) -> None:
        from etu.runner.boards.source import PortError, open_port
        from etu.runner.boards.terminal import pulse_line

        try:
            handle = open_port(port, settings)
        except PortError as error:
            text = str(error)
            if "held by" in text:
                text += " (a session on the Run tab: ctrl+t there)"
            self.post_message(ResetPulsed(text, error=True))
            return
        try:
            pulse_line(handle, line)
        except Exception as error:  # serial.SerialException, OSError: a pty has no lines
            self.post_message(ResetPulsed(f"{port}: {line.upper()} not pulsed: {error}", True))
            return
        finally:
            handle.close()
        self.post_message(ResetPulsed(f"{line.upper()} pulsed on {port}: the board resets"))

    def on_reset_pulsed(self, message: ResetPulsed) -> None:
        self._status(message.text, error=message.error)

    def _status(self, text: str, *, error: bool = False) -> None:
        self.last_status = text
        style = "$text-error" if error else ""
        self.query_one("#boards-status", Static).update(Content.styled(printable(text), style))
