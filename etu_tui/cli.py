"""The ``etu`` command: the console, and headless subcommands for shells and CI.

``etu`` opens the demo workspace, ``etu PATH`` opens a program or workspace, and
``etu inspect [--json] FILE...`` prints what is inside programs. Subcommands import
neither Textual nor torch, so scripting thousands of files stays fast.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from parsers.errors import ParseError

COMMANDS = {
    "inspect": "decode .pte files: plans, delegates, Ethos-U payloads, CPU operators",
    "vela": "read Vela's output (folder, summary/per-layer CSV, debug DB or saved stdout)",
    "elf": "firmware memory map: regions, sections, largest symbols, the runner's pools",
    "fit": "does a program fit a firmware? verdicts with the shortfall and the build fix",
    "run": "run the firmware on a Corstone FVP, stream and record its output",
    "log": "summarise a saved runner log or a recorded session",
    "compile": "compile a PyTorch model for an Ethos-U target with ExecuTorch + Vela",
}


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in COMMANDS:
        return _run_command(argv)
    parser = _console_parser()
    args = parser.parse_args(argv)
    return _open_console(args.path)


def _console_parser() -> argparse.ArgumentParser:
    commands = "\n".join(f"  etu {name:<10} {text}" for name, text in COMMANDS.items())
    parser = argparse.ArgumentParser(
        prog="etu",
        description="etu: the Ethos-U deployment console.",
        epilog=f"commands:\n{commands}\n\n'etu COMMAND --help' describes each command.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "path",
        nargs="?",
        type=Path,
        help="a .pte file or a workspace folder (default: the demo workspace)",
    )
    return parser


def _open_console(path: Path | None) -> int:
    if path is not None and not path.exists():
        print(f"etu: {path}: no such file or folder", file=sys.stderr)
        return 2
    from etu_tui.app import run_app  # Textual is imported only for the console

    return run_app(path)


def _run_command(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="etu")
    sub = parser.add_subparsers(dest="command", required=True)
    inspect = sub.add_parser("inspect", help=COMMANDS["inspect"], description=COMMANDS["inspect"])
    inspect.add_argument("files", nargs="+", type=Path, metavar="FILE")
    inspect.add_argument(
        "--json", action="store_true", help="one JSON object per file per line (JSON Lines)"
    )
    vela = sub.add_parser("vela", help=COMMANDS["vela"], description=COMMANDS["vela"])
    vela.add_argument("path", type=Path, metavar="PATH")
    vela.add_argument("--json", action="store_true", help="one JSON object")
    elf = sub.add_parser("elf", help=COMMANDS["elf"], description=COMMANDS["elf"])
    elf.add_argument("elf", type=Path, metavar="FILE")
    _add_region_options(elf)
    elf.add_argument("--json", action="store_true", help="one JSON object")
    fit = sub.add_parser("fit", help=COMMANDS["fit"], description=COMMANDS["fit"])
    fit.add_argument("--pte", type=Path, required=True, help="the program")
    fit.add_argument("--elf", type=Path, required=True, help="the runner firmware")
    fit.add_argument("--vela", type=Path, help="Vela's output folder for the program")
    fit.add_argument("--target", help="the NPU the run will use, e.g. ethos-u55-128")
    _add_region_options(fit)
    fit.add_argument("--json", action="store_true", help="one JSON object")
    run = sub.add_parser("run", help=COMMANDS["run"], description=COMMANDS["run"])
    run.add_argument("--fvp", action="store_true", help="run on a Corstone FVP (the default)")
    run.add_argument("--target", default="ethos-u55-128", help="e.g. ethos-u55-128, ethos-u85-256")
    run.add_argument("--elf", type=Path, required=True, help="the runner firmware")
    run.add_argument("--timelimit", type=int, default=600, help="seconds (FVP --timelimit)")
    run.add_argument("--fast", action="store_true", help="the Ethos-U plugin's --fast mode")
    run.add_argument("--fvp-path", type=Path, help="the simulator executable to use")
    run.add_argument(
        "--param", action="append", default=[], metavar="NAME=VALUE",
        help="an extra FVP parameter (-C), repeatable",
    )  # fmt: skip
    run.add_argument(
        "--sessions", type=Path, default=Path(".etu/sessions"),
        help="where recorded sessions go (default .etu/sessions)",
    )  # fmt: skip
    run.add_argument("--dry-run", action="store_true", help="print the command, start nothing")
    run.add_argument("--json", action="store_true", help="events as JSON Lines")
    log = sub.add_parser("log", help=COMMANDS["log"], description=COMMANDS["log"])
    log.add_argument("path", type=Path, metavar="FILE", help="a saved log or a session folder")
    mode = log.add_mutually_exclusive_group()
    mode.add_argument("--json", action="store_true", help="one JSON summary object")
    mode.add_argument("--events", action="store_true", help="every event as JSON Lines")
    comp = sub.add_parser("compile", help=COMMANDS["compile"], description=COMMANDS["compile"])
    comp.add_argument("source", help="model.py:ClassOrFactory, a .pt2 archive, or a built-in "
                      "(add, add2, softmax, cnn, mv2)")  # fmt: skip
    comp.add_argument("--input", action="append", default=[], metavar="SHAPE[:DTYPE]",
                      help="an example input, e.g. 1x3x224x224:float32 (repeat it)")  # fmt: skip
    comp.add_argument("--input-file", help=".pt or .npy example inputs, also calibration data")
    comp.add_argument("--target", default="ethos-u55-128")
    comp.add_argument("--system-config")
    comp.add_argument("--memory-mode")
    comp.add_argument("--no-quantize", action="store_true")
    comp.add_argument(
        "--per-tensor", action="store_true", help="per-tensor PTQ (default per-channel)"
    )
    comp.add_argument("--no-delegate", action="store_true", help="everything on the CPU")
    comp.add_argument("--segments", action="store_true", help="delegate payload in a segment")
    comp.add_argument("--vela-flag", action="append", default=[], help="extra Vela flag")
    comp.add_argument(
        "--sweep", help="e.g. targets=ethos-u55-128,ethos-u85-256;memory-modes=Sram_Only"
    )
    comp.add_argument("--workers", type=int, default=1, help="sweep jobs at once")
    comp.add_argument("--no-cache", action="store_true")
    comp.add_argument(
        "--out", type=Path, required=True, help="output folder (one sub-folder per job)"
    )
    comp.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    out, err = sys.stdout, sys.stderr
    if args.command == "compile":
        return compile_command(args, out=out, err=err)
    if args.command == "run":
        return run_command(args, out=out, err=err)
    if args.command == "log":
        return log_command(args.path, as_json=args.json, events=args.events, out=out, err=err)
    if args.command == "vela":
        return vela_command(args.path, as_json=args.json, out=out, err=err)
    if args.command == "elf":
        return elf_command(args, out=out, err=err)
    if args.command == "fit":
        return fit_command(args, out=out, err=err)
    return inspect_command(args.files, as_json=args.json, out=out, err=err)


def _add_region_options(parser: argparse.ArgumentParser) -> None:
    """Where memory regions come from, in order of preference."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--map", type=Path, help="GNU ld map file (-Map) of the link")
    group.add_argument("--ld", type=Path, help="linker script with a MEMORY block")
    group.add_argument(
        "--region",
        action="append",
        metavar="NAME:ORIGIN:LENGTH",
        help="a memory region, e.g. SRAM:0x31000000:2M (repeat for each)",
    )
    group.add_argument("--preset", choices=["corstone-300", "corstone-320"])


