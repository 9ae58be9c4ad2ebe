"""The CLI's small roughnesses a newcomer's trial tripped over (issue 24 §10): what `etu
sessions` says with nothing recorded, `etu firmware build --help`, `etu elf` on etu's own
runner builds, and the Markdown report of a QEMU session."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.helpers import DEMO, etu
from tests.history_workspace import make_workspace, record_run

DEMO_ELF = DEMO / "firmware" / "arm_executor_runner.elf"


def test_sessions_in_a_folder_with_none_says_none_yet(tmp_path: Path) -> None:
    """Nothing recorded is not "nothing matches": that is for a filter that left all out."""
    empty = etu("sessions", cwd=tmp_path)
    assert empty.returncode == 0 and not empty.stdout
    assert "no recorded session yet" in empty.stderr and "match" not in empty.stderr
    filtered = etu("sessions", "--kind", "qemu", cwd=tmp_path)
    assert "no recorded session matches" in filtered.stderr


def test_firmware_build_help_has_a_description() -> None:
    result = etu("firmware", "build", "--help")
    assert result.returncode == 0
    described = result.stdout.split("positional arguments:")[0].split("\n\n", 1)[1]
    assert "arm_executor_runner" in described and "ETU_EXECUTORCH_SRC" in described


def test_elf_does_not_warn_about_sections_the_startup_copy_table_copies(tmp_path: Path) -> None:
    """etu's runner builds place .data/.sram.data/.rodata outside any PT_LOAD (ld says so)
    and list them in the CMSIS copy table the reset handler walks: nothing to warn about.
    With that table's entries zeroed, nothing copies them and the warning is back."""
    from etu.parsers.elf_map import read_elf

    own = etu("elf", DEMO_ELF)
    assert own.returncode == 0, own.stderr
    assert "startup code must copy" not in own.stdout

    with read_elf(DEMO_ELF) as image:
        table = image.section(".copy.table")
        assert table is not None and table.size == 36  # three (source, target, words)
        offset, size = table.offset, table.size
    broken = tmp_path / "no_copy.elf"
    data = bytearray(DEMO_ELF.read_bytes())
    data[offset : offset + size] = bytes(size)
    broken.write_bytes(bytes(data))
    uncopied = etu("elf", broken)
    flagged = {line.split()[2] for line in uncopied.stdout.splitlines() if "must copy" in line}
    assert flagged == {".data", ".sram.data", ".rodata"}


@pytest.fixture(scope="module")
def qemu_session(tmp_path_factory) -> tuple[Path, Path]:
    """A recorded run made into a QEMU session as the console records one: no simulator
    in its meta and no program hash (the program is the one baked into the firmware)."""
    ws = make_workspace(tmp_path_factory.mktemp("polish") / "ws")
    run = record_run(ws)
    qemu = run.parent / run.name.replace("-fvp-", "-qemu-")
    shutil.copytree(run, qemu)
    meta = json.loads((qemu / "meta.json").read_text())
    meta = {k: v for k, v in meta.items() if k not in ("simulator", "program_sha256")}
    meta |= {
        "kind": "qemu", "target": "qemu-an547", "simulated": False, "emulated": True,
        "elf": str(ws / "firmware" / "arm_executor_runner.elf"), "returncode": 0,
        "command": ["/usr/bin/qemu-system-arm", "-M", "mps3-an547", "-kernel", meta["elf"]],
    }  # fmt: skip
    (qemu / "meta.json").write_text(json.dumps(meta))
    return ws, qemu


def test_markdown_report_of_a_qemu_session(qemu_session) -> None:
    ws, qemu = qemu_session
    result = etu("report", qemu.name, cwd=ws)
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert "\\." not in text  # versions and durations as written: 0.1.0, never 0\.1.0
    assert "| Python | 3." in text
    assert "simulator exit status" not in text and "emulator (QEMU) exit status 0" in text
    assert "| emulator (QEMU) | /usr/bin/qemu-system-arm |" in text
    sha = next(line for line in text.splitlines() if line.startswith("| program sha256 |"))
    assert len(sha.split("|")[2].strip()) == 64, sha  # the program was found: its hash
