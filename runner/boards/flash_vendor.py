"""A vendor's own flashing tool (Alif SE Tools, Renesas Flash Programmer, ModusToolbox's
OpenOCD), run as the profile writes it; not installed, it is ToolMissing with the exact
command to run where it is.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

from etu.runner.boards.flash_base import FlashError, FlashFile, FlashResult, NeedMissing, Status
from etu.runner.boards.profiles import BoardProfile

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