def _memory_map(args):
    from parsers.memory_map import load_memory_map, parse_region_spec

    regions = [parse_region_spec(spec) for spec in args.region] if args.region else None
    return load_memory_map(
        args.elf, map_path=args.map, script_path=args.ld, regions=regions, preset=args.preset
    )


def elf_command(args: argparse.Namespace, *, out: TextIO, err: TextIO) -> int:
    from parsers.memory_map import elf_record

    try:
        memory_map = _memory_map(args)
    except ParseError as error:
        err.write(f"etu: {error}\n")
        return 1
    record = elf_record(memory_map)
    out.write((json.dumps(record) if args.json else format_elf(record)) + "\n")
    return 0


def format_elf(record: dict) -> str:
    lines = [f"{record.get('source', '')}  regions from {record.get('regions_from') or 'nowhere'}"]
    for region in record["regions"]:
        length, used = region["length"], region["used"]
        filled = min(20, round(20 * used / length)) if length else 0
        lines.append(
            f"  {region['name']:<8} {'#' * filled}{'.' * (20 - filled)} "
            f"{used:>12,} / {length:>13,} B  {region.get('percent', 0):6.2f}%"
        )
    if record["pools"]:
        lines.append("  runner pools:")
        for role, pool in record["pools"].items():
            lines.append(
                f"    {role:<22} {pool['symbol']:<28} {pool['size']:>12,} B  "
                f"at {pool['address']:#010x} in {pool['region'] or '?'}"
            )
    lines.append("  largest symbols:")
    for symbol in record["symbols_top"][:10]:
        lines.append(f"    {symbol['size']:>12,} B  {symbol['name']}  ({symbol['section']})")
    lines.extend(f"  warning: {w}" for w in record["warnings"])
    return "\n".join(lines)


