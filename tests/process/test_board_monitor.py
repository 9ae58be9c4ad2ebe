"""etu monitor on real ptys (and ser2net's RFC 2217): every byte recorded, the runner's
verdict, unplug/replug, a port held elsewhere, kill -9, and the emulated board via flash."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from etu.runner.session import read_session
from tests.board_peers import Pty, etu_argv, etu_env, only_session, runner_log, wait_for

ROOT = Path(__file__).resolve().parent.parent.parent


def start_monitor(cwd: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen(etu_argv("monitor", *args), cwd=cwd, env=etu_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip


def raw_of(cwd: Path) -> bytes:
    folder = only_session(cwd)
    return (folder / "raw.log").read_bytes() if folder and (folder / "raw.log").exists() else b""


def logged_lines(cwd: Path) -> int:
    """LogLine events written so far to the session's events.jsonl."""
    folder = only_session(cwd)
    events = folder / "events.jsonl" if folder else None
    if events is None or not events.exists():
        return 0
    return events.read_bytes().count(b'"type": "LogLine"')


def test_monitor_a_pty_records_every_byte(tmp_path: Path) -> None:
    pty = Pty()
    log = runner_log(200)
    try:
        etu = start_monitor(tmp_path, pty.path, "--json", "--timelimit", "30", "--settle", "0.3")
        assert wait_for(lambda: only_session(tmp_path) is not None, 15)
        for at in range(0, len(log), 777):  # in odd-sized pieces, as a UART delivers
            pty.write(log[at : at + 777])
        out, err = etu.communicate(timeout=30)
    finally:
        pty.close()
    assert etu.returncode == 0, err
    record = json.loads(out.decode().splitlines()[-1])
    assert record["verdict"] == "success" and record["lines"] == 200
    assert record["reason"] == "success" and record["exit_status"] == 0
    folder = Path(tmp_path / record["session"])
    assert (folder / "raw.log").read_bytes() == log
    meta = json.loads((folder / "meta.json").read_text())
    assert meta["port"] == pty.path and meta["kind"] == "board" and meta["ended"]


def test_no_verdict_is_a_time_limit(tmp_path: Path) -> None:
    pty = Pty()
    try:
        etu = start_monitor(tmp_path, pty.path, "--timelimit", "1.5")
        pty.write(runner_log(5, verdict=False))
        _, err = etu.communicate(timeout=30)
    finally:
        pty.close()
    assert etu.returncode == 4
    assert b"run ended: time_limit" in err and b"no verdict within the time limit" in err


