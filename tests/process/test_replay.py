"""Replay: a recorded session fed through a fresh parser to a listener, at once or at the
pace raw.index recorded, ending as recorded; a committed session from before this change
replays too."""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path

from etu.parsers.runner_events import LogLine, PmuReport
from etu.parsers.runner_log import parse_log_bytes
from etu.runner.replay import replay_session
from etu.runner.run import RunListener
from tests.history_workspace import V1_SESSIONS

OLD = V1_SESSIONS / "20261123-213021-fvp-000"


class Collector(RunListener):
    def __init__(self) -> None:
        self.events: list = []
        self.times: list[float] = []
        self.outcome = None

    def on_events(self, events) -> None:
        self.events += events
        self.times.append(time.monotonic())

    def on_end(self, outcome) -> None:
        self.outcome = outcome


def spaced_copy(tmp_path: Path, step: float) -> Path:
    folder = tmp_path / OLD.name
    shutil.copytree(OLD, folder)
    lines = (folder / "raw.index").read_text().splitlines()
    rewritten = [f"{line.split()[0]} {1000.0 + i * step:.6f}" for i, line in enumerate(lines)]
    (folder / "raw.index").write_text("\n".join(rewritten) + "\n")
    return folder


def test_instant_replay_gives_what_the_parser_gives() -> None:
    listener = Collector()
    start = time.monotonic()
    outcome = replay_session(OLD, listener, timed=False)
    assert time.monotonic() - start < 2.0
    expected = parse_log_bytes((OLD / "raw.log").read_bytes(), npu="ethos-u55")
    got = [e.text for e in listener.events if isinstance(e, LogLine)]
    assert got == [e.text for e in expected if isinstance(e, LogLine)] and len(got) == 58
    assert any(isinstance(e, PmuReport) for e in listener.events)
    assert listener.outcome is outcome and outcome.reason == "success"
    assert outcome.proof_line == 56 and "Program complete" in outcome.proof


def test_timed_replay_follows_the_recorded_pace(tmp_path: Path) -> None:
    folder = spaced_copy(tmp_path, step=0.02)  # 58 lines over 1.14 s
    listener = Collector()
    start = time.monotonic()
    replay_session(folder, listener, timed=True)
    elapsed = time.monotonic() - start
    assert 1.0 < elapsed < 4.0
    assert listener.times[-1] - listener.times[0] > 0.9  # spread out, not one burst
    fast = Collector()
    start = time.monotonic()
    replay_session(folder, fast, timed=True, speed=4.0)
    assert time.monotonic() - start < elapsed * 0.6


def test_long_silences_are_shortened_and_a_replay_can_stop(tmp_path: Path) -> None:
    folder = spaced_copy(tmp_path, step=60.0)  # a minute between lines
    stop = threading.Event()
    listener = Collector()
    timer = threading.Timer(0.5, stop.set)
    timer.start()
    start = time.monotonic()
    outcome = replay_session(folder, listener, timed=True, max_gap=0.1, stop=stop)
    timer.cancel()
    assert time.monotonic() - start < 2.0
    assert outcome.reason == "killed" and listener.outcome is outcome
    assert 0 < len([e for e in listener.events if isinstance(e, LogLine)]) < 58
