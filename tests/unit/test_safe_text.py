"""Device text must not act on the terminal: every control character is shown, not sent."""

from hypothesis import given
from hypothesis import strategies as st

from etu.tui.safe_text import printable


def test_escape_sequences_are_made_visible() -> None:
    hostile = "ok\x1b]0;pwned\x07\x1b[2J\x1b[31mred\r\x08\x00\u202egnp.exe"
    shown = printable(hostile)
    assert shown == "ok\\x1b]0;pwned\\x07\\x1b[2J\\x1b[31mred\\x0d\\x08\\x00<U+202E>gnp.exe"


def test_ordinary_text_is_unchanged() -> None:
    text = "I [executorch:arm_executor_runner.cpp:912 runner_init()] PTE @ 0x70000000\tµs ✓"
    assert printable(text) == text


@given(st.text())
def test_nothing_unsafe_survives(text: str) -> None:
    shown = printable(text)
    assert not any(
        (ord(c) < 0x20 and c != "\t") or 0x7F <= ord(c) <= 0x9F or c in "\u202e\u2066\u200f"
        for c in shown
    )
