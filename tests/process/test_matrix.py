"""`etu matrix` with real processes: two real CPU programs (the test artifact cache's) on the
emulated board (ExecuTorch's real runner on QEMU mps3-an547) and on a labgrid place whose
coordinator is not running; then, against a real coordinator and exporter on 127.0.0.1, a
firmware flashed through a place to the virtual WiseEye2 bootloader, and a place somebody
else holds. The table, the JSON cells, valid JUnit XML, the sessions and their place."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

import pytest

from tests.real_programs import build as real_program
from tests.real_runner import runtime_environment

ROOT = Path(__file__).resolve().parents[2]
ETU = [sys.executable, "-m", "etu.tui.cli"]
PROGRAMS = ("float_cpu", "macro_cpu")  # float, CPU only: one runner library tree serves both


def etu(args: list, env: dict, cwd: Path, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run([*ETU, *map(str, args)], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=timeout, check=False)  # fmt: skip


def free_port() -> int:
    """A port nothing listens on (bound, then closed): a coordinator that is not running."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def labgrid_installed() -> bool:
    try:
        import labgrid.remote.client  # noqa: F401
    except ImportError:
        return False
    return True


def junit(path: Path) -> ElementTree.Element:
    root = ElementTree.parse(path).getroot()  # well-formed, or this raises
    assert root.tag == "testsuites"
    return root


@pytest.mark.runtime_build
@pytest.mark.skipif(shutil.which("qemu-system-arm") is None, reason="no qemu-system-arm")
@pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None, reason="no cross gcc")
def test_two_programs_on_the_emulated_board_and_an_unreachable_place(tmp_path: Path) -> None:
    """2 programs × 2 targets: the emulated board's cells succeed (one recorded session
    each, listed by etu sessions); the place's fail with the coordinator's one line; the
    table, --json and the JUnit XML agree; the exit status is the first failing cell's."""
    env = runtime_environment()
    programs = [real_program(name) for name in PROGRAMS]
    address = f"127.0.0.1:{free_port()}"
    args = [*programs, "--board", "wiseeye2:desk-1", "--emulated", "--coordinator", address,
            "--build-dir", tmp_path / "fw", "--sessions", tmp_path / "sessions",
            "--junit", tmp_path / "matrix.xml"]  # fmt: skip
    done = etu(["matrix", *args], env, tmp_path)
    assert done.returncode == 2, done.stderr[-3000:]  # the first failing cell: not started
    assert "Traceback" not in done.stderr
    why = "unreachable" if labgrid_installed() else "--place needs labgrid"

    # the table: rows programs, columns targets
    header, *rows = done.stdout.splitlines()
    assert header.split() == ["program", "wiseeye2:desk-1", "emulated"]
    assert [row.split()[0] for row in rows] == ["float_cpu.pte", "macro_cpu.pte"]
    for row in rows:
        place_cell, emulated_cell = row.split("  ", 1)[1].strip().split("  ", 1)
        assert place_cell.startswith("✗ not_started: ")
        assert emulated_cell.strip().startswith("✓ ")
        assert emulated_cell.strip().endswith("s")  # its time
    assert "etu: matrix: 2 of 4 passed" in done.stderr

    # valid JUnit XML: one testsuite per target, one testcase per program
    root = junit(tmp_path / "matrix.xml")
    assert (root.get("tests"), root.get("failures"), root.get("skipped")) == ("4", "2", "0")
    suites = {suite.get("name"): suite for suite in root.findall("testsuite")}
    assert list(suites) == ["wiseeye2:desk-1", "emulated"]
    for name, suite in suites.items():
        cases = suite.findall("testcase")
        assert [case.get("name") for case in cases] == ["float_cpu.pte", "macro_cpu.pte"]
        assert suite.get("tests") == "2"
        failures = [case.find("failure") for case in cases]
        if name == "emulated":
            assert failures == [None, None] and suite.get("failures") == "0"
            assert all("session " in case.findtext("system-out") for case in cases)
        else:
            assert suite.get("failures") == "2"
            for failure in failures:
                message = failure.get("message")
                assert message.startswith("not_started: ") and why in message
                assert "\n" not in message  # the one-line reason
                if labgrid_installed():
                    assert f"coordinator {address}" in message

    # the sessions: one per emulated cell, recorded like any run, nothing for the place
    listed = etu(["sessions", "--sessions", tmp_path / "sessions", "--json"], env, tmp_path)
    sessions = [json.loads(line) for line in listed.stdout.splitlines()]
    assert len(sessions) == 2 and {s["kind"] for s in sessions} == {"qemu"}
    assert {s["ending"]["reason"] for s in sessions} == {"success"}
    assert {s["program"]["name"] for s in sessions} == {"float_cpu.pte", "macro_cpu.pte"}
    assert all(s["place"] is None for s in sessions)

    # --json: the same cells (the firmware reused: built once under --build-dir), each
    # session's outputs compared with the host reference (--compare)
    again = etu(["matrix", *args, "--json", "--compare"], env, tmp_path)
    assert again.returncode == 2, again.stderr[-3000:]
    record = json.loads(again.stdout)
    assert record["targets"] == ["wiseeye2:desk-1", "emulated"]
    assert (record["passed"], record["failed"], record["exit_status"]) == (2, 2, 2)
    cells = {(Path(c["program_path"]).stem, c["target"]): c for c in record["cells"]}
    assert len(cells) == 4
    for name in PROGRAMS:
        ran, refused = cells[(name, "emulated")], cells[(name, "wiseeye2:desk-1")]
        assert ran["ending"] == "success" and ran["passed"] and ran["exit_status"] == 0
        assert Path(ran["session"], "meta.json").is_file() and ran["seconds"] > 0
        assert ran["build_seconds"] is None  # built by the first run
        assert ran["outputs_passed"] is True
        assert ran["outputs"].startswith("outputs ✓ vs the reference: deployment")
        assert Path(ran["session"], "compare.json").is_file()  # etu compare's record
        assert refused["ending"] == "not_started" and refused["session"] is None
        assert why in refused["reason"] and refused["place"] == "desk-1"


