"""etu vela: Vela's estimate from its output."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TextIO

from etu.parsers.errors import ParseError
from etu.parsers.text import printable as p
from etu.tui.cli.errors import CommandError

HELP = "read Vela's output (folder, summary/per-layer CSV, debug DB or saved stdout)"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "path", type=Path, metavar="PATH",
        help="a Vela output folder, summary or per-layer CSV, debug DB or saved stdout",
    )  # fmt: skip
    parser.add_argument("--json", action="store_true", help="one JSON object")


def run(args: argparse.Namespace, *, out: TextIO, err: TextIO) -> int:
    return vela_command(args.path, as_json=args.json, out=out, err=err)


def vela_command(path: Path, *, as_json: bool, out: TextIO, err: TextIO) -> int:
    """Vela's estimate for one output folder or file; exit 1 when it cannot be read."""
    from etu.parsers.vela import load_vela_report, vela_record

    try:
        report = load_vela_report(path)
    except ParseError as error:
        raise CommandError(f"{p(str(error.with_source(str(path))))}", 1) from None
    if as_json:
        out.write(json.dumps(vela_record(report)) + "\n")
        return 0
    out.write(format_vela(report) + "\n")
    return 0


def format_vela(report) -> str:
    version = f"Vela {p(report.vela_version)}" if report.vela_version else "Vela version unknown"
    head = report.headline()
    lines = [f"{p(', '.join(report.sources)) or 'Vela report'}  (estimate, {version})"]
    config = [head.get(k) for k in ("accelerator", "system_config", "memory_mode")]
    lines.append("  " + " · ".join(p(str(c)) for c in config if c))
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
    if len(report.calls) > 1:
        total = report.total()
        cycles = f"{total['cycles']:,}" if total["cycles"] is not None else "?"
        lines.append(
            f"  {len(report.calls)} Vela calls (one per Ethos-U delegate); the lines above are"
            f" the last call's. All calls: {cycles} cycles"
        )
        for call in report.calls:
            share = report.share(call)
            lines.append(
                f"    delegate {call.index}: "
                + (f"{call.cycles:,} cycles" if call.cycles is not None else "? cycles")
                + (f" ({share:.1f}%)" if share is not None else "")
            )
    if report.per_layer:
        lines.append(f"  per layer ({len(report.per_layer)}), by cycles:")
        for row in sorted(report.per_layer, key=lambda r: r.cycles or 0, reverse=True)[:10]:
            operator, name = p(row.operator or "?"), p(row.name or "")
            lines.append(f"    {row.cycles or 0:>10,}  {operator:<16} {name}")
    lines.extend(f"  error: {p(e)}" for e in report.errors)
    lines.extend(f"  warning: {p(w)}" for w in report.warnings)
    return "\n".join(lines)
