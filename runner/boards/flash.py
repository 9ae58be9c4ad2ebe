"""Flashing a board with its own method: the WiseEye2 bootloader (XMODEM), the MPS3 USB
drive + MCC, pyOCD, the emulated board (QEMU loads the ELF), or a vendor's own tool (Alif SE
Tools, Renesas Flash Programmer, ModusToolbox's OpenOCD) run as the profile writes it.

Each method returns what the monitor needs to follow the boot without losing a byte: the
application port, still open (the WE2 reboots on the port etu flashed through; the MPS3's
application port is opened before the MCC reboots the board), plus whatever was already
read after the last prompt. Failures are FlashError with one line naming the file or port.

The registry of methods and the front door (flash_board) live here, with the WiseEye2,
pyOCD and QEMU transfers; the shared pieces are in flash_base, the MPS3 drive in
flash_mps3, the vendor tool in flash_vendor.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from etu.parsers.errors import describe_error
from etu.runner.boards.flash_base import (
    NEEDS,
    PLACEMENT_MAGIC,
    FlashError,
    FlashFile,
    FlashResult,
    NeedMissing,
    ProgressFn,
    Status,
    after_prompt,
    needed_prompt,
    parse_file_spec,
    placement_block,
    read_image,
    rest_of_line,
)
from etu.runner.boards.flash_mps3 import (
    find_drive,
    flash_mps3,
    images_folder,
    images_txt,
    load_segments,
    mcc_address,
    mps3_images,
    short_name,
)
from etu.runner.boards.flash_vendor import (
    VENDOR_TOOL_TIMEOUT,
    ToolMissing,
    check_tool,
    flash_vendor_tool,
    shell_line,
    tool_folder_hint,
    vendor_commands,
)
from etu.runner.boards.profiles import BoardProfile
from etu.runner.boards.prompts import PromptTimeout, expect
from etu.runner.boards.source import PortError, open_port
from etu.runner.boards.terminal import pulse_line
from etu.runner.boards.transfer import Progress, TransferError, xmodem_send


# ------------------------------------------------------------------------- WiseEye2
def flash_wiseeye2(
    profile: BoardProfile,
    files: list[FlashFile],
    port: str,
    *,
    status: Status = lambda text: None,
    progress: ProgressFn | None = None,
    handle=None,
) -> FlashResult:
    """Bootloader dialogue: banner → '1' until the menu → '1' → XMODEM per file (a
    placement block first for a file with an address) → the end question (n, ..., y)."""
    transfer = profile.transfer
    block = int(transfer.get("block", 128))
    retries = int(transfer.get("retries", 16))
    limit = int(transfer.get("max_image", 0) or 0)
    payloads = []
    for file in files:
        data = read_image(file)
        if file.address is None and limit and len(data) > limit:
            raise FlashError(f"{file.path}: {len(data):,} bytes; the bootloader takes {limit:,}")
        if file.address is not None:
            data = placement_block(file.address, file.offset) + data
        payloads.append((file, data))
    try:
        handle = handle or open_port(port, profile.serial_settings)
    except PortError as error:
        raise FlashError(str(error)) from None
    result = FlashResult(port=port, handle=handle)
    try:
        status(f"waiting for the bootloader on {port} (reset the board)")
        expect(handle, needed_prompt(profile, "boot"), port_name=port)
        key = str(transfer.get("enter_key", "1")).encode()
        after = expect(handle, needed_prompt(profile, "menu"), port_name=port, poke=key)
        time.sleep(0.05)
        # A poke that reached the board after its menu was already taken as the choice
        # (the menu's key is the poke's): its "ready" line may be here. Nothing read is
        # thrown away, or that line would be, and etu would wait for it in vain.
        after += handle.read(handle.in_waiting)
        ready = needed_prompt(profile, "ready")
        if ready.text.encode() not in after:
            handle.write(str(transfer.get("menu_choice", "1")).encode())
        pending = rest_of_line(handle, after_prompt(handle, ready, after, port))
        for index, (file, data) in enumerate(payloads):
            status(f"sending {file.name} ({len(data):,} bytes, XMODEM {block})")
            stats = xmodem_send(handle, data, name=file.name, block_size=block, retries=retries,
                                on_progress=progress, pending=pending)  # fmt: skip
            result.files.append({"file": str(file.path), **stats.to_json()})
            pending = b""
            after = expect(handle, needed_prompt(profile, "end_question"), port_name=port)
            last = index == len(payloads) - 1
            handle.write(b"y" if last else b"n")
            result.initial = after
    except (PromptTimeout, TransferError) as error:
        handle.close()
        raise FlashError(str(error)) from None
    except Exception as error:  # a port gone mid-dialogue (serial.SerialException, OSError)
        handle.close()
        raise FlashError(f"{port}: lost during flashing: {error}") from None
    return result


# ------------------------------------------------------------------------- pyOCD
def flash_pyocd(
    profile: BoardProfile, files: list[FlashFile], *, status: Status = lambda t: None,
    progress: ProgressFn | None = None,
) -> FlashResult:  # fmt: skip
    try:
        from pyocd.core.helpers import ConnectHelper
        from pyocd.flash.file_programmer import FileProgrammer  # noqa: F401 (installed whole)
    except ImportError:
        raise FlashError(
            "pyocd: not installed; install it with: pip install 'etu[pyocd]' (or pip install "
            "pyocd) to flash through a CMSIS-DAP, J-Link or ST-Link probe"
        ) from None
    target = str(profile.transfer.get("target", "cortex_m"))
    session = ConnectHelper.session_with_chosen_probe(
        blocking=False, options={"target_override": target}
    )
    if session is None:
        raise NeedMissing("probe", "pyocd: no debug probe found (connect one, or check its "
                          "permissions)")  # fmt: skip
    result = FlashResult()
    try:
        _program_through(session, files, target, status, progress, result)
    except FlashError:
        raise
    except Exception as error:  # pyOCD's own (a probe unplugged, a target that did not halt)
        raise FlashError(f"pyocd: {describe_error(error)}") from None
    return result


def _program_through(session, files, target: str, status: Status, progress, result) -> None:
    from pyocd.flash.file_programmer import FileProgrammer

    with session:
        for file in files:
            status(f"programming {file.name} through pyOCD ({target})")
            size = file.path.stat().st_size

            def report(fraction: float, name: str = file.name, size: int = size) -> None:
                if progress:
                    sent = int(fraction * size)
                    progress(Progress(name, sent, size, 0.0, None, 0, 0, "program"))

            programmer = FileProgrammer(session, progress=report)
            programmer.program(str(file.path), base_address=file.address)
            result.files.append({"file": str(file.path)})
        session.board.target.reset()


# ------------------------------------------------------------------------- QEMU
def flash_qemu(profile: BoardProfile, files: list[FlashFile], *, timelimit=None) -> FlashResult:
    """The emulated board: "flashing" is loading the ELF; QEMU waits paused on its pty."""
    from etu.runner.boards.source import QemuSource

    if len(files) != 1 or files[0].address is not None:
        raise FlashError("qemu-an547: give exactly one firmware ELF (QEMU loads it)")
    source = QemuSource(files[0].path, timelimit=timelimit)
    try:
        source.open()
    except PortError as error:
        raise FlashError(str(error)) from None
    return FlashResult(port=source.port, source=source,
                       files=[{"file": str(files[0].path), "loaded": True}])  # fmt: skip


# ------------------------------------------------------------------------- any board
@dataclass(frozen=True, slots=True)
class BoardLink:
    """Where a board is reached: its (application or bootloader) port, the MPS3's MCC
    port, its USB drive. A probe is found by pyOCD itself."""

    port: str | None = None
    mcc_port: str | None = None
    drive: Path | None = None


@dataclass(frozen=True, slots=True)
class FlashRequest:
    profile: BoardProfile
    files: list[FlashFile]
    link: BoardLink
    timelimit: float | None = None
    status: Status = lambda text: None
    progress: ProgressFn | None = None
    reset: str | None = None  # the modem line pulsed before flashing (dtr, rts)


@dataclass(frozen=True, slots=True)
class FlashMethod:
    """One transfer: its ``transfer.method`` name, what it cannot flash without
    (``needs``), what it uses when given (``uses``: a port to monitor), and ``flash``;
    ``resets``: it pulses the profile's reset line on its port before flashing (the other
    methods reset the board themselves: the MCC's reboot, the probe, QEMU)."""

    name: str
    needs: tuple[str, ...]
    flash: Callable[[FlashRequest], FlashResult]
    uses: tuple[str, ...] = ()
    resets: bool = False


