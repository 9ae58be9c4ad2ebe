"""Flashing a board with its own method: the WiseEye2 bootloader (XMODEM), the MPS3 USB
drive + MCC, pyOCD, the emulated board (QEMU loads the ELF), or a vendor's own tool (Alif SE
Tools, Renesas Flash Programmer, ModusToolbox's OpenOCD) run as the profile writes it.

Each method returns what the monitor needs to follow the boot without losing a byte: the
application port, still open (the WE2 reboots on the port etu flashed through; the MPS3's
application port is opened before the MCC reboots the board), plus whatever was already
read after the last prompt. Failures are FlashError with one line naming the file or port.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from etu.parsers.errors import describe_error
from etu.runner.boards.profiles import BoardProfile, Prompt
from etu.runner.boards.prompts import PromptTimeout, expect
from etu.runner.boards.source import PortError, open_port
from etu.runner.boards.terminal import pulse_line
from etu.runner.boards.transfer import Progress, TransferError, xmodem_send

PLACEMENT_MAGIC = (b"\xc0\x5a", b"\x5a\xc0")


class FlashError(RuntimeError):
    """Flashing failed; one line naming the file or port and what went wrong."""


@dataclass(frozen=True, slots=True)
class FlashFile:
    path: Path
    address: int | None = None  # FILE@ADDRESS: placed at an address (a .pte in flash)
    offset: int = 0  # FILE@ADDRESS+OFFSET

    @property
    def name(self) -> str:
        return self.path.name


def parse_file_spec(spec: str) -> FlashFile:
    """``FILE``, ``FILE@0xADDRESS`` or ``FILE@0xADDRESS+0xOFFSET``."""
    path, _, where = spec.partition("@")
    if not where:
        return FlashFile(Path(path))
    address, _, offset = where.partition("+")
    try:
        return FlashFile(Path(path), int(address, 0), int(offset, 0) if offset else 0)
    except ValueError:
        raise FlashError(
            f"{spec}: expected FILE@ADDRESS[+OFFSET] (e.g. model.pte@0xB7B000)"
        ) from None


def placement_block(address: int, offset: int = 0) -> bytes:
    """WiseEye2: the 128-byte block before a file meant for an address."""
    if not (0 <= address < 1 << 32 and 0 <= offset < 1 << 32):
        raise FlashError(f"address 0x{address:x}+0x{offset:x} does not fit 32 bits")
    head = PLACEMENT_MAGIC[0] + address.to_bytes(4, "little") + offset.to_bytes(4, "little")
    return (head + PLACEMENT_MAGIC[1]).ljust(128, b"\xff")


@dataclass
class FlashResult:
    port: str | None = None  # the application port, for the monitor
    handle: object | None = None  # ... still open
    initial: bytes = b""  # bytes read after the last prompt: the start of the boot log
    source: object | None = None  # a ready byte source (the emulated board)
    files: list[dict] = field(default_factory=list)  # per-file records for --json


Status = Callable[[str], None]
ProgressFn = Callable[[Progress], None]


def _read(file: FlashFile) -> bytes:
    try:
        return file.path.read_bytes()
    except OSError as error:
        raise FlashError(f"{file.path}: {error.strerror or error}") from None


def _prompt(profile: BoardProfile, name: str) -> Prompt:
    prompt = profile.prompt(name)
    if prompt is None:
        raise FlashError(f"{profile.source}: prompts.{name}: the {profile.method} method needs it")
    return prompt


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
        data = _read(file)
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
        expect(handle, _prompt(profile, "boot"), port_name=port)
        key = str(transfer.get("enter_key", "1")).encode()
        after = expect(handle, _prompt(profile, "menu"), port_name=port, poke=key)
        time.sleep(0.05)
        # A poke that reached the board after its menu was already taken as the choice
        # (the menu's key is the poke's): its "ready" line may be here. Nothing read is
        # thrown away, or that line would be, and etu would wait for it in vain.
        after += handle.read(handle.in_waiting)
        ready = _prompt(profile, "ready")
        if ready.text.encode() not in after:
            handle.write(str(transfer.get("menu_choice", "1")).encode())
        pending = _line_rest(handle, _then(handle, ready, after, port))
        for index, (file, data) in enumerate(payloads):
            status(f"sending {file.name} ({len(data):,} bytes, XMODEM {block})")
            stats = xmodem_send(handle, data, name=file.name, block_size=block, retries=retries,
                                on_progress=progress, pending=pending)  # fmt: skip
            result.files.append({"file": str(file.path), **stats.to_json()})
            pending = b""
            after = expect(handle, _prompt(profile, "end_question"), port_name=port)
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


def _then(handle, prompt: Prompt, already: bytes, port_name: str) -> bytes:
    """What follows ``prompt``: found in ``already`` (read with the previous prompt), else
    awaited on the port."""
    text = prompt.text.encode()
    at = already.find(text)
    if at != -1:
        return already[at + len(text) :]
    return expect(handle, prompt, port_name=port_name)


def _line_rest(handle, after: bytes, timeout: float = 1.0) -> bytes:
    """What follows the end of the prompt's line. WE2 prints "Send data using the xmodem
    protocol from your terminal" and then its ``C``: the rest of that line must not reach
    the XMODEM sender, which counts every stray byte as an error and gives up at 16."""
    deadline = time.monotonic() + timeout
    while b"\n" not in after and time.monotonic() < deadline:
        after += handle.read(max(1, handle.in_waiting))
    return after.rsplit(b"\n", 1)[-1] if b"\n" in after else b""


# ------------------------------------------------------------------------- MPS3 drive
_NOT_83 = re.compile(r"[^A-Z0-9_]")


def short_name(stem: str, index: int, used: set[str]) -> str:
    """An 8.3 name (the MCC reads nothing else): up to 6 letters of the stem + 2 digits."""
    base = _NOT_83.sub("", stem.upper())[:6] or "IMAGE"
    for n in range(index, index + 100):
        name = f"{base[:6]}{n % 100:02d}.BIN"
        if name not in used:
            used.add(name)
            return name
    raise FlashError(f"{stem}: no free 8.3 name")


def load_segments(path: Path) -> list[tuple[int, bytes]]:
    """(physical address, bytes) of an ELF's PT_LOAD segments that carry file data."""
    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile

    try:
        with open(path, "rb") as handle:
            elf = ELFFile(handle)
            return [
                (seg["p_paddr"], seg.data()[: seg["p_filesz"]])
                for seg in elf.iter_segments()
                if seg["p_type"] == "PT_LOAD" and seg["p_filesz"] > 0
            ]
    except (ELFError, OSError) as error:
        raise FlashError(f"{path}: not a readable ELF ({error})") from None


