"""The console holds one workspace (issue 21, items 2 and 3): the loader finds it, every
panel gets it; a program opened inside it keeps it; the Run, Boards, Memory and Fit tabs find
a program's firmware by one rule (PROGRAM.<board>/ beside the program, else the workspace's
firmware/*.elf, else *.elf)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from textual.widgets import Input, Select

from etu.runner.session import sessions_root
from etu.runner.workspace import RUNNER_ELF, firmware_dir
from etu.tui.app import EtuApp
from etu.tui.widgets import RunElfScreen
from etu.tui.widgets.boards import BoardsPanel
from etu.tui.widgets.history import HistoryPanel
from tests.console_helpers import SIZE
from tools.screenshots import settle

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parent.parent.parent
DEMO = ROOT / "etu_tui" / "demo"
DEMO_ELF = DEMO / "firmware" / "arm_executor_runner.elf"
JOB = Path("build") / "TinyNet-1234abcd"


def initialised(folder: Path, program: str = "demo_cnn.pte") -> Path:
    """`etu init ws`, then a compile job written with `--out build` (as etu init suggests)."""
    subprocess.run([sys.executable, "-m", "etu.tui.cli", "init", "ws"], cwd=folder,
                   env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True,
                   capture_output=True, timeout=60)  # fmt: skip
    root = folder / "ws"
    (root / JOB).mkdir(parents=True)
    shutil.copyfile(DEMO / program, root / JOB / "TinyNet.pte")
    return root


def built(program: Path, board: str) -> Path:
    """What `etu firmware build --board BOARD PROGRAM` leaves beside the program."""
    folder = firmware_dir(program, board)
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(DEMO_ELF, folder / RUNNER_ELF)
    shutil.copyfile(DEMO_ELF.with_suffix(".map"), folder / "arm_executor_runner.map")
    return folder / RUNNER_ELF


async def test_a_program_opened_from_a_sub_folder_keeps_the_workspace(tmp_path: Path) -> None:
    """Before, `o` → build/TinyNet-…/TinyNet.pte moved the workspace into the job folder:
    new sessions went to build/…/.etu/sessions/ and History lost the workspace's own."""
    root = tmp_path / "plain"  # no etu.toml: the demo, a folder of programs
    (root / JOB).mkdir(parents=True)
    shutil.copyfile(DEMO / "demo_cnn.pte", root / "demo_cnn.pte")
    shutil.copyfile(DEMO / "demo_cnn.pte", root / JOB / "TinyNet.pte")
    shutil.copytree(DEMO / "firmware", root / "firmware")
    app = EtuApp(root)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.workspace == root
        app.open_target(root / JOB / "TinyNet.pte")
        await settle(pilot)
        assert app.load_state == "ready" and app.facts.name == "TinyNet.pte"
        assert app.workspace == root and app.current_workspace.program == root / JOB / (
            "TinyNet.pte"
        )
        assert app.run_panel.workspace == root  # sessions: root/.etu/sessions
        assert app.query_one(HistoryPanel).workspace == root
        assert app.compile_panel.out_dir == root / ".etu" / "compile"
        assert app.run_panel.elf == root / "firmware" / "arm_executor_runner.elf"
        assert app.memory_panel.firmware.label == "firmware/arm_executor_runner.elf"
        assert not (root / JOB / ".etu").exists()
    assert sessions_root(app.workspace) == root / ".etu" / "sessions"


async def test_etu_dot_in_an_initialised_workspace_names_it(tmp_path: Path, monkeypatch) -> None:
    """`etu init .`, `etu compile … --out build`, `etu .`: before, a red "folder holds no
    .pte file" and a Run tab reading "no firmware ELF in  (looked for …)"."""
    root = initialised(tmp_path)
    monkeypatch.chdir(root)
    app = EtuApp(Path("."))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.load_state == "ready"
        assert app.facts.path == root / JOB / "TinyNet.pte"
        assert app.workspace == root
        panel = app.run_panel
        await pilot.press("u")
        await settle(pilot)
        error = panel.header.preview_error or ""
        assert error.startswith("no firmware ELF for corstone-300 in ws (looked for "), error
        assert f"{JOB / 'TinyNet.corstone-300'}/, firmware/*.elf, *.elf)" in error


