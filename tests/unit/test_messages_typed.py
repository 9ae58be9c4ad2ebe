"""Every message the console posts says what it carries: no field is ``Any`` (with the type
in a comment) or a bare ``list`` / ``dict``."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re

from textual.message import Message

import etu.tui

UNTYPED = re.compile(r"\bAny\b|\b(list|dict|tuple|set)\b(?!\[)")


def _message_classes() -> list[type[Message]]:
    found = []
    for info in pkgutil.walk_packages(etu.tui.__path__, "etu.tui."):
        if ".demo" in info.name or info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            for cls in (value, *vars(value).values()) if inspect.isclass(value) else ():
                if (
                    inspect.isclass(cls)
                    and issubclass(cls, Message)
                    and cls.__module__ == module.__name__
                ):
                    found.append(cls)
    return found


def test_every_message_field_has_a_type() -> None:
    classes = _message_classes()
    names = {cls.__name__ for cls in classes}
    assert {"RunStarted", "RunBatch", "CompileDone", "Flashed", "HistoryListed"} <= names
    untyped = [
        f"{cls.__module__}.{cls.__qualname__}.{field}: {annotation}"
        for cls in classes
        for field, annotation in vars(cls).get("__annotations__", {}).items()
        if UNTYPED.search(str(annotation))
    ]
    assert not untyped, untyped