def mcc_address(profile: BoardProfile, cpu: int, size: int, what: str) -> int:
    for entry in profile.transfer.get("address_map", []):
        base, length = int(entry["cpu"]), int(entry["size"])
        if base <= cpu and cpu + size <= base + length:
            return int(entry["mcc"]) + (cpu - base)
    raise FlashError(f"{what}: 0x{cpu:08x}+{size:,} is outside the MCC's address view")


def mps3_images(profile: BoardProfile, files: list[FlashFile]) -> list[tuple[str, int, bytes]]:
    """(8.3 name, MCC address, bytes) for each load segment / placed binary."""
    images, used = [], set()
    for file in files:
        if file.address is not None:
            data = _read(file)
            address = mcc_address(profile, file.address + file.offset, len(data), str(file.path))
            images.append((short_name(file.path.stem, len(images), used), address, data))
            continue
        segments = load_segments(file.path)
        if not segments:
            raise FlashError(
                f"{file.path}: no load segment with data (give FILE@ADDRESS for a .bin)"
            )
        for cpu, data in segments:
            address = mcc_address(profile, cpu, len(data), f"{file.path} segment")
            images.append((short_name(file.path.stem, len(images), used), address, data))
    return images


def images_txt(images: list[tuple[str, int, bytes]], update: str = "AUTO") -> str:
    lines = ["TITLE: Versatile Express Images Configuration File", "[IMAGES]",
             f"TOTALIMAGES: {len(images)}"]  # fmt: skip
    for n, (name, address, _) in enumerate(images):
        lines += [f"IMAGE{n}ADDRESS: 0x{address:08X}", f"IMAGE{n}UPDATE: {update}",
                  f"IMAGE{n}FILE: \\SOFTWARE\\{name}"]  # fmt: skip
    return "\r\n".join(lines) + "\r\n"


MOUNTS = Path("/proc/mounts")


def find_drive(profile: BoardProfile) -> Path | None:
    """The mounted folder whose name is the board's volume label (V2M-MPS3)."""
    label = str(profile.transfer.get("volume_label", "V2M-MPS3"))
    try:
        mounts = MOUNTS.read_text().splitlines()
    except OSError:
        return None
    for line in mounts:
        parts = line.split()
        if len(parts) > 1:
            # the kernel writes a space, tab, newline or backslash in a path as \ooo
            where = Path(re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), parts[1]))
            if where.name == label:
                return where
    return None


