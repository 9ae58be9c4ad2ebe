"""Boards people now bring up (issue 25 §7): Alif Ensemble E7/E8, Renesas RA8P1, Infineon
PSOC Edge E84, Nuvoton M55M1, Arm MPS4 with Corstone-320. Each profile holds its public
facts (port, flash method, memory preset for Fit, boot banner); a vendor tool that is not
installed here makes ``etu flash`` print the exact command and exit 8; one that is (a real
executable on PATH, written by the test) is run with an argv list; the Nuvoton part goes
through etu's pyOCD path; the MPS4 through the MPS3's drive and MCC."""

from __future__ import annotations

import json
import os
import shlex
import stat
from itertools import pairwise
from pathlib import Path

import pytest

from etu.parsers.memory_presets import PRESETS, get_preset
from etu.runner.boards.flash import (
    FLASH_METHODS,
    BoardLink,
    FlashError,
    FlashFile,
    NeedMissing,
    ToolMissing,
    flash_board,
    images_folder,
)
from etu.runner.boards.profiles import ProfileError, get_profile, load_profile, load_profiles
from etu.tui.cli import main
from tests.board_peers import Pty, PyocdStandIn, VirtualMps3, runner_log

ROOT = Path(__file__).resolve().parent.parent.parent
NEW_BOARDS = {
    "alif-e7": ("vendor-tool", "alif-e7-hp", "ethos-u55-256"),
    "alif-e8": ("vendor-tool", "alif-e8-hp", "ethos-u55-256"),
    "renesas-ra8p1": ("vendor-tool", "renesas-ra8p1", "ethos-u55-256"),
    "infineon-psoc-edge-e84": ("vendor-tool", "infineon-pse84-m55", "ethos-u55-128"),
    "nuvoton-m55m1": ("pyocd", "nuvoton-m55m1", "ethos-u55-256"),
    "mps4-corstone-320": ("mps3-drive", "corstone-320", "ethos-u85-256"),
}
ZEPHYR_BANNER = "*** Booting Zephyr OS"


