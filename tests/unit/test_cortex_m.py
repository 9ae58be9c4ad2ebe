"""Issue 25 §3, the Cortex-M backend: the pieces that need no runner build (the request,
the CLI option, CMSIS-NN's source, the kernel library of each CPU operator, the CPU-ops
view, the reference's output order)."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest

from etu.parsers.program_facts import CpuOperator
from etu.parsers.program_needs import CORTEX_M_BUILD_FLAG, kernel_library
from etu.runner.compile_request import CompileRequest, RequestError
from etu.runner.runtime_build import cmsis_nn_source, pinned_cmsis_nn
from etu.runner.runtime_source import RuntimeSource, SourceError

PINNED = "dbf45dbfcc515421dd6099037d3e2637b90748c8"


def test_the_cpu_backend_is_part_of_the_request_and_portable_keeps_old_cache_keys() -> None:
    portable = CompileRequest(source="cnn").resolved()
    assert "cpu_backend" not in portable.to_json()  # earlier jobs' cache keys unchanged
    cortex_m = CompileRequest(source="cnn", cpu_backend="cortex-m").resolved()
    assert cortex_m.to_json()["cpu_backend"] == "cortex-m"
    assert CompileRequest.from_json(cortex_m.to_json()).cpu_backend == "cortex-m"
    with pytest.raises(RequestError, match="unknown CPU backend 'cmsis'"):
        CompileRequest(source="cnn", cpu_backend="cmsis").resolved()
    with pytest.raises(RequestError, match="quantized operators only"):
        CompileRequest(source="cnn", cpu_backend="cortex-m", quantize=False).resolved()


def test_etu_compile_takes_cpu_backend() -> None:
    import argparse

    from etu.tui.cli import compile as compile_cli

    parser = argparse.ArgumentParser()
    compile_cli.configure(parser)
    args = parser.parse_args(["cnn", "--out", "x", "--cpu-backend", "cortex-m"])
    assert args.cpu_backend == "cortex-m"
    assert parser.parse_args(["cnn", "--out", "x"]).cpu_backend == "portable"
    with pytest.raises(SystemExit):
        parser.parse_args(["cnn", "--out", "x", "--cpu-backend", "cmsis"])


def test_each_cpu_operator_names_its_kernel_library() -> None:
    assert kernel_library("cortex_m::quantized_conv2d.out") == "cmsis-nn"
    assert kernel_library("aten::convolution.out") == "portable"
    assert kernel_library("quantized_decomposed::quantize_per_tensor.out") == "quantized"
    assert kernel_library("executorch_prim::add.Scalar") == "prim"


def test_the_cpu_ops_view_says_which_kernels_are_cmsis_nn_and_which_portable() -> None:
    from etu.tui.widgets.cpu_ops import SelectOps, operators_content

    text = operators_content([
        CpuOperator("aten::convolution.out", ("Float",), 1),
        CpuOperator("cortex_m::quantized_conv2d.out", ("Byte", "Char", "Int"), 2),
    ]).plain  # fmt: skip
    lines = text.splitlines()
    assert lines[0] == "○ aten::convolution.out" and lines[1].endswith("· 1 call · portable")
    assert lines[2] == "◆ cortex_m::quantized_conv2d.out"
    assert lines[3].endswith("· 2 calls · CMSIS-NN")

    select = SelectOps()
    select.show("cortex_m::quantized_conv2d.out,aten::add.out")
    assert select.value == "cortex_m::quantized_conv2d.out,aten::add.out"  # what `c` copies
    assert CORTEX_M_BUILD_FLAG in str(select.render())


def _archive(folder: Path, name: str) -> Path:
    """A tarball shaped like CMSIS-NN's (``cmsis-nn/Include/arm_nnfunctions.h``)."""
    tree = folder / "tree" / "cmsis-nn" / "Include"
    tree.mkdir(parents=True)
    (tree / "arm_nnfunctions.h").write_text("/* */\n")
    path = folder / name
    with tarfile.open(path, "w:gz") as tar:
        tar.add(folder / "tree" / "cmsis-nn", arcname="cmsis-nn")
    return path


def _source(tmp_path: Path) -> RuntimeSource:
    root = tmp_path / "src" / "executorch"
    (root / "backends" / "cortex_m").mkdir(parents=True)
    (root / "backends/cortex_m/CMakeLists.txt").write_text(
        f'set(CMSIS_NN_VERSION\n    "{PINNED}"\n    CACHE STRING "x")\n'
    )
    archive = tmp_path / "vendor" / "executorch-runtime-src-cff6f4dd.tar.gz"
    archive.parent.mkdir()
    archive.write_bytes(b"")
    return RuntimeSource(root, "env", str(archive), "cff6f4dd")


def test_cmsis_nn_comes_from_beside_the_executorch_archive_or_its_variable(
    tmp_path, monkeypatch
) -> None:
    monkeypatch.setenv("ETU_BUILD_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("ETU_CMSIS_NN_SRC", raising=False)
    monkeypatch.setenv("ETU_SOURCE_MIRROR", str(tmp_path / "no-mirror"))
    (tmp_path / "no-mirror").mkdir()
    source = _source(tmp_path)
    assert pinned_cmsis_nn(source.root) == PINNED
    with pytest.raises(SourceError) as missing:
        cmsis_nn_source(source, lambda _text: None)
    assert "ETU_CMSIS_NN_SRC" in str(missing.value) and PINNED in str(missing.value)
    _archive(tmp_path / "vendor", "cmsis-nn-dbf45dbf.tar.gz")
    said: list[str] = []
    found = cmsis_nn_source(source, said.append)
    assert (found / "Include" / "arm_nnfunctions.h").is_file() and not said
    other = _archive(tmp_path / "elsewhere", "cmsis-nn-0123abcd.tar.gz")
    monkeypatch.setenv("ETU_CMSIS_NN_SRC", str(other))
    found = cmsis_nn_source(source, said.append)
    assert (found / "Include" / "arm_nnfunctions.h").is_file()
    assert said == [f"warning: CMSIS-NN 0123abcd is not the commit the source pins ({PINNED[:8]})"]


def test_reference_outputs_are_flattened_in_their_dim_order_as_the_runner_prints_them():
    """The runner prints an output's buffer in memory order; a channels-last output (the
    Cortex-M backend's) compared in logical order looked wrong (cosine 0.07) while exact."""
    import torch

    from etu.runner.host_memory import in_memory_order

    class Channels:  # the parts of a decoded tensor in_memory_order reads
        dim_order = (0, 2, 3, 1)

    value = torch.arange(2 * 3 * 2 * 2, dtype=torch.float32).reshape(2, 3, 2, 2)
    nhwc = value.permute(0, 2, 3, 1).reshape(-1).tolist()
    assert in_memory_order(value, Channels()) == nhwc

    class Contiguous:
        dim_order = (0, 1, 2, 3)

    assert in_memory_order(value, Contiguous()) == value.reshape(-1).tolist()