def fit_command(args: argparse.Namespace, *, out: TextIO, err: TextIO) -> int:
    """Exit 1 when any check fails, 2 when an input cannot be read."""
    from parsers.fit import FAIL, check_fit, fit_record
    from parsers.pte import open_program
    from parsers.vela import load_vela_report

    try:
        memory_map = _memory_map(args)
        vela = load_vela_report(args.vela) if args.vela else None
        with open_program(args.pte) as program:
            verdicts = check_fit(program, memory_map, vela, target=args.target)
    except ParseError as error:
        err.write(f"etu: {error}\n")
        return 2
    record = fit_record(verdicts)
    if args.json:
        out.write(json.dumps(record) + "\n")
    else:
        marks = {"ok": "ok  ", "warn": "WARN", "fail": "FAIL"}
        for verdict in verdicts:
            out.write(f"{marks[verdict.status]} {verdict.check:<18} {verdict.message}\n")
            if verdict.fix and verdict.status != "ok":
                out.write(f"     {'':<18} fix: {verdict.fix}\n")
    return 1 if record["status"] == FAIL else 0


def vela_command(path: Path, *, as_json: bool, out: TextIO, err: TextIO) -> int:
    """Vela's estimate for one output folder or file; exit 1 when it cannot be read."""
    from parsers.vela import load_vela_report, vela_record

    try:
        report = load_vela_report(path)
    except ParseError as error:
        err.write(f"etu: {error.with_source(str(path))}\n")
        return 1
    if as_json:
        out.write(json.dumps(vela_record(report)) + "\n")
        return 0
    out.write(format_vela(report) + "\n")
    return 0


def format_vela(report) -> str:
    version = f"Vela {report.vela_version}" if report.vela_version else "Vela version unknown"
    head = report.headline()
    lines = [f"{', '.join(report.sources) or 'Vela report'}  (estimate, {version})"]
    config = [head.get(k) for k in ("accelerator", "system_config", "memory_mode")]
    lines.append("  " + " · ".join(str(c) for c in config if c))
    if head.get("cycles") is not None:
        time_s = head.get("inference_time_s")
        lines.append(
            f"  {head['cycles']:,} cycles"
            + (f" = {time_s * 1e3:.3f} ms/inference" if time_s else "")
            + (f" at {head['core_clock_hz'] / 1e6:.0f} MHz" if head.get("core_clock_hz") else "")
        )
    memory = [
        f"{label} {head[key]:.1f} KiB"
        for label, key in (
            ("SRAM", "sram_used_kib"),
            ("off-chip flash", "off_chip_flash_used_kib"),
            ("on-chip flash", "on_chip_flash_used_kib"),
            ("DRAM", "dram_used_kib"),
        )
        if head.get(key)
    ]
    if memory:
        lines.append("  memory: " + ", ".join(memory))
    if report.npu_operators is not None:
        lines.append(f"  operators: {report.npu_operators} NPU, {report.cpu_operators} CPU")
    if report.per_layer:
        lines.append(f"  per layer ({len(report.per_layer)}), by cycles:")
        for row in sorted(report.per_layer, key=lambda r: r.cycles or 0, reverse=True)[:10]:
            lines.append(f"    {row.cycles or 0:>10,}  {row.operator or '?':<16} {row.name or ''}")
    lines.extend(f"  error: {e}" for e in report.errors)
    lines.extend(f"  warning: {w}" for w in report.warnings)
    return "\n".join(lines)


def inspect_command(files: Sequence[Path], *, as_json: bool, out: TextIO, err: TextIO) -> int:
    """Print one record per file in argument order; a bad file never stops the others."""
    from parsers.program_facts import inspect_record
    from parsers.pte import open_program

    failed = 0
    for path in files:
        try:
            with open_program(path) as program:
                record = inspect_record(program)
        except ParseError as error:
            failed += 1
            message = str(error.with_source(str(path)))
            if as_json:
                out.write(json.dumps({"file": str(path), "error": message}) + "\n")
            else:
                err.write(f"etu: {message}\n")
            continue
        if as_json:
            out.write(json.dumps(record) + "\n")
        else:
            out.write(format_inspect(record) + "\n")
    out.flush()
    return 1 if failed else 0


def _b(n: int) -> str:
    return f"{n:,} B"


