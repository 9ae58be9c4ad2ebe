"""`etu firmware build --help` names where the runtime source comes from, in the order
runner/runtime_source.py looks (#24 §5): a newcomer whose sources sit in a mirror reads
which variable points at it."""

from __future__ import annotations

import argparse
import inspect

from etu.runner import runtime_source
from etu.tui.cli import firmware


def build_help() -> str:
    parser = argparse.ArgumentParser(prog="etu firmware")
    firmware.configure(parser)
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    text = action.choices["build"].format_help()
    return " ".join(text.split("positional arguments:")[0].split())


def test_build_help_names_every_source_in_the_lookup_order() -> None:
    """Each source find_executorch tries, named in the help in the same order."""
    steps = [
        runtime_source.ENV_SOURCE,
        "executorch_src",
        runtime_source.ENV_MIRROR,
        "shared/vendor/",
        "pinned commit",
        "ETU_NO_DOWNLOAD",
    ]
    text = build_help()
    assert [step for step in steps if step not in text] == []
    places = [text.index(step) for step in steps]
    assert places == sorted(places)
    code = inspect.getsource(runtime_source.find_executorch)
    in_code = ["ENV_SOURCE", '"executorch_src"', "mirror_archive(", "download_pinned("]
    assert [code.index(step) for step in in_code] == sorted(code.index(s) for s in in_code)


def test_build_help_names_the_driver_and_cmsis_settings() -> None:
    text = build_help()
    assert runtime_source.ENV_DRIVER in text and runtime_source.ENV_CMSIS in text
