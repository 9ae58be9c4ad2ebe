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
    args = parser.parse_args(argv)
    if args.command == "vela":
        return vela_command(args.path, as_json=args.json, out=sys.stdout, err=sys.stderr)
    return inspect_command(args.files, as_json=args.json, out=sys.stdout, err=sys.stderr)


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


if __name__ == "__main__":
    raise SystemExit(main())
