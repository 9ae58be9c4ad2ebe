"""Programs that do not depend on where they were built (issue 24 §7): the same request
compiled into two output folders gives byte-identical .pte files, and the job still keeps
its debug artifacts (Vela's output, the TOSA graph) in its own vela/ folder, naming no folder
of the machine."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from etu.runner.compile_job import CompileJob
from etu.runner.compile_request import CompileRequest

pytestmark = pytest.mark.aot
ROOT = Path(__file__).resolve().parent.parent.parent


def test_the_same_request_gives_the_same_bytes_in_any_folder(tmp_path: Path, monkeypatch) -> None:
    """Also: a worker forked from the warm host builds what a worker started cold builds."""
    request = CompileRequest("add")
    results = [CompileJob(request, tmp_path / "build", use_cache=False).run()]
    monkeypatch.setenv("ETU_WARM_HOST", "0")
    results.append(CompileJob(request, tmp_path / "elsewhere/deeper", use_cache=False).run())
    for result in results:
        assert result.status == "ok", result.message
    assert [r.warm for r in results] == [True, False]
    first, second = (Path(r.pte).read_bytes() for r in results)
    assert first == second
    for result in results:
        folder = Path(result.pte).parent
        assert str(tmp_path).encode() not in Path(result.pte).read_bytes()
        assert b"intermediates" not in Path(result.pte).read_bytes()
        vela = folder / "vela"
        assert any(vela.glob("*summary*.csv")) and any(vela.glob("*.tosa")), sorted(vela.iterdir())
        # what the job keeps names no folder of this machine either: Vela's report, the
        # record, the float model's stack traces (the built-in example's file is etu's)
        for name in ("vela_stdout.txt", "etu_compile.json"):
            assert str(tmp_path) not in (vela / name).read_text(), name
        with zipfile.ZipFile(vela / "etu_float_model.pt2") as saved:
            members = b"".join(saved.read(member) for member in saved.namelist())
        assert str(tmp_path).encode() not in members and str(ROOT).encode() not in members


def test_the_cli_and_the_console_share_one_compile_cache_per_workspace(tmp_path: Path) -> None:
    """The CLI's ``--out build`` and the console's ``.etu/compile`` (issue 24 §7): in a
    workspace (``etu init``), a job compiled by one is reused by the other, and by another
    ``--out`` folder; outside a workspace nothing is shared."""
    from etu.runner.workspace import compile_root, shared_compile_root
    from tests.helpers import etu

    workspace = tmp_path / "ws"
    workspace.mkdir()
    assert etu("init", ".", cwd=workspace).returncode == 0
    assert shared_compile_root(workspace / "build") == compile_root(workspace)
    assert shared_compile_root(tmp_path / "no-workspace" / "build") is None

    first = etu("compile", "add", "--out", "build", "--json", cwd=workspace, timeout=600)
    assert first.returncode == 0, first.stderr[-2000:]
    made = json.loads(first.stdout)
    assert made["cached"] is False
    built = Path(made["pte"])
    if not built.is_absolute():
        built = workspace / built
    # kept in the workspace's compile folder too: the console's Compile tab finds it
    console = CompileJob(CompileRequest("add"), compile_root(workspace)).run()
    assert console.cached and console.status == "ok"
    assert Path(console.pte).read_bytes() == built.read_bytes()
    # another output folder: brought from the shared folder, not compiled again
    again = etu("compile", "add", "--out", "other", "--json", cwd=workspace, timeout=600)
    record = json.loads(again.stdout)
    assert record["cached"] is True, record
    other = Path(record["pte"]) if Path(record["pte"]).is_absolute() else workspace / record["pte"]
    assert other.read_bytes() == built.read_bytes() and other.parent.parent.name == "other"