FLASH_METHODS: dict[str, FlashMethod] = {}


def register(method: FlashMethod) -> FlashMethod:
    unknown = set(method.needs + method.uses) - set(NEEDS)
    if unknown:
        raise ValueError(f"{method.name}: unknown needs {sorted(unknown)}")
    FLASH_METHODS[method.name] = method
    return method


def method_of(profile: BoardProfile) -> FlashMethod:
    method = FLASH_METHODS.get(profile.method)
    if method is None:
        raise FlashError(
            f"{profile.source}: transfer.method {profile.method!r} cannot flash by itself"
        )
    return method


def _wiseeye2(request: FlashRequest) -> FlashResult:
    """With a reset line, the port is opened and the line pulsed first: the board restarts
    into its bootloader without a hand on its reset button."""
    port = request.link.port
    assert port is not None
    handle = None
    if request.reset is not None:
        try:
            handle = open_port(port, request.profile.serial_settings)
        except PortError as error:
            raise FlashError(str(error)) from None
        request.status(f"pulsing {request.reset.upper()} on {port} to reset the board")
        try:
            pulse_line(handle, request.reset)
        except Exception as error:  # serial.SerialException, OSError (a pty has no lines)
            handle.close()
            raise FlashError(f"{port}: {request.reset.upper()} not pulsed: {error}") from None
    return flash_wiseeye2(request.profile, request.files, port, status=request.status,
                          progress=request.progress, handle=handle)  # fmt: skip


