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


class ChildError(RuntimeError):
    """One line: why an isolated child gave no record."""


def last_line(stderr: str | bytes) -> str:
    """The last line a failed child wrote to stderr (what it died of), or "no output"."""
    text = stderr.decode("utf-8", "replace") if isinstance(stderr, bytes) else stderr
    return (text.strip().splitlines() or ["no output"])[-1]


def json_child(module: str, *args: str, what: str, timeout: float = 600.0,
               preload: str | None = None) -> dict:  # fmt: skip
    """Run ``module`` isolated; its last stdout line is one JSON object, or
    ``{"error": line}``. For work that imports torch or ExecuTorch on behalf of the console
    (which never imports them itself). Raises ChildError naming ``what`` went wrong.
    ``preload``: fork it from the warm host of that preload (:mod:`etu.runner.warm_host`),
    which imported what the child needs once, when one can take it."""
    import json
    import subprocess

    from etu.runner.warm_host import launch

    try:
        child = launch(preload, module, args) if preload else None
        if child is not None:
            returncode, stdout, stderr = child.communicate(timeout)
        else:
            done = subprocess.run(isolated_python(module, *args), capture_output=True,
                                  timeout=timeout, check=False)  # fmt: skip
            returncode, stdout, stderr = done.returncode, done.stdout, done.stderr
    except subprocess.TimeoutExpired:
        raise ChildError(f"{what} took longer than {timeout:.0f} s") from None
    try:  # bytes either way: json reads UTF-8 itself, last_line decodes what it shows
        record = json.loads(stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        tail = last_line(stderr)
        raise ChildError(f"{what} failed (status {returncode}): {tail}") from None
    if not isinstance(record, dict):
        raise ChildError(f"{what} printed no record")
    if "error" in record:
        raise ChildError(str(record["error"]))
    return record


def print_json_record(work, *args) -> int:
    """The child's side of :func:`json_child`: ``work(*args)``'s dict (or its error) as one
    JSON line."""
    import json

    from etu.parsers.errors import describe_error

    try:
        record = work(*args)
    except Exception as error:  # the child's one line, whatever went wrong
        record = {"error": describe_error(error)}
    print(json.dumps(record), flush=True)
    return 0
