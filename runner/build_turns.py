"""The build cache's turns: file locks that make builds wait for each other only where
they would otherwise spoil each other's work (shared objects, the shared source)."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
from collections.abc import Callable
from pathlib import Path

Progress = Callable[[str], None]


@contextlib.contextmanager
def cold_builds_take_turns(trees: Path, cold: bool, say: Progress):
    """New library builds of different trees run one after another: the second then finds
    the objects the two share in ccache instead of compiling them beside the first (on a
    machine's few cores, two cold builds at once are no faster than one after the other).
    Only the compiling takes turns: a tree's configure (one core, compiling nothing the trees
    share) runs while another tree compiles, instead of leaving a core idle after it."""
    if not cold:
        yield
        return
    with _turn(
        trees / "cold-build.lock",
        say,
        "waiting for another new library build to finish (its objects are shared)",
    ):
        yield


@contextlib.contextmanager
def flatcc_in_the_source(trees: Path, root: Path, needed: bool, say: Progress):
    """flatcc writes its libraries into the ExecuTorch source, which every tree shares:
    each configure deletes ``third-party/flatcc/lib``, and an ETDump build writes the host's
    and then the target's ``libflatccrt.a`` there and links the latter. So configures and
    ETDump builds of one source take turns (seen: a tree's configure deleting the library
    an ETDump build of another tree was installing); other builds never touch it."""
    if not needed:
        yield
        return
    digest = hashlib.sha256(str(root).encode()).hexdigest()[:12]
    with _turn(
        trees / f"flatcc-{digest}.lock",
        say,
        "waiting for another build of this source (flatcc writes into the source)",
    ):
        yield


@contextlib.contextmanager
def _turn(path: Path, say: Progress, waiting: str):
    """Hold the file lock ``path``, saying ``waiting`` first when someone else holds it."""
    with open(path, "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say(waiting)
            fcntl.flock(lock, fcntl.LOCK_EX)
        yield