def images_folder(drive: Path, images_dir: str) -> Path:
    """The folder ``images.txt`` goes in. A pattern (``MB/*/*``, for a board whose folder
    name etu does not know, the MPS4) is the one matching folder on the drive that already
    holds an ``images.txt`` (the FPGA image's board files put one there)."""
    if not any(char in images_dir for char in "*?["):
        return drive / images_dir
    found = sorted({p.parent for p in drive.glob(f"{images_dir}/images.txt") if p.is_file()})
    if len(found) != 1:
        what = "none" if not found else ", ".join(str(f.relative_to(drive)) for f in found)
        raise FlashError(
            f"{drive}: one folder {images_dir}/ with an images.txt expected, found {what} "
            "(name it in your own profile's transfer.images_dir)"
        )
    return found[0]


def flash_mps3(
    profile: BoardProfile,
    files: list[FlashFile],
    *,
    drive: Path | None,
    mcc_port: str,
    app_port: str | None,
    status: Status = lambda text: None,
    progress: ProgressFn | None = None,
) -> FlashResult:
    drive = drive or find_drive(profile)
    if drive is None or not Path(drive).is_dir():
        label = profile.transfer.get("volume_label", "V2M-MPS3")
        raise NeedMissing("drive", f"{drive or label}: the board's USB drive is not mounted")
    images = mps3_images(profile, files)
    software = Path(drive) / "SOFTWARE"
    config_dir = images_folder(Path(drive), str(profile.transfer["images_dir"]))
    if not config_dir.resolve().is_relative_to(Path(drive).resolve()):
        raise FlashError(f"{profile.transfer['images_dir']!r}: images_dir leaves the drive {drive}")
    software.mkdir(exist_ok=True)
    config_dir.mkdir(parents=True, exist_ok=True)
    result = FlashResult(port=app_port)
    total = sum(len(data) for _, _, data in images)
    done, started = 0, time.monotonic()
    for name, address, data in images:
        status(f"copying {name} ({len(data):,} bytes) for 0x{address:08X}")
        with open(software / name, "wb") as out:
            for at in range(0, len(data), 1 << 16):
                out.write(data[at : at + (1 << 16)])
                done += min(1 << 16, len(data) - at)
                if progress:
                    rate = done / max(time.monotonic() - started, 1e-6)
                    progress(Progress(name, done, total, rate, (total - done) / rate, 0, 0, "copy"))
            out.flush()
            os.fsync(out.fileno())
        result.files.append({"file": name, "mcc_address": address, "bytes": len(data)})
    (config_dir / "images.txt").write_text(
        images_txt(images, str(profile.transfer.get("update", "AUTO"))), newline=""
    )
    os.sync()
    app = None
    try:
        if app_port:
            app = open_port(app_port, profile.serial_settings)  # before the reboot: no byte lost
        mcc = open_port(mcc_port, profile.serial_settings)
    except PortError as error:
        if app is not None:
            app.close()
        raise FlashError(str(error)) from None
    try:
        mcc.write(b"\r\n")
        expect(mcc, _prompt(profile, "mcc"), port_name=mcc_port)
        status(f"reboot on the MCC ({mcc_port})")
        mcc.write(b"reboot\r\n")
        # The banners may come in one burst (small files are written at once): each
        # prompt is looked for first in what came after the previous one.
        after = expect(mcc, _prompt(profile, "firmware"), port_name=mcc_port)
        after = _then(mcc, _prompt(profile, "images"), after, mcc_port)
        written = _prompt(profile, "written")
        done = after.count(written.text.encode())
        while done < len(images):
            after = expect(mcc, written, port_name=mcc_port)
            done += 1 + after.count(written.text.encode())
    except PromptTimeout as error:
        if app is not None:
            app.close()
        raise FlashError(str(error)) from None
    finally:
        mcc.close()
    result.handle = app
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
NEEDS = ("port", "mcc_port", "drive", "probe", "tool")


class NeedMissing(FlashError):
    """A flash method's need that nobody supplied (``need`` is one of NEEDS): each front
    end adds its own advice (the CLI names its option, the Boards tab its control)."""

    def __init__(self, need: str, message: str) -> None:
        super().__init__(message)
        self.need = need


# ------------------------------------------------------------------------- vendor tool
VENDOR_TOOL_TIMEOUT = 600.0  # seconds one command of a vendor tool may take


