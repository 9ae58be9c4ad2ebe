"""`etu firmware build` refuses a program its runner source would refuse at run time, and
records what it checked (issue 25 §5).

The skewed source is the mirrored ExecuTorch runtime source, unpacked, with one kernel
schema as releases before ``out_dtype`` had it: the runner built from it would end the run
with ``Expected 8 args received 9`` and ``InvalidProgram``. The refusal comes before
configuring, so these builds take seconds.
"""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest

from tests.helpers import DEMO
from tests.real_runner import etu, runtime_environment
from tests.unit.test_version_skew import DEQUANTIZE, OLD_DEQUANTIZE


@pytest.fixture(scope="module")
def skewed_source(tmp_path_factory) -> Path:
    env = runtime_environment()
    root = tmp_path_factory.mktemp("old-src")
    with tarfile.open(env["ETU_EXECUTORCH_SRC"]) as archive:
        archive.extractall(root, filter="data")
    (tree,) = [p for p in root.iterdir() if (p / "runtime").is_dir()]
    tree = tree.rename(root / "executorch")
    schemas = tree / "kernels/quantized/quantized.yaml"
    lines = schemas.read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith(f"- func: {DEQUANTIZE}("))
    lines[at] = OLD_DEQUANTIZE
    schemas.write_text("\n".join(lines) + "\n")
    return tree


def test_a_program_newer_than_the_runner_source_is_refused_in_one_line(skewed_source, tmp_path):
    env = {**runtime_environment(), "ETU_EXECUTORCH_SRC": str(skewed_source),
           "ETU_BUILD_CACHE": str(tmp_path / "cache")}  # fmt: skip
    pte = DEMO / "demo_cnn_cpu.pte"
    result = etu(["firmware", "build", pte, "--board", "qemu-an547", "--out", tmp_path / "fw"],
                 env)  # fmt: skip
    assert result.returncode == 2, result.stderr[-2000:]
    lines = [line for line in result.stderr.splitlines() if line.startswith("etu:")]
    assert len(lines) == 1, result.stderr
    assert f"version skew: {DEQUANTIZE}: the program passes 9 values" in lines[0]
    assert "takes 8" in lines[0] and "ETU_EXECUTORCH_SRC" in lines[0]
    assert not (tmp_path / "fw" / "arm_executor_runner.elf").exists()
    as_json = etu(["firmware", "build", pte, "--board", "qemu-an547", "--out", tmp_path / "fw",
                   "--json"], env)  # fmt: skip
    assert as_json.returncode == 2
    assert "version skew" in json.loads(as_json.stdout)["error"]


def test_the_firmware_record_keeps_what_was_checked(float_firmware):
    options = float_firmware["options"]
    counts = options["kernel_arguments"]
    assert counts and all(isinstance(n, int) and n >= 2 for n in counts.values())
    assert options["runner_version"][0] >= 1
