"""Build ExecuTorch's real arm_executor_runner for the demo (`make demo`).

1. The demo program (demo_cnn.pte, Ethos-U55) in the runner with the Ethos-U delegate and
   core driver for Corstone-300: it links here and runs where there is an FVP or a board.
2. Its CPU twin: the same model compiled by etu's compile job with the delegate off
   (demo_cnn_cpu.pte, quantized, every operator on the CPU), in the runner for the emulated
   board (qemu-an547), so `etu run --board qemu-an547 demo_cnn_cpu.pte` runs it for real.

Both go to <program>.<board>/ beside the program (runner/workspace.py's firmware_dir), where
`etu run --board` and the console look. Needs the ExecuTorch source (ETU_EXECUTORCH_SRC,
.ci/run-style ../shared/vendor, an etu.toml setting, or a download); without it this prints
why and exits 0, so `make demo` still regenerates the rest.
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT))

from etu.runner.compile_job import CompileJob  # noqa: E402
from etu.runner.runtime_build import RuntimeBuildError, build_runner  # noqa: E402
from etu.runner.runtime_source import SourceError  # noqa: E402
from etu.runner.workspace import firmware_dir  # noqa: E402
from etu.tui.demo.build_demo import REQUEST, Progress  # noqa: E402


def _vendor_defaults() -> None:
    """Like .ci/run: the offline mirror beside the checkout, when nothing else is set."""
    for name, prefix in (("ETU_EXECUTORCH_SRC", "executorch-runtime-src-"),
                         ("ETU_ETHOSU_DRIVER_SRC", "ethos-u-core-driver-"),
                         ("ETU_CMSIS_SRC", "cmsis-core-")):  # fmt: skip
        if os.environ.get(name):
            continue
        found = sorted((ROOT.parent / "shared" / "vendor").glob(f"{prefix}*.tar.gz"))
        if found:
            os.environ[name] = str(found[-1])


def cpu_twin() -> Path:
    twin = HERE / "demo_cnn_cpu.pte"
    request = replace(REQUEST, delegate=False)
    result = CompileJob(request, HERE / ".etu" / "compile", Progress()).run()
    if result.status != "ok":
        raise SystemExit(f"CPU twin: compile failed in {result.failed_stage}: {result.message}")
    shutil.copyfile(result.pte, twin)
    print(f"wrote {twin.name} (CPU twin, no delegate)")
    return twin


def main() -> int:
    _vendor_defaults()
    twin = cpu_twin()
    for pte, board in ((HERE / "demo_cnn.pte", "corstone-300"), (twin, "qemu-an547")):
        try:
            result = build_runner(pte, board, firmware_dir(pte, board),
                                  progress=lambda text: None)  # fmt: skip
        except SourceError as error:
            print(f"real runner not built: {error}")
            return 0
        except RuntimeBuildError as error:
            print(f"real runner build failed: {error}", file=sys.stderr)
            return 1
        print(f"{board}: {result.elf.relative_to(ROOT)} ({result.seconds['total']:.0f} s, "
              f"library tree {'reused' if result.reused_tree else 'built'})")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
