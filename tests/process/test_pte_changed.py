"""A program file that changes or shrinks while etu reads it: a ParseError, never SIGBUS."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from etu.parsers import pte
from etu.parsers.errors import ParseError
from etu.parsers.pte import open_program

ROOT = Path(__file__).resolve().parent.parent.parent


def _delegate(program):
    return program.plans[0].delegates[0]


def test_a_small_program_is_read_into_memory(tmp_path: Path, demo_pte: Path) -> None:
    """Below the threshold nothing stays mapped: a file cut short afterwards cannot reach
    the decoded program."""
    copy = tmp_path / "p.pte"
    shutil.copy(demo_pte, copy)
    with open_program(copy) as program:
        payload = bytes(program.delegate_payload(_delegate(program)))
        os.truncate(copy, 100)
        assert bytes(program.delegate_payload(_delegate(program))) == payload


def _in_child(script: str) -> subprocess.CompletedProcess:
    """Run ``script`` in a child process, so a SIGBUS fails the test instead of pytest."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True,
        timeout=120, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False,
    )  # fmt: skip


def test_a_large_program_without_extended_header_is_read_whole(tmp_path, demo_pte) -> None:
    """Above the threshold (lowered to 0) with no extended header there is no smaller part
    to decode: the file is read, never mapped, so cutting it afterwards changes nothing."""
    copy = tmp_path / "p.pte"
    shutil.copy(demo_pte, copy)
    with open_program(copy) as program:
        assert program.extended_header is None and program._closer is None
        payload = bytes(program.delegate_payload(_delegate(program)))
        os.truncate(copy, 100)
        assert bytes(program.delegate_payload(_delegate(program))) == payload


def test_a_64_mib_program_cut_short_while_read_is_a_parse_error(tmp_path, demo_pte) -> None:
    """A real 65 MiB program with no extended header (the demo program, then zeros: a sparse
    file), cut to 1 MiB by "another process" after the first 8 MiB were read: the one-line
    error, exit 0 from the child, not a SIGBUS (-7)."""
    big = tmp_path / "big.pte"
    shutil.copy(demo_pte, big)
    os.truncate(big, 65 * 1024 * 1024)
    result = _in_child(f"""
        import os
        from etu.parsers import pte
        from etu.parsers.errors import ParseError
        real_read = os.read
        def read_then_cut(fd, n):
            chunk = real_read(fd, n)
            os.truncate({str(big)!r}, 1 << 20)
            return chunk
        pte.os.read = read_then_cut
        try:
            pte.open_program({str(big)!r})
        except ParseError as error:
            print("ParseError:", error)
    """)
    assert result.returncode == 0, (result.returncode, result.stderr[-2000:])
    assert "ParseError:" in result.stdout and "file changed while read" in result.stdout
    assert str(big) in result.stdout


def test_a_large_segmented_program_that_shrank_is_a_parse_error(tmp_path: Path) -> None:
    """Open (the threshold lowered to 0, so its segments stay on disk), then the file cut
    short: reading the delegate's segment raises "file changed while read"."""
    from tests.real_programs import build

    copy = tmp_path / "seg.pte"
    shutil.copy(build("u55_segment"), copy)
    result = _in_child(f"""
        import os
        from etu.parsers import pte
        from etu.parsers.errors import ParseError
        pte.MAP_THRESHOLD = 0
        program = pte.open_program({str(copy)!r})
        assert program._closer is not None  # segments read on demand
        delegate = program.plans[0].delegates[0]
        os.truncate({str(copy)!r}, 100)
        try:
            bytes(program.delegate_payload(delegate))
        except ParseError as error:
            print("ParseError:", error)
        program.close()
    """)
    assert result.returncode == 0, (result.returncode, result.stderr)
    assert "ParseError:" in result.stdout and "file changed while read" in result.stdout
    assert str(copy) in result.stdout