async def test_a_firmware_opened_as_the_program_keeps_its_workspace(tmp_path: Path) -> None:
    """Before, the Compile tab of a console opened on TinyNet.corstone-300/…elf wrote its
    jobs under TinyNet.corstone-300/.etu/compile/; Run ran the ELF that was opened."""
    root = tmp_path / "plain"  # no etu.toml: the program's folder is the workspace
    root.mkdir()
    shutil.copyfile(DEMO / "demo_cnn.pte", root / "TinyNet.pte")
    elf = built(root / "TinyNet.pte", "corstone-300")
    app = EtuApp(elf)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.load_state == "ready"
        assert app.workspace == root
        assert app.compile_panel.out_dir == root / ".etu" / "compile"
        assert app.run_panel.elf == elf
        assert app.memory_panel.firmware.path == elf
        assert app.query_one(BoardsPanel).firmware == elf


async def test_the_target_setting_reaches_a_program_in_a_compile_job(tmp_path: Path) -> None:
    """The settings are the workspace's (etu.toml at its root), not the job folder's."""
    root = initialised(tmp_path, "demo_cnn_cpu.pte")
    settings = root / "etu.toml"
    settings.write_text('target = "ethos-u85-256"\n' + settings.read_text())  # above [keymap]
    app = EtuApp(root / JOB / "TinyNet.pte")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.run_panel.target == "ethos-u85-256"
        await pilot.press("k")  # the Compile form is composed when first shown
        await pilot.pause()
        assert app.query_one("#compile-target", Select).value == "ethos-u85-256"
        assert app.current_workspace.target == "ethos-u85-256"


async def test_run_boards_and_fit_find_the_same_firmware(tmp_path: Path) -> None:
    """The program's build for the run target's board, the Boards profile's board; an ELF
    picked on the Run tab is what the Boards tab flashes."""
    root = tmp_path / "ws"
    root.mkdir()
    program = root / "TinyNet.pte"
    shutil.copyfile(DEMO / "demo_cnn.pte", program)  # compiled for ethos-u55-128
    shutil.copytree(DEMO / "firmware", root / "firmware")
    u55 = built(program, "corstone-300")
    qemu = built(program, "qemu-an547")
    other = tmp_path / "other.elf"
    shutil.copyfile(DEMO_ELF, other)
    app = EtuApp(program)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        run, boards = app.run_panel, app.query_one(BoardsPanel)
        assert run.target == "ethos-u55-128" and run.elf == u55
        assert app.memory_panel.firmware.path == u55  # the Fit tab's too
        assert app.memory_panel.firmware.label == "TinyNet.corstone-300/arm_executor_runner.elf"
        assert boards.firmware == qemu  # found before the Boards tab is first shown
        await pilot.press("B")
        await settle(pilot)
        assert app.query_one("#boards-profile", Select).value == "qemu-an547"
        assert boards.firmware == qemu
        app.query_one("#boards-profile", Select).value = "mps3-an552"  # a Corstone-300 FPGA
        await settle(pilot)
        assert boards.firmware == u55
        app.query_one("#run-target", Select).value = "qemu-an547"
        await settle(pilot)
        assert run.elf == qemu
        app.query_one("#run-target", Select).value = "ethos-u85-256"  # no build for -320
        await settle(pilot)
        assert run.elf == root / "firmware" / "arm_executor_runner.elf"
        await pilot.press("u")
        await settle(pilot)
        await pilot.press("e")
        await pilot.pause()
        assert isinstance(app.screen, RunElfScreen)
        app.screen.query_one("#path", Input).value = str(other)
        await pilot.press("enter")
        await settle(pilot)
        assert run.elf == other and boards.firmware == other
