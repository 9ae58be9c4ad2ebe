"""Regenerate the demo workspace with etu's compile job (`make demo`).

The job runs the real ExecuTorch Ethos-U flow in a worker process (ethos-u55-128,
Ethos_U55_High_End_Embedded, Shared_Sram), caches its result under .etu/compile/, and
this script places the program as demo_cnn.pte with Vela's output files in vela/ beside it.
The firmware is rebuilt around the new program by build_firmware.py (also `make demo`).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))

from etu.runner.compile_job import CompileJob, CompileListener  # noqa: E402
from etu.runner.compile_request import CompileRequest, InputSpec  # noqa: E402

REQUEST = CompileRequest(
    source=f"{HERE / 'model.py'}:DemoCNN",
    inputs=(InputSpec((1, 3, 32, 32)),),
    target="ethos-u55-128",
    system_config="Ethos_U55_High_End_Embedded",
    memory_mode="Shared_Sram",
)


class Progress(CompileListener):
    def on_stage(self, stage: str, state: str, seconds: float | None) -> None:
        if state == "done":
            print(f"{stage:<10} {seconds:6.2f} s", flush=True)


def main() -> int:
    result = CompileJob(REQUEST, HERE / ".etu" / "compile", Progress()).run()
    if result.status != "ok":
        print(f"compile failed in {result.failed_stage}: {result.message}", file=sys.stderr)
        print(result.traceback or "", file=sys.stderr)
        return 1
    shutil.copyfile(result.pte, HERE / "demo_cnn.pte")
    shutil.rmtree(HERE / "vela", ignore_errors=True)
    shutil.copytree(result.vela_dir, HERE / "vela")
    print(f"wrote demo_cnn.pte and vela/ from {result.folder.name}"
          + (" (cached)" if result.cached else ""))  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
