"""Every text parser stays linear on long runs of one character class (issue 20).

Each case puts a run (spaces, one letter, digits, ``<debug ``, ``=``, quotes, colons, blank
lines ...; tests/hostile_shapes.py) where one parser's patterns look, at N and 4N characters,
and asserts linear-ish scaling, time(4N) <= 3 x 4 x time(N) + slack, and an absolute bound
for 4N = 64,000 characters (under the runner log's 64 KiB line cap, so the fault, assert and
memory lines are parsed whole). A quadratic regex takes 16x the time on 4x the input and
seconds at this size; an exponential one is stopped by the alarm and fails as too slow.
"""

from __future__ import annotations

import pytest

from tests.hostile_shapes import ISSUE_SHAPES, TooSlow, best_time, cases, parser, shape, stop_after

N = 16_000
GROWTH = 4
RATIO = 3 * GROWTH  # linear is GROWTH; quadratic is GROWTH**2
SLACK = 0.05  # seconds: timer and scheduling noise on small times
LIMIT = 2.0  # seconds for one parse of the 4N input
STOP = 5.0  # a parse is interrupted after this
ATTEMPTS = 3  # a scaling check is measured again before it fails (a busy machine)

CASES = list(cases())
_warm: set[str] = set()


def _ids(case: tuple[str, str, str]) -> str:
    return " / ".join(case)


def _check(fmt: str, context: str, run: str) -> None:
    parse = parser(fmt)
    small, large = shape(fmt, context, run, N), shape(fmt, context, run, GROWTH * N)
    try:
        with stop_after(STOP):
            if fmt not in _warm:  # the format's imports are not timed
                parse(small)
                _warm.add(fmt)
            t_small = best_time(parse, small, repeats=1, budget=0.0)
        assert t_small < LIMIT, f"{t_small:.2f} s for {len(small)} characters"
        with stop_after(STOP):
            t_large = best_time(parse, large, repeats=1, budget=0.0)
    except TooSlow as error:
        pytest.fail(f"{fmt} / {context} / {run}: {error}")
    assert t_large < LIMIT, f"{t_large:.2f} s for {len(large)} characters (limit {LIMIT} s)"
    for _ in range(ATTEMPTS):
        if t_large <= RATIO * t_small + SLACK:
            return
        t_small = best_time(parse, small)
        t_large = best_time(parse, large)
    assert t_large <= RATIO * t_small + SLACK, (
        f"time({GROWTH}N) = {t_large * 1e3:.1f} ms > {RATIO} x time(N) = "
        f"{RATIO * t_small * 1e3:.1f} ms + {SLACK * 1e3:.0f} ms: not linear"
    )


@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_linear_on_runs(case: tuple[str, str, str]) -> None:
    _check(*case)


def test_issue_shapes_are_covered() -> None:
    """The shapes issue 20 reported are among the cases above."""
    assert set(ISSUE_SHAPES.values()) <= set(CASES)


def test_stop_after_interrupts_a_backtracking_regex() -> None:
    """The alarm that keeps an exponential case from hanging the suite does stop the regex
    engine (the pattern is the linker script's former attribute pattern)."""
    import re
    import time

    pattern = re.compile(r"!?[rwxailRWXAIL]+(?:\s*!?[rwxailRWXAIL]+)*")
    start = time.perf_counter()
    with pytest.raises(TooSlow), stop_after(0.2):
        pattern.fullmatch("r" * 64 + "Z")
    assert time.perf_counter() - start < 2.0
