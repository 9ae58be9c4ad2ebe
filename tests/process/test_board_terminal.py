"""The bring-up terminal (issue #24 §9): stdin passed through `etu monitor` to the board,
DTR/RTS pulsed to reset it (before flashing and monitoring), and `--timestamps` on the
monitor's lines in the Run tab log's time modes. The peers are ptys (the bytes) and
pyserial's own RFC 2217 server in front of one (the bytes and the modem-line changes)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from etu.runner.boards.flash import BoardLink, FlashError, flash_board, parse_file_spec
from etu.runner.boards.profiles import ProfileError, get_profile, load_profile
from etu.runner.boards.source import PortError, SerialSource
from etu.runner.boards.terminal import pulse_line, typed_line
from etu.tui.numbers import time_text
from tests.board_peers import (
    Pty,
    Rfc2217Peer,
    VirtualWiseEye2,
    etu_argv,
    etu_env,
    only_session,
    runner_log,
    wait_for,
)


def start_monitor(cwd: Path, *args: str, stdin=subprocess.DEVNULL) -> subprocess.Popen:
    return subprocess.Popen(etu_argv("monitor", *args), cwd=cwd, env=etu_env(), stdin=stdin,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip


def read_until(pty: Pty, wanted: bytes, timeout: float = 10.0) -> bytes:
    got = b""
    deadline = time.monotonic() + timeout
    while wanted not in got and time.monotonic() < deadline:
        got += pty.read(0.05)
    return got


def pulses(changes: list[tuple[bool, float]]) -> list[bool]:
    return [state for state, _ in changes]


# ---------------------------------------------------------------------- stdin → board
def test_monitor_passes_a_pipe_through_as_it_comes(tmp_path: Path) -> None:
    board = Pty()
    try:
        etu = start_monitor(tmp_path, board.path, "--timelimit", "20", "--settle", "0.2",
                            stdin=subprocess.PIPE)  # fmt: skip
        assert wait_for(lambda: only_session(tmp_path) is not None, 15)
        etu.stdin.write(b"version\nstat")
        etu.stdin.flush()
        got = read_until(board, b"version\nstat")
        board.write(runner_log(5))
        _, err = etu.communicate(timeout=20)
    finally:
        board.close()
    assert got == b"version\nstat", err  # a pipe: the bytes as they come, no line ending added
    assert etu.returncode == 0, err


def test_monitor_sends_each_typed_line_with_the_line_ending(tmp_path: Path) -> None:
    board, terminal = Pty(), Pty()  # stdin is a terminal: the slave of a second pty
    try:
        etu = start_monitor(tmp_path, board.path, "--eol", "cr", "--timelimit", "20",
                            "--settle", "0.2", stdin=terminal.slave)  # fmt: skip
        assert wait_for(lambda: only_session(tmp_path) is not None, 15)
        terminal.write(b"help\nrun 3\n")
        got = read_until(board, b"run 3\r")
        board.write(runner_log(5))
        _, err = etu.communicate(timeout=20)
    finally:
        board.close()
        terminal.close()
    assert got == b"help\rrun 3\r", err
    assert etu.returncode == 0, err


def test_a_board_profile_gives_the_line_ending_and_reset(tmp_path: Path) -> None:
    (tmp_path / "lab.toml").write_text(
        'name = "lab"\n[serial]\nreset = "rts"\neol = "lf"\n[transfer]\nmethod = "pyocd"\n'
    )
    profile = load_profile(tmp_path / "lab.toml")
    assert (profile.reset, profile.eol) == ("rts", "lf")
    assert profile.to_json()["reset"] == "rts"
    assert get_profile("wiseeye2").reset is None and get_profile("wiseeye2").eol == "crlf"
    (tmp_path / "bad.toml").write_text('name = "bad"\n[serial]\nreset = "cts"\n'
                                       '[transfer]\nmethod = "pyocd"\n')  # fmt: skip
    with pytest.raises(ProfileError, match=r"bad.toml:3: serial.reset: 'cts': the lines are"):
        load_profile(tmp_path / "bad.toml")


def test_typed_line_endings() -> None:
    assert typed_line("ls", "crlf") == b"ls\r\n"
    assert typed_line("é", "lf") == "é\n".encode()


# ---------------------------------------------------------------------- DTR / RTS
def test_pulse_reaches_the_rfc2217_peer_as_a_drop_and_a_rise() -> None:
    peer = Rfc2217Peer()
    try:
        source = SerialSource(peer.url, {"baudrate": 115200}).open()
        opened = len(peer.line_changes("dtr"))
        source.pulse("dtr", 0.2)
        assert wait_for(lambda: len(peer.line_changes("dtr")) >= opened + 2, 5)
        source.send(b"ping\r\n")
        assert read_until(peer.pty, b"ping\r\n") == b"ping\r\n"
        source.close()
    finally:
        peer.close()
    assert peer.error is None
    dtr = peer.line_changes("dtr")
    assert pulses(dtr) == [True, False, True]  # asserted when opened; the pulse
    assert dtr[2][1] - dtr[1][1] >= 0.15  # held low for the pulse
    assert pulses(peer.line_changes("rts")) == [True]  # the other line untouched


def test_monitor_reset_pulses_the_line_before_monitoring(tmp_path: Path) -> None:
    peer = Rfc2217Peer()
    try:
        etu = start_monitor(tmp_path, peer.url, "--reset", "rts", "--timelimit", "20",
                            "--settle", "0.2")  # fmt: skip
        assert wait_for(lambda: len(peer.line_changes("rts")) >= 3, 15), peer.changes
        peer.pty.write(runner_log(5))
        _, err = etu.communicate(timeout=20)
    finally:
        peer.close()
    assert etu.returncode == 0, err
    assert pulses(peer.line_changes("rts")) == [True, False, True]
    assert b"pulsing RTS" in err


def test_pulse_on_a_port_without_modem_lines_is_one_line() -> None:
    pty = Pty()
    try:
        source = SerialSource(pty.path).open()
        with pytest.raises(PortError, match=r"DTR not pulsed: .*Inappropriate ioctl"):
            source.pulse("dtr")
        source.close()
        with pytest.raises(PortError, match="not open"):
            source.send(b"x")
    finally:
        pty.close()
    with pytest.raises(ValueError, match="lines to pulse are dtr, rts"):
        pulse_line(object(), "cts")


def test_flash_resets_the_wiseeye2_into_its_bootloader(tmp_path: Path) -> None:
    """The profile's reset line pulsed before the bootloader dialogue: the peer sees the
    pulse before the first byte etu sends, and the flash completes through RFC 2217."""
    image = tmp_path / "output.img"
    image.write_bytes(bytes(range(256)) * 3)
    peer = Rfc2217Peer()
    board = VirtualWiseEye2(peer.pty, runner_log(5)).start()
    try:
        result = flash_board(get_profile("wiseeye2"), [parse_file_spec(str(image))],
                             BoardLink(port=peer.url), reset="dtr")  # fmt: skip
        result.handle.close()
        board.stop()
    finally:
        peer.close()
    assert board.error is None and peer.error is None
    assert board.received[0][: len(image.read_bytes())] == image.read_bytes()
    assert pulses(peer.line_changes("dtr")) == [True, False, True]


def test_flash_reset_on_a_pty_fails_naming_the_port(tmp_path: Path) -> None:
    image = tmp_path / "output.img"
    image.write_bytes(b"\0" * 16)
    pty = Pty()
    try:
        with pytest.raises(FlashError, match=rf"{pty.path}: RTS not pulsed"):
            flash_board(get_profile("wiseeye2"), [parse_file_spec(str(image))],
                        BoardLink(port=pty.path), reset="rts")  # fmt: skip
    finally:
        pty.close()


# ---------------------------------------------------------------------- timestamps
STAMP = {
    "wall": re.compile(r"^\d\d:\d\d:\d\d\.\d{3} I \["),
    "start": re.compile(r"^ *\d+\.\d{3} I \["),
    "delta": re.compile(r"^\+ *\d+\.\d{3} I \["),
}


@pytest.mark.parametrize("mode", ["wall", "start", "delta"])
def test_monitor_timestamps_each_line_as_the_run_log_does(tmp_path: Path, mode: str) -> None:
    board = Pty()
    try:
        etu = start_monitor(tmp_path, board.path, "--timestamps", mode, "--timelimit", "20",
                            "--settle", "0.2")  # fmt: skip
        assert wait_for(lambda: only_session(tmp_path) is not None, 15)
        board.write(runner_log(5))
        out, err = etu.communicate(timeout=20)
    finally:
        board.close()
    assert etu.returncode == 0, err
    lines = out.decode().splitlines()
    assert len(lines) == 5 and all(STAMP[mode].match(line) for line in lines), lines
    if mode == "delta":
        assert lines[0].startswith("+   0.000 ")  # the first line: nothing before it


def test_timestamps_are_the_run_logs_time_column() -> None:
    from etu.tui.cli.follow import TIME_MODE_OF

    assert TIME_MODE_OF == {"wall": "absolute", "start": "relative", "delta": "delta"}
    assert time_text("relative", 12.5, 10.0, None) == "    2.500 "


def test_monitor_json_output_is_not_timestamped(tmp_path: Path) -> None:
    board = Pty()
    try:
        etu = start_monitor(tmp_path, board.path, "--json", "--timestamps", "wall",
                            "--timelimit", "20", "--settle", "0.2")  # fmt: skip
        assert wait_for(lambda: only_session(tmp_path) is not None, 15)
        board.write(runner_log(5))
        out, err = etu.communicate(timeout=20)
    finally:
        board.close()
    assert etu.returncode == 0, err
    assert json.loads(out.decode().splitlines()[-1])["lines"] == 5


def test_a_background_job_does_not_read_its_terminal(monkeypatch) -> None:
    """`etu monitor ... &` on a terminal: reading it would stop etu (SIGTTIN), so stdin is
    left alone; in the foreground (or when the terminal is not etu's own) it is read."""
    from etu.runner.boards.terminal import StdinPump

    terminal = Pty()
    try:
        monkeypatch.setattr(os, "tcgetpgrp", lambda fd: os.getpgrp() + 1)
        assert not StdinPump(lambda data: None, fd=terminal.slave).start().thread.is_alive()
        monkeypatch.setattr(os, "tcgetpgrp", lambda fd: os.getpgrp())
        sent: list[bytes] = []
        pump = StdinPump(sent.append, fd=terminal.slave, eol="lf").start()
        terminal.write(b"ok\r\n")
        assert wait_for(lambda: sent == [b"ok\n"], 5), sent
        assert pump.thread.is_alive()
    finally:
        terminal.close()
