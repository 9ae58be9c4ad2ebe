"""Which Corstone FVP runs which Ethos-U target, and under which parameter names.

From ExecuTorch's ``backends/arm/scripts/run_fvp.sh`` (runtime_formats.md §5.1): U55/U65 on
Corstone-300 (``mps3_board``), U85 on Corstone-320 (``mps4_board``), ``num_macs`` from the
target's third field.
"""

from __future__ import annotations

from dataclasses import dataclass

SSE300_U55 = "FVP_Corstone_SSE-300_Ethos-U55"
SSE300_U65 = "FVP_Corstone_SSE-300_Ethos-U65"
SSE320 = "FVP_Corstone_SSE-320"
FVP_EXECUTABLES = (SSE300_U55, SSE300_U65, SSE320)

# The MAC configurations each NPU is built in (ExecuTorch's TARGETS list).
NPU_MACS = {
    "ethos-u55": (32, 64, 128, 256),
    "ethos-u65": (256, 512),
    "ethos-u85": (128, 256, 512, 1024, 2048),
}


@dataclass(frozen=True, slots=True)
class FvpTarget:
    target: str  # e.g. ethos-u55-128
    npu: str  # ethos-u55 / ethos-u65 / ethos-u85
    num_macs: int
    executable: str
    platform: str  # corstone-300 / corstone-320
    board: str  # mps3_board / mps4_board
    cpu: str  # prefix of the CPU's parameters
    ethosu: str  # prefix of the NPU's parameters


def fvp_target(target: str) -> FvpTarget:
    """The FVP for an ExecuTorch Ethos-U target name; ValueError names the valid ones."""
    npu, _, macs = target.rpartition("-")
    if npu not in NPU_MACS or not macs.isdigit() or int(macs) not in NPU_MACS[npu]:
        valid = ", ".join(f"{n}-{m}" for n, ms in NPU_MACS.items() for m in ms)
        raise ValueError(f"unknown target {target!r}; one of {valid}")
    if npu == "ethos-u85":
        return FvpTarget(
            target, npu, int(macs), SSE320, "corstone-320", "mps4_board",
            "mps4_board.subsystem.cpu0", "mps4_board.subsystem.ethosu",
        )  # fmt: skip
    executable = SSE300_U65 if npu == "ethos-u65" else SSE300_U55
    return FvpTarget(
        target, npu, int(macs), executable, "corstone-300", "mps3_board", "cpu0", "ethosu"
    )


def targets() -> list[str]:
    return [f"{npu}-{macs}" for npu, all_macs in NPU_MACS.items() for macs in all_macs]