def test_matrix_refuses_what_it_cannot_run_in_one_line(tmp_path: Path) -> None:
    """Bad arguments: exit 2 and one line each, before anything is built or run."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    pte = tmp_path / "model.pte"
    pte.write_bytes(b"not a program")
    for args, said in (
        ([pte], "no target: give --board PROFILE:PLACE or --emulated"),
        ([tmp_path / "gone.pte", "--emulated"], "gone.pte: no such file"),
        ([pte, "--board", "wiseeye2"], "--board wiseeye2: expected PROFILE:PLACE"),
        ([pte, "--board", "wiseeye2:a", "--board", "wiseeye2:a"], "wiseeye2:a: given twice"),
        ([pte, pte, "--emulated"], "model.pte: given twice"),
    ):
        done = etu(["matrix", *args], env, tmp_path, timeout=60)
        assert done.returncode == 2, (args, done.stderr)
        (line,) = done.stderr.strip().splitlines()
        assert line.startswith("etu: ") and said in line, done.stderr
        assert "Traceback" not in done.stderr
    # a program that is no program: its cell says why; the JUnit XML is still written
    done = etu(["matrix", pte, "--emulated", "--junit", tmp_path / "j.xml", "--json",
                "--sessions", tmp_path / "s", "--build-dir", tmp_path / "fw"], env, tmp_path,
               timeout=120)  # fmt: skip
    assert done.returncode == 2, done.stderr
    (cell,) = json.loads(done.stdout)["cells"]
    assert cell["ending"] == "not_started" and "model.pte" in cell["reason"]
    (case,) = junit(tmp_path / "j.xml").iter("testcase")
    assert case.find("failure").get("message").startswith("not_started: ")


# -- a real coordinator -------------------------------------------------------------------


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    from tests.labgrid_lab import lab_for_module

    yield from lab_for_module(tmp_path_factory)


def test_a_firmware_flashed_through_a_place_and_a_place_held_by_another(
    lab, tmp_path: Path
) -> None:
    """The virtual WiseEye2 behind place desk-1: the matrix flashes the image through the
    place and records a board session with the place (etu sessions --place finds it); with
    alice holding the place, the cell fails naming her, and the place stays hers."""
    from tests.board_peers import VirtualWiseEye2, etu_env, runner_log

    env = etu_env()
    image = tmp_path / "output.img"
    image.write_bytes(bytes(range(256)) * 16)
    args = ["matrix", image, "--board", "wiseeye2:desk-1", "--coordinator", lab.address,
            "--sessions", tmp_path / "sessions", "--timelimit", "60"]  # fmt: skip
    board = VirtualWiseEye2(lab.pty, runner_log(10)).start()
    try:
        done = etu([*args, "--json", "--junit", tmp_path / "ok.xml"], env, tmp_path, 120)
    finally:
        board.stop()
    assert board.error is None, board.error
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    (cell,) = json.loads(done.stdout)["cells"]
    assert cell["ending"] == "success" and cell["place"] == "desk-1"
    assert cell["exporter"] == "lab-host" and "@" in cell["holder"]
    assert board.received[0].rstrip(b"\x1a") == image.read_bytes()
    root = junit(tmp_path / "ok.xml")
    assert (root.get("tests"), root.get("failures")) == ("1", "0")
    assert lab.holder() is None  # released after the cell
    listed = etu(["sessions", "--sessions", tmp_path / "sessions", "--place", "desk-1",
                  "--json"], env, tmp_path, 60)  # fmt: skip
    (session,) = [json.loads(line) for line in listed.stdout.splitlines()]
    assert (session["place"], session["exporter"]) == ("desk-1", "lab-host")
    assert session["folder"] == cell["session"]
    shown = etu(["sessions", "--sessions", tmp_path / "sessions"], env, tmp_path, 60)
    assert "board @desk-1" in shown.stdout  # the text listing names the place too
    nobody = etu(["sessions", "--sessions", tmp_path / "sessions", "--place", "desk-2"],
                 env, tmp_path, 60)  # fmt: skip
    assert nobody.stdout == "" and "no recorded session matches" in nobody.stderr

    taken = lab.client("-p", "desk-1", "acquire", user="alice")
    assert taken.returncode == 0, taken.stderr
    try:
        held = etu([*args, "--junit", tmp_path / "held.xml"], env, tmp_path, 120)
        assert lab.holder().endswith("/alice")  # still hers
    finally:
        lab.client("-p", "desk-1", "release", user="alice")
    assert held.returncode == 2, held.stderr[-3000:]
    (failure,) = junit(tmp_path / "held.xml").iter("failure")
    assert failure.get("message").startswith("not_started: place desk-1 is held by alice@")
    assert "since 20" in failure.get("message")


def test_junit_xml_stays_valid_with_what_a_board_printed() -> None:
    """A reason is a device's line: escape codes, NUL, a bidi override, XML's own < & ">
    and a second line. The XML parses, each message is one line with them shown escaped;
    the exit status is the first failing cell's, row by row."""
    from etu.runner.boards.flash import FlashFile
    from etu.runner.matrix import Cell, Matrix, Program, Target, junit_xml

    hostile = 'E [runner] \x1b[31mfault\x00 <&> "\u202eevil\nsecond line'
    program = Program("fw.img", (FlashFile(Path("fw.img")),))
    targets = [Target("wiseeye2:desk-<1>", "wiseeye2", "desk-<1>"), Target("emulated", "q")]
    matrix = Matrix([program], targets, [
        Cell("fw.img", "fw.img", "wiseeye2:desk-<1>", "runner_error", hostile, exit_status=1),
        Cell("fw.img", "fw.img", "emulated", "hard_fault", "HardFault", exit_status=3),
    ])  # fmt: skip
    root = ElementTree.fromstring(junit_xml(matrix).split("\n", 1)[1])
    assert [s.get("name") for s in root.iter("testsuite")] == ["wiseeye2:desk-<1>", "emulated"]
    message = next(root.iter("failure")).get("message")
    assert message == 'runner_error: E [runner] \\x1b[31mfault\\x00 <&> "<U+202E>evil'
    assert matrix.exit_status == 1  # the first failing cell's, not the worst


