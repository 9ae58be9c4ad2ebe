"""``etu elf --json`` against binutils on a firmware ELF with a ≥64 MB embedded model.

The stub runner is linked with the 152 MB benchmark program baked in (``model_pte``), then
each tool runs as a whole process. Goal (issue 3): etu no slower than
``arm-none-eabi-size -A`` plus ``arm-none-eabi-nm --size-sort`` together.

That goal sits below what any Python command can do: the interpreter starting with its site
packages (``python -c pass``) takes about as long as both binutils together here, before
etu imports pyelftools. So the figures printed include that floor and etu's time above it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

from benchmarks.bench_inspect import WORK, ensure_program


def ensure_firmware():
    from etu.runner.firmware import build_stub_firmware

    elf = WORK / "fw_large" / "arm_executor_runner.elf"
    if not elf.exists():
        build_stub_firmware(ensure_program(), elf.parent, ops=["aten::add.out"])
    return elf


def timed(argv: list[str], repeats: int = 3) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> dict:
    elf = ensure_firmware()
    etu = timed([sys.executable, "-m", "etu.tui.cli", "elf", "--json", str(elf)])
    size = timed(["arm-none-eabi-size", "-A", str(elf)])
    nm = timed(["arm-none-eabi-nm", "--size-sort", str(elf)])
    floor = timed([sys.executable, "-c", "pass"])
    result = {
        "elf_bytes": elf.stat().st_size,
        "etu_elf_seconds": round(etu, 4),
        "size_plus_nm_seconds": round(size + nm, 4),
        "ratio": round(etu / (size + nm), 2),
        "python_start_seconds": round(floor, 4),
        "meets_goal": etu <= size + nm,
    }
    print(f"ELF {elf.stat().st_size / 1e6:.1f} MB: etu elf --json {etu:.3f} s, "
          f"size -A + nm --size-sort {size + nm:.3f} s (goal: etu <= binutils); "
          f"python -c pass alone {floor:.3f} s")  # fmt: skip
    return result


if __name__ == "__main__":
    print(json.dumps(main()))