def test_unplug_mid_monitor_reconnects_records_the_gap_and_loses_nothing(tmp_path) -> None:
    link = tmp_path / "ttyUSB0"  # like /dev/serial/by-id/...: the name survives a replug
    first = Pty()
    link.symlink_to(first.path)
    log = runner_log(400)
    half = log.index(b"\n", len(log) // 2) + 1
    etu = start_monitor(tmp_path, str(link), "--json", "--timelimit", "60", "--settle", "0.3")
    try:
        assert wait_for(lambda: only_session(tmp_path) is not None, 15)
        first.write(log[:half])
        assert wait_for(lambda: raw_of(tmp_path) == log[:half], 15)
        first.close()  # unplugged: the line hangs up under etu
        link.unlink()
        time.sleep(0.5)
        second = Pty()  # plugged back in: a new tty behind the same name
        link.symlink_to(second.path)
        # The board talks again once etu has the port open (a USB-serial adapter keeps no
        # bytes for a closed port, and pyserial flushes what the tty held at open).
        events = only_session(tmp_path) / "events.jsonl"
        assert wait_for(lambda: b'"PortGap"' in events.read_bytes(), 15)
        second.write(log[half:])
        out, err = etu.communicate(timeout=30)
        second.close()
    finally:
        if etu.poll() is None:
            etu.kill()
    assert etu.returncode == 0, err
    record = json.loads(out.decode().splitlines()[-1])
    session = read_session(Path(tmp_path / record["session"]))
    assert session.raw == log  # nothing lost, nothing doubled
    kinds = [e["type"] for e in session.events]
    assert "PortLost" in kinds and "PortGap" in kinds
    gap = next(e for e in session.events if e["type"] == "PortGap")
    assert gap["byte_offset"] == half and gap["seconds"] >= 0.4


def test_port_held_by_another_process(tmp_path: Path) -> None:
    pty = Pty()
    holder = subprocess.Popen(
        [sys.executable, "-c", "import serial, sys, time\n"
         f"s = serial.Serial({pty.path!r}, exclusive=True)\nprint('held', flush=True)\n"
         "time.sleep(60)"],
        stdout=subprocess.PIPE,
    )  # fmt: skip
    try:
        assert holder.stdout.readline() == b"held\n"
        etu = subprocess.run(etu_argv("monitor", pty.path), cwd=tmp_path, env=etu_env(),
                             capture_output=True, timeout=30)  # fmt: skip
    finally:
        holder.kill()
        holder.wait()
        pty.close()
    assert etu.returncode == 2
    message = etu.stderr.decode()
    assert message.startswith(f"etu: {pty.path}: held by python")
    assert f"(pid {holder.pid})" in message and "Traceback" not in message
    assert only_session(tmp_path) is None  # no empty session for a run that never started


def test_missing_port(tmp_path: Path) -> None:
    etu = subprocess.run(etu_argv("monitor", str(tmp_path / "ttyNONE")), cwd=tmp_path,
                         env=etu_env(), capture_output=True, timeout=30)  # fmt: skip
    assert etu.returncode == 2
    assert etu.stderr.decode() == f"etu: {tmp_path / 'ttyNONE'}: no such port\n"


def test_kill_9_mid_monitor_leaves_the_session_complete_to_its_last_write(tmp_path) -> None:
    pty = Pty()
    log = runner_log(3000, verdict=False)
    # --json: no line echoed to a stdout pipe nobody here reads while the log streams
    etu = start_monitor(tmp_path, pty.path, "--timelimit", "120", "--json")
    try:
        assert wait_for(lambda: only_session(tmp_path) is not None, 15)
        pty.write(log)
        assert wait_for(lambda: len(raw_of(tmp_path)) == len(log), 20)
        complete = log.count(b"\n") - 1  # the parser's events of every complete line too
        assert wait_for(lambda: logged_lines(tmp_path) >= complete, 20)
        os.kill(etu.pid, signal.SIGKILL)
        etu.wait(10)
    finally:
        pty.close()
    session = read_session(only_session(tmp_path))
    assert session.raw == log
    count = log.count(b"\n")
    lines = [e for e in session.events if e.get("type") == "LogLine"]
    assert len(lines) >= count - 1  # every complete line (the last may wait for its successor)
    assert len(session.line_times) == count  # each line's arrival, to the last
    assert any("no end recorded" in w for w in session.warnings)


@pytest.mark.skipif(not shutil.which("ser2net"), reason="needs ser2net (make system-deps)")
def test_rfc2217_through_ser2net_records_every_byte(tmp_path: Path) -> None:
    pty = Pty()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        tcp = probe.getsockname()[1]
    config = tmp_path / "ser2net.yaml"
    config.write_text(
        "connection: &lab\n"
        f"  accepter: telnet(rfc2217),tcp,127.0.0.1,{tcp}\n"
        f"  connector: serialdev,{pty.path},115200n81,local\n"
        "  options:\n    kickolduser: true\n"
    )
    ser2net = subprocess.Popen(["ser2net", "-n", "-u", "-c", str(config), "-P",
                                str(tmp_path / "ser2net.pid")],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # fmt: skip
    log = runner_log(300)
    try:

        def listening() -> bool:
            with socket.socket() as s:
                return s.connect_ex(("127.0.0.1", tcp)) == 0

        assert wait_for(listening, 10), ser2net.stderr.read1() if ser2net.poll() else b""
        etu = start_monitor(tmp_path, f"rfc2217://127.0.0.1:{tcp}", "--json", "--timelimit",
                            "30", "--settle", "0.5")  # fmt: skip
        assert wait_for(lambda: only_session(tmp_path) is not None, 15)
        time.sleep(1.0)  # ser2net opens the device once the client has negotiated
        pty.write(log)
        out, err = etu.communicate(timeout=40)
    finally:
        ser2net.terminate()
        ser2net.wait(10)
        pty.close()
    assert etu.returncode == 0, err
    record = json.loads(out.decode().splitlines()[-1])
    assert (Path(tmp_path / record["session"]) / "raw.log").read_bytes() == log


@pytest.mark.skipif(
    not (shutil.which("qemu-system-arm") and shutil.which("arm-none-eabi-gcc")),
    reason="needs qemu-system-arm and arm-none-eabi-gcc (make system-deps)",
)
def test_flash_and_monitor_the_emulated_board(tmp_path: Path) -> None:
    from etu.runner.firmware import build_stub_firmware

    build = build_stub_firmware(ROOT / "etu_tui" / "demo" / "demo_cnn.pte", tmp_path / "fw",
                                ops=["quantized_decomposed::quantize_per_tensor.out"])  # fmt: skip
    etu = subprocess.run(
        etu_argv("flash", "--board", "qemu-an547", "--monitor", "--json", "--timelimit", "60",
                 str(build.elf)),
        cwd=tmp_path, env=etu_env(), capture_output=True, timeout=90,
    )  # fmt: skip
    assert etu.returncode == 1, etu.stderr  # ended no_model: nothing was computed or checked
    records = [json.loads(line) for line in etu.stdout.decode().splitlines()]
    assert records[0]["type"] == "status" and "emulated board" in records[0]["text"]
    flashed = next(r for r in records if r.get("type") == "flashed")
    assert flashed["port"].startswith("/dev/pts/")
    summary = records[-1]
    # the stand-in firmware ends with the runner's success line but runs no model
    assert summary["verdict"] == "no_model" and summary["model"]["pte_size"] == 21248
    assert summary["label"] == "emulated board (QEMU, no NPU)"
    session = read_session(Path(tmp_path / summary["session"]))
    assert session.meta["label"] == "emulated board (QEMU, no NPU)"
    assert session.raw.startswith(b"etu stand-in runner firmware")
    assert session.raw.endswith(b"Program complete, exiting.\n")


def test_wrong_board_on_the_port_names_what_was_awaited_and_what_came(tmp_path: Path) -> None:
    """A board that is not a WiseEye2 (here: one booting U-Boot) on the port: flashing stops
    at the boot prompt's time-out with one line naming the awaited text and the tail of
    what the port said. A user profile (ETU_BOARDS_DIR) with a short time-out keeps it fast."""
    builtin = ROOT / "runner" / "boards" / "profiles" / "wiseeye2.toml"
    boards = tmp_path / "boards"
    boards.mkdir()
    text = builtin.read_text().replace('name = "wiseeye2"', 'name = "we2-quick"')
    text = text.replace('boot = { text = "1st BL Modem Build", timeout = 15.0 }',
                        'boot = { text = "1st BL Modem Build", timeout = 2.0 }')  # fmt: skip
    assert "timeout = 2.0" in text
    (boards / "we2-quick.toml").write_text(text)
    firmware = tmp_path / "fw.img"
    firmware.write_bytes(b"\x00" * 4096)
    pty = Pty()
    stop = threading.Event()

    def uboot() -> None:  # the wrong board keeps booting (it talks after etu opens the port)
        while not stop.wait(0.3):
            pty.write(b"U-Boot 2023.01 (Jan 01 2023)\r\nHit any key to stop autoboot:  3 \r\n")

    talker = threading.Thread(target=uboot, daemon=True)
    talker.start()
    try:
        etu = subprocess.run(
            etu_argv("flash", "--board", "we2-quick", "--port", pty.path, str(firmware)),
            cwd=tmp_path, env={**etu_env(), "ETU_BOARDS_DIR": str(boards)},
            capture_output=True, timeout=60,
        )  # fmt: skip
    finally:
        stop.set()
        talker.join(5)
        pty.close()
    assert etu.returncode == 8, etu.stderr  # flash failed
    message = etu.stderr.decode().strip().splitlines()[-1]
    assert message.startswith(f"etu: {pty.path}: waited 2 s for the boot prompt")
    assert "'1st BL Modem Build'" in message and "autoboot" in message
    assert "Traceback" not in etu.stderr.decode()


def test_virtual_wiseeye2_bootloader_flash_then_the_boot_is_monitored(tmp_path: Path) -> None:
    """The whole WiseEye2 dialogue against a virtual bootloader on a pty: banner and "any
    key" window, menu, XMODEM (the ``xmodem`` package's receiver) for the image and for a
    .pte placed at its flash address (the placement block first), the end question, then
    the reboot: its runner log is recorded and parsed to a verdict."""
    from etu.runner.boards.flash import placement_block
    from tests.board_peers import VirtualWiseEye2

    image = bytes(range(256)) * 40 + b"tail"  # 10,244 bytes: the last block is padded
    model = ROOT.joinpath("etu_tui", "demo", "demo_cnn.pte").read_bytes()
    (tmp_path / "output.img").write_bytes(image)
    (tmp_path / "model.pte").write_bytes(model)
    pty = Pty()
    board = VirtualWiseEye2(pty, runner_log(40)).start()
    try:
        etu = subprocess.run(
            etu_argv("flash", "--board", "wiseeye2", "--port", pty.path, "--monitor", "--json",
                     "--timelimit", "60", "output.img", "model.pte@0xB7B000"),
            cwd=tmp_path, env=etu_env(), capture_output=True, timeout=120,
        )  # fmt: skip
    finally:
        board.stop()
        pty.close()
    assert board.error is None, (board.error, len(board.received), etu.stdout[-600:])
    assert etu.returncode == 0, etu.stderr.decode()[-2000:]
    records = [json.loads(line) for line in etu.stdout.decode().splitlines()]
    assert any(r.get("type") == "progress" for r in records)
    flashed = next(r for r in records if r.get("type") == "flashed")
    assert [Path(f["file"]).name for f in flashed["files"]] == ["output.img", "model.pte"]
    first, second = board.received
    assert first.rstrip(b"\x1a") == image  # XMODEM pads the last block with SUB
    expected = placement_block(0xB7B000) + model
    assert second[: len(expected)] == expected
    summary = records[-1]
    assert summary["verdict"] == "success"
    session = read_session(Path(tmp_path / summary["session"]))
    assert session.raw.endswith(runner_log(40))
    assert session.meta["board"] == "wiseeye2"


def test_mps3_drive_images_txt_and_the_mcc_reboot_dialogue(tmp_path: Path) -> None:
    """MPS3 against a folder standing for its USB drive and a virtual MCC on a pty: 8.3 names
    in SOFTWARE/, an images.txt whose entries are the ELF's load segments at the MCC's
    addresses, the reboot dialogue, then the application UART monitored to a verdict."""
    from elftools.elf.elffile import ELFFile

    from etu.runner.boards.flash import mcc_address
    from etu.runner.boards.profiles import get_profile
    from tests.board_peers import VirtualMps3

    profile = get_profile("mps3-an552")
    elf = ROOT / "etu_tui" / "demo" / "firmware" / "arm_executor_runner.elf"
    drive = tmp_path / "V2M-MPS3"
    drive.mkdir()
    mcc, app = Pty(), Pty()
    images_dir = str(profile.transfer["images_dir"])
    board = VirtualMps3(mcc, app, drive, images_dir, runner_log(30)).start()
    try:
        etu = subprocess.run(
            etu_argv("flash", "--board", "mps3-an552", "--drive", str(drive), "--mcc-port",
                     mcc.path, "--port", app.path, "--monitor", "--json", "--timelimit", "60",
                     str(elf)),
            cwd=tmp_path, env=etu_env(), capture_output=True, timeout=120,
        )  # fmt: skip
    finally:
        board.stop()
        mcc.close()
        app.close()
    assert board.error is None, board.error
    assert etu.returncode == 0, etu.stderr.decode()[-2000:]
    names = sorted(p.name for p in (drive / "SOFTWARE").iterdir())
    assert names and all(len(n.split(".")[0]) <= 8 and len(n.split(".")[-1]) <= 3 for n in names)
    assert all(n == n.upper() for n in names)
    # Every loadable segment with bytes is one image, at the MCC's view of its address.
    with open(elf, "rb") as handle:
        segments = [
            (s["p_paddr"], s.data())
            for s in ELFFile(handle).iter_segments()
            if s["p_type"] == "PT_LOAD" and s["p_filesz"]
        ]
    expected = sorted(
        (mcc_address(profile, address, len(data), "segment"), data) for address, data in segments
    )
    assert sorted(board.images) == expected
    text = (drive / images_dir / "images.txt").read_text()
    assert text.startswith("TITLE: Versatile Express Images Configuration File")
    assert f"TOTALIMAGES: {len(expected)}" in text
    summary = json.loads(etu.stdout.decode().splitlines()[-1])
    assert summary["verdict"] == "success"
    session = read_session(Path(tmp_path / summary["session"]))
    assert session.raw == runner_log(30) and session.meta["board"] == "mps3-an552"


def test_a_stdout_nobody_reads_never_stalls_the_port_reader(tmp_path: Path) -> None:
    """``etu monitor PORT | pager`` with the pager paused: the log is echoed from a thread of
    its own, so the port keeps being read and recorded (240 KB here, 4x a pipe's buffer);
    once stdout is read again every line is there."""
    pty = Pty()
    log = runner_log(3000)
    etu = start_monitor(tmp_path, pty.path, "--timelimit", "60", "--settle", "0.3")
    try:
        assert wait_for(lambda: only_session(tmp_path) is not None, 15)
        writer = threading.Thread(target=pty.write, args=(log,), daemon=True)
        writer.start()  # blocks while etu does not read the port
        writer.join(20)
        assert not writer.is_alive(), "etu stopped reading the port while stdout was full"
        assert wait_for(lambda: raw_of(tmp_path) == log, 20)
        out, err = etu.communicate(timeout=30)  # stdout read only now
    finally:
        if etu.poll() is None:
            etu.kill()
        pty.close()
    assert etu.returncode == 0, err
    assert out.decode().splitlines() == log.decode().splitlines()
