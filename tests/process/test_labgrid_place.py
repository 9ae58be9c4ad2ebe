"""A board as a labgrid place, against real labgrid processes on 127.0.0.1: a coordinator, an
exporter exporting the virtual WiseEye2 bootloader's pty as a RawSerialPort (served by
ser2net over RFC 2217, as on a lab host) and a simplerest power switch, the place created
with labgrid-client. Then etu flashes and monitors through the place, races for it, is
stopped by TERM and HUP, and loses its coordinator mid-monitor."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from etu.runner.session import read_session
from tests.board_peers import (
    Pty,
    VirtualWiseEye2,
    etu_argv,
    etu_env,
    only_session,
    runner_log,
    wait_for,
)
from tests.labgrid_lab import MISSING, Lab, free_port, lab_for_module, labgrid_installed, start_lab

ROOT = Path(__file__).resolve().parent.parent.parent
needs_labgrid = pytest.mark.skipif(
    not labgrid_installed() or not shutil.which("ser2net"),
    reason=MISSING,
)


@pytest.fixture(scope="module")
def lab(tmp_path_factory) -> Iterator[Lab]:
    yield from lab_for_module(tmp_path_factory)


def etu(cwd: Path, *args: str, env: dict | None = None, timeout: float = 90):
    return subprocess.run(etu_argv(*args), cwd=cwd, env=env or etu_env(), capture_output=True,
                          timeout=timeout, check=False)  # fmt: skip


def start_etu(cwd: Path, *args: str, env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen(etu_argv(*args), cwd=cwd, env=env or etu_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip


def records(stdout: bytes) -> list[dict]:
    return [json.loads(line) for line in stdout.decode().splitlines() if line.startswith("{")]


def me() -> str:
    import getpass

    return f"{getpass.getuser()}@{socket.gethostname()}"


# ------------------------------------------------------------------ the flash
@needs_labgrid
def test_flash_and_monitor_through_a_place_match_a_local_flash(lab: Lab, tmp_path: Path) -> None:
    """The same image flashed on a local pty and through the place (by `etu flash --monitor`
    and by `etu run --board PROFILE --place NAME --elf`): the board receives the same bytes,
    the same boot log is recorded; the session and --json name the place, its exporter and
    the holder; the place is free again afterwards."""
    image = bytes(range(256)) * 48 + b"place"  # 12,293 bytes
    (tmp_path / "output.img").write_bytes(image)
    boot = runner_log(30)
    received = {}
    image_path = str(tmp_path / "output.img")
    placed = ["--place", "desk-1", "--coordinator", lab.address]
    commands = {
        "local": ["flash", "--board", "wiseeye2", "--monitor", image_path],
        "place": ["flash", "--board", "wiseeye2", *placed, "--monitor", image_path],
        "run": ["run", "--board", "wiseeye2", *placed, "--elf", image_path],
    }
    for where, command in commands.items():
        folder = tmp_path / where
        folder.mkdir()
        pty = Pty() if where == "local" else lab.pty
        board = VirtualWiseEye2(pty, boot).start()
        if where == "local":
            command = [*command, "--port", pty.path]
        try:
            done = etu(folder, *command, "--json", "--timelimit", "60")
        finally:
            board.stop()
            if where == "local":
                pty.close()
        assert board.error is None, board.error
        assert done.returncode == 0, done.stderr.decode()[-2000:]
        out = records(done.stdout)
        session = read_session(Path(folder / out[-1]["session"]))
        received[where] = (board.received, session.raw[session.raw.find(b"I [executorch") :])
        if where != "local":
            flashed = next(r for r in out if r.get("type") == "flashed")
            assert flashed["port"].startswith("rfc2217://127.0.0.1:")
            for record in (flashed, out[-1], session.meta):
                assert record["place"] == "desk-1" and record["exporter"] == "lab-host"
                assert record["holder"] == me() and record["coordinator"] == lab.address
    assert received["place"] == received["local"] == received["run"]
    assert received["place"][0][0].rstrip(b"\x1a") == image
    assert received["place"][1] == boot
    assert lab.holder() is None


@needs_labgrid
def test_power_cycle_before_flashing_when_the_profile_asks(lab: Lab, tmp_path: Path) -> None:
    """A profile with ``power_cycle = true``: labgrid's simplerest driver switches the
    place's power off then on before the bootloader dialogue starts."""
    text = (ROOT / "runner/boards/profiles/wiseeye2.toml").read_text()
    boards = tmp_path / "boards"
    boards.mkdir()
    text = text.replace('name = "wiseeye2"', 'name = "we2-power"')
    method = 'method = "xmodem-wiseeye2"'
    text = text.replace(method, f"{method}\npower_cycle = true\npower_off = 0.2")
    (boards / "we2-power.toml").write_text(text)
    (tmp_path / "output.img").write_bytes(b"\x5a" * 3000)
    env = dict(etu_env(), ETU_BOARDS_DIR=str(boards))
    lab.power.switched.clear()
    board = VirtualWiseEye2(lab.pty, runner_log(5)).start()
    try:
        done = etu(tmp_path, "flash", "--board", "we2-power", "--place", "desk-1",
                   "--coordinator", lab.address, "--json", "output.img", env=env)  # fmt: skip
    finally:
        board.stop()
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    assert [value for _, value in lab.power.switched] == ["0", "1"]
    texts = [r["text"] for r in records(done.stdout) if r.get("type") == "status"]
    assert any("power-cycling place desk-1 (NetworkPowerPort)" in t for t in texts)
    assert board.received[0].rstrip(b"\x1a") == b"\x5a" * 3000
    assert lab.holder() is None


