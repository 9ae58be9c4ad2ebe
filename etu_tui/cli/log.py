"""etu log: re-read a saved log or a session."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TextIO

HELP = "summarise a saved runner log or a recorded session"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", type=Path, metavar="FILE", help="a saved log or a session folder")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--json", action="store_true", help="one JSON summary object")
    mode.add_argument("--events", action="store_true", help="every event as JSON Lines")


def run(args: argparse.Namespace, *, out: TextIO, err: TextIO) -> int:
    return log_command(args.path, as_json=args.json, events=args.events, out=out, err=err)


def log_command(path: Path, *, as_json: bool, events: bool, out: TextIO, err: TextIO) -> int:
    """A saved log (or a session folder's raw.log) re-read through the same parser."""
    from parsers.runner_log import parse_log_bytes, summarize
    from parsers.text import printable
    from runner.session import RAW

    source = path / RAW if path.is_dir() else path
    try:
        data = source.read_bytes()
    except OSError as error:
        err.write(f"etu: {printable(str(source))}: {error.strerror or error}\n")
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
    out.write(f"{printable(str(source))}: {summary['lines']} lines, verdict {summary['verdict']}\n")
    model = summary["model"]
    if model.get("pte_size"):
        method = printable(str(model.get("method")))
        out.write(f"  program {model['pte_size']:,} B, method {method}\n")
    for report in summary["pmu"]:
        out.write(
            f"  PMU: {report['npu_inferences']} inferences, NPU {report['npu_cycles']} cycles, "
            f"CPU {report['cpu_cycles']} cycles\n"
        )
    pool = summary["allocators"].get("method_allocator") or {}
    if pool.get("size"):
        out.write(f"  method allocator: {pool['used']:,} / {pool['size']:,} B\n")
    for error in summary["errors"]:
        name = printable(error.get("status_name") or "")
        out.write(f"  error {name}: {printable(error['text'])}\n")
    return 0
