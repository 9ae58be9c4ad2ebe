"""Write the bytecode of what etu's processes import, by importing it once (`make setup`).

The installers leave bytecode out (``--no-compile``): compiling all ~18,000 installed modules
costs ~60 CPU-seconds, and etu, its tests and its compile path import ~4,400 of them. Left
to first use, the test run's parallel processes would compile those at the same time, each
its own copy. Here each stack is imported once, the stacks side by side on the machine's
cores; a module none of them imports is compiled by the first process that needs it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

from etu.runner.isolated import last_line

# What a process of each kind imports before it does anything: a compile worker, a
# comparison with the host runtime, ExecuTorch's devtools (ETDump, BundleIO), the console
# and its CLI, the test run.
STACKS: dict[str, str] = {
    "compile": "from etu.runner.aot import preload; preload(); import ethosu.vela.vela",
    "host runtime": "from etu.runner.reference import preload; preload(); "
    "import tosa_reference_model, tosa_serializer",
    "devtools": "from executorch.devtools import BundledProgram, Inspector; "
    "import executorch.devtools.bundled_program.serialize",
    "console": "import etu.tui.app, etu.tui.cli, textual_serve.server, textual_plotext",
    "tests": "import pytest, xdist, hypothesis, syrupy, selenium.webdriver, labgrid, "
    "pytest_textual_snapshot",
}


def warm(name: str, code: str) -> str | None:
    """Import one stack in a child; a one-line problem, or None."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, check=False)  # fmt: skip
    if done.returncode == 0:
        return None
    return f"warm_bytecode: the {name} stack did not import: {last_line(done.stderr)}"


def main() -> int:
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        problems = [p for p in pool.map(warm, STACKS, STACKS.values()) if p is not None]
    for problem in problems:  # reported, not fatal: the first use compiles what is missing
        print(problem, file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