# ------------------------------------------------------------------ who holds it
@needs_labgrid
def test_a_place_held_by_another_user_names_them(lab: Lab, tmp_path: Path) -> None:
    taken = lab.client("-p", "desk-1", "acquire", user="alice")
    assert taken.returncode == 0, taken.stderr
    try:
        done = etu(tmp_path, "monitor", "--place", "desk-1", "--coordinator", lab.address)
    finally:
        lab.client("-p", "desk-1", "release", user="alice")
    assert done.returncode == 2
    line = done.stderr.decode().strip().splitlines()[-1]
    assert line.startswith(f"etu: place desk-1 is held by alice@{socket.gethostname()} since 20")
    assert "Traceback" not in done.stderr.decode()
    assert only_session(tmp_path) is None  # nothing recorded


@needs_labgrid
def test_two_etu_racing_for_one_place_one_fails_naming_the_holder_and_term_releases(
    lab: Lab, tmp_path: Path
) -> None:
    """Two monitors started together: one holds the place, the other exits 2 naming the
    holder; TERM ends the holder's session (killed) and releases the place."""
    folders = [tmp_path / "a", tmp_path / "b"]
    for folder in folders:
        folder.mkdir()
    env = dict(etu_env(), LG_COORDINATOR=lab.address)  # labgrid's own variable
    racers = [start_etu(f, "monitor", "--place", "desk-1", "--timelimit", "60", env=env)
              for f in folders]  # fmt: skip
    try:
        assert wait_for(lambda: any(r.poll() is not None for r in racers), 30)
        loser = next(r for r in racers if r.poll() is not None)
        winner = next(r for r in racers if r is not loser)
        _, err = loser.communicate(timeout=10)
        assert loser.returncode == 2, err.decode()
        assert (
            err.decode()
            .strip()
            .splitlines()[-1]
            .startswith(f"etu: place desk-1 is held by {me()} since ")
        )
        assert winner.poll() is None
        assert lab.holder() is not None
        winner_folder = folders[racers.index(winner)]
        assert wait_for(lambda: only_session(winner_folder) is not None, 15)
        winner.send_signal(signal.SIGTERM)
        _, err = winner.communicate(timeout=30)
    finally:
        for racer in racers:
            if racer.poll() is None:
                racer.kill()
                racer.wait(10)
    assert winner.returncode == 6, err.decode()
    assert lab.holder() is None
    session = read_session(only_session(winner_folder))
    assert session.meta["exit_reason"] == "killed" and session.meta["place"] == "desk-1"


@needs_labgrid
def test_hup_releases_the_place(lab: Lab, tmp_path: Path) -> None:
    env = dict(etu_env(), LG_COORDINATOR=lab.address)
    monitor = start_etu(tmp_path, "monitor", "--place", "desk-1", "--timelimit", "60", env=env)
    try:
        assert wait_for(lambda: only_session(tmp_path) is not None, 30)
        assert lab.holder() is not None
        monitor.send_signal(signal.SIGHUP)
        _, err = monitor.communicate(timeout=30)
    finally:
        if monitor.poll() is None:
            monitor.kill()
            monitor.wait(10)
    assert monitor.returncode == 6, err.decode()
    assert "SIGHUP" in err.decode()
    assert lab.holder() is None


