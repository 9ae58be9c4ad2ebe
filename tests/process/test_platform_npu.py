"""The NPU's address and interrupt in etu's platform layer, checked against upstream files.

etu's Corstone-300/-320 platform layer stands in for Arm's core_platform (not public on the
project's registries), so its NPU base address and IRQ number are facts copied by hand.
Here they are read back from the C source and compared with what upstream's own sources
say: the Corstone-320 (SSE-320) values from ExecuTorch's CMSIS-pack Ethos-U bring-up in the
pinned runtime source, the Corstone-300 (AN547) ones from the reference note checked on real
builds. Read at test time, so a wrong value fails here before it fails on a board.
"""

from __future__ import annotations

import re
import tarfile

import pytest

from tests.real_runner import ROOT, vendor_file

PLATFORM = ROOT / "runner" / "runtime_platform" / "platform" / "etu_platform.c"
UPSTREAM_320 = "backends/arm/cmsis_pack/test/all_ops/ethos_setup.cpp"


def platform_values() -> dict[str, tuple[int, int]]:
    """{"corstone-320": (base, irq), "corstone-300": (base, irq)} from etu_platform.c."""
    text = PLATFORM.read_text()
    found = re.search(
        r"#if defined\(ETU_CORSTONE_320\)\s*#define ETU_NPU_BASE (0x[0-9a-fA-F]+)u.*?\n"
        r"#define ETU_NPU_IRQ (\d+)\s*#else\s*#define ETU_NPU_BASE (0x[0-9a-fA-F]+)u.*?\n"
        r"#define ETU_NPU_IRQ (\d+)",
        text,
    )
    assert found, "the NPU block of etu_platform.c changed shape"
    return {
        "corstone-320": (int(found[1], 16), int(found[2])),
        "corstone-300": (int(found[3], 16), int(found[4])),
    }


def upstream_320() -> tuple[int, int]:
    tarball = vendor_file("executorch-runtime-src-")
    if tarball is None:
        pytest.skip("no pinned ExecuTorch source beside the checkout (../shared/vendor)")
    with tarfile.open(tarball) as archive:
        member = next(m for m in archive.getmembers() if m.name.endswith(UPSTREAM_320))
        text = archive.extractfile(member).read().decode()
    base = re.search(r"#define NPU0_APB_BASE_S (0x[0-9a-fA-F]+)UL", text)
    irq = re.search(r"#define NPU0_IRQn \(\(IRQn_Type\)(\d+)\)", text)
    assert base and irq, f"{UPSTREAM_320} no longer defines NPU0_APB_BASE_S / NPU0_IRQn"
    return int(base[1], 16), int(irq[1])


def test_corstone_320_npu_matches_upstream() -> None:
    assert platform_values()["corstone-320"] == upstream_320()


def test_corstone_300_npu_matches_the_reference() -> None:
    note = ROOT.parent / "shared" / "reference" / "runtime_build.md"
    if not note.is_file():
        pytest.skip("no ../shared/reference beside the checkout")
    text = note.read_text()
    base = re.search(r"ethosu_init\(&drv, (0x[0-9a-fA-F]+) /\* Ethos-U55 on Corstone-300", text)
    irq = re.search(r"route IRQ (\d+)", text)
    assert base and irq
    assert platform_values()["corstone-300"] == (int(base[1], 16), int(irq[1]))


def test_the_vector_table_routes_the_npu_irq() -> None:
    """The handler sits at vector 16 + IRQ and the IRQ is enabled in its NVIC word."""
    text = PLATFORM.read_text()
    assert "[16 + ETU_NPU_IRQ] = etu_npu_irq_handler" in text
    assert "NVIC_ISER0 + 4u * (ETU_NPU_IRQ / 32)" in text
    assert re.search(r"#define ETU_IRQ_COUNT (\d+)", text) and max(
        irq for _, irq in platform_values().values()
    ) < int(re.search(r"#define ETU_IRQ_COUNT (\d+)", text)[1])
