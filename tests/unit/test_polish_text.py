"""Text helpers behind issue 24 §10's polish: Markdown escaping that leaves version numbers
alone, and compile flags one per line."""

from __future__ import annotations

from etu.tui.report_format import md_escape
from etu.tui.widgets.delegates import flag_lines


def test_markdown_escapes_list_markers_but_not_version_numbers() -> None:
    assert md_escape("0.1.0") == "0.1.0"
    assert md_escape("3.11.7") == "3.11.7"
    assert md_escape("0.469 s") == "0.469 s"
    assert md_escape("1. not a list") == "1\\. not a list"
    assert md_escape("2) nor this") == "2\\) nor this"
    assert md_escape("7.") == "7\\."
    assert md_escape("# not a heading") == "\\# not a heading"


def test_compile_flags_one_per_line() -> None:
    flags = "--verbose-performance --config=Arm/vela.ini --system-config=Ethos_U55_High_End"
    assert flag_lines(flags).splitlines() == flags.split(" ")
    assert flag_lines("--output a b --x") == "--output a b\n--x"  # a flag keeps its values
    assert flag_lines("TOSA-1.0+INT --x") == "TOSA-1.0+INT --x"  # one flag: as it is
    assert flag_lines('{"softmax": "STABLE"}') == '{"softmax": "STABLE"}'