def test_a_large_program_that_changed_before_decoding(tmp_path, monkeypatch) -> None:
    """Cut short between reading its FlatBuffer part and decoding: refused."""
    from tests.real_programs import build

    copy = tmp_path / "seg.pte"
    shutil.copy(build("u55_segment"), copy)
    monkeypatch.setattr(pte, "MAP_THRESHOLD", 0)
    real_head = pte._flatbuffer_head

    def head_then_truncate(*args, **kwargs):
        head = real_head(*args, **kwargs)
        os.truncate(copy, 100)  # another process cuts the file
        return head

    monkeypatch.setattr(pte, "_flatbuffer_head", head_then_truncate)
    with pytest.raises(ParseError, match="file changed while read"):
        open_program(copy)


def test_a_file_that_grows_while_read(tmp_path, demo_pte, monkeypatch) -> None:
    copy = tmp_path / "p.pte"
    shutil.copy(demo_pte, copy)
    real_read = os.read

    def growing_read(fd, n):
        chunk = real_read(fd, n)
        with open(copy, "ab") as handle:
            handle.write(b"\0" * 16)
        return chunk

    monkeypatch.setattr(pte.os, "read", growing_read)
    with pytest.raises(ParseError, match="file changed while read"):
        open_program(copy)


def test_a_large_segmented_program_decodes_its_flatbuffer_from_memory(tmp_path) -> None:
    """Large with an extended header: the FlatBuffer part is read into memory, so a file
    cut short during decoding is a ParseError (the check after decoding); the decoded
    program equals the one read whole. In a child process, as above."""
    from etu.parsers.program_facts import inspect_record
    from tests.real_programs import build

    source = build("u55_segment")
    copy = tmp_path / "seg.pte"
    shutil.copy(source, copy)
    with open_program(copy) as program:
        assert program.extended_header is not None and program.segments
        expected = inspect_record(program)
    script = textwrap.dedent(f"""
        import json, os
        from etu.parsers import pte
        from etu.parsers.errors import ParseError
        from etu.parsers.program_facts import inspect_record
        pte.MAP_THRESHOLD = 0
        with pte.open_program({str(copy)!r}) as program:
            assert program._closer is not None  # segments on disk
            print(json.dumps(inspect_record(program)))
        real = pte._decode_plan
        def cutting(table):
            os.truncate({str(copy)!r}, 64)
            return real(table)
        pte._decode_plan = cutting
        try:
            pte.open_program({str(copy)!r})
        except ParseError as error:
            print("ParseError:", error)
    """)
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False,
    )  # fmt: skip
    assert result.returncode == 0, (result.returncode, result.stderr[-2000:])
    mapped_record, error_line = result.stdout.splitlines()
    assert json.loads(mapped_record) == json.loads(json.dumps(expected))
    assert error_line.startswith("ParseError:") and "file changed while read" in error_line


def test_a_firmware_relinked_while_open_is_a_parse_error(tmp_path: Path) -> None:
    """The console keeps a firmware ELF open for section reads; a relink truncates it.
    Read on demand (never mapped), the next read is "file changed while read", not a
    SIGBUS. In a child process, as above."""
    elf = tmp_path / "fw.elf"
    shutil.copy(ROOT / "etu_tui" / "demo" / "firmware" / "arm_executor_runner.elf", elf)
    result = _in_child(f"""
        import os
        from etu.parsers.elf_map import read_elf
        from etu.parsers.errors import ParseError
        image = read_elf({str(elf)!r})
        text = next(s for s in image.sections if s.name == ".text")
        assert image.section_bytes(text)
        os.truncate({str(elf)!r}, 64)
        try:
            image.section_bytes(text)
        except ParseError as error:
            print("ParseError:", error)
        image.close()
    """)
    assert result.returncode == 0, (result.returncode, result.stderr[-2000:])
    assert "ParseError:" in result.stdout and "file changed while read" in result.stdout
