"""Nothing a file, a device or a simulator sends reaches the terminal raw (issue 9).

Every headless command is run as a real subprocess on hostile inputs built from real
artifacts (tests/hostile.py); no ESC (nor a C1 introducer, bidi control or invisible
character) may appear in what it prints, the hostile text must still be visible in escaped
form, and --json must keep the exact text.
"""

from __future__ import annotations

import json
import subprocess
import sys
from functools import partial
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from etu.parsers.text import is_printable, printable, printable_lines
from tests.helpers import etu as run_etu
from tests.hostile import (
    DEMO,
    FORBIDDEN,
    HOSTILE,
    hostile_elf,
    hostile_log,
    hostile_program,
    hostile_vela,
)

ETU = [sys.executable, "-m", "etu.tui.cli"]
ROOT = Path(__file__).resolve().parent.parent.parent
DEMO_ELF = DEMO / "firmware" / "arm_executor_runner.elf"


etu = partial(run_etu, text=False)


def assert_clean(result: subprocess.CompletedProcess) -> str:
    """stdout+stderr as text, with no character that could act on a terminal."""
    text = (result.stdout + result.stderr).decode("utf-8")
    raw = [hex(ord(c)) for c in text if c in FORBIDDEN]
    assert not raw, f"raw controls reached the terminal: {raw[:10]}\n{text[:2000]}"
    return text


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("hostile")
    named = folder / f"evil{HOSTILE}\n.pte"  # a hostile file name too
    return {
        "pte": hostile_program(folder / "program.pte"),
        "named": hostile_program(named),
        "vela": hostile_vela(folder / "vela"),
        "elf": hostile_elf(folder / "elf"),
        "log": hostile_log(folder / "runner.log"),
        "folder": folder,
    }


# ---------------------------------------------------------------------- the neutraliser


def test_every_kind_of_control_is_shown_not_dropped() -> None:
    shown = printable("a\x1b]52;c;aGk=\x07b\x9b2Jc\u202ed\u2066e\u200bf\U000e0041g\u00adh\ufeff")
    assert shown == (
        "a\\x1b]52;c;aGk=\\x07b\\x9b2Jc<U+202E>d<U+2066>e<U+200B>f<U+E0041>g<U+00AD>h<U+FEFF>"
    )


@pytest.mark.parametrize("char", FORBIDDEN)
def test_each_forbidden_character_is_escaped(char: str) -> None:
    shown = printable(f"x{char}y")
    assert char not in shown and shown != "xy" and is_printable(shown)


def test_lines_keep_newlines_only() -> None:
    assert printable_lines("a\nb\x1b[2J\r\n") == "a\nb\\x1b[2J\\x0d\n"
    assert printable("a\nb") == "a\\x0ab"


def test_undecodable_file_names_are_shown() -> None:
    name = b"bad\xff\x1b.pte".decode("utf-8", "surrogateescape")
    assert printable(name) == "bad<U+DCFF>\\x1b.pte"
    printable(name).encode("utf-8")  # strict: no lone surrogate is left


@given(st.text())
def test_nothing_unsafe_survives_any_text(text: str) -> None:
    shown = printable(text)
    assert not any(c in FORBIDDEN for c in shown)
    assert is_printable(shown)


# ------------------------------------------------------------------ every command, for real


def test_inspect(hostile) -> None:
    text = assert_clean(etu("inspect", hostile["pte"], hostile["named"]))
    assert "\\x1b]0;pwned\\x07" in text and "<U+202E>" in text
    assert "plan '\\x1b[2J\\x1b[H'" in text


def test_inspect_json_keeps_the_exact_text(hostile) -> None:
    result = etu("inspect", "--json", hostile["named"])
    assert_clean(result)
    record = json.loads(result.stdout)
    assert record["file"] == str(hostile["named"])
    assert any("\x1b]0;pwned\x07" in op["name"] for op in record["cpu_operators"])
    assert record["plans"][0]["name"] == "\x1b[2J\x1b[H"


def test_inspect_error_on_a_hostile_name(hostile) -> None:
    bad = hostile["folder"] / f"bad{HOSTILE}.pte"
    bad.write_bytes(b"\x1b]0;not a program\x07" * 4)
    result = etu("inspect", bad)
    assert result.returncode == 1
    assert "\\x1b" in assert_clean(result)


def test_vela(hostile) -> None:
    text = assert_clean(etu("vela", hostile["vela"]))
    assert "Conv\\x1b]0;pwned" in text


