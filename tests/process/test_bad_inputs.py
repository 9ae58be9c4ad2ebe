"""Inputs that must not hang or blow up (issue 9): FIFOs and devices refused, size caps
stated, bounded expression evaluation, and every traceback the hostile-input hunt found
turned into one line with the documented exit status. Real subprocesses of ``etu``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from functools import partial
from pathlib import Path

import pytest

from etu.parsers.errors import ParseError
from etu.parsers.files import MiB, read_regular
from etu.parsers.linker_script import evaluate, parse_linker_script
from etu.parsers.memory_map import parse_region_spec
from tests.helpers import etu as run_etu

ROOT = Path(__file__).resolve().parent.parent.parent
DEMO = ROOT / "etu_tui" / "demo"
DEMO_PTE = DEMO / "demo_cnn.pte"
DEMO_ELF = DEMO / "firmware" / "arm_executor_runner.elf"
TRANSCRIPTS = ROOT / "tests" / "data" / "transcripts"


etu = partial(run_etu, text=False)  # the tests read the bytes etu wrote


def one_line_error(result, status: int) -> str:
    err = result.stderr.decode("utf-8")
    assert result.returncode == status, (result.returncode, err)
    assert "Traceback" not in err and err.count("\n") == 1 and err.startswith("etu: "), err
    return err


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pipe"
    os.mkfifo(path)
    return path


COMMANDS = {
    "inspect": lambda f: ["inspect", f],
    "elf": lambda f: ["elf", f],
    "vela": lambda f: ["vela", f],
    "log": lambda f: ["log", f],
    "map": lambda f: ["elf", DEMO_ELF, "--map", f],
    "ld": lambda f: ["elf", DEMO_ELF, "--ld", f],
    "fit": lambda f: ["fit", "--pte", f, "--elf", DEMO_ELF],
}
STATUS = {"inspect": 1, "elf": 1, "vela": 1, "log": 2, "map": 1, "ld": 1, "fit": 2}


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("special", ["fifo", "/dev/zero"])
def test_fifos_and_devices_are_refused_at_once(command, special, fifo) -> None:
    path = fifo if special == "fifo" else Path(special)
    err = one_line_error(etu(*COMMANDS[command](path), timeout=30), STATUS[command])
    assert "FIFO" in err or "character device" in err


def test_every_cap_is_stated(tmp_path: Path) -> None:
    big = tmp_path / "big.log"
    big.write_bytes(b"x" * (2 * MiB))
    with pytest.raises(ParseError, match=r"2,097,152 bytes is larger than the 1 MiB etu reads"):
        read_regular(big, "a test file", 1 * MiB)


@pytest.mark.parametrize(
    "spec",
    [
        "S:0x0:" + "9" * 5000,  # more digits than int() converts
        "S:0x0:0x10000000000000000",  # 2**64
        "S:0:1<<100",
        "S:0x0:" + "(" * 40 + "1" + ")" * 40,
    ],
)
def test_region_overflow_and_depth_are_parse_errors(spec: str) -> None:
    with pytest.raises(ParseError) as caught:
        parse_region_spec(spec)
    assert len(str(caught.value)) < 200


def test_region_overflow_on_the_command_line_is_one_line() -> None:
    one_line_error(etu("elf", DEMO_ELF, "--region", "S:0x0:" + "9" * 5000), 1)


@pytest.mark.parametrize(
    "expression", ["9" * 5000, "0x" + "f" * 40, "1 << 100", "(" * 100 + "1" + ")" * 100]
)
def test_linker_script_origin_overflow_is_a_parse_error(expression: str) -> None:
    script = f"MEMORY {{ S (rwx) : ORIGIN = {expression}, LENGTH = 4 }}\n"
    with pytest.raises(ParseError, match="ORIGIN"):
        parse_linker_script(script, "big.ld")
    with pytest.raises(Exception, match=r"64 bits|digits|deep|too long"):
        evaluate(expression)


def test_log_with_printf_garbage_and_huge_literals(tmp_path: Path) -> None:
    text = (TRANSCRIPTS / "04_et_docs_v0.4_mv2_pmu_allocator.log").read_text(errors="replace")
    garbage = "".join(
        line.replace("0x", "%zu%p%n0x").replace(" 1", " " + "9" * 5000) + "\n"
        for line in text.splitlines()
    )
    log = tmp_path / "garbage.log"
    log.write_text(garbage + "%zu %s %n %lld\n" * 100)
    for mode in ([], ["--json"], ["--events"]):
        result = etu("log", *mode, log)
        assert result.returncode == 0 and b"Traceback" not in result.stderr


def test_embedded_program_hash_on_an_elf_whose_pool_is_bss(tmp_path: Path) -> None:
    source = tmp_path / "odd.c"
    source.write_text("char model_pte[1024];\nint main(void) { return model_pte[3]; }\n")
    elf = tmp_path / "odd.elf"
    subprocess.run(
        ["arm-none-eabi-gcc", "-mcpu=cortex-m4", "-mthumb", "-nostdlib", "-Wl,-e,main",
         "-o", str(elf), str(source)], check=True,
    )  # fmt: skip
    result = etu("run", "--elf", elf, "--fvp-path", "/bin/true", "--sessions", tmp_path / "s")
    assert result.returncode == 7 and b"Traceback" not in result.stderr  # incomplete


def test_compile_out_on_a_file(tmp_path: Path) -> None:
    file = tmp_path / "out"
    file.write_text("x")
    one_line_error(etu("compile", "add", "--out", file), 2)


def test_compile_missing_input_file(tmp_path: Path, fifo: Path) -> None:
    err = one_line_error(
        etu("compile", "add", "--input-file", tmp_path / "nope.pt", "--out", tmp_path / "o"), 2
    )
    assert "no such input file" in err
    one_line_error(etu("compile", "add", "--input-file", fifo, "--out", tmp_path / "o"), 2)
    one_line_error(etu("compile", f"{fifo}:Net", "--input", "1x4", "--out", tmp_path / "o"), 2)


def test_closed_stdout_is_quiet(tmp_path: Path) -> None:
    """`etu inspect ... | head -1`: no BrokenPipeError traceback, the SIGPIPE status."""
    args = " ".join([str(DEMO_PTE)] * 400)
    transcript = TRANSCRIPTS / "04_et_docs_v0.4_mv2_pmu_allocator.log"
    for command in (f"inspect {args}", f"inspect --json {args}", f"log --events {transcript}"):
        result = subprocess.run(
            f"set -o pipefail; {sys.executable} -m etu.tui.cli {command} | head -1",
            shell=True, executable="/bin/bash", capture_output=True, timeout=120, check=False,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )  # fmt: skip
        assert result.stderr == b"", result.stderr.decode()[-500:]
        assert result.stdout.count(b"\n") == 1
        assert result.returncode in (0, 141)


def test_non_utf8_file_names(tmp_path: Path) -> None:
    name = os.fsencode(tmp_path) + b"/bad\xff\x1b[2J.pte"
    with open(name, "wb") as handle:
        handle.write(DEMO_PTE.read_bytes())
    result = etu("inspect", name)
    assert result.returncode == 0, result.stderr
    assert b"bad<U+DCFF>\\x1b[2J.pte" in result.stdout
    record = json.loads(etu("inspect", "--json", name).stdout)
    assert os.fsencode(record["file"]) == name
    with open(name, "wb") as handle:
        handle.write(b"not a program")
    err = one_line_error(etu("inspect", name), 1)
    assert "<U+DCFF>" in err
    one_line_error(etu("vela", name), 1)
    one_line_error(etu("elf", name), 1)


def test_meta_json_that_is_not_an_object(tmp_path: Path) -> None:
    folder = tmp_path / "sessions" / "20260101-000000-fvp-000"
    folder.mkdir(parents=True)
    (folder / "meta.json").write_text("[1, 2]")
    (folder / "raw.log").write_bytes(b"I [executorch:a.cpp:1 f()] hello\n")
    root = tmp_path / "sessions"
    for args in (["sessions", "--sessions", root], ["report", folder], ["log", folder],
                 ["sessions", "--json", "--sessions", root]):  # fmt: skip
        result = etu(*args)
        assert result.returncode == 0 and b"Traceback" not in result.stderr, result.stderr


def test_standin_refuses_an_unknown_fault(tmp_path: Path) -> None:
    from etu.fvp.standin import install_standin

    (sim, *_) = install_standin(tmp_path / "fvps")
    result = etu("run", "--elf", DEMO_ELF, "--fvp-path", sim, "--sessions", tmp_path / "s",
                 env={"ETU_STANDIN_FAULT": "hard-falt"})  # fmt: skip
    assert result.returncode != 0
    assert b"ETU_STANDIN_FAULT='hard-falt' is not one of" in result.stdout + result.stderr


def test_a_long_run_keeps_bounded_lists() -> None:
    """A runner that prints errors, PMU reports and ETDump blocks forever: the summary
    keeps the first (the cause) and the latest, never all."""
    from etu.parsers.runner_log import LogSummary, RunnerLogParser
    from etu.runner.run import MAX_HELD, bound_summary

    parser, summary = RunnerLogParser(), LogSummary()
    line = b"E [executorch:runner.cpp:9 run()] Inference [%d] failed with status 0x12\n"
    for batch in range(40):
        chunk = b"".join(line.replace(b"%d", str(batch * 100 + i).encode()) for i in range(100))
        for event in parser.feed(chunk):
            summary.add(event)
        bound_summary(summary)
    assert MAX_HELD // 2 <= len(summary.errors) <= MAX_HELD
    assert "[0]" in summary.errors[0]["text"] and "[3999]" in summary.errors[-1]["text"]


def test_debug_xml_fallback_reads_complete_tables_in_one_pass() -> None:
    """A malformed debug XML: the complete tables are read, unclosed ones (which made the
    old regex fallback rescan to the end for each: quadratic) are skipped."""
    from etu.parsers.vela_debug_db import _table_blocks, parse_debug_db

    good = '<table name="perf"><![CDATA[a,b\n1,2\n]]></table>'
    text = '<debug source="x">' + good + '<table name="t"><![CDATA[x\n' * 2000 + "<oops>"
    assert _table_blocks(text) == [("perf", "a,b\n1,2\n")]
    db = parse_debug_db(text.encode(), "bad_debug.xml")
    assert list(db.tables) == ["perf"] and any("malformed" in w for w in db.warnings)
    tricky = "<debug>" + '<table name="a"><![CDATA[1]]>oops' + good + "<"
    assert _table_blocks(tricky) == [("perf", "a,b\n1,2\n")]


def test_session_meta_that_is_a_fifo_or_huge(tmp_path: Path) -> None:
    from etu.runner.session import read_session

    folder = tmp_path / "s"
    folder.mkdir()
    os.mkfifo(folder / "meta.json")
    session = read_session(folder)  # would block forever on open() before
    assert session.meta == {} and any("FIFO" in w for w in session.warnings)
    (folder / "meta.json").unlink()
    (folder / "meta.json").write_bytes(b" " * (17 << 20))
    assert any("16 MiB" in w for w in read_session(folder).warnings)
