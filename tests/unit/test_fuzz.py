"""Fuzzing that keeps running (issue 9): every kept finding is replayed, and each format's
harness gets a bounded hypothesis run (a few seconds) of mutations of real artifacts.
``make fuzz`` runs the same harnesses under atheris for longer (tests/fuzzing.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from tests.fuzz_mutator import mutated
from tests.fuzzing import HARNESSES, findings, run_one, seeds


def _cases() -> list[tuple[str, Path]]:
    return [(name, path) for name in HARNESSES for path in findings(name)]


@pytest.mark.parametrize(("name", "path"), _cases(), ids=[f"{n}/{p.name}" for n, p in _cases()])
def test_kept_findings_stay_fixed(name: str, path: Path) -> None:
    run_one(name, path.read_bytes())


@pytest.mark.parametrize("name", sorted(HARNESSES))
def test_every_format_has_a_seeded_corpus(name: str) -> None:
    assert seeds(name), f"no real artifact seeds the {name} corpus"
    for seed in seeds(name):
        run_one(name, seed)


# The default run's share: a few seconds per format. ``ETU_FUZZ_EXAMPLES`` raises it;
# ``make fuzz`` runs the same harnesses for minutes under atheris.
BOUNDED_EXAMPLES = int(os.environ.get("ETU_FUZZ_EXAMPLES", "40"))


@pytest.mark.parametrize("name", sorted(HARNESSES))
def test_bounded_fuzz(name: str) -> None:
    @settings(max_examples=BOUNDED_EXAMPLES, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(mutated(name))
    def one(data: bytes) -> None:
        run_one(name, data)

    one()
