"""The demo workspace's FVP (issue 24 §5): one rule, ``etu.fvp.standin.demo_standin``, so
the demo's Run tab behaves the same under `make run`, `etu` and `etu serve` (before, only
`make run` pointed ETU_FVP_DIR at the stand-in and `etu serve` failed with "not found"). The
stand-in is never chosen for a user's own workspace, nor over a real FVP, and is named."""

from __future__ import annotations

import argparse
import io
import os
import stat
from pathlib import Path

import pytest

from etu.fvp.launch import LaunchError, prepare_fvp_launch
from etu.fvp.standin import DEMO_STANDIN_NOTICE, demo_standin, install_standin, is_standin
from etu.fvp.targets import FVP_EXECUTABLES
from tests.helpers import DEMO

ELF = DEMO / "firmware" / "arm_executor_runner.elf"
U55 = "FVP_Corstone_SSE-300_Ethos-U55"


@pytest.fixture
def no_fvp(tmp_path: Path, monkeypatch) -> Path:
    """A machine with no Arm FVP: an empty PATH folder, no ETU_FVP_DIR, a fresh cache.
    (setenv first: the fixture's undo then removes what the code under test sets.)"""
    (tmp_path / "bin").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.setenv("ETU_FVP_DIR", "")
    monkeypatch.delenv("ETU_FVP_DIR")
    monkeypatch.delenv("EXECUTORCH_ROOT", raising=False)
    monkeypatch.setenv("ETU_BUILD_CACHE", str(tmp_path / "cache"))
    return tmp_path


def test_no_fvp_the_demo_gets_the_stand_in_labelled(no_fvp: Path) -> None:
    with pytest.raises(LaunchError, match="not found"):  # what `etu serve` showed on Run
        prepare_fvp_launch("ethos-u55-128", ELF)
    assert demo_standin() == DEMO_STANDIN_NOTICE
    folder = Path(os.environ["ETU_FVP_DIR"])
    assert folder.is_relative_to(no_fvp / "cache")
    launch = prepare_fvp_launch("ethos-u55-128", ELF)
    assert launch.simulated and launch.found_via == "ETU_FVP_DIR"
    assert sorted(p.name for p in folder.iterdir()) == sorted(FVP_EXECUTABLES)
    again = dict(os.environ)
    del again["ETU_FVP_DIR"]
    assert demo_standin(again) == DEMO_STANDIN_NOTICE and again["ETU_FVP_DIR"] == str(folder)


def test_a_real_fvp_or_a_chosen_folder_is_never_replaced(no_fvp: Path) -> None:
    real = no_fvp / "bin" / U55
    real.write_text("#!/bin/sh\necho Fast Models [11.29.27]\n")
    real.chmod(real.stat().st_mode | stat.S_IXUSR)
    env = {"PATH": str(no_fvp / "bin")}
    assert demo_standin(env) is None and "ETU_FVP_DIR" not in env
    chosen = {"PATH": "", "ETU_FVP_DIR": str(no_fvp / "fvps")}
    assert demo_standin(chosen) is None and chosen["ETU_FVP_DIR"] == str(no_fvp / "fvps")


def test_install_leaves_a_current_script_alone(tmp_path: Path) -> None:
    first = install_standin(tmp_path)
    stamps = [p.stat().st_mtime_ns for p in first]
    again = install_standin(tmp_path)
    assert [p.stat().st_mtime_ns for p in again] == stamps
    assert all(is_standin(p) and os.access(p, os.X_OK) for p in again)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(FVP_EXECUTABLES)


def test_etu_opens_the_demo_on_the_stand_in_and_a_workspace_without(no_fvp, monkeypatch):
    """`make run` is `etu`: the console process gets the stand-in for the demo only."""
    from etu.tui import app as console
    from etu.tui.cli import main

    seen: list[tuple[Path | None, str | None]] = []

    class Console:  # the console's process environment at the moment it would start
        return_code = 0

        def __init__(self, path):
            self.path = path

        def run(self):
            seen.append((self.path, os.environ.get("ETU_FVP_DIR")))

    monkeypatch.setattr(console, "EtuApp", Console)
    monkeypatch.setattr("etu.runner.run.install_stop_signals", lambda handler: None)
    workspace = no_fvp / "ws"
    workspace.mkdir()
    assert main([str(workspace)]) == 0
    assert seen[-1] == (workspace, None)  # a user's workspace: no stand-in
    assert main([]) == 0
    assert seen[-1][0] is None and seen[-1][1] is not None
    assert prepare_fvp_launch("ethos-u55-128", ELF).simulated


def test_etu_serve_of_the_demo_gives_its_consoles_the_stand_in(no_fvp, monkeypatch) -> None:
    from etu.tui.cli import serve

    environments: list[str | None] = []

    class Server:
        def __init__(self, command, **options):
            self.command = command

        def serve(self):  # each console textual-serve starts inherits this environment
            environments.append(os.environ.get("ETU_FVP_DIR"))

    monkeypatch.setattr(serve, "guarded_server", lambda guard: Server)
    options = {"port": 8123, "host": "127.0.0.1", "public_url": None, "token": "t" * 32,
               "allow_origin": []}  # fmt: skip
    workspace = no_fvp / "ws"
    workspace.mkdir()
    err = io.StringIO()
    serve.run(argparse.Namespace(path=workspace, **options), out=io.StringIO(), err=err)
    assert environments == [None] and "stand-in" not in err.getvalue()
    serve.run(argparse.Namespace(path=None, **options), out=io.StringIO(), err=err)
    assert environments[-1] is not None
    assert f"etu: {DEMO_STANDIN_NOTICE}" in err.getvalue()
