"""One flash path (issue 21 §3): every built-in transfer is a registered flash method with
its declared needs, one helper picks a board's ports for the CLI and the Boards tab, one
function builds a board session's meta (the program found in the flashed ELF as ``etu
inspect FW.elf`` finds it, its target, the firmware's hash), and the CLI's exit statuses and
errors agree (one error type, printed as text or ``{"error": ...}``)."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import pytest

from etu.runner.boards.flash import (
    FLASH_METHODS,
    BoardLink,
    FlashError,
    NeedMissing,
    check_needs,
    flash_board,
    method_of,
)
from etu.runner.boards.ports import PortInfo, pick_ports
from etu.runner.boards.profiles import get_profile, load_profiles
from etu.runner.session import board_session_meta, firmware_meta
from tests.board_peers import Pty, VirtualWiseEye2, etu_argv, etu_env, runner_log

ROOT = Path(__file__).resolve().parent.parent.parent
DEMO = ROOT / "etu_tui" / "demo"
FIRMWARE = DEMO / "firmware" / "arm_executor_runner.elf"


def _port(device: str, profile: str | None, serial: str | None = None, location: str = ""):
    return PortInfo(device, None, None, serial, "", location, None,
                    (profile,) if profile else ())  # fmt: skip


def _mps3_ports(serial: str = "MPS3-1", prefix: str = "/dev/ttyUSB") -> list[PortInfo]:
    return [_port(f"{prefix}{n}", "mps3-an552", serial, f"1-1:1.{n}") for n in (2, 0, 3, 1)]


# ------------------------------------------------------------------ registered methods
def test_every_builtin_profile_flashes_through_a_registered_method() -> None:
    for profile in load_profiles(ROOT / "nonexistent").values():
        method = method_of(profile)
        assert method.name == profile.method
    assert FLASH_METHODS["xmodem-wiseeye2"].needs == ("port",)
    assert FLASH_METHODS["mps3-drive"].needs == ("mcc_port", "drive")
    assert FLASH_METHODS["pyocd"].needs == ("probe",)
    assert FLASH_METHODS["qemu"].needs == ()


def test_a_method_with_no_flasher_says_so(tmp_path: Path) -> None:
    text = (ROOT / "runner/boards/profiles/wiseeye2.toml").read_text()
    (tmp_path / "plain.toml").write_text(
        text.replace('name = "wiseeye2"', 'name = "plain"').replace(
            'method = "xmodem-wiseeye2"', 'method = "xmodem"'
        )
    )
    profile = load_profiles(tmp_path)["plain"]
    with pytest.raises(FlashError, match=r"transfer\.method 'xmodem' cannot flash by itself"):
        flash_board(profile, [], BoardLink(port="/dev/null"))


def test_missing_needs_name_the_need_and_no_command_line_option(tmp_path: Path) -> None:
    with pytest.raises(NeedMissing) as port:
        check_needs(get_profile("wiseeye2"), BoardLink())
    assert port.value.need == "port" and "--" not in str(port.value)
    with pytest.raises(NeedMissing) as mcc:
        check_needs(get_profile("mps3-an552"), BoardLink(drive=tmp_path))
    assert mcc.value.need == "mcc_port" and "--" not in str(mcc.value)
    with pytest.raises(NeedMissing) as drive:
        check_needs(get_profile("mps3-an552"), BoardLink(mcc_port="/dev/x", drive=tmp_path / "no"))
    assert drive.value.need == "drive" and "--" not in str(drive.value)
    assert check_needs(get_profile("mps3-an552"), BoardLink(mcc_port="/dev/x", drive=tmp_path))


def test_the_drive_is_found_by_its_volume_label(tmp_path: Path, monkeypatch) -> None:
    drive = tmp_path / "V2M MPS3"
    drive.mkdir()
    mounts = tmp_path / "mounts"
    escaped = str(drive).replace(" ", "\\040")  # as /proc/mounts writes a space
    mounts.write_text(f"/dev/sdb1 {escaped} vfat rw 0 0\n")
    monkeypatch.setattr("etu.runner.boards.flash_mps3.MOUNTS", mounts)
    profile = get_profile("mps3-an552")
    profile.transfer["volume_label"] = "V2M MPS3"
    link = check_needs(profile, BoardLink(mcc_port="/dev/x"))
    assert link.drive == drive


def test_a_wiseeye2_that_takes_a_poke_as_its_menu_choice_is_still_flashed(tmp_path) -> None:
    """etu presses the "any key" until the menu shows; a press that reaches the bootloader
    after its menu is taken as the choice, and its "ready" line comes before etu chose.
    That line was thrown away with the key echoes, and etu waited 5 s for it in vain (seen
    in the Boards tab under load)."""
    from etu.runner.boards.flash import FlashFile

    image = tmp_path / "output.img"
    image.write_bytes(bytes(range(256)) * 8)
    pty = Pty()
    board = VirtualWiseEye2(pty, runner_log(5), eager=True).start()
    try:
        result = flash_board(get_profile("wiseeye2"), [FlashFile(image)],
                             BoardLink(port=pty.path))  # fmt: skip
        result.handle.close()
    finally:
        board.stop()
        pty.close()
    assert board.error is None, board.error
    assert board.received[0].rstrip(b"\x1a") == image.read_bytes()


# ------------------------------------------------------------------ picking ports
def test_mps3_ports_are_picked_by_their_order_on_the_board() -> None:
    profile = get_profile("mps3-an552")
    ports = _mps3_ports()
    assert pick_ports(profile, ports) == BoardLink("/dev/ttyUSB1", "/dev/ttyUSB0")
    assert pick_ports(profile, ports, monitor=False) == BoardLink(None, "/dev/ttyUSB0")
    # the application's port picked: the MCC is its sibling; the MCC's picked: the other way
    assert pick_ports(profile, ports, port="/dev/ttyUSB1") == BoardLink(
        "/dev/ttyUSB1", "/dev/ttyUSB0"
    )
    assert pick_ports(profile, ports, port="/dev/ttyUSB0") == BoardLink(
        "/dev/ttyUSB1", "/dev/ttyUSB0"
    )


def test_two_mps3_boards_pick_the_one_whose_port_was_given() -> None:
    profile = get_profile("mps3-an552")
    ports = _mps3_ports("A", "/dev/ttyA") + _mps3_ports("B", "/dev/ttyB")
    with pytest.raises(NeedMissing, match="several ports match") as error:
        pick_ports(profile, ports)
    assert error.value.need == "mcc_port"
    assert pick_ports(profile, ports, port="/dev/ttyB1") == BoardLink("/dev/ttyB1", "/dev/ttyB0")


def test_given_ports_are_kept_and_nothing_is_listed() -> None:
    profile = get_profile("mps3-an552")
    assert pick_ports(profile, [], port="rfc2217://lab:4001", mcc_port="rfc2217://lab:4000") == (
        BoardLink("rfc2217://lab:4001", "rfc2217://lab:4000")
    )
    assert pick_ports(get_profile("wiseeye2"), [], port="/dev/ttyACM0").port == "/dev/ttyACM0"
    assert pick_ports(get_profile("qemu-an547"), []) == BoardLink()


def test_a_serial_board_takes_its_one_matching_port() -> None:
    profile = get_profile("wiseeye2")
    one = [_port("/dev/ttyACM3", "wiseeye2"), _port("/dev/ttyS0", None)]
    assert pick_ports(profile, one).port == "/dev/ttyACM3"
    with pytest.raises(NeedMissing, match="no connected port matches") as none:
        pick_ports(profile, [_port("/dev/ttyS0", None)])
    assert none.value.need == "port"
    two = [*one, _port("/dev/ttyACM4", "wiseeye2")]
    with pytest.raises(NeedMissing, match=r"several ports match \(/dev/ttyACM3, /dev/ttyACM4\)"):
        pick_ports(profile, two)


def test_pyocd_monitors_only_a_port_it_was_given() -> None:
    profile = get_profile("pyocd")
    assert pick_ports(profile, [_port("/dev/ttyS0", None)]) == BoardLink()
    assert pick_ports(profile, [], port="/dev/ttyACM0").port == "/dev/ttyACM0"


# ------------------------------------------------------------------ session meta
def test_firmware_meta_finds_the_program_as_inspect_does() -> None:
    meta = firmware_meta(FIRMWARE)
    program = (DEMO / "demo_cnn.pte").read_bytes()
    assert meta["program_sha256"] == hashlib.sha256(program).hexdigest()
    assert meta["program"] == "demo_cnn.pte"  # the workspace's .pte with the same bytes
    assert meta["program_target"] == "ethos-u55-128"
    assert meta["elf_sha256"] == hashlib.sha256(FIRMWARE.read_bytes()).hexdigest()


def test_board_session_meta_is_one_shape_for_every_front_end(tmp_path: Path) -> None:
    watched = board_session_meta(board=None, label=None, port="/dev/ttyACM0", baud=115200)
    assert watched == {"board": None, "label": "board", "port": "/dev/ttyACM0", "baud": 115200,
                       "firmware": None, "program": None, "program_sha256": None,
                       "program_target": None, "target": None}  # fmt: skip
    flashed = board_session_meta(board="mps3-an552", label=None, port="/dev/ttyUSB1",
                                 baud=115200, firmware=FIRMWARE, flashed=[],
                                 target="ethos-u55-128")  # fmt: skip
    assert set(watched) < set(flashed)
    assert flashed["program"] == "demo_cnn.pte" and flashed["target"] == "ethos-u55-128"
    image = tmp_path / "output.img"
    image.write_bytes(b"\x00" * 64)
    placed = board_session_meta(board="wiseeye2", label=None, port="/dev/ttyACM0", baud=921600,
                                firmware=image, programs=[DEMO / "demo_cnn.pte"])  # fmt: skip
    assert placed["program"] == "demo_cnn.pte" and placed["target"] == "ethos-u55-128"
    assert placed["firmware_sha256"] == hashlib.sha256(b"\x00" * 64).hexdigest()
    assert "elf" not in placed  # an image is no ELF


def test_an_emulated_board_and_an_fvp_session_record_the_program_too(tmp_path: Path) -> None:
    from etu.fvp.launch import prepare_fvp_launch
    from etu.runner.runtime_run import qemu_meta

    emulated = qemu_meta(FIRMWARE)
    assert emulated["program"] == "demo_cnn.pte" and emulated["target"] == "qemu-an547"
    assert emulated["program_sha256"] == firmware_meta(FIRMWARE)["program_sha256"]
    launch = prepare_fvp_launch("ethos-u55-128", FIRMWARE, allow_missing=True)
    fvp = launch.meta()
    assert fvp["program"] == "demo_cnn.pte" and fvp["target"] == "ethos-u55-128"
    assert fvp["elf_sha256"] == emulated["elf_sha256"]


# ------------------------------------------------------------------ the CLI
def _etu(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(etu_argv(*args), cwd=cwd, env=etu_env(), capture_output=True,
                          text=True, timeout=120)  # fmt: skip


def test_flash_without_a_port_is_one_line_with_the_option(tmp_path: Path) -> None:
    image = tmp_path / "output.img"
    image.write_bytes(b"\x00" * 128)
    text = _etu(tmp_path, "flash", "--board", "wiseeye2", str(image))
    assert text.returncode == 2
    assert text.stderr == ("etu: wiseeye2: no connected port matches the profile (give --port)\n")
    as_json = _etu(tmp_path, "flash", "--board", "wiseeye2", "--json", str(image))
    assert as_json.returncode == 2 and as_json.stderr == ""
    assert [json.loads(line) for line in as_json.stdout.splitlines()] == [
        {"error": "wiseeye2: no connected port matches the profile (give --port)"}
    ]


def test_flash_to_an_unmounted_drive_is_a_failed_flash(tmp_path: Path) -> None:
    mcc = Pty()
    try:
        done = _etu(tmp_path, "flash", "--board", "mps3-an552", "--mcc-port", mcc.path,
                    "--drive", str(tmp_path / "nothing"), str(FIRMWARE))  # fmt: skip
    finally:
        mcc.close()
    assert done.returncode == 8
    assert done.stderr.endswith("the board's USB drive is not mounted (give --drive)\n")


def test_monitor_json_errors_are_json(tmp_path: Path) -> None:
    done = _etu(tmp_path, "monitor", str(tmp_path / "ttyNONE"), "--json")
    assert done.returncode == 2 and done.stderr == ""
    assert json.loads(done.stdout) == {"error": f"{tmp_path / 'ttyNONE'}: no such port"}


def test_a_bad_pools_argument_is_status_2_in_both_commands(tmp_path: Path) -> None:
    """`etu firmware build` said 1 and `etu run --board` said 2 for the same refused
    argument; both refuse it before building: 2."""
    pte = tmp_path / "demo_cnn_cpu.pte"
    pte.write_bytes((DEMO / "demo_cnn_cpu.pte").read_bytes())
    build = _etu(tmp_path, "firmware", "build", str(pte), "--board", "qemu-an547",
                 "--pools", "lots", "--json")  # fmt: skip
    run = _etu(tmp_path, "run", "--board", "qemu-an547", str(pte), "--pools", "lots", "--json")
    for done in (build, run):
        assert done.returncode == 2, done.stderr
        (line,) = done.stdout.splitlines()
        assert json.loads(line) == {"error": "--pools 'lots': expected auto or METHOD,TEMP"}


@pytest.mark.parametrize("case", ["refused", "missing", "cut"])
def test_a_program_refused_or_missing_is_status_2_in_both_commands(tmp_path, case) -> None:
    """A program the emulated board cannot run (a delegate that is not Ethos-U's), a program
    that is not there and one cut short: each is refused before any build, with the same
    status in `etu firmware build` and `etu run --board` (2, could not start)."""
    pte = tmp_path / "other.pte"
    data = (DEMO / "demo_cnn.pte").read_bytes()
    if case == "refused":
        assert data.count(b"EthosUBackend") == 1
        pte.write_bytes(data.replace(b"EthosUBackend", b"OtherNpuBackend"[:13]))
    elif case == "cut":
        pte.write_bytes(data[:200])
    build = _etu(tmp_path, "firmware", "build", str(pte), "--board", "qemu-an547", "--json")
    run = _etu(tmp_path, "run", "--board", "qemu-an547", str(pte), "--json")
    for done in (build, run):
        assert done.returncode == 2, done.stdout + done.stderr
        (line,) = done.stdout.splitlines()
        message = json.loads(line)["error"]
        assert message.startswith(str(pte))
        expected = {"refused": "OtherNpuBacke", "missing": "no such", "cut": ""}[case]
        assert expected in message