def format_inspect(record: dict) -> str:
    """The readable form of an inspect record, for a terminal."""
    header = record["extended_header"]
    lines = [
        f"{record['file']}  {_b(record['file_size'])}  {record['file_identifier']}"
        + ("  (bundled program)" if record["bundled"] else ""),
        "  extended header: "
        + (
            f"program {_b(header['program_size'])}, segments at "
            f"{header['segment_base_offset']:#x} ({_b(header['segment_data_size'])})"
            if header
            else "none (no segment data)"
        ),
    ]
    for plan in record["plans"]:
        kinds = ", ".join(f"{k} {n}" for k, n in plan["value_kinds"].items())
        lines.append(
            f"  plan {plan['name']!r}: {plan['values']} values ({kinds}); "
            f"{plan['instructions']} instructions: {plan['delegate_calls']} delegate calls (NPU), "
            f"{plan['kernel_calls']} kernel calls (CPU)"
        )
        lines.append(f"    inputs {plan['inputs']}  outputs {plan['outputs']}")
        planned = ", ".join(f"mem_id {k}: {_b(v)}" for k, v in plan["planned_memory"].items())
        lines.append(f"    planned memory: {planned or 'none'}")
        for delegate in plan["delegates"]:
            specs = delegate["compile_specs"]
            lines.append(
                f"    delegate {delegate['index']}: {delegate['id']}, "
                f"{delegate['payload_location']} payload {_b(delegate['payload_size'])}"
                + (f", target {specs['target']}" if "target" in specs else "")
            )
            payload = delegate["ethosu"]
            if payload:
                lines.append(
                    f"      {payload['command_stream_format']} command stream "
                    f"{_b(payload['command_stream_size'])}, weights {_b(payload['weights_size'])}, "
                    f"scratch {_b(payload['scratch_size'])}"
                )
                for role in ("inputs", "outputs"):
                    for io in payload[role]:
                        lines.append(
                            f"      {role[:-1]:<6} shape {io['shape']} x{io['elem_size']} B "
                            f"at region {io['region']} +{io['offset']:#x}"
                        )
            if delegate["ethosu_error"]:
                lines.append(f"      payload error: {delegate['ethosu_error']}")
    if record["segments"]:
        segs = ", ".join(f"{s['offset']:#x}+{_b(s['size'])}" for s in record["segments"])
        lines.append(f"  segments: {segs}")
    lines.append(f"  constant data: {_b(record['constant_data_size'])}")
    ops = record["cpu_operators"]
    if ops:
        lines.append("  CPU operators:")
        for op in ops:
            lines.append(f"    {op['name']}  ({', '.join(op['dtypes'])})  x{op['calls']}")
        lines.append(f"  EXECUTORCH_SELECT_OPS_LIST={record['select_ops_list']}")
    else:
        lines.append("  CPU operators: none (everything is delegated)")
    lines.extend(f"  warning: {w}" for w in record["warnings"])
    return "\n".join(lines)


def run_command(args: argparse.Namespace, *, out: TextIO, err: TextIO) -> int:
    """Exit status says how the run ended (see runner.run.EXIT_STATUS); 2: could not start."""
    from fvp.command import FvpOptions, format_command, parse_param
    from fvp.launch import LaunchError, prepare_fvp_launch

    try:
        params = tuple(parse_param(p) for p in args.param)
        options = FvpOptions(timelimit=args.timelimit, fast=args.fast, extra_params=params)
        launch = prepare_fvp_launch(args.target, args.elf, options, fvp_path=args.fvp_path)
    except (LaunchError, ValueError) as error:
        err.write(f"etu: {error}\n")
        return 2
    if args.dry_run:
        if args.json:
            record = {"argv": launch.argv, "simulator": str(launch.executable),
                      "simulated": launch.simulated, "found_via": launch.found_via}  # fmt: skip
            out.write(json.dumps(record) + "\n")
        else:
            out.write(format_command(launch.argv) + "\n")
        return 0
    return _stream_run(launch, args, out=out, err=err)


def _stream_run(launch, args: argparse.Namespace, *, out: TextIO, err: TextIO) -> int:
    from etu_tui.safe_text import printable
    from parsers.runner_events import LogLine
    from runner.run import RunController, RunListener

    if launch.simulated:
        err.write(f"etu: {launch.executable} is the etu stand-in FVP: numbers are SIMULATED\n")

    class Printer(RunListener):
        def on_events(self, events) -> None:
            for event in events:
                if args.json:
                    out.write(json.dumps(event.to_json()) + "\n")
                elif isinstance(event, LogLine):
                    out.write(printable(event.text) + "\n")
            out.flush()

    controller = RunController(
        launch.argv, sessions=args.sessions, kind="fvp", meta=launch.meta(),
        listener=Printer(), npu=launch.target.npu,
    ).start()  # fmt: skip
    try:
        outcome = controller.wait()
    except KeyboardInterrupt:
        controller.stop()
        outcome = controller.wait()
    if args.json:
        out.write(json.dumps({**outcome.to_json(), "session": str(controller.folder)}) + "\n")
    else:
        line = f" (line {outcome.proof_line})" if outcome.proof_line else ""
        err.write(f"etu: run ended: {outcome.reason}{line}: {printable(outcome.proof)}\n")
        err.write(f"etu: session recorded in {controller.folder}\n")
    return outcome.exit_status