def vendor_commands(profile: BoardProfile, files: list[FlashFile], port: str | None) -> list:
    """The profile's ``transfer.commands`` (argv lists) with ``{file}`` (the firmware's
    absolute path) and ``{port}`` filled in."""
    if len(files) != 1 or files[0].address is not None:
        raise FlashError(f"{profile.name}: give exactly one firmware file (the vendor tool "
                         "places it itself)")  # fmt: skip
    values = {"file": str(files[0].path.resolve()), "port": port or "<port>"}
    return [[arg.format_map(values) for arg in argv] for argv in profile.transfer["commands"]]


def shell_line(commands: list[list[str]], cwd: str | None = None) -> str:
    """The commands as one line a shell runs (each argument quoted), ``cd`` first."""
    line = " && ".join(shlex.join(argv) for argv in commands)
    return f"cd {shlex.quote(cwd)} && {line}" if cwd else line


class ToolMissing(NeedMissing):
    """A vendor tool that is not installed: the one line names it and the exact command
    to run where it is; ``commands`` (argv lists) and ``shell`` say the same for --json."""

    def __init__(self, profile: BoardProfile, tool: str, commands: list, cwd: str | None):
        vendor = profile.transfer.get("vendor")
        self.tool, self.vendor, self.commands = tool, vendor, commands
        self.shell = shell_line(commands, cwd)
        named = f"{tool} ({vendor})" if vendor else tool
        super().__init__("tool", f"{profile.name}: {named} is not installed here; flash "
                         f"with: {self.shell}")  # fmt: skip

    def to_json(self) -> dict:
        return {"type": "tool_missing", "tool": self.tool, "vendor": self.vendor,
                "commands": self.commands, "shell": self.shell}  # fmt: skip


def tool_folder_hint(profile: BoardProfile) -> str | None:
    """Where the commands run when the tool is not installed (printed, never entered)."""
    if not _in_tool_folder(profile):
        return None
    return str(profile.transfer.get("folder") or f"<the folder of {profile.transfer['tool']}>")


def _in_tool_folder(profile: BoardProfile) -> bool:
    return profile.transfer.get("cwd") == "tool"


def check_tool(profile: BoardProfile, files: list[FlashFile], port: str | None) -> Path:
    """The vendor tool's path on PATH, else ToolMissing with the exact command."""
    tool = str(profile.transfer["tool"])
    found = shutil.which(tool)
    if found is None:
        commands = vendor_commands(profile, files, port)
        raise ToolMissing(profile, tool, commands, tool_folder_hint(profile))
    return Path(found)


def flash_vendor_tool(
    profile: BoardProfile, files: list[FlashFile], *, port: str | None = None,
    status: Status = lambda text: None,
) -> FlashResult:  # fmt: skip
    """Run the profile's commands (argv lists, no shell), in the tool's folder when the
    profile says so; a command that fails is one line with its exit status and last word."""
    tool = check_tool(profile, files, port)
    commands = vendor_commands(profile, files, port)
    if port is None and any("{port}" in arg for argv in profile.transfer["commands"]
                            for arg in argv):  # fmt: skip
        raise NeedMissing("port", f"{profile.name}: its tool flashes through the board's "
                          "serial port: none was given or found")  # fmt: skip
    cwd = tool.parent if _in_tool_folder(profile) else None
    result = FlashResult(port=port)
    for argv in commands:
        status(f"running {shlex.join(argv)}")
        try:
            # No terminal to answer a prompt: a tool that asks (for a port, say) reads
            # end-of-file and fails with its own last line rather than waiting unseen.
            done = subprocess.run(
                argv, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                errors="replace", timeout=VENDOR_TOOL_TIMEOUT, check=False,
            )  # fmt: skip
        except FileNotFoundError:
            raise ToolMissing(profile, argv[0], commands, tool_folder_hint(profile)) from None
        except subprocess.TimeoutExpired:
            raise FlashError(f"{argv[0]}: no answer in {VENDOR_TOOL_TIMEOUT:.0f} s") from None
        except OSError as error:
            raise FlashError(f"{argv[0]}: {error.strerror or error}") from None
        if done.returncode != 0:
            said = _last_line(done.stderr) or _last_line(done.stdout) or "no output"
            raise FlashError(f"{argv[0]}: exit status {done.returncode}: {said}")
        result.files.append({"file": str(files[0].path), "command": argv})
    return result


def _last_line(text: str) -> str:
    """The last non-blank line of a tool's output, without control characters."""
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    return "".join(ch for ch in lines[-1] if ch.isprintable())[:200] if lines else ""


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