@needs_labgrid
def test_after_kill_9_the_place_stays_held_until_released_with_labgrid_client(
    lab: Lab, tmp_path: Path
) -> None:
    """etu cannot release after SIGKILL: the place stays held by you, the next etu is told
    so, and ``labgrid-client -p NAME release`` (what docs/boards.md says) frees it."""
    env = dict(etu_env(), LG_COORDINATOR=lab.address)
    monitor = start_etu(tmp_path, "monitor", "--place", "desk-1", "--timelimit", "60", env=env)
    try:
        assert wait_for(lambda: only_session(tmp_path) is not None, 30)
        monitor.send_signal(signal.SIGKILL)
        monitor.wait(10)
        assert lab.holder() is not None
        (tmp_path / "again").mkdir()
        again = etu(tmp_path / "again", "monitor", "--place", "desk-1", env=env)
        assert again.returncode == 2
        assert f"place desk-1 is held by {me()} since" in again.stderr.decode()
    finally:
        if monitor.poll() is None:
            monitor.kill()
        released = lab.client("-p", "desk-1", "release")
    assert released.returncode == 0, released.stderr
    assert lab.holder() is None


@needs_labgrid
def test_a_stop_while_acquiring_leaves_the_place_free(lab: Lab, monkeypatch) -> None:
    """A stop signal (KeyboardInterrupt, as etu raises for TERM/HUP) that lands just after
    the coordinator granted the lock: the place is given back on the way out."""
    from etu.runner.boards import place as place_module

    granted = place_module._Coordinator.acquire

    def interrupted(self, name: str):
        granted(self, name)
        raise KeyboardInterrupt

    monkeypatch.setattr(place_module._Coordinator, "acquire", interrupted)
    with pytest.raises(KeyboardInterrupt):
        place_module.Place("desk-1", lab.address).acquire()
    assert lab.holder() is None


@needs_labgrid
def test_sessions_of_one_process_at_once_and_one_after_another_keep_their_own(
    lab: Lab,
) -> None:
    """The console lists places from one worker while another acquires and releases: each
    labgrid session of the process must be its own client to the coordinator. Sharing one
    connection (gRPC's default for one target), their startups collided and a session
    ended just before the next one took the new one's registration with it (CI's "Peer …
    does not have a valid session")."""
    import threading

    from etu.runner.boards.place import PlaceError, acquire_place, list_places, release_place

    stop = threading.Event()
    listing_errors: list[str] = []

    def keep_listing() -> None:
        while not stop.is_set():
            try:
                list_places(lab.address)
            except PlaceError as error:
                listing_errors.append(str(error))

    lister = threading.Thread(target=keep_listing, daemon=True)
    lister.start()
    errors = []
    try:
        for _ in range(8):
            try:
                acquire_place("desk-1", lab.address)
                release_place("desk-1", lab.address)
            except PlaceError as error:
                errors.append(str(error))
    finally:
        stop.set()
        lister.join(15)
        if lab.holder() is not None:
            lab.client("-p", "desk-1", "release")
    assert errors == [] and listing_errors == []


# ------------------------------------------------------------------ the coordinator goes
@needs_labgrid
def test_the_coordinator_going_away_mid_monitor_ends_the_session_incomplete(
    tmp_path: Path,
) -> None:
    """The coordinator killed while the board prints: the session ends ``incomplete`` with
    every byte the board sent before recorded and the loss named as an event."""
    own = start_lab(tmp_path / "lab", power=False)
    work = tmp_path / "work"
    work.mkdir()
    log = runner_log(40, verdict=False)
    try:
        monitor = start_etu(work, "monitor", "--place", "desk-1", "--coordinator", own.address,
                            "--json", "--timelimit", "60")  # fmt: skip
        assert wait_for(lambda: only_session(work) is not None, 30)
        time.sleep(1.0)  # ser2net opens the device once the client has negotiated
        own.pty.write(log)
        raw = lambda: (only_session(work) / "raw.log").read_bytes()  # noqa: E731
        assert wait_for(lambda: raw() == log, 15), raw()
        own.coordinator.send_signal(signal.SIGKILL)
        out, err = monitor.communicate(timeout=30)
    finally:
        if monitor.poll() is None:
            monitor.kill()
        own.stop()
    assert monitor.returncode == 7, err.decode()  # incomplete
    summary = records(out)[-1]
    assert summary["reason"] == "incomplete" and summary["place"] == "desk-1"
    session = read_session(Path(work / summary["session"]))
    assert session.raw == log
    events = (Path(work / summary["session"]) / "events.jsonl").read_text()
    assert f"coordinator {own.address} went away" in events