def cli(*argv: str, capsys) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def no_tools(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """PATH with only the basics (cp) and an empty folder for the test's own tools."""
    tools = tmp_path / "tools"
    tools.mkdir()
    monkeypatch.setenv("PATH", f"{tools}{os.pathsep}/usr/bin{os.pathsep}/bin")
    return tools


def write_tool(folder: Path, name: str, *, status: int = 0, say: str = "done") -> Path:
    """A real executable that records its argv (one line, JSON) and working folder."""
    path = folder / name
    path.write_text(
        "#!/usr/bin/env python3\n"
        "import json, os, sys\n"
        f"with open({str(folder / 'calls.jsonl')!r}, 'a') as out:\n"
        "    out.write(json.dumps({'argv': sys.argv, 'cwd': os.getcwd()}) + '\\n')\n"
        f"print({say!r})\n"
        f"sys.exit({status})\n"
    )
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def calls(folder: Path) -> list[dict]:
    log = folder / "calls.jsonl"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


# ------------------------------------------------------------------ the profiles' facts
def test_every_new_board_has_its_method_preset_target_and_boot_banner() -> None:
    profiles = load_profiles(ROOT / "nonexistent")
    for name, (method, preset, target) in NEW_BOARDS.items():
        profile = profiles[name]
        assert (profile.method, profile.memory_preset, profile.target) == (method, preset, target)
        assert profile.method in FLASH_METHODS and profile.memory_preset in PRESETS
        assert profile.baud == 115200 and profile.framing == "8N1"
        assert profile.prompts["boot"].text == ZEPHYR_BANNER
        assert profile.source.read_text().startswith("# ")  # what it is and its sources
        assert get_preset(preset).linker_script  # the layout names where it comes from
    assert profiles["alif-e8"].prompts["atoc"].text == "ATOC ok"  # the SE's boot of the ATOC
    assert profiles["nuvoton-m55m1"].transfer["target"] == "m55m1h2ljae"
    mps4 = profiles["mps4-corstone-320"]
    assert (mps4.transfer["mcc_port"], mps4.transfer["app_port"]) == (0, 1)


def test_board_presets_hold_the_devicetree_facts() -> None:
    def layout(name: str) -> dict[str, tuple[int, int]]:
        return {r.name: (r.origin, r.length) for r in get_preset(name).regions}

    e8 = layout("alif-e8-hp")  # zephyr ae822fa0e5597ls0.dtsi, ensemble_rtss_hp.dtsi
    assert e8["MRAM"] == (0x80000000, 5632 * 1024)
    assert e8["SRAM0"] == (0x02000000, 4 << 20) and e8["SRAM1"] == (0x02400000, 4 << 20)
    assert e8["ITCM"] == (0, 256 * 1024) and e8["DTCM"] == (0x20000000, 1 << 20)
    e7 = layout("alif-e7-hp")  # AE722F80F55D5XX.h: MRAM 5.5 MB, SRAM1 2.5 MB at 0x08000000
    assert e7["MRAM"] == (0x80000000, 0x580000) and e7["SRAM1"] == (0x08000000, 0x280000)
    assert layout("renesas-ra8p1")["SRAM"] == (0x22000000, 0x1D4000)
    assert layout("nuvoton-m55m1") == {
        "ITCM": (0, 64 * 1024), "FLASH": (0x100000, 2 << 20),
        "DTCM": (0x20000000, 128 * 1024), "SRAM": (0x20100000, 1344 * 1024),
    }  # fmt: skip
    assert layout("infineon-pse84-m55")["SOCMEM"] == (0x26040000, 0x2BC000)
    for preset in PRESETS.values():
        ordered = sorted(preset.regions, key=lambda r: r.origin)
        assert all(a.origin + a.length <= b.origin for a, b in pairwise(ordered))
        assert preset.kind in ("runner", "board")
    assert {p.name for p in PRESETS.values() if p.kind == "runner"} == {
        "corstone-300", "corstone-320",
    }  # fmt: skip


def test_etu_boards_lists_the_new_boards(capsys, monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("ETU_BOARDS_DIR", str(tmp_path))
    code, out, _ = cli("boards", "--json", capsys=capsys)
    records = {r["name"]: r for r in map(json.loads, out.splitlines())}
    assert code == 0 and set(NEW_BOARDS) <= set(records)
    assert records["renesas-ra8p1"]["transfer"]["tool"] == "rfp-cli"
    assert records["alif-e8"]["memory"]["preset"] == "alif-e8-hp"
    code, out, _ = cli("boards", capsys=capsys)
    rows = [line for line in out.splitlines() if not line.startswith(" ")]
    assert code == 0 and len({row.index(" 115200 ") for row in rows if " 115200 " in row}) == 1


@pytest.mark.parametrize(
    ("transfer", "expected"),
    [
        ('tool = "x"\n', r"bad\.toml:\d+: transfer: missing key 'commands'"),
        ('commands = [["x"]]\n', r"transfer: missing key 'tool'"),
        ('tool = "x"\ncommands = ["x --flash"]\n', r"transfer\.commands: each command is a list"),
        ('tool = "x"\ncommands = [["x", "{elf}"]]\n', r"'\{elf\}': placeholders are \{file\}"),
        ('tool = "x"\ncommands = [["x"]]\ncwd = "/tmp"\n', r"transfer\.cwd: '/tmp'"),
    ],
)  # fmt: skip
def test_vendor_tool_profile_errors_name_file_line_key(tmp_path, transfer, expected) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(f'name = "x"\n[transfer]\nmethod = "vendor-tool"\n{transfer}')
    with pytest.raises(ProfileError, match=expected):
        load_profile(path)


# ------------------------------------------------------------------ a vendor tool missing
@pytest.mark.parametrize("board", ["alif-e8", "renesas-ra8p1", "infineon-psoc-edge-e84"])
def test_a_missing_vendor_tool_gives_the_exact_command(board, tmp_path, no_tools) -> None:
    firmware = tmp_path / "zephyr dir" / "zephyr.bin"  # a space: the command quotes it
    firmware.parent.mkdir()
    firmware.write_bytes(b"\x00" * 64)
    profile = get_profile(board)
    with pytest.raises(ToolMissing) as missing:
        flash_board(profile, [FlashFile(firmware)], BoardLink())
    error = missing.value
    assert isinstance(error, NeedMissing) and error.need == "tool"
    assert str(error).startswith(f"{board}: {profile.transfer['tool']} (")
    assert "is not installed here; flash with: " in str(error)
    # The printed line is what a shell runs: split back, it is the profile's argv lists.
    line = error.shell.removeprefix(f"cd {shlex.quote(str(profile.transfer.get('folder')))} && ")
    words = shlex.split(line)
    expected = [[a.replace("{file}", str(firmware)) for a in argv]
                for argv in profile.transfer["commands"]]  # fmt: skip
    assert error.commands == expected
    joined = [word for i, argv in enumerate(expected) for word in ["&&"][: min(i, 1)] + argv]
    assert words == joined
    assert calls(no_tools) == []


def test_etu_flash_prints_the_command_and_exits_8(tmp_path, no_tools, capsys) -> None:
    firmware = tmp_path / "zephyr.hex"
    firmware.write_text(":00000001FF\n")
    code, out, err = cli("flash", "--board", "renesas-ra8p1", str(firmware), capsys=capsys)
    assert code == 8 and out == ""
    assert err == (
        "etu: renesas-ra8p1: rfp-cli (Renesas Flash Programmer) is not installed here; flash "
        f"with: rfp-cli -device RA -tool jlink -if swd -auto -file {firmware}\n"
    )
    code, out, err = cli("flash", "--board", "alif-e8", "--json", str(firmware), capsys=capsys)
    first, last = map(json.loads, out.splitlines())
    assert code == 8 and err == ""
    assert first["type"] == "tool_missing" and first["tool"] == "app-write-mram"
    assert first["commands"][-1] == ["app-write-mram", "-b", "57600"]
    assert first["commands"][0] == ["cp", str(firmware), "build/images/zephyr.bin"]
    assert last == {"error": f"alif-e8: app-write-mram (Alif SE Tools) is not installed here; "
                             f"flash with: {first['shell']}"}  # fmt: skip


# ------------------------------------------------------------------ a vendor tool installed
def test_an_installed_vendor_tool_is_run_with_argv_lists_in_its_folder(tmp_path, no_tools) -> None:
    """Alif's SE Tools: the firmware copied into the tools' build/images, the ATOC made,
    MRAM written, each command with its own argv, in the tools' folder."""
    (no_tools / "build" / "images").mkdir(parents=True)
    write_tool(no_tools, "app-gen-toc")
    write_tool(no_tools, "app-write-mram")
    firmware = tmp_path / "zephyr.bin"
    firmware.write_bytes(bytes(range(256)))
    said: list[str] = []
    result = flash_board(get_profile("alif-e8"), [FlashFile(firmware)], BoardLink(),
                         status=said.append)  # fmt: skip
    assert [c["argv"][1:] for c in calls(no_tools)] == [
        ["-f", "build/images/zephyr.json"], ["-b", "57600"],
    ]  # fmt: skip
    assert {c["cwd"] for c in calls(no_tools)} == {str(no_tools)}
    assert (no_tools / "build" / "images" / "zephyr.bin").read_bytes() == firmware.read_bytes()
    assert said[0] == f"running cp {firmware} build/images/zephyr.bin"
    assert [f["command"][0] for f in result.files] == ["cp", "app-gen-toc", "app-write-mram"]
    assert result.port is None and result.handle is None  # no port picked: nothing to follow


def test_openocd_gets_its_tcl_command_as_one_argument(tmp_path, no_tools) -> None:
    write_tool(no_tools, "openocd")
    firmware = tmp_path / "my app.hex"
    firmware.write_text(":00000001FF\n")
    flash_board(get_profile("infineon-psoc-edge-e84"), [FlashFile(firmware)], BoardLink())
    (call,) = calls(no_tools)
    assert call["argv"][1:] == [
        "-f", "interface/kitprog3.cfg", "-c", "transport select swd", "-c", "set ENABLE_CM55 1",
        "-f", "target/infineon/pse84xgxs2.cfg", "-c", f"program {firmware} verify reset exit",
    ]  # fmt: skip


def test_a_failing_vendor_tool_is_one_line_with_its_status(tmp_path, no_tools) -> None:
    write_tool(no_tools, "rfp-cli", status=3, say="Error: E3000105: The device is not responding")
    firmware = tmp_path / "zephyr.hex"
    firmware.write_text(":00000001FF\n")
    with pytest.raises(FlashError) as failed:
        flash_board(get_profile("renesas-ra8p1"), [FlashFile(firmware)], BoardLink())
    assert not isinstance(failed.value, NeedMissing)
    assert str(failed.value) == (
        "rfp-cli: exit status 3: Error: E3000105: The device is not responding"
    )


def test_a_vendor_tool_takes_one_firmware_file(tmp_path, no_tools) -> None:
    write_tool(no_tools, "rfp-cli")
    firmware = tmp_path / "zephyr.hex"
    firmware.write_text(":00000001FF\n")
    with pytest.raises(FlashError, match="give exactly one firmware file"):
        flash_board(get_profile("renesas-ra8p1"), [FlashFile(firmware), FlashFile(firmware)],
                    BoardLink())  # fmt: skip
    assert calls(no_tools) == []


def test_a_tool_that_takes_the_port_gets_the_picked_one(tmp_path, no_tools) -> None:
    """A user's profile whose tool talks through the serial port: ``{port}`` is the port
    picked (never a placeholder handed to the tool); with none, the port is the need."""
    write_tool(no_tools, "isp-tool")
    (tmp_path / "boards").mkdir()
    (tmp_path / "boards" / "isp.toml").write_text(
        'name = "isp"\n[transfer]\nmethod = "vendor-tool"\ntool = "isp-tool"\n'
        'commands = [["isp-tool", "--port", "{port}", "{file}"]]\n'
    )
    profile = load_profiles(tmp_path / "boards")["isp"]
    firmware = tmp_path / "app.bin"
    firmware.write_bytes(b"\x01")
    with pytest.raises(NeedMissing) as no_port:
        flash_board(profile, [FlashFile(firmware)], BoardLink())
    assert no_port.value.need == "port" and calls(no_tools) == []
    flash_board(profile, [FlashFile(firmware)], BoardLink(port="/dev/ttyUSB7"))
    assert calls(no_tools)[0]["argv"][1:] == ["--port", "/dev/ttyUSB7", str(firmware)]


# ------------------------------------------------------------------ pyOCD and the MPS4
def test_nuvoton_goes_through_pyocd_with_its_part(tmp_path, monkeypatch) -> None:
    probe = PyocdStandIn(None, b"")
    probe.install(monkeypatch)
    firmware = tmp_path / "zephyr.elf"
    firmware.write_bytes(b"\x7fELF" + b"\x00" * 60)
    flash_board(get_profile("nuvoton-m55m1"), [FlashFile(firmware)], BoardLink())
    assert probe.options == {"target_override": "m55m1h2ljae"}
    assert probe.programmed == [(str(firmware), None, firmware.read_bytes())]
    assert probe.resets == 1


def test_mps4_finds_its_images_folder_on_the_drive_and_reboots(tmp_path) -> None:
    """The MPS4's images folder is not named in any source etu has read: it is the one
    MB/*/* folder that already holds an images.txt. The virtual MCC (the MPS3's dialogue)
    then reads the images.txt etu wrote there."""
    drive = tmp_path / "V2M-MPS4"
    board_files = drive / "MB" / "HBI0000X" / "FI101"
    board_files.mkdir(parents=True)
    (board_files / "images.txt").write_text("TITLE: from the FPGA image\r\n")
    (drive / "MB" / "HBI0000X" / "README").mkdir()  # a folder without images.txt
    elf = ROOT / "etu_tui" / "demo" / "firmware" / "arm_executor_runner.elf"
    mcc, app = Pty(), Pty()
    board = VirtualMps3(mcc, app, drive, "MB/HBI0000X/FI101", runner_log(5)).start()
    try:
        result = flash_board(get_profile("mps4-corstone-320"), [FlashFile(elf)],
                             BoardLink(app.path, mcc.path, drive))  # fmt: skip
        if result.handle is not None:
            result.handle.close()
    finally:
        board.stop()
        mcc.close()
        app.close()
    assert board.error is None, board.error
    assert "TOTALIMAGES" in (board_files / "images.txt").read_text() and board.images


def test_mps4_images_folder_must_be_one(tmp_path) -> None:
    drive = tmp_path / "V2M-MPS4"
    with pytest.raises(FlashError, match=r"found none \(name it in your own profile"):
        images_folder(drive, "MB/*/*")
    for image in ("FI101", "FI102"):
        (drive / "MB" / "HBI0000X" / image).mkdir(parents=True)
        (drive / "MB" / "HBI0000X" / image / "images.txt").write_text("")
    with pytest.raises(FlashError, match="found MB/HBI0000X/FI101, MB/HBI0000X/FI102"):
        images_folder(drive, "MB/*/*")
    assert images_folder(drive, "MB/HBI0309C/AN552") == drive / "MB/HBI0309C/AN552"