def _mps3(request: FlashRequest) -> FlashResult:
    assert request.link.mcc_port is not None
    return flash_mps3(request.profile, request.files, drive=request.link.drive,
                      mcc_port=request.link.mcc_port, app_port=request.link.port,
                      status=request.status, progress=request.progress)  # fmt: skip


def _pyocd(request: FlashRequest) -> FlashResult:
    """The probe's own UART (VCOM), when one was picked, is opened before the reset that
    ends programming: the boot's first bytes are not lost."""
    port = request.link.port
    handle = None
    if port is not None:
        try:
            handle = open_port(port, request.profile.serial_settings)
        except PortError as error:
            raise FlashError(str(error)) from None
    try:
        result = flash_pyocd(request.profile, request.files, status=request.status,
                             progress=request.progress)  # fmt: skip
    except BaseException:
        if handle is not None:
            handle.close()
        raise
    result.port, result.handle = port, handle
    return result


def _qemu(request: FlashRequest) -> FlashResult:
    request.status("qemu-an547: loading the ELF into QEMU (emulated board, no NPU)")
    return flash_qemu(request.profile, request.files, timelimit=request.timelimit)


register(FlashMethod("xmodem-wiseeye2", ("port",), _wiseeye2, resets=True))
register(FlashMethod("mps3-drive", ("mcc_port", "drive"), _mps3, uses=("port",)))
register(FlashMethod("pyocd", ("probe",), _pyocd, uses=("port",)))
register(FlashMethod("qemu", (), _qemu))


def _vendor_tool(request: FlashRequest) -> FlashResult:
    """The board's port (to monitor) is opened after the tool: the tool may talk through it
    (Alif's SE-UART is the DevKit's one USB port)."""
    return flash_vendor_tool(request.profile, request.files, port=request.link.port,
                             status=request.status)  # fmt: skip


register(FlashMethod("vendor-tool", ("tool",), _vendor_tool, uses=("port",)))


def check_needs(
    profile: BoardProfile, link: BoardLink, files: list[FlashFile] | None = None
) -> BoardLink:
    """``link`` with the drive found (by its volume label) when none was given; NeedMissing
    naming the first need nobody supplied (a vendor tool not installed: ToolMissing, with
    the command to run where it is)."""
    method = method_of(profile)
    if "tool" in method.needs:
        check_tool(profile, files or [FlashFile(Path("FIRMWARE"))], link.port)
    if "port" in method.needs and link.port is None:
        raise NeedMissing("port", f"{profile.name}: no serial port to flash through")
    if "mcc_port" in method.needs and link.mcc_port is None:
        raise NeedMissing("mcc_port", f"{profile.name}: no MCC port to reboot the board")
    if "drive" in method.needs:
        drive = link.drive or find_drive(profile)
        if drive is None or not Path(drive).is_dir():
            label = profile.transfer.get("volume_label", "V2M-MPS3")
            raise NeedMissing("drive", f"{drive or label}: the board's USB drive is not mounted")
        link = BoardLink(link.port, link.mcc_port, Path(drive))
    return link


