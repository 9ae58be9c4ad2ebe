"""The documented demo steps work as written (issue 24 §5): every `etu` command of README.md's
code blocks, of its prose that names the demo, and of the demo steps in docs/console.md runs
in a fresh copy of the demo workspace (the files a clone has) and succeeds; every output line
README shows is printed, in order; every path the steps name exists afterwards.

The runtime source comes by the rule `make run` and `etu serve` use (the project's source
mirror, no ETU_EXECUTORCH_SRC); `make ...` lines are the set-up this suite runs under, and a
bare `etu` opens the interactive console: both are skipped, and nothing else may be."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from etu.runner.runtime_source import (
    ENV_CMSIS,
    ENV_DRIVER,
    ENV_MIRROR,
    ENV_SOURCE,
    MIRROR_EXECUTORCH,
    source_mirror,
)
from tests.helpers import DEMO, ROOT, etu

README = ROOT / "README.md"
CONSOLE_DOC = ROOT / "docs" / "console.md"
DEMO_SECTION = "## The demo workspace"
DEMO_FROM_ROOT = DEMO.relative_to(ROOT).as_posix()  # etu_tui/demo
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)
INLINE = re.compile(r"`([^`\n]+)`")
# a path a step names: a file etu reads or writes, or a folder (ends with /)
PATH = re.compile(r"^[\w.][\w.+-]*(?:/[\w.+-]+)*(?:\.(?:pte|elf|map|json)|/)$")
SOURCE_VARIABLES = (ENV_SOURCE, ENV_DRIVER, ENV_CMSIS, ENV_MIRROR)

pytestmark = [
    pytest.mark.runtime_build,
    pytest.mark.skipif(shutil.which("git") is None, reason="needs git (a clone's files)"),
    pytest.mark.skipif(shutil.which("qemu-system-arm") is None, reason="needs QEMU"),
]


@dataclass
class Step:
    where: str  # "README.md" or "docs/console.md": said by a failing assertion
    argv: list[str]  # after `etu`
    shown: list[str]  # README's output lines under a `$ etu ...` line
    paths: list[str]  # the paths the line names (arguments and comment)


def section(text: str, heading: str) -> str:
    start = text.index(heading + "\n")
    end = text.find("\n## ", start + len(heading))
    return text[start : end if end != -1 else len(text)]


def shell_lines(block: str) -> list[tuple[str, str]]:
    """(command, comment) per line of a shell block."""
    lines = []
    for raw in block.splitlines():
        command, _, comment = raw.partition(" #")
        if command.strip() and not command.lstrip().startswith("#"):
            lines.append((command.strip(), comment))
    return lines


def named_paths(words: list[str]) -> list[str]:
    bare = [w.lstrip("(").rstrip(".,;:)") for w in words]
    return [w for w in bare if PATH.match(w)]


def readme_steps() -> list[Step]:
    text = README.read_text(encoding="utf-8")
    steps = []
    for language, block in FENCE.findall(text):
        if language == "console":
            for chunk in re.split(r"^\$ ", block, flags=re.MULTILINE)[1:]:
                command, *shown = chunk.splitlines()
                argv = shlex.split(command)
                assert argv[0] == "etu", f"README.md: an unknown step: {command}"
                steps.append(Step("README.md", argv[1:], shown, named_paths(argv[1:])))
        elif language == "sh":
            for command, _ in shell_lines(block):
                assert command.startswith("make "), f"README.md: an unknown step: {command}"
    blocks = FENCE.sub("", text)  # prose: the commands that name the demo's files
    for command in INLINE.findall(blocks):
        argv = shlex.split(command)
        if argv[0] == "etu" and any(a.startswith(DEMO_FROM_ROOT) for a in argv):
            steps.append(Step("README.md", argv[1:], [], named_paths(argv[1:])))
    return steps


def demo_doc_lines() -> list[tuple[str, str]]:
    text = section(CONSOLE_DOC.read_text(encoding="utf-8"), DEMO_SECTION)
    lines = [line for language, block in FENCE.findall(text) if language == "sh"
             for line in shell_lines(block)]  # fmt: skip
    assert lines, f"docs/console.md: no demo steps under {DEMO_SECTION!r}"
    return lines


def fresh_clone_of_the_demo(folder: Path) -> Path:
    """The demo's tracked files under ``folder``/etu_tui/demo, as a clone has them."""
    tracked = subprocess.run(["git", "ls-files", DEMO_FROM_ROOT], cwd=ROOT, check=True,
                             capture_output=True, text=True).stdout.split()  # fmt: skip
    for name in tracked:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, folder / name)
    return folder


def run_step(step: Step, cwd: Path, drop: tuple[str, ...]) -> None:
    result = etu(*step.argv, cwd=cwd, drop=drop, timeout=900)
    said = f"{step.where}: etu {shlex.join(step.argv)}"
    assert result.returncode == 0, f"{said}: status {result.returncode}: {result.stderr[-1500:]}"
    printed = iter(line.rstrip() for line in result.stdout.splitlines())
    for line in step.shown:  # in order, `...` marking what README leaves out
        if line.strip() != "...":
            assert any(got == line.rstrip() for got in printed), f"{said}: not printed: {line}"


def test_every_documented_demo_step_works_on_a_fresh_clone(tmp_path: Path) -> None:
    mirror = source_mirror()
    if mirror is not None and list(mirror.glob(MIRROR_EXECUTORCH)):
        drop = SOURCE_VARIABLES  # as `make run` and `etu serve` find it: no variable set
    elif os.environ.get(ENV_SOURCE):
        drop = ()
    else:
        pytest.skip("no ExecuTorch runtime source (no source mirror, no ETU_EXECUTORCH_SRC)")
    checkout = fresh_clone_of_the_demo(tmp_path / "clone")

    for step in readme_steps():  # README's paths are the checkout's
        run_step(step, checkout, drop)
        for path in step.paths:
            assert (checkout / path).exists(), f"README.md names {path}: missing"
    for name in {p for p in INLINE.findall(README.read_text()) if p.startswith(DEMO_FROM_ROOT)}:
        assert (checkout / name).exists(), f"README.md names {name}: missing"

    cwd, named, skipped = checkout, [], []
    for command, comment in demo_doc_lines():
        argv = shlex.split(command)
        if argv[0] == "cd":
            cwd = cwd / argv[1]
            assert cwd.is_dir(), f"docs/console.md: cd {argv[1]}: no such folder"
        elif argv == ["etu"] or argv[0] == "make":  # the interactive console; the set-up
            skipped.append(command)
        else:
            assert argv[0] == "etu", f"docs/console.md: an unknown step: {command}"
            run_step(Step("docs/console.md", argv[1:], [], []), cwd, drop)
        named += [(cwd, path) for path in named_paths([*argv[1:], *comment.split()])]
    assert skipped == ["etu"]
    for where, path in named:
        assert (where / path).exists(), f"docs/console.md names {path}: missing after the steps"
    # the section's prose names the runners the steps built, from the demo folder
    prose = section(CONSOLE_DOC.read_text(encoding="utf-8"), DEMO_SECTION)
    files = {
        p for p in INLINE.findall(FENCE.sub("", prose)) if re.fullmatch(r"[\w./-]+\.(pte|elf)", p)
    }
    assert files, "docs/console.md: the demo section names no program or runner"
    for name in files:
        assert (cwd / name).exists(), f"docs/console.md names {name}: missing after the steps"
