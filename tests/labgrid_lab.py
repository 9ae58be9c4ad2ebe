"""Real labgrid processes on 127.0.0.1 for the place tests and benchmarks: a coordinator, an
exporter exporting a pty (the virtual WiseEye2's) as a RawSerialPort, served by ser2net over
RFC 2217, and a ``simplerest`` power switch, and the place ``desk-1`` matching both, created
with labgrid-client. Nothing here is etu code: labgrid's own executables, run as a lab runs
them."""

from __future__ import annotations

import http.server
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.board_peers import Pty, wait_for

BIN = Path(sys.executable).parent


MISSING = "needs labgrid (pip install 'etu[lab]') and ser2net (make system-deps)"


def labgrid_installed() -> bool:
    try:
        import labgrid.remote.client  # noqa: F401
    except ImportError:
        return False
    return (BIN / "labgrid-coordinator").exists() or bool(shutil.which("labgrid-coordinator"))


def tool(name: str) -> str:
    beside = BIN / name
    return str(beside) if beside.exists() else (shutil.which(name) or name)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


class PowerSwitch:
    """A network power switch as labgrid's ``simplerest`` model talks to it: GET
    /relay/INDEX/VALUE switches, GET /relay/INDEX reads. Records each switch."""

    def __init__(self) -> None:
        self.switched: list[tuple[float, str]] = []
        switch = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                parts = self.path.strip("/").split("/")
                if len(parts) == 3:
                    switch.switched.append((time.monotonic(), parts[2]))
                body = (switch.switched[-1][1] if switch.switched else "1").encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@dataclass
class Lab:
    """A coordinator, an exporter and one place ``desk-1`` on a WiseEye2 pty."""

    address: str
    pty: Pty
    folder: Path
    coordinator: subprocess.Popen
    exporter: subprocess.Popen
    power: PowerSwitch | None

    def client(self, *args: str, user: str | None = None) -> subprocess.CompletedProcess:
        env = dict(os.environ, LG_COORDINATOR=self.address)
        if user:
            env["LG_USERNAME"] = user
        return subprocess.run([tool("labgrid-client"), *args], env=env, capture_output=True,
                              text=True, timeout=30, check=False)  # fmt: skip

    def holder(self, place: str = "desk-1") -> str | None:
        shown = self.client("-p", place, "show")
        assert shown.returncode == 0, shown.stderr
        line = next(line for line in shown.stdout.splitlines() if "acquired:" in line)
        value = line.split("acquired:", 1)[1].strip()
        return None if value == "None" else value

    def stop(self) -> None:
        for process in (self.exporter, self.coordinator):
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(10)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(5)
        if self.power is not None:
            self.power.close()
        self.pty.close()


def start_lab(folder: Path, *, power: bool = True) -> Lab:
    folder.mkdir(parents=True, exist_ok=True)
    port = free_port()
    address = f"127.0.0.1:{port}"
    pty = Pty()
    switch = PowerSwitch() if power else None
    config = f"we2:\n  RawSerialPort:\n    port: {pty.path}\n    speed: 921600\n"
    if switch is not None:
        config += ("  NetworkPowerPort:\n    model: simplerest\n"
                   f"    host: 'http://127.0.0.1:{switch.port}/relay/{{index}}/{{value}}'\n"
                   "    index: 0\n")  # fmt: skip
    (folder / "exporter.yaml").write_text(config)
    with open(folder / "coordinator.log", "wb") as log:
        coordinator = subprocess.Popen([tool("labgrid-coordinator"), "--listen", address],
                                       cwd=folder, stdout=log, stderr=subprocess.STDOUT,
                                       start_new_session=True)  # fmt: skip
    assert wait_for(lambda: listening(port), 20), (folder / "coordinator.log").read_text()
    with open(folder / "exporter.log", "wb") as log:
        exporter = subprocess.Popen([tool("labgrid-exporter"), "-c", address, "-n", "lab-host",
                                     "--hostname", "127.0.0.1", "exporter.yaml"], cwd=folder,
                                    stdout=log, stderr=subprocess.STDOUT,
                                    start_new_session=True)  # fmt: skip
    lab = Lab(address, pty, folder, coordinator, exporter, switch)
    try:

        def exported() -> bool:
            listed = lab.client("resources")
            return "lab-host/we2/NetworkSerialPort" in listed.stdout

        assert wait_for(exported, 30, 0.3), (folder / "exporter.log").read_text()
        for args in (("create",), ("add-match", "lab-host/we2/NetworkSerialPort"),
                     ("add-match", "lab-host/we2/NetworkPowerPort") if power else ()):  # fmt: skip
            if args:
                done = lab.client("-p", "desk-1", *args)
                assert done.returncode == 0, done.stderr
    except BaseException:
        lab.stop()
        raise
    return lab


def lab_for_module(tmp_path_factory) -> Iterator[Lab]:
    """A module's lab (its ``lab`` fixture yields from this); skipped without labgrid or
    ser2net, with the reason."""
    if not labgrid_installed() or not shutil.which("ser2net"):
        pytest.skip(MISSING)
    started = start_lab(tmp_path_factory.mktemp("lab"))
    yield started
    started.stop()