def log_command(path: Path, *, as_json: bool, events: bool, out: TextIO, err: TextIO) -> int:
    """A saved log (or a session folder's raw.log) re-read through the same parser."""
    from etu_tui.safe_text import printable
    from parsers.runner_log import parse_log_bytes, summarize
    from runner.session import RAW

    source = path / RAW if path.is_dir() else path
    try:
        data = source.read_bytes()
    except OSError as error:
        err.write(f"etu: {source}: {error.strerror or error}\n")
        return 2
    parsed = parse_log_bytes(data)
    if events:
        for event in parsed:
            out.write(json.dumps(event.to_json()) + "\n")
        return 0
    summary = summarize(parsed)
    if as_json:
        out.write(json.dumps(summary) + "\n")
        return 0
    out.write(f"{source}: {summary['lines']} lines, verdict {summary['verdict']}\n")
    model = summary["model"]
    if model.get("pte_size"):
        out.write(f"  program {model['pte_size']:,} B, method {model.get('method')}\n")
    for report in summary["pmu"]:
        out.write(
            f"  PMU: {report['npu_inferences']} inferences, NPU {report['npu_cycles']} cycles, "
            f"CPU {report['cpu_cycles']} cycles\n"
        )
    pool = summary["allocators"].get("method_allocator") or {}
    if pool.get("size"):
        out.write(f"  method allocator: {pool['used']:,} / {pool['size']:,} B\n")
    for error in summary["errors"]:
        out.write(f"  error {error.get('status_name') or ''}: {printable(error['text'])}\n")
    return 0


def compile_command(args: argparse.Namespace, *, out: TextIO, err: TextIO) -> int:
    """0: every job compiled (or came from the cache); 1: a job failed; 2: bad request."""
    from runner.compile_job import (
        CompileJob,
        CompileListener,
        comparison_row,
        run_sweep,
        sweep_requests,
    )
    from runner.compile_request import CompileRequest, InputSpec, RequestError

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
            job = CompileJob(request, args.out, use_cache=not args.no_cache)
    except (RequestError, ValueError) as error:
        err.write(f"etu: {error}\n")
        return 2

    class Progress(CompileListener):
        def on_stage(self, stage: str, state: str, seconds: float | None) -> None:
            if state == "done":
                err.write(f"etu: {stage:<10} {seconds:7.2f} s\n")

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
        err.write("etu: cancelled\n")
        return 1
    if args.json:
        out.write(json.dumps(result.to_json()) + "\n")
    elif result.status == "ok":
        out.write(f"{result.pte}{'  (cached)' if result.cached else ''}\n")
    else:
        err.write(f"etu: compile failed in {result.failed_stage}: {result.message}\n")
        if result.traceback:
            err.write(result.traceback.rstrip() + "\n")
    return 0 if result.status == "ok" else 1


def format_sweep(rows: list[dict]) -> str:
    def cell(value, digits: int = 1) -> str:
        if value is None:
            return "-"
        return f"{value:,.{digits}f}" if isinstance(value, float) else f"{value:,}"

    head = f"{'target':<15} {'system config':<29} {'memory mode':<21} {'cycles':>10} "
    head += (
        f"{'ms':>8} {'SRAM KiB':>9} {'flash KiB':>9} {'DRAM KiB':>9} {'CPU ops':>7} {'bytes':>9}"
    )
    lines = [head]
    for row in rows:
        if row["status"] != "ok":
            lines.append(f"{row['target']:<15} failed: {row['message']}")
            continue
        time_ms = row["inference_time_s"] * 1e3 if row["inference_time_s"] else None
        lines.append(
            f"{row['target']:<15} {row['system_config']:<29} {row['memory_mode']:<21} "
            f"{cell(row['cycles'], 0):>10} {cell(time_ms, 3):>8} {cell(row['sram_kib']):>9} "
            f"{cell(row['flash_kib']):>9} {cell(row['dram_kib']):>9} "
            f"{cell(row['cpu_operators']):>7} {cell(row['program_bytes']):>9}"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