@needs_labgrid
def test_an_unknown_place_or_a_silent_coordinator_is_one_line(lab: Lab, tmp_path: Path) -> None:
    unknown = etu(tmp_path, "monitor", "--place", "desk", "--coordinator", lab.address)
    assert unknown.returncode == 2
    assert unknown.stderr.decode().strip() == (
        f"etu: place desk: unknown to coordinator {lab.address} (known: desk-1)"
    )  # labgrid's own lookup would take desk-1 for "desk": etu wants the exact name
    silent = f"127.0.0.1:{free_port()}"
    nobody = etu(tmp_path, "monitor", "--place", "desk-1", "--coordinator", silent)
    assert nobody.returncode == 2
    assert nobody.stderr.decode().strip() == (
        f"etu: coordinator {silent}: unreachable (Could not connect to coordinator)"
    )


# ------------------------------------------------------------------ without labgrid
def test_without_labgrid_place_names_the_extra(tmp_path: Path) -> None:
    """labgrid not importable (a module that raises on import, first on the path): one line
    naming the extra, exit 2, for flash and monitor."""
    shadow = tmp_path / "shadow"
    (shadow / "labgrid").mkdir(parents=True)
    (shadow / "labgrid" / "__init__.py").write_text("raise ImportError('no labgrid here')\n")
    env = etu_env()
    env["PYTHONPATH"] = str(shadow) + os.pathsep + env["PYTHONPATH"]
    (tmp_path / "fw.img").write_bytes(b"x")
    for args in (("monitor", "--place", "desk-1"),
                 ("flash", "--board", "wiseeye2", "--place", "desk-1", "fw.img")):  # fmt: skip
        done = etu(tmp_path, *args, env=env, timeout=60)
        assert done.returncode == 2, done.stderr
        assert done.stderr.decode().strip() == "etu: --place needs labgrid: pip install 'etu[lab]'"


def test_place_option_mistakes_are_one_line(tmp_path: Path) -> None:
    for args, said in (
        (("monitor",), "monitor: give a PORT (or --place NAME)"),
        (("monitor", "/dev/null", "--place", "x"),
         "monitor: give a PORT or --place NAME, not both"),
        (("monitor", "/dev/null", "--coordinator", "h:1"), "--coordinator goes with --place NAME"),
        (("flash", "--board", "qemu-an547", "--place", "x", "fw.elf"),
         "--place: qemu-an547 is emulated here, not a labgrid place"),
        (("flash", "--board", "wiseeye2", "--place", "x", "--port", "/dev/null", "fw.img"),
         "--place: the place's serial port is used; drop --port/--mcc-port"),
        (("run", "--board", "wiseeye2", "--elf", "fw.img"),
         "run: --board wiseeye2: a board runs through its labgrid place (--place NAME) or etu "
         "flash --monitor; alone, --board runs the emulated board qemu-an547"),
        (("run", "--place", "x", "--elf", "fw.img"),
         "run: --place needs the place's board profile (--board PROFILE; see etu boards); "
         "qemu-an547 is no place"),
        (("run", "--board", "wiseeye2", "--place", "x", "model.pte"),
         "run: --place flashes a firmware built for its board: give --elf FW (no PROGRAM.pte "
         "or --inputs)"),
        (("run", "--coordinator", "h:1", "--elf", "fw.elf"),
         "--coordinator goes with --place NAME"),
    ):  # fmt: skip
        done = etu(tmp_path, *args, timeout=60)
        assert done.returncode == 2, done.stderr
        assert done.stderr.decode().strip().splitlines()[-1] == f"etu: {said}"


def test_coordinator_addresses_and_serial_urls(monkeypatch) -> None:
    from etu.runner.boards.place import PlaceError, coordinator_address, serial_url

    monkeypatch.delenv("LG_COORDINATOR", raising=False)
    assert coordinator_address(None) == "127.0.0.1:20408"
    assert coordinator_address("lab") == "lab:20408"
    monkeypatch.setenv("LG_COORDINATOR", "labhost:4000")
    assert coordinator_address(None) == "labhost:4000"
    assert coordinator_address("other:5000") == "other:5000"
    with pytest.raises(PlaceError, match="expected HOST:PORT"):
        coordinator_address("lab:http")
    assert serial_url({"host": "10.0.0.2", "port": 4000}) == "rfc2217://10.0.0.2:4000"
    assert serial_url({"host": "h", "port": 4000, "protocol": "raw"}) == "socket://h:4000"
    assert serial_url({"host": "h", "port": 70000}) is None
    assert serial_url({"host": "h"}) is None
