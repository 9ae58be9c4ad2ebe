"""flatcc writes its libraries into the ExecuTorch source every build tree shares: configures
and ETDump builds of one source take turns (a configure elsewhere deleted the library an
ETDump build was installing: CI's "cmake_install.cmake:46 (file)" failures)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from etu.runner.build_turns import flatcc_in_the_source


def _enter_in_thread(trees: Path, root: Path, needed: bool) -> tuple[threading.Thread, list]:
    """Enter the turn in another thread; the list gets what it said, then "entered"."""
    said: list[str] = []

    def enter() -> None:
        with flatcc_in_the_source(trees, root, needed, said.append):
            said.append("entered")

    thread = threading.Thread(target=enter, daemon=True)
    thread.start()
    return thread, said


def _until(condition, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)
    return condition()


def test_a_second_build_of_the_same_source_waits_for_the_first(tmp_path: Path) -> None:
    source = tmp_path / "executorch"
    with flatcc_in_the_source(tmp_path, source, True, print):
        thread, said = _enter_in_thread(tmp_path, source, True)
        assert _until(lambda: bool(said)), "the second build said nothing"
        assert said[0].startswith("waiting for another build of this source")
        assert "entered" not in said
    thread.join(timeout=10)
    assert said[-1] == "entered"


def test_another_source_and_a_build_without_etdump_do_not_wait(tmp_path: Path) -> None:
    source = tmp_path / "executorch"
    with flatcc_in_the_source(tmp_path, source, True, print):
        other, said_other = _enter_in_thread(tmp_path, tmp_path / "another-checkout", True)
        plain, said_plain = _enter_in_thread(tmp_path, source, False)
        other.join(timeout=10)
        plain.join(timeout=10)
        assert said_other == ["entered"] and said_plain == ["entered"]