def test_elf(hostile) -> None:
    text = assert_clean(etu("elf", hostile["elf"], "--region", "SRAM:0x0:16M"))
    assert "65,536 B  <U+202E>\\x1b]0;pwned" in text


def test_fit_and_its_fix_line_is_shell_quoted(hostile) -> None:
    result = etu("fit", "--pte", hostile["pte"], "--elf", DEMO_ELF)
    text = assert_clean(result)
    fix = next(line for line in text.splitlines() if "EXECUTORCH_SELECT_OPS_LIST" in line)
    assert "rebuild with '-DEXECUTORCH_SELECT_OPS_LIST=" in fix  # one shell word
    result = etu("fit", "--pte", hostile["pte"], "--elf", hostile["elf"], "--region", "S:0:16M")
    assert_clean(result)


def test_fit_target_fix_quotes_the_value() -> None:
    from etu.parsers.fit import check_fit
    from etu.parsers.memory_map import load_memory_map
    from etu.parsers.pte import open_program

    with open_program(DEMO / "demo_cnn.pte") as program:
        verdicts = check_fit(program, load_memory_map(DEMO_ELF), target="x; rm -rf ~")
    fixes = [v.fix for v in verdicts if v.fix and "--target" in v.fix]
    assert fixes == ["recompile with --target 'x; rm -rf ~'"]


def test_log(hostile) -> None:
    text = assert_clean(etu("log", hostile["log"]))
    assert "Missing operator: \\x1b]0;pwned" in text
    events = etu("log", "--events", hostile["log"])
    assert_clean(events)
    assert any(
        "\x1b]0;pwned" in json.loads(line).get("text", "") for line in events.stdout.splitlines()
    )


def test_run_streams_a_hostile_simulator(hostile, tmp_path: Path) -> None:
    """A simulator (here a script given with --fvp-path) that prints escape sequences on its
    UART and its stderr, and in its exit story."""
    sim = tmp_path / f"sim{HOSTILE}.sh"
    sim.write_text(
        "#!/bin/sh\n"
        f"printf 'I [executorch:arm_executor_runner.cpp:912 runner_init()] %s\\n' '{HOSTILE}'\n"
        f"printf 'E [executorch:method.cpp:86 init()] Missing operator: %s\\n' '{HOSTILE}'\n"
        f"printf '%s\\n' '{HOSTILE}' >&2\n"
        "exit 9\n"
    )
    sim.chmod(0o755)
    result = etu("run", "--elf", DEMO_ELF, "--fvp-path", sim, "--sessions", tmp_path / "s")
    text = assert_clean(result)
    assert "\\x1b]0;pwned" in text
    assert_clean(etu("run", "--elf", DEMO_ELF, "--fvp-path", sim, "--dry-run"))


def test_compile_errors(hostile, tmp_path: Path) -> None:
    model = tmp_path / f"m{HOSTILE}.py"
    result = etu("compile", f"{model}:Net", "--out", tmp_path / "out", "--target", HOSTILE)
    assert result.returncode == 2
    assert_clean(result)


def test_console_refuses_a_hostile_missing_path(tmp_path: Path) -> None:
    result = etu(tmp_path / f"missing{HOSTILE}")
    assert result.returncode == 2
    assert "\\x1b" in assert_clean(result)


def test_history_commands_on_a_hostile_session(hostile, tmp_path: Path) -> None:
    """Sessions recorded from a hostile device (and named by one) through the history
    commands: the boundary every command writes through keeps the terminal safe."""
    root = tmp_path / "sessions"
    folders = []
    for n in range(2):
        folder = root / f"20260101-00000{n}-fvp-000"
        folder.mkdir(parents=True)
        meta = {"kind": "fvp", "target": HOSTILE, "elf": f"/x/{HOSTILE}.elf", "started": 1.0,
                "ended": 2.0, "exit_reason": "runner_error", "proof": HOSTILE}  # fmt: skip
        (folder / "meta.json").write_text(json.dumps(meta))
        (folder / "raw.log").write_bytes(hostile["log"].read_bytes())
        folders.append(folder)
    for args in (["sessions", "--sessions", root], ["report", folders[0]],
                 ["diff", folders[0], folders[1]], ["log", folders[0]]):  # fmt: skip
        result = etu(*args)
        assert b"Traceback" not in result.stderr, result.stderr[-800:]
        assert_clean(result)
