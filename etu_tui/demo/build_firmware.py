"""Rebuild the demo workspace's firmware (etu_tui/demo/firmware/) around demo_cnn.pte.

A stand-in for ExecuTorch's bare-metal arm_executor_runner (runner/firmware_src/), linked by
GNU ld with the runner's Corstone-300 layout, Shared_Sram and the runner's default pool
sizes (60 MiB method pool in DDR, 2 MiB temp pool filling SRAM), and the demo's two CPU
operators. Writes arm_executor_runner.elf, .map, .ld and ld's memory_usage.txt, and
etu_reference.json: the host reference's outputs for the program on all ones, which the
stand-in FVP prints for it (still simulated) so the demo's etu compare agrees with itself.
Needs arm-none-eabi-gcc. ``--reference-only`` writes etu_reference.json alone.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))

from etu.runner.firmware import build_stub_firmware  # noqa: E402

DEMO_OPS = [
    "quantized_decomposed::quantize_per_tensor.out",
    "quantized_decomposed::dequantize_per_tensor.out",
]


def write_reference(pte: Path, folder: Path) -> Path:
    """``folder/etu_reference.json``: the host reference's outputs for ``pte`` on all ones
    (the stand-in firmware's inputs), keyed by the program's SHA-256."""
    from etu.fvp.standin import STANDIN_REFERENCE
    from etu.runner.reference import program_reference

    reference = program_reference(pte, float_side=False)
    record = {
        "program": pte.name,
        "program_sha256": hashlib.sha256(pte.read_bytes()).hexdigest(),
        "inputs": reference.input_source,
        "reference": "etu reference (written by etu_tui/demo/build_firmware.py)",
        "outputs": reference.flat_outputs(),
    }
    path = folder / STANDIN_REFERENCE
    path.write_text(json.dumps(record, indent=1) + "\n")
    return path


def main() -> None:
    if "--reference-only" in sys.argv[1:]:
        print(f"wrote {write_reference(HERE / 'demo_cnn.pte', HERE / 'firmware')}")
        return
    build = build_stub_firmware(
        HERE / "demo_cnn.pte",
        HERE / "firmware",
        ops=DEMO_OPS,
        memory_mode="Shared_Sram",
        preset="corstone-300",
    )
    write_reference(HERE / "demo_cnn.pte", HERE / "firmware")
    print(build.memory_usage_text, end="")
    for warning in build.link_warnings:
        print(f"ld: {warning}")
    print(f"wrote {build.elf.relative_to(HERE.parent.parent)} ({build.elf.stat().st_size:,} bytes)")
    print(f"ExecuTorch's own runner for this program (from an ExecuTorch checkout):\n"
          f"  {build.rebuild_command}")  # fmt: skip


if __name__ == "__main__":
    main()
