"""The test run's order (tests/durations.py): whole modules, longest first."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from tests.durations import UNKNOWN_SECONDS, WAITING, from_junit, longest_first, recorded


def items(*nodeids: str) -> list:
    return [SimpleNamespace(nodeid=nodeid) for nodeid in nodeids]


def test_modules_go_longest_first_and_keep_their_own_order() -> None:
    collected = items("a.py::t1", "a.py::t2", "b.py::t1", "c.py::t1", "b.py::t2", "d.py::t1")
    seconds = {"a.py": 1.0, "b.py": 50.0, "c.py": 1.0}  # d.py was never measured
    order = [item.nodeid for item in longest_first(collected, seconds)]
    assert order == ["b.py::t1", "b.py::t2", "d.py::t1", "a.py::t1", "a.py::t2", "c.py::t1"]
    assert 1.0 < UNKNOWN_SECONDS < 50.0


def test_modules_that_wait_take_every_workers_place_from_the_first() -> None:
    waiting = sorted(WAITING)[:2]
    busy = [f"busy{n}.py" for n in range(5)]
    seconds = {**{name: 100.0 - n for n, name in enumerate(busy)}, waiting[0]: 60.0,
               waiting[1]: 50.0}  # fmt: skip
    collected = items(*(f"{name}::t" for name in [*busy, *waiting]))
    order = [item.nodeid.split("::")[0] for item in longest_first(collected, seconds, 3)]
    assert order == [waiting[0], *busy[:2], waiting[1], *busy[2:]]
    alone = [item.nodeid.split("::")[0] for item in longest_first(collected, seconds)]
    assert alone == [*busy, *waiting]  # one worker: by time alone


def test_seconds_per_module_from_junit_xml(tmp_path: Path) -> None:
    report = tmp_path / "junit.xml"
    report.write_text(
        '<testsuites><testsuite name="pytest">'
        '<testcase classname="tests.unit.test_a" name="t1" time="1.25"/>'
        '<testcase classname="tests.unit.test_a" name="t2" time="0.5"/>'
        '<testcase classname="tests.process.test_b.TestGroup" name="t" time="3"/>'
        "</testsuite></testsuites>"
    )
    assert from_junit(report) == {"tests/process/test_b.py": 3.0, "tests/unit/test_a.py": 1.8}


def test_the_recorded_modules_exist() -> None:
    root = Path(__file__).resolve().parents[2]
    seconds = recorded()
    assert seconds, "tests/durations.json holds no figures"
    assert [name for name in seconds if not (root / name).is_file()] == []
