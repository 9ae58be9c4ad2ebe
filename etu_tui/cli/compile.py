"""etu compile: the ExecuTorch Ethos-U flow in a worker process."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TextIO

from etu.parsers.text import printable as p
from etu.tui.cli.common import add_target_option, add_vela_config_options
from etu.tui.cli.errors import CommandError, notice
from etu.tui.numbers import number

HELP = "compile a PyTorch model for an Ethos-U target with ExecuTorch + Vela"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "source",
        help="model.py:ClassOrFactory, a .pt2 archive, or a built-in (add, add2, softmax, cnn, "
        "mv2); a model.py is imported and executed, as Python code",
    )
    parser.add_argument("--input", action="append", default=[], metavar="SHAPE[:DTYPE]",
                        help="an example input, e.g. 1x3x224x224:float32 (repeat it)")  # fmt: skip
    parser.add_argument("--input-file", help=".pt or .npy example inputs, also calibration data")
    add_target_option(parser, "the NPU (default ethos-u55-128)", default="ethos-u55-128")
    add_vela_config_options(parser)
    parser.add_argument(
        "--calibration", metavar="FILE.npz|FOLDER",
        help="calibration data for quantisation: a .npz or a folder of .npy files, one sample "
        "per array (or N along a leading axis); default: the example inputs",
    )  # fmt: skip
    parser.add_argument("--no-quantize", action="store_true", help="keep the model in float")
    parser.add_argument(
        "--per-tensor", action="store_true", help="per-tensor PTQ (default per-channel)"
    )
    parser.add_argument("--no-delegate", action="store_true", help="everything on the CPU")
    parser.add_argument("--segments", action="store_true", help="delegate payload in a segment")
    parser.add_argument(
        "--cpu-backend", choices=("portable", "cortex-m"), default="portable",
        help="what runs the operators the NPU does not take: ExecuTorch's portable kernels "
        "(default) or the Cortex-M backend (cortex_m::* kernels on CMSIS-NN; quantized "
        "operators, channels-last inputs)",
    )  # fmt: skip
    parser.add_argument(
        "--int8-io", action="store_true",
        help="the program takes and gives the quantized integers itself (ExecuTorch's "
        "QuantizeInputs/QuantizeOutputs: no quantize/dequantize on the CPU; each scale and "
        "zero point kept in the program as its config methods)",
    )  # fmt: skip
    parser.add_argument(
        "--vela-flag", action="append", default=[], help="an extra Vela flag (repeatable)"
    )
    parser.add_argument(
        "--external-blocks", default="", metavar="cmd,weights",
        help="move Vela's command stream (cmd) and/or weights out of the .pte into NAME.ptd "
        "beside it (ExecuTorch's external_block_placements); the runner etu builds does not "
        "load .ptd files",
    )  # fmt: skip
    parser.add_argument(
        "--max-scratch-size", metavar="BYTES",
        help="fail the compile when a delegate's Ethos-U scratch is larger (K/M ok; ExecuTorch "
        "PR 22884's max_scratch_size, passed on when the installed ExecuTorch takes it)",
    )  # fmt: skip
    parser.add_argument(
        "--sweep", help="e.g. targets=ethos-u55-128,ethos-u85-256;memory-modes=Sram_Only"
    )
    parser.add_argument("--workers", type=int, default=1, help="sweep jobs at once")
    parser.add_argument("--no-cache", action="store_true", help="compile even when cached")
    parser.add_argument(
        "--out", type=Path, required=True, help="output folder (one sub-folder per job)"
    )
    parser.add_argument("--json", action="store_true", help="the job's result as one JSON object")


def parse_size(text: str | None, option: str) -> int | None:
    """``2M``, ``512K`` or bytes; None when not given; RequestError when not a size."""
    from etu.runner.compile_request import RequestError

    if text is None:
        return None
    digits, unit = text.strip().upper(), 1
    if digits[-1:] in ("K", "M"):
        digits, unit = digits[:-1], 1024 if digits[-1] == "K" else 1 << 20
    if not digits.isdigit() or len(digits) > 12 or int(digits) == 0:
        raise RequestError(f"{option} {text!r}: expected a size in bytes (K/M ok), e.g. 2M")
    return int(digits) * unit


def run(args: argparse.Namespace, *, out: TextIO, err: TextIO) -> int:
    return compile_command(args, out=out, err=err)


def compile_command(args: argparse.Namespace, *, out: TextIO, err: TextIO) -> int:
    """0: every job compiled (or came from the cache); 1: a job failed; 2: bad request."""
    from etu.runner.compile_job import (
        CompileJob,
        CompileListener,
        comparison_row,
        run_sweep,
        sweep_requests,
    )
    from etu.runner.compile_request import CompileRequest, InputSpec, RequestError

    if args.out.exists() and not args.out.is_dir():
        raise CommandError(f"{p(str(args.out))}: not a folder (--out is where job folders go)")
    try:
        request = CompileRequest(
            source=args.source,
            inputs=tuple(InputSpec.parse(text) for text in args.input),
            input_file=args.input_file,
            target=args.target,
            system_config=args.system_config,
            memory_mode=args.memory_mode,
            quantize=not args.no_quantize,
            per_channel=not args.per_tensor,
            delegate=not args.no_delegate,
            delegate_segments=args.segments,
            vela_flags=tuple(args.vela_flag),
            calibration=args.calibration,
            max_scratch_size=parse_size(args.max_scratch_size, "--max-scratch-size"),
            cpu_backend=args.cpu_backend,
            int8_io=args.int8_io,
            external_blocks=tuple(
                dict.fromkeys(b.strip() for b in args.external_blocks.split(",") if b.strip())
            ),
        )
        if args.sweep:
            axes = dict(part.split("=", 1) for part in args.sweep.split(";") if "=" in part)
            requests = sweep_requests(
                request,
                targets=[t for t in axes.get("targets", "").split(",") if t],
                memory_modes=[m for m in axes.get("memory-modes", "").split(",") if m],
                system_configs=[c for c in axes.get("system-configs", "").split(",") if c],
            )
            for each in requests:
                each.resolved()
        else:
            from etu.runner.workspace import shared_compile_root

            job = CompileJob(request, args.out, use_cache=not args.no_cache,
                             shared=shared_compile_root(args.out))  # fmt: skip
    except (RequestError, ValueError) as error:
        raise CommandError(f"{p(str(error))}") from None

    class Progress(CompileListener):
        def on_stage(self, stage: str, state: str, seconds: float | None) -> None:
            if state == "done":
                notice(err, f"{stage:<10} {seconds:7.2f} s")

    if args.sweep:
        results = run_sweep(requests, args.out, workers=args.workers)
        rows = [comparison_row(r) for r in results]
        if args.json:
            out.write(json.dumps({"jobs": [r.to_json() for r in results], "table": rows}) + "\n")
        else:
            out.write(format_sweep(rows) + "\n")
        return 0 if all(r.status == "ok" for r in results) else 1
    job.listener = Progress()
    try:
        result = job.run()
    except KeyboardInterrupt:
        job.cancel()
        raise CommandError("cancelled", 1) from None
    except OSError as error:  # the output folder cannot be written
        where = p(str(error.filename or args.out))
        raise CommandError(
            f"{where}: cannot write the job folder: {error.strerror or error}"
        ) from None
    if result.status == "ok" and result.calibration:  # what quantisation calibrated on
        notice(err, f"calibration: {p(str(result.calibration.get('source')))}")
    if args.json:
        out.write(json.dumps(result.to_json()) + "\n")
    elif result.status == "ok":
        out.write(f"{p(str(result.pte))}{'  (cached)' if result.cached else ''}\n")
        for path in result.data_files:
            out.write(f"{p(str(path))}\n")
    else:
        stage, message = p(str(result.failed_stage)), p(str(result.message))
        notice(err, f"compile failed in {stage}: {message}")
        if result.where:  # where in the user's model
            notice(err, f"  at {p(result.where)}")
        if result.traceback_file:  # the whole traceback stays in the job's log file
            notice(err, f"  full traceback: {p(str(result.traceback_file))}")
    return 0 if result.status == "ok" else 1


def format_sweep(rows: list[dict]) -> str:
    def cell(value: float | None, digits: int = 1) -> str:
        return number(value, digits=digits)

    head = f"{'target':<15} {'system config':<29} {'memory mode':<21} {'cycles':>10} "
    head += (
        f"{'ms':>8} {'SRAM KiB':>9} {'flash KiB':>9} {'DRAM KiB':>9} {'CPU ops':>7} {'bytes':>9}"
    )
    lines = [head]
    for row in rows:
        if row["status"] != "ok":
            lines.append(f"{p(row['target']):<15} failed: {p(str(row['message']))}")
            continue
        time_ms = row["inference_time_s"] * 1e3 if row["inference_time_s"] else None
        lines.append(
            f"{p(row['target']):<15} {p(str(row['system_config'])):<29} "
            f"{p(str(row['memory_mode'])):<21} "
            f"{cell(row['cycles'], 0):>10} {cell(time_ms, 3):>8} {cell(row['sram_kib']):>9} "
            f"{cell(row['flash_kib']):>9} {cell(row['dram_kib']):>9} "
            f"{cell(row['cpu_operators']):>7} {cell(row['program_bytes']):>9}"
        )
    return "\n".join(lines)
