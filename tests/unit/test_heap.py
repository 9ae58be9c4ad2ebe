"""runner/heap.py: what the console, the compile and the tests do to the imported heap."""

from __future__ import annotations

import gc

from etu.runner.heap import YOUNG_THRESHOLD, settle_imports


def test_settling_freezes_what_is_alive_and_collects_young_objects_less_often() -> None:
    threshold = gc.get_threshold()
    gc.unfreeze()
    gc.set_threshold(700, threshold[1], threshold[2])
    try:
        kept = [object() for _ in range(100)]
        settle_imports()
        assert gc.get_freeze_count() >= len(kept)
        assert gc.get_threshold()[0] == YOUNG_THRESHOLD
        assert gc.get_threshold()[1:] == threshold[1:]
    finally:
        gc.set_threshold(*threshold)
        settle_imports()


def test_a_larger_young_threshold_is_kept() -> None:
    threshold = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD * 2, threshold[1], threshold[2])
    try:
        settle_imports()
        assert gc.get_threshold()[0] == YOUNG_THRESHOLD * 2
    finally:
        gc.set_threshold(*threshold)
