"""Regenerate the demo workspace with the real ExecuTorch Ethos-U flow (`make demo`).

Writes demo_cnn.pte (ethos-u55-128, Ethos_U55_High_End_Embedded, Shared_Sram) and Vela's
output files (summary CSV, per-layer CSV, stdout report, TOSA) into vela/ beside it.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from model import EXAMPLE_INPUT_SHAPE, DemoCNN  # noqa: E402

from runner.aot import LoweringSpec, example_inputs_for, lower_to_pte  # noqa: E402

SPEC = LoweringSpec(
    target="ethos-u55-128",
    system_config="Ethos_U55_High_End_Embedded",
    memory_mode="Shared_Sram",
    extra_vela_flags=("--verbose-performance",),
)


def main() -> None:
    import torch

    torch.manual_seed(0)
    model = DemoCNN()
    calibration = [example_inputs_for([EXAMPLE_INPUT_SHAPE], seed=i) for i in range(8)]
    result = lower_to_pte(
        model,
        calibration[0],
        SPEC,
        HERE / "demo_cnn.pte",
        vela_dir=HERE / "vela",
        calibration=calibration,
        progress=lambda stage, seconds: print(f"{stage:<10} {seconds:6.2f} s", flush=True),
    )
    print(f"wrote {result.pte.relative_to(HERE.parent.parent)} and {result.vela_dir}")


if __name__ == "__main__":
    main()