def method_resets(profile: BoardProfile) -> bool:
    """The profile's method pulses a reset line (it flashes through a port)."""
    method = FLASH_METHODS.get(profile.method)
    return method is not None and method.resets


def reset_line(profile: BoardProfile, reset: str | None) -> str | None:
    """The line to pulse: ``reset`` as given (``none``: no pulse), else the profile's."""
    if reset is None:
        return profile.reset
    return None if reset == "none" else reset


def flash_board(
    profile: BoardProfile,
    files: list[FlashFile],
    link: BoardLink,
    *,
    timelimit: float | None = None,
    status: Status = lambda text: None,
    progress: ProgressFn | None = None,
    reset: str | None = None,
) -> FlashResult:
    """Flash with the profile's registered method (the CLI and the Boards tab both come
    here, with a link from ports.pick_ports); ``reset`` (dtr, rts, none; None: the
    profile's) is pulsed first by a method that flashes through a port, and ignored by the
    others, which reset the board themselves."""
    method = method_of(profile)
    link = check_needs(profile, link, files)
    line = reset_line(profile, reset) if method.resets else None
    return method.flash(FlashRequest(profile, files, link, timelimit, status, progress, line))


def monitor_source(
    profile: BoardProfile,
    result: FlashResult,
    *,
    baud: int | None = None,
    timelimit: float | None = None,
    source_type=None,
):
    """The byte source that follows the flashed board's boot: QEMU's own, else its
    application port (still open after flashing when the method kept it); None when the
    board has no port to follow (pyOCD without one picked). ``source_type``: a
    SerialSource-like class to build instead (a labgrid place's, runner.boards.place)."""
    from etu.runner.boards.source import SerialSource

    if result.source is not None:
        result.source.timelimit = timelimit
        return result.source
    if result.port is None:
        return None
    settings = dict(profile.serial_settings)
    if baud:
        settings["baudrate"] = baud
        if result.handle is not None:
            result.handle.baudrate = baud
    make = source_type or SerialSource
    return make(result.port, settings, timelimit=timelimit, handle=result.handle,
                initial=result.initial, eol=profile.eol, reset=profile.reset)  # fmt: skip


def flashed_session_meta(
    profile: BoardProfile, files: list[FlashFile], result: FlashResult, *, baud: int | None = None
) -> dict:
    """The session meta of a flashed board (``etu flash --monitor`` and the Boards tab): the
    firmware is the first file flashed whole, the programs the ``.pte`` files placed at an
    address."""
    from etu.runner.session import board_session_meta

    firmware = next((f.path for f in files if f.address is None), None)
    programs = [f.path for f in files if f.address is not None and f.path.suffix == ".pte"]
    return board_session_meta(
        board=profile.name, label=profile.label, port=result.port, baud=baud or profile.baud,
        firmware=firmware, flashed=result.files, programs=programs, target=profile.target,
    )  # fmt: skip


__all__ = [
    "FLASH_METHODS", "NEEDS", "PLACEMENT_MAGIC", "VENDOR_TOOL_TIMEOUT", "BoardLink",
    "FlashError", "FlashFile", "FlashMethod", "FlashRequest", "FlashResult", "NeedMissing",
    "ProgressFn", "Status", "ToolMissing", "check_needs", "check_tool", "find_drive",
    "flash_board", "flash_mps3", "flash_pyocd", "flash_qemu", "flash_vendor_tool",
    "flash_wiseeye2", "flashed_session_meta", "images_folder", "images_txt", "load_segments",
    "mcc_address", "method_of", "method_resets", "monitor_source", "mps3_images",
    "parse_file_spec", "placement_block", "register", "reset_line", "shell_line", "short_name",
    "tool_folder_hint", "vendor_commands",
]  # fmt: skip
