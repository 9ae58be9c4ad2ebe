"""The headless workspace module: what the CLI and the console find and load alike."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from etu.runner import workspace as ws
from tests.helpers import DEMO, etu


def test_demo_workspace_is_found_whole() -> None:
    found = ws.find_workspace(DEMO)
    assert found.root == DEMO
    assert found.program == DEMO / "demo_cnn.pte"
    assert found.vela == DEMO / "vela"
    assert found.firmware == DEMO / "firmware" / "arm_executor_runner.elf"
    assert found.firmware_map == DEMO / "firmware" / "arm_executor_runner.map"
    assert found.firmware_script == DEMO / "firmware" / "arm_executor_runner.ld"
    assert found.sessions == DEMO / ".etu" / "sessions"
    assert found.compile_jobs == DEMO / ".etu" / "compile"
    assert json.loads(json.dumps(found.to_json()))["program"] == str(found.program)


def test_a_compiled_result_belongs_to_its_workspace(tmp_path: Path) -> None:
    job = tmp_path / ".etu" / "compile" / "job-1"
    job.mkdir(parents=True)
    shutil.copy(DEMO / "demo_cnn.pte", job / "model.pte")
    shutil.copytree(DEMO / "firmware", tmp_path / "firmware")
    found = ws.find_workspace(job / "model.pte")
    assert found.root == tmp_path
    assert found.firmware == tmp_path / "firmware" / "arm_executor_runner.elf"
    assert ws.compile_jobs(tmp_path) == [job]


def test_elf_finds_the_map_beside_it(tmp_path: Path) -> None:
    """`etu elf FW.elf` reads the regions from the .map beside it, as the Memory tab does;
    without the .map, from the .ld; and gives the same record as an explicit --map."""
    shutil.copytree(DEMO / "firmware", tmp_path / "fw")
    elf = tmp_path / "fw" / "arm_executor_runner.elf"
    beside = etu("elf", "--json", str(elf))
    assert beside.returncode == 0, beside.stderr
    record = json.loads(beside.stdout)
    assert record["regions_from"] == "ld_map"
    explicit = json.loads(
        etu("elf", "--json", str(elf), "--map", str(elf.with_suffix(".map"))).stdout
    )
    assert record["regions"] == explicit["regions"]
    memory = ws.load_firmware(elf, None, None, workspace=tmp_path)
    assert [r.name for r in memory.memory_map.regions] == [r["name"] for r in record["regions"]]
    elf.with_suffix(".map").unlink()
    script = json.loads(etu("elf", "--json", str(elf)).stdout)
    assert script["regions_from"] == "linker_script"


def test_fit_finds_the_map_beside_it(tmp_path: Path) -> None:
    shutil.copytree(DEMO / "firmware", tmp_path / "fw")
    elf = tmp_path / "fw" / "arm_executor_runner.elf"
    pte = str(DEMO / "demo_cnn.pte")
    beside = etu("fit", "--json", "--pte", pte, "--elf", str(elf))
    explicit = etu("fit", "--json", "--pte", pte, "--elf", str(elf), "--map",
                       str(elf.with_suffix(".map")))  # fmt: skip
    assert beside.returncode == explicit.returncode
    assert json.loads(beside.stdout) == json.loads(explicit.stdout)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_demo_opens_as_a_copy(tmp_path: Path) -> None:
    source = tmp_path / "pkg" / "demo"
    shutil.copytree(DEMO, source, ignore=shutil.ignore_patterns(".etu", "__pycache__"))
    os.chmod(source, 0o555)
    try:
        assert ws.writable_workspace(source, tmp_path / "data") == tmp_path / "data" / "demo"
    finally:
        os.chmod(source, 0o755)


def test_an_installed_demo_opens_as_a_copy_in_the_user_data_folder(tmp_path, monkeypatch) -> None:
    """Sessions and compile jobs go to the copy and survive a new package's demo."""
    source = tmp_path / "lib" / "site-packages" / "etu_tui" / "demo"
    shutil.copytree(DEMO, source, ignore=shutil.ignore_patterns(".etu", "__pycache__"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    copy = ws.writable_workspace(source)
    assert copy == tmp_path / "xdg" / "etu" / "demo"
    assert (copy / "demo_cnn.pte").read_bytes() == (source / "demo_cnn.pte").read_bytes()
    found = ws.find_workspace(copy)
    assert found.firmware_map is not None and found.sessions == copy / ".etu" / "sessions"
    (found.sessions / "kept").mkdir(parents=True)
    (copy / "demo_cnn.pte").write_bytes(b"edited")
    assert ws.writable_workspace(source) == copy
    assert (copy / "demo_cnn.pte").read_bytes() == b"edited"  # same package: not copied again
    (source / "new.txt").write_text("a new demo file\n")
    assert ws.writable_workspace(source) == copy
    assert (copy / "new.txt").is_file()
    assert (copy / "demo_cnn.pte").read_bytes() == (source / "demo_cnn.pte").read_bytes()
    assert (found.sessions / "kept").is_dir()
    # a checkout's own demo is used in place
    assert ws.writable_workspace(tmp_path / "lib") == tmp_path / "lib"
