"""Clear errors where users make the usual mistakes (issue 24 §8): a shape mistake is one
line and where in the user's model, the whole traceback kept in the job's log file (named);
``model.py`` without ``:Class`` takes its one nn.Module class or lists several; the
libraries' noise stays out of what etu shows and in the job's log file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from etu.runner.compile_job import CompileJob, CompileListener
from etu.runner.compile_request import CompileRequest, InputSpec
from tests.helpers import etu

pytestmark = pytest.mark.aot

SHAPE_MISTAKE = """import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(10, 5)

    def forward(self, x):
        y = x * 2
        return self.fc(y)
"""
SEVERAL = """import torch


class Block(torch.nn.Module):
    def forward(self, x):
        return x + 1


class Net(torch.nn.Module):
    def forward(self, x):
        return x * 2
"""


def test_a_shape_mistake_is_one_line_and_the_users_frame(tmp_path: Path) -> None:
    model = tmp_path / "model.py"
    model.write_text(SHAPE_MISTAKE)
    # model.py without :Class: its one nn.Module class (the mistake is then met at export)
    text = etu("compile", model, "--input", "1x4", "--out", tmp_path / "out", timeout=600)
    assert text.returncode == 1, text.stderr
    lines = [line for line in text.stderr.splitlines() if not line.startswith("etu: load ")]
    assert lines[0] == ("etu: compile failed in export: RuntimeError: a and b must have same "
                        "reduction dim, but got [1, 4] X [10, 5].")  # fmt: skip
    assert lines[1] == f"etu:   at {model}:11 in forward"
    assert lines[2].startswith("etu:   full traceback: ") and lines[2].endswith("worker.log")
    assert len(lines) == 3 and "Traceback" not in text.stderr
    log = Path(lines[2].split(": ", 2)[2])
    kept = log.read_text()
    assert "Traceback (most recent call last)" in kept and "torch/export" in kept
    assert f'File "{model}", line 11, in forward' in kept

    # the same job as --json gives it, and its worker log as the Compile tab sees it
    shown = Collect()
    request = CompileRequest(str(model), inputs=(InputSpec((1, 4)),))
    result = CompileJob(request, tmp_path / "out2", shown, use_cache=False).run()
    record = json.loads(json.dumps(result.to_json()))
    kept = Path(record["traceback_file"]).read_text()
    for noise in ("torchao/_C", "register_constant", "[cpuinfo"):
        assert noise not in shown.text, noise
    assert "torchao/_C" in kept or "register_constant" in kept  # kept in the job's log file
    assert record["where"] == f"{model}:11 in forward"
    assert Path(record["traceback_file"]).is_file()
    assert len(record["traceback"].splitlines()) <= 10
    assert record["traceback"].endswith("but got [1, 4] X [10, 5].")


class Collect(CompileListener):
    def __init__(self) -> None:
        self.text = ""

    def on_log(self, text: str) -> None:
        self.text += text


def test_several_classes_are_listed(tmp_path: Path) -> None:
    model = tmp_path / "two.py"
    model.write_text(SEVERAL)
    shown = Collect()
    request = CompileRequest(str(model), inputs=(InputSpec((1, 4)),))
    result = CompileJob(request, tmp_path / "out", shown, use_cache=False).run()
    assert result.status == "failed" and result.failed_stage == "load"
    assert result.message == (f"{model} defines 2 nn.Module classes (Block, Net): name one, "
                              f"e.g. {model}:Block")  # fmt: skip
