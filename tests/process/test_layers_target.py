"""The target's layers: a CPU twin's runner keeps every kernel call's outputs in its ETDump
debug buffer (``etu firmware build --etdump-intermediates``), and ``etu compare --layers``
holds each CPU layer's integers from the emulated board against the host's (issue 22 §4).

The twin is compiled by ``etu compile --no-delegate`` (which keeps its float model), built
with the real runner, run on QEMU; the session's debug buffer is then damaged on purpose to
show that the comparison reads it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy
import pytest

from etu.runner.etdump import session_debug_buffer
from etu.runner.layers import CpuLayer, Layer
from etu.runner.target_layers import NO_INTERMEDIATES, TargetLayers, session_target
from tests.helpers import DEMO, ROOT, etu
from tests.real_programs import cache_lock, keyed_dir
from tests.real_runner import build, run_qemu, runtime_environment

pytestmark = pytest.mark.skipif(shutil.which("qemu-system-arm") is None,
                                reason="qemu-system-arm is not installed")  # fmt: skip


def cpu_twin() -> Path:
    """The demo model compiled for the CPU only (quantized, per channel), once per cache."""
    folder = keyed_dir("twin-", Path(__file__), DEMO / "model.py",
                       ROOT / "runner" / "compile_worker.py")  # fmt: skip
    with cache_lock(folder.name):
        found = sorted(folder.glob("*/DemoCNN.pte"))
        if not found:
            result = etu("compile", f"{DEMO / 'model.py'}:DemoCNN", "--input", "1x3x32x32",
                         "--no-delegate", "--out", folder, timeout=600)  # fmt: skip
            assert result.returncode == 0, result.stderr[-2000:]
            found = sorted(folder.glob("*/DemoCNN.pte"))
    return found[-1]


@pytest.fixture(scope="module")
def twin_session(tmp_path_factory) -> Path:
    env = runtime_environment()
    work = tmp_path_factory.mktemp("twin")
    record = build(cpu_twin(), work / "fw", env, "--etdump-intermediates")
    assert record["options"]["etdump_intermediates"] is True
    assert "ETDump debug buffer" in record["pool_basis"]
    status, _lines, session = run_qemu(Path(record["elf"]), work / "sessions", env)
    assert status == 0
    return session


def compare_layers(session: Path) -> dict:
    result = etu("compare", session, "--layers", "--json", timeout=600)
    assert result.stdout, result.stderr[-2000:]
    return json.loads(result.stdout)


def test_every_cpu_layer_of_the_twin_on_the_emulated_board_equals_the_host(twin_session):
    assert session_debug_buffer(twin_session) is not None, "the runner printed its buffer"
    record = compare_layers(twin_session)
    layers = record["layers"]
    assert [layer["module"] for layer in layers] == [
        "features.0", "features.2", "features.3", "features.5", "features.6", "features.8",
        "classifier",
    ]  # fmt: skip
    assert {layer["unit"] for layer in layers} == {"CPU"}
    assert all(layer["target_differing"] == 0 and layer["target_max_lsb"] == 0
               for layer in layers)  # fmt: skip
    # equal integers: the target's SQNR against the float model is the host's
    for layer in layers:
        assert layer["target_sqnr_db"] == pytest.approx(layer["sqnr_db"], abs=1e-9)
    target = record["layers_summary"]["target"]
    assert target["read"] == target["cpu_layers"] == target["exact"] == 7
    assert twin_session.name in target["source"]
    text = etu("compare", twin_session, "--layers").stdout
    assert "= host" in text and "7 of 7 CPU layers read" in text


def test_a_damaged_debug_buffer_shows_as_layers_that_differ(twin_session, tmp_path):
    session = tmp_path / twin_session.name
    shutil.copytree(twin_session, session)
    _etdump, debug = session_debug_buffer(session)
    data = bytearray(debug.read_bytes())
    for i in range(len(data) // 2, len(data)):  # the later layers' outputs
        data[i] ^= 0x5A
    debug.write_bytes(bytes(data))
    record = compare_layers(session)
    differing = [layer for layer in record["layers"] if layer["target_differing"]]
    assert differing, "a damaged buffer must not compare equal"
    assert all(layer["target_max_lsb"] > 0 for layer in differing)
    target = record["layers_summary"]["target"]
    assert target["exact"] < target["read"]
    assert (
        f"{target['read'] - target['exact']} differ" in etu("compare", session, "--layers").stdout
    )


def test_a_session_without_intermediate_outputs_says_how_to_get_them(tmp_path):
    assert session_target(tmp_path) is None
    (tmp_path / "etdump-001.bin").write_bytes(b"\0" * 16)  # an ETDump with no buffer before it
    assert session_debug_buffer(tmp_path) is None
    assert "--etdump-intermediates" in NO_INTERMEDIATES


def test_target_layers_count_the_elements_and_steps_that_differ():
    host = numpy.array([[1, 2, 3, -4]], dtype=numpy.int8)
    cpu = CpuLayer("convolution", "aten::convolution", "conv", "int8", 0, 0.5, host, 7)
    layer = Layer(name="convolution", op="aten::convolution", kind="conv", module="m",
                  float_node="conv2d", unit="CPU", delegate=None, shape=[1, 4], dtype="int8",
                  zero_point=0, scale=0.5, scale_source="fitted", sqnr_db=30.0, cosine=1.0,
                  max_abs_error=0.0)  # fmt: skip
    target = TargetLayers({7: [numpy.array([1, 2, 6, -4], dtype=numpy.int8)]}, "test")
    target.compare(layer, cpu, None)
    assert (layer.target_differing, layer.target_max_lsb) == (1, 3)
    other = Layer(**{**layer.to_json(), "target_differing": None, "target_max_lsb": None})
    TargetLayers({}, "test").compare(other, cpu, None)  # nothing kept for this call
    assert other.target_differing is None
    summary = target.summary([layer, other])
    assert (summary["cpu_layers"], summary["read"], summary["exact"]) == (2, 1, 0)
