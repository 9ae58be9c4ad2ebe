"""One rule for where a program's firmware lives (issue 21, item 3): `etu firmware build`
writes PROGRAM.<board>/ beside the program, `etu run --board` reuses that folder, `etu fit`
and the console find it there; a firmware opened as the program belongs to the program's
workspace."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import shutil
from pathlib import Path

import pytest

from etu.runner import workspace as ws
from etu.runner.session import file_sha256

ROOT = Path(__file__).resolve().parent.parent.parent
DEMO = ROOT / "etu_tui" / "demo"
DEMO_ELF = DEMO / "firmware" / "arm_executor_runner.elf"


@pytest.fixture
def program(tmp_path: Path) -> Path:
    """A workspace (etu init's etu.toml) with one program and no firmware yet."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "etu.toml").write_text('target = "ethos-u85-256"\n')
    shutil.copyfile(DEMO / "demo_cnn_cpu.pte", root / "TinyNet.pte")
    return root / "TinyNet.pte"


def built(program: Path, board: str) -> Path:
    """What `etu firmware build --board BOARD PROGRAM` leaves: the ELF and its .map."""
    folder = ws.firmware_dir(program, board)
    folder.mkdir(parents=True, exist_ok=True)
    elf = folder / ws.RUNNER_ELF
    shutil.copyfile(DEMO_ELF, elf)
    shutil.copyfile(DEMO_ELF.with_suffix(".map"), elf.with_suffix(".map"))
    return elf


def test_the_boards_are_the_firmware_builders_boards() -> None:
    from etu.runner.runtime_build import BOARDS
    from etu.tui.cli.firmware import BOARDS as CLI_BOARDS

    assert ws.FIRMWARE_BOARDS == BOARDS == CLI_BOARDS


def test_a_programs_firmware_is_beside_it_per_board(program: Path) -> None:
    root = program.parent
    assert ws.firmware_dir(program, "qemu-an547") == root / "TinyNet.qemu-an547"
    assert ws.find_firmware(root, program) is None
    shutil.copytree(DEMO / "firmware", root / "firmware")
    own = root / "firmware" / "arm_executor_runner.elf"
    assert ws.find_firmware(root, program) == own  # the workspace's own, when none built
    qemu = built(program, "qemu-an547")
    assert ws.find_firmware(root, program) == qemu  # the program's own comes first
    assert ws.find_firmware(root, program, "qemu-an547") == qemu
    # another board's build does not run on corstone-300: the workspace's firmware does
    assert ws.find_firmware(root, program, "corstone-300") == own
    u55 = built(program, "corstone-300")
    assert ws.find_firmware(root, program, "corstone-300") == u55
    assert ws.find_firmware(root, u55) == u55  # a firmware opened as the program is its own
    found = ws.find_workspace(program)
    assert found.firmware == qemu and found.firmware_map == qemu.with_suffix(".map")
    assert found.firmware_for("corstone-320") == own
    places = found.firmware_places("corstone-320")
    assert places == "TinyNet.corstone-320/, firmware/*.elf, *.elf"


@pytest.mark.parametrize(
    ("target", "board"),
    [
        ("ethos-u55-128", "corstone-300"),
        ("ethos-u65-256", "corstone-300"),
        ("ethos-u85-256", "corstone-320"),
        ("qemu-an547", "qemu-an547"),
        ("ethos-u99-1", None),
        (None, None),
    ],
)
def test_a_run_target_names_its_firmware_board(target: str | None, board: str | None) -> None:
    assert ws.board_for_target(target) == board


def test_a_firmware_opened_as_the_program_keeps_the_programs_workspace(program: Path) -> None:
    """Before, the compile tab of a console opened on TinyNet.corstone-300/…elf wrote its
    jobs under TinyNet.corstone-300/.etu/compile/."""
    elf = built(program, "corstone-300")
    root = program.parent
    assert ws.workspace_of(elf) == root
    found = ws.find_workspace(elf)
    assert found.root == root and found.program == elf and found.firmware == elf
    assert found.compile_jobs == root / ".etu" / "compile"
    assert found.sessions == root / ".etu" / "sessions"
    # outside any etu.toml workspace: the folder the program is in
    loose = program.parent.parent / "loose"
    loose.mkdir()
    shutil.copyfile(program, loose / "Net.pte")
    assert ws.workspace_of(built(loose / "Net.pte", "qemu-an547")) == loose


def test_a_program_opened_inside_the_open_workspace_keeps_it(tmp_path: Path) -> None:
    """No etu.toml (the demo, a plain folder): a program in a sub-folder opened from the
    console stays in the workspace already open (its sessions, jobs and firmware)."""
    root = tmp_path / "plain"
    job = root / "build" / "TinyNet-1234abcd"
    job.mkdir(parents=True)
    shutil.copyfile(DEMO / "demo_cnn.pte", root / "demo_cnn.pte")
    shutil.copyfile(DEMO / "demo_cnn.pte", job / "TinyNet.pte")
    shutil.copytree(DEMO / "firmware", root / "firmware")
    assert ws.find_workspace(job / "TinyNet.pte").root == job  # on its own: its folder
    found = ws.find_workspace(job / "TinyNet.pte", within=root)
    assert found.root == root and found.program == job / "TinyNet.pte"
    assert found.sessions == root / ".etu" / "sessions"
    assert found.firmware == root / "firmware" / "arm_executor_runner.elf"
    assert found.programs == [root / "demo_cnn.pte", job / "TinyNet.pte"]
    nested = root / "nested"  # `etu init` below the open workspace: a workspace of its own
    nested.mkdir()
    (nested / "etu.toml").write_text("")
    shutil.copyfile(DEMO / "demo_cnn.pte", nested / "n.pte")
    assert ws.find_workspace(nested / "n.pte", within=root).root == nested
    elsewhere = tmp_path / "elsewhere.pte"
    shutil.copyfile(DEMO / "demo_cnn.pte", elsewhere)
    assert ws.find_workspace(elsewhere, within=root).root == tmp_path  # outside: its own


def test_the_workspace_carries_the_target_setting(program: Path) -> None:
    job = program.parent / "build" / "TinyNet-1234abcd"
    job.mkdir(parents=True)
    shutil.copyfile(program, job / "TinyNet.pte")
    found = ws.find_workspace(job / "TinyNet.pte")
    assert found.root == program.parent and found.target == "ethos-u85-256"
    assert found.settings_problem is None
    assert json.loads(json.dumps(found.to_json()))["target"] == "ethos-u85-256"
    (program.parent / "etu.toml").write_text("target = \n")
    broken = ws.find_workspace(program)
    assert broken.target is None and "etu.toml:1: not valid TOML" in broken.settings_problem


def _build_args(pte: Path, **extra) -> argparse.Namespace:
    values = dict(pte=pte, board="qemu-an547", pools="auto", select_ops="auto", bundleio=False,
                  etdump=False, fault_on_start=False, out=None, json=True)  # fmt: skip
    values.update(extra)
    return argparse.Namespace(**values)


def test_firmware_build_writes_beside_the_program(program: Path, monkeypatch) -> None:
    from etu.runner.build_plan import RuntimeBuildError
    from etu.tui.cli import firmware

    folders: list[Path] = []

    def build(args, folder, *, err):
        folders.append(Path(folder))
        raise RuntimeBuildError("stopped once the folder was chosen")

    monkeypatch.setattr(firmware, "build_from_args", build)
    with contextlib.suppress(Exception):  # an exit status or a CLI error: not the point here
        firmware.run(_build_args(program), out=io.StringIO(), err=io.StringIO())
    assert folders == [ws.firmware_dir(program, "qemu-an547")]


def test_run_on_the_board_reuses_the_firmware_build_made(program: Path, monkeypatch) -> None:
    """Before, `etu run --board qemu-an547 PROGRAM.pte` looked in .etu/firmware/ of the
    current folder, missed PROGRAM.qemu-an547/ and built a second copy."""
    from etu.tui.cli import firmware
    from etu.tui.cli import run as run_cli

    elf = built(program, "qemu-an547")
    wanted = {"program_sha256": file_sha256(program), "pools": "auto", "select_ops": "auto"}
    record = {"elf": str(elf), "request": wanted}
    (elf.parent / "etu_firmware.json").write_text(json.dumps(record))

    def no_build(*_args, **_kwargs):
        raise AssertionError("a second firmware was built")

    monkeypatch.setattr(firmware, "build_from_args", no_build)
    monkeypatch.chdir(program.parent.parent)  # not the workspace: the rule is per program
    args = argparse.Namespace(
        board="qemu-an547", pte=program, elf=None, build_dir=None, pools="auto",
        select_ops="auto", dry_run=True, json=True, timelimit=10, sessions=Path("s"),
    )  # fmt: skip
    out, err = io.StringIO(), io.StringIO()
    assert run_cli.run_command(args, out=out, err=err) == 0, err.getvalue()
    assert str(elf) in json.loads(out.getvalue())["argv"]
    assert not (program.parent.parent / ".etu").exists()


def test_fit_finds_what_the_fit_tab_finds(program: Path) -> None:
    """`etu fit --pte X` without --elf/--vela: the program's firmware and Vela folder, the
    same verdicts as naming them."""
    import subprocess
    import sys

    elf = built(program, "qemu-an547")
    shutil.copytree(DEMO / "vela", program.parent / "vela")
    found = ws.find_workspace(program)
    assert (found.firmware, found.vela) == (elf, program.parent / "vela")
    etu = [sys.executable, "-m", "etu.tui.cli", "fit", "--json", "--pte", str(program)]
    implicit = subprocess.run(etu, capture_output=True, text=True, timeout=120, check=False)
    explicit = subprocess.run([*etu, "--elf", str(elf), "--vela", str(found.vela)],
                              capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert implicit.returncode == explicit.returncode, implicit.stderr
    assert implicit.stdout and json.loads(implicit.stdout) == json.loads(explicit.stdout)
    shutil.rmtree(elf.parent)
    missing = subprocess.run(etu, capture_output=True, text=True, timeout=120, check=False)
    assert missing.returncode == 2
    line = json.loads(missing.stdout)["error"]  # with --json the error is JSON on stdout
    assert "no firmware found (looked for TinyNet.<board>/, firmware/*.elf, *.elf" in line
