"""Python children that run etu's code and nothing else.

``python -m runner.x`` puts the current folder first on ``sys.path``: a ``runner/`` or
``parsers/`` folder there (a cloned model repository, a downloaded archive) would run in
place of etu's. Children are started with ``-I`` instead (no current folder, no
``PYTHONPATH``, no user site-packages) and etu's own folder put first on the path explicitly.
"""

from __future__ import annotations

import sys
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent


def isolated_python_code(module: str, root: Path = PROJECT_ROOT) -> str:
    """The ``-c`` program that runs ``module`` as ``__main__`` from ``root`` only."""
    return (
        f"import sys; sys.path.insert(0, {str(root)!r}); import runpy; "
        f"runpy.run_module({module!r}, run_name='__main__', alter_sys=True)"
    )


def isolated_python(module: str, *args: str, python: str | None = None) -> list[str]:
    """argv running ``python -m module args`` isolated from the working folder and env."""
    return [python or sys.executable, "-I", "-c", isolated_python_code(module), *map(str, args)]
