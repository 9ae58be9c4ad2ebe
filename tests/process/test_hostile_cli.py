"""The smaller doors of the security probe (issue 20, item 10): each hostile argument is one
line naming what was wrong, with the documented exit status, and nothing starts."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from etu.runner.boards.profiles import ProfileError, load_profile
from etu.runner.compile_request import InputSpec, RequestError
from tests.helpers import etu

ROOT = Path(__file__).resolve().parent.parent.parent
DEMO = ROOT / "etu_tui" / "demo"
BUILTIN = ROOT / "runner" / "boards" / "profiles"


def one_line(result: subprocess.CompletedProcess) -> str:
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert "unexpected" not in lines[0]
    return lines[0]


def test_an_example_input_is_bounded() -> None:
    with pytest.raises(RequestError, match=r"at most 268,435,456 \(2\^28\)"):
        InputSpec.parse("99999999999x99999999999")
    with pytest.raises(RequestError, match="200 characters"):
        InputSpec.parse("1x" * 200 + "1")
    assert InputSpec.parse("1x3x224x224").shape == (1, 3, 224, 224)


def test_a_cli_compile_of_a_huge_input_is_one_line(tmp_path: Path) -> None:
    result = etu("compile", "cnn", "--input", "99999999999x99999999999", "--out",
                 tmp_path / "x.pte", cwd=tmp_path)  # fmt: skip
    assert result.returncode != 0 and "2^28" in one_line(result)


def test_unreadable_regular_files_are_one_line(tmp_path: Path) -> None:
    mem = Path("/proc/self/mem")
    if not mem.exists():
        pytest.skip("no /proc/self/mem")
    compiled = etu("compile", mem, "--out", tmp_path / "x.pte", cwd=tmp_path)
    assert "/proc/self/mem" in one_line(compiled)
    ran = etu("run", "--board", "qemu-an547", "--elf", mem, "--dry-run", cwd=tmp_path)
    assert ran.returncode == 2 and "/proc/self/mem" in one_line(ran)
    flashed = etu("flash", "--board", "qemu-an547", mem, cwd=tmp_path)
    assert flashed.returncode != 0 and "/proc/self/mem" in flashed.stderr
    assert "unexpected" not in flashed.stderr and "Traceback" not in flashed.stderr


def test_a_symlink_loop_to_firmware_build_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "a.pte").symlink_to(tmp_path / "b.pte")
    (tmp_path / "b.pte").symlink_to(tmp_path / "a.pte")
    result = etu("firmware", "build", tmp_path / "a.pte", "--board", "qemu-an547",
                 cwd=tmp_path)  # fmt: skip
    assert result.returncode == 2 and "loop of symbolic links" in one_line(result)


def test_what_is_not_an_arm_elf_starts_nothing(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("remember the milk\n")
    booted = etu("run", "--board", "qemu-an547", "--elf", notes, cwd=tmp_path)
    assert booted.returncode == 2 and "a text file, not an ELF" in one_line(booted)
    assert not (tmp_path / ".etu").exists()  # no session: QEMU never started
    dry = etu("run", "--elf", DEMO / "demo_cnn.pte", "--dry-run", cwd=tmp_path)
    assert dry.returncode == 2 and "an ExecuTorch program (.pte), not an ELF" in one_line(dry)
    logged = etu("log", "--elf", notes, notes, cwd=tmp_path)
    assert logged.returncode == 2 and one_line(logged).startswith("etu: --elf ")


def test_session_filters_refuse_nonsense(tmp_path: Path) -> None:
    limit = etu("sessions", "--limit", "-1", cwd=tmp_path)
    assert limit.returncode == 2 and "must be 1 or more" in limit.stderr
    ending = etu("sessions", "--ending", "weird", cwd=tmp_path)
    assert ending.returncode == 2 and "invalid choice" in ending.stderr


@pytest.mark.parametrize("images_dir", ["/etc", "MB/../../outside", ".."])
def test_an_mps3_profile_images_dir_stays_on_the_drive(tmp_path: Path, images_dir: str):
    text = (BUILTIN / "mps3-an552.toml").read_text()
    assert 'images_dir = "MB/HBI0309C/AN552"' in text
    hostile = tmp_path / "mps3-hostile.toml"
    hostile.write_text(text.replace('"MB/HBI0309C/AN552"', f'"{images_dir}"'))
    with pytest.raises(ProfileError, match="inside the board's drive"):
        load_profile(hostile)


def test_settings_profiles_and_build_records_refuse_fifos(tmp_path: Path) -> None:
    """Read through the one bounded reader: a FIFO is refused at once, not waited on (nor,
    for etu.toml, silently skipped)."""
    from etu.runner.runtime_build import RECORD_NAME, load_record

    os.mkfifo(tmp_path / "etu.toml")
    config = etu("config", cwd=tmp_path)
    assert config.returncode == 2 and "FIFO" in one_line(config)
    os.mkfifo(tmp_path / "board.toml")
    with pytest.raises(ProfileError, match="FIFO"):
        load_profile(tmp_path / "board.toml")
    os.mkfifo(tmp_path / RECORD_NAME)
    assert load_record(tmp_path) is None
