"""Only etu's own code runs (issue 9): planted ``runner/``/``parsers/``/``fvp/`` folders in
the working folder never run, the compile worker's result cannot be broken or forged by the
model's prints, and simulators are not picked out of the working folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from etu.fvp.discovery import find_fvps
from etu.fvp.standin import install_standin
from etu.runner.compile_job import CompileJob, CompileListener, _is_message
from etu.runner.compile_request import CompileRequest, InputSpec

ROOT = Path(__file__).resolve().parent.parent.parent
STAGE_ORDER = ["load", "export", "quantize", "calibrate", "tosa", "vela", "serialize", "write"]


def plant(folder: Path) -> Path:
    """Packages named like etu's that leave a marker when imported."""
    marker = folder / "PLANTED-CODE-RAN"
    for package in ("runner", "parsers", "fvp", "etu_tui"):
        (folder / package).mkdir(parents=True)
        code = f"open({str(marker)!r}, 'a').write({package!r} + '\\n')\n"
        (folder / package / "__init__.py").write_text(code)
        for module in ("compile_worker", "compile_request", "standin", "targets", "pte"):
            (folder / package / f"{module}.py").write_text(code)
    return marker


def test_planted_folders_do_not_run_in_the_stand_in(tmp_path: Path) -> None:
    marker = plant(tmp_path)
    sims = install_standin(tmp_path / "fvps")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    result = subprocess.run(
        [str(sims[0]), "--version"], cwd=tmp_path, env=env, capture_output=True, text=True,
        timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 0 and "Fast Models [" in result.stdout, result.stderr
    assert not marker.exists()


class Recorder(CompileListener):
    def __init__(self) -> None:
        self.stages: list[tuple[str, str]] = []
        self.log: list[str] = []

    def on_stage(self, stage: str, state: str, seconds) -> None:
        self.stages.append((stage, state))

    def on_log(self, text: str) -> None:
        self.log.append(text)


NOISY_MODEL = """
import os
import sys

import torch

print('{"result": {"pte": "/etc/passwd", "stages": {}}}')
os.write(1, b'{"error": {"stage": "load", "message": "forged"}}\\n0\\nnull\\n[1]\\n')
sys.stdout.flush()


class Net(torch.nn.Module):
    def forward(self, x):
        print('{"result": {"pte": "forged.pte"}}')
        os.write(1, b'{"stage": "write", "state": "done", "seconds": 0}\\n')
        return x + x
"""


@pytest.mark.aot
def test_worker_is_isolated_and_its_channel_private(tmp_path: Path, monkeypatch) -> None:
    """A model that prints forged messages (Python and C level) in a folder with planted
    packages, PYTHONPATH pointing there too: the job still compiles, the forgeries are
    in the log, no planted code ran, and the stages come in order, Vela after tosa."""
    marker = plant(tmp_path)
    (tmp_path / "noisy.py").write_text(NOISY_MODEL)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", f"{tmp_path}{os.pathsep}{ROOT}")
    listener = Recorder()
    request = CompileRequest("noisy.py:Net", inputs=(InputSpec((1, 8)),))
    result = CompileJob(request, tmp_path / "out", listener, use_cache=False).run()
    assert result.status == "ok", (result.message, result.log[-2000:])
    assert result.pte.name == "Net.pte" and result.pte.parent == result.folder
    log = "".join(listener.log)
    assert "forged" in log and "/etc/passwd" in log and '"stage": "write"' in log
    assert not marker.exists()
    started = [stage for stage, state in listener.stages if state == "start"]
    assert started == STAGE_ORDER
    # each stage ends before the next one starts: printed in order
    assert listener.stages == [(s, state) for s in STAGE_ORDER for state in ("start", "done")]
    assert list(result.stages) == STAGE_ORDER


def test_compile_cli_prints_stages_in_order_and_says_model_code_runs() -> None:
    help_text = subprocess.run(
        [sys.executable, "-m", "etu.tui.cli", "compile", "--help"], capture_output=True,
        text=True, timeout=60, check=False,
    ).stdout  # fmt: skip
    assert "executed" in help_text and "model.py" in help_text


NOT_MESSAGES = [b"0", b"null", b"[1]", b'"x"', b'{"stage": 3}', b'{"result": 1}',
                b'{"result": {"pte": 5}}']  # fmt: skip


@pytest.mark.parametrize("line", [*NOT_MESSAGES, b"text", b"\xff"])
def test_a_line_that_is_not_a_message_is_logged(line: bytes, tmp_path: Path) -> None:
    listener = Recorder()
    job = CompileJob(CompileRequest("add"), tmp_path, listener)
    job._on_message_line(line)
    assert job._messages == [] and listener.log
    if line in NOT_MESSAGES:
        assert not _is_message(json.loads(line))


def test_a_result_whose_pte_is_missing_or_does_not_decode_is_a_failure(tmp_path: Path) -> None:
    job = CompileJob(CompileRequest("add"), tmp_path, use_cache=False)
    for content in (None, b"not a program at all"):
        partial = job.folder.with_name(job.folder.name + ".partial")
        partial.mkdir(parents=True, exist_ok=True)
        if content is not None:
            (partial / "add.pte").write_bytes(content)
        job._messages = [{"result": {"pte": str(partial / "add.pte"), "stages": {}}}]
        result = job._finish(partial, 0, 0.0)
        assert result.status == "failed" and result.failed_stage == "write", result.message
        assert not job.folder.exists()
        assert ("wrote no such file" if content is None else "does not decode") in result.message


def test_discovery_ignores_the_working_folder(tmp_path: Path, monkeypatch) -> None:
    scratch = tmp_path / "examples/arm/ethos-u-scratch/FVP-corstone300/models/Linux64_GCC-9.3"
    install_standin(scratch)
    install_standin(tmp_path / "here")
    monkeypatch.chdir(tmp_path)
    env = {"PATH": f".{os.pathsep}{os.pathsep}here{os.pathsep}/usr/bin"}
    assert find_fvps(env) == {}
    pointed = find_fvps({"PATH": "/usr/bin", "EXECUTORCH_ROOT": str(tmp_path)})
    assert pointed["FVP_Corstone_SSE-300_Ethos-U55"].path.is_relative_to(scratch)
    assert find_fvps({"PATH": str(tmp_path / "here")})  # an absolute entry is the user's


def test_served_console_command_is_isolated(tmp_path: Path) -> None:
    """`etu serve` starts a console per connection: isolated too, run from a folder with
    planted packages, it is etu's CLI that answers."""
    import shlex

    from etu.tui.cli.serve import console_command

    marker = plant(tmp_path)
    argv = [*shlex.split(console_command(None)), "--version"]
    assert "-I" in argv
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    result = subprocess.run(
        argv, cwd=tmp_path, capture_output=True, text=True, timeout=60, env=env, check=False
    )
    assert result.stdout.startswith("etu "), result.stderr
    assert not marker.exists()
