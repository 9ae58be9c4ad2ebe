"""The Memory tab's Kernels list holds registered kernel names only.

A real runner ELF carries C++ strings shaped like ``A::B`` (``Error::Ok``,
``ScalarType::Int``, ``basic_string::_S_create``, ``vector::reserve``) beside the registry's
``namespace::op.overload`` names; before, the list showed them all. The committed demo
firmware gets those strings written over one of its messages, so no toolchain is needed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from etu.parsers.elf_map import decode_elf
from etu.parsers.kernel_registry import is_kernel_name
from etu.parsers.memory_map import build_memory_map

ROOT = Path(__file__).resolve().parent.parent.parent
DEMO_ELF = ROOT / "etu_tui" / "demo" / "firmware" / "arm_executor_runner.elf"
DEMO_OPS = {
    "quantized_decomposed::quantize_per_tensor.out",
    "quantized_decomposed::dequantize_per_tensor.out",
}
CPP_STRINGS = (b"Error::Ok", b"ScalarType::Int", b"basic_string::_S_create", b"vector::reserve")
MESSAGE = b"etu stand-in runner firmware: runs no model, prints what the runner prints\n\x00"


def _demo_with(strings: tuple[bytes, ...]) -> bytes:
    """The demo ELF with ``strings`` (NUL-ended) written over its banner message."""
    data = DEMO_ELF.read_bytes()
    at = data.index(MESSAGE)
    patch = b"".join(s + b"\x00" for s in strings)
    assert len(patch) <= len(MESSAGE)
    return data[:at] + patch.ljust(len(MESSAGE), b"\x00") + data[at + len(MESSAGE) :]


def test_cpp_strings_in_a_runner_image_are_not_kernels() -> None:
    elf = decode_elf(_demo_with(CPP_STRINGS), str(DEMO_ELF))
    names = set(build_memory_map(elf).kernels.names)
    assert names == DEMO_OPS


def test_a_registered_name_beside_them_is_still_found() -> None:
    elf = decode_elf(_demo_with((b"Error::Ok", b"aten::add.out", b"vector::reserve")), "x.elf")
    assert set(build_memory_map(elf).kernels.names) == DEMO_OPS | {"aten::add.out"}


@pytest.mark.parametrize(
    ("name", "kernel"),
    [
        ("aten::add.out", True),
        ("quantized_decomposed::quantize_per_tensor.out", True),
        ("aten::sym_numel", True),  # a prim op registered without an overload
        ("aten::_local_scalar_dense", True),
        ("Error::Ok", False),
        ("ScalarType::Int", False),
        ("basic_string::_S_create", False),
        ("vector::reserve", False),
        ("std::terminate", False),
        ("__gnu_cxx::foo.bar", False),
    ],
)
def test_is_kernel_name(name: str, kernel: bool) -> None:
    assert is_kernel_name(name) is kernel
