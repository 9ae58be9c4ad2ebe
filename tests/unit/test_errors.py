"""describe_error: the one line a user sees for any exception."""

from __future__ import annotations

from pathlib import Path

import pytest

from etu.parsers.errors import FormatError, ParseError, TruncatedError, describe_error
from etu.runner.workspace import error_line, load_firmware, load_vela


def test_a_parse_error_names_field_and_offset() -> None:
    error = TruncatedError("needs 8 bytes", field="header.length", offset=0x10, source="/a/b.pte")
    assert describe_error(error) == "/a/b.pte: header.length at offset 0x10: needs 8 bytes"
    assert describe_error(error, "b.pte") == "b.pte: header.length at offset 0x10: needs 8 bytes"
    assert describe_error(ParseError("bad")) == "bad"


def test_a_parse_error_behind_another_is_found() -> None:
    try:
        try:
            raise FormatError("bad magic", field="magic", offset=4)
        except FormatError:
            raise BufferError("cannot close exported pointers exist") from None
    except BufferError as error:
        # `from None` hides it from tracebacks, not from __context__
        assert describe_error(error, "x.pte") == "x.pte: magic at offset 0x4: bad magic"


@pytest.mark.parametrize(
    ("error", "line"),
    [
        (ValueError("first\nsecond"), "unexpected ValueError: first"),
        (RuntimeError("\n\n  indented\nmore"), "unexpected RuntimeError: indented"),
        (KeyError("k"), "unexpected KeyError: 'k'"),
        (MemoryError(), "unexpected MemoryError"),
    ],
)
def test_anything_else_is_its_kind_and_first_line(error: BaseException, line: str) -> None:
    assert describe_error(error) == line
    assert describe_error(error, Path("f.elf")) == f"f.elf: {line}"


def test_workspace_errors_use_it(tmp_path: Path) -> None:
    assert (
        error_line(OSError("disk\ngone"), tmp_path / "p.pte") == "p.pte: unexpected OSError: disk"
    )
    bad = tmp_path / "fw.elf"
    bad.write_bytes(b"\x7fELF" + b"\0" * 8)
    result = load_firmware(bad, None, None, workspace=tmp_path)
    assert result.error is not None and result.error.startswith("fw.elf: ")
    assert "\n" not in result.error and str(tmp_path) not in result.error
    (tmp_path / "vela").mkdir()
    (tmp_path / "vela" / "out_summary_x.csv").write_text("not,a\nsummary\n")
    vela = load_vela(tmp_path / "vela", "vela/")
    assert vela.error is not None and vela.error.startswith("vela/")