def test_a_stopped_matrix_releases_the_place_and_says_what_did_not_run(lab, tmp_path: Path) -> None:
    """SIGTERM while the first cell waits for a board that never answers (nothing on the
    place's port): that cell ends killed, the second is not run (a skipped testcase), the
    place is released, the JUnit XML and the table are still written; exit status 6."""
    import signal
    import time

    from tests.board_peers import etu_env, wait_for

    (tmp_path / "a.img").write_bytes(b"\x5a" * 1000)
    (tmp_path / "b.img").write_bytes(b"\xa5" * 1000)
    argv = [*ETU, "matrix", "a.img", "b.img", "--board", "wiseeye2:desk-1", "--coordinator",
            lab.address, "--junit", "stopped.xml", "--sessions", "sessions"]  # fmt: skip
    process = subprocess.Popen(argv, cwd=tmp_path, env=etu_env(), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert wait_for(lambda: lab.holder() is not None, 60, 0.3), "the place never held"
        time.sleep(0.5)  # flashing: waiting for the bootloader's banner
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 6, err[-3000:]
    assert "Traceback" not in err
    assert lab.holder() is None  # released on the way out
    root = junit(tmp_path / "stopped.xml")
    assert (root.get("tests"), root.get("failures"), root.get("skipped")) == ("2", "1", "1")
    failure = next(root.iter("failure"))
    assert failure.get("message") == "killed: stopped by SIGTERM"
    skipped = next(root.iter("skipped"))
    assert skipped.get("message") == "not run: the matrix was stopped by SIGTERM"
    assert "✗ killed" in out and "✗ not_run" in out
