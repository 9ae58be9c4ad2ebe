"""Rebuild the demo workspace's firmware (etu_tui/demo/firmware/) around demo_cnn.pte.

A stand-in for ExecuTorch's bare-metal arm_executor_runner (runner/firmware_src/), linked by
GNU ld with the runner's Corstone-300 layout, Shared_Sram and the runner's default pool
sizes (60 MiB method pool in DDR, 2 MiB temp pool filling SRAM), and the demo's two CPU
operators. Writes arm_executor_runner.elf, .map, .ld and ld's memory_usage.txt.
Needs arm-none-eabi-gcc.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))

from etu.runner.firmware import build_stub_firmware  # noqa: E402

DEMO_OPS = [
    "quantized_decomposed::quantize_per_tensor.out",
    "quantized_decomposed::dequantize_per_tensor.out",
]


def main() -> None:
    build = build_stub_firmware(
        HERE / "demo_cnn.pte",
        HERE / "firmware",
        ops=DEMO_OPS,
        memory_mode="Shared_Sram",
        preset="corstone-300",
    )
    print(build.memory_usage_text, end="")
    for warning in build.link_warnings:
        print(f"ld: {warning}")
    print(f"wrote {build.elf.relative_to(HERE.parent.parent)} ({build.elf.stat().st_size:,} bytes)")
    print(f"ExecuTorch's own runner for this program (from an ExecuTorch checkout):\n"
          f"  {build.rebuild_command}")  # fmt: skip


if __name__ == "__main__":
    main()
