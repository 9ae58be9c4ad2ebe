"""etu log: re-read a saved log or a session."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TextIO

from etu.parsers.errors import describe_error
from etu.tui.cli.errors import CommandError, notice

HELP = "summarise a saved runner log or a recorded session"
MAX_LOG_BYTES = 64 << 30  # read as a stream: the cap only refuses absurd files
BLOCK = 1 << 20


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", type=Path, metavar="FILE", help="a saved log or a session folder")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--json", action="store_true", help="one JSON summary object")
    mode.add_argument("--events", action="store_true", help="every event as JSON Lines")
    parser.add_argument(
        "--elf", type=Path,
        help="the firmware that ran, to symbolise a fault's PC and LR "
        "(default: the ELF a session recorded)",
    )  # fmt: skip


def run(args: argparse.Namespace, *, out: TextIO, err: TextIO) -> int:
    if args.elf is not None:
        from etu.parsers.elf_map import check_arm_firmware
        from etu.parsers.errors import ParseError, describe_error

        try:
            check_arm_firmware(args.elf)
        except ParseError as error:
            raise CommandError(f"--elf {describe_error(error)}") from None
    return log_command(
        args.path, as_json=args.json, events=args.events, out=out, err=err, elf=args.elf
    )


def log_command(
    path: Path, *, as_json: bool, events: bool, out: TextIO, err: TextIO, elf: Path | None = None
) -> int:
    """A saved log (or a session folder's raw.log) re-read through the same parser."""
    from etu.parsers.errors import ParseError
    from etu.parsers.files import open_regular
    from etu.parsers.log_summary import LogSummary
    from etu.parsers.runner_log import RunnerLogParser
    from etu.parsers.text import printable
    from etu.runner.run import bound_summary
    from etu.runner.session import RAW

    source = path / RAW if path.is_dir() else path
    # Streamed: a log of any length is read in blocks; only the summary is kept (and with
    # --events, nothing at all), so memory does not grow with the log.
    try:
        fd, _size = open_regular(source, "a runner log", MAX_LOG_BYTES)
    except ParseError as error:
        raise CommandError(f"{printable(str(error))}") from None
    from etu.runner.runner_facts import runner_facts

    parser = RunnerLogParser()
    # the runner's CPU and ExecuTorch (firmware record, session): explains 0 CPU cycles
    collected = runner_facts(_session_meta(path), elf).apply(LogSummary())
    etdump: list = []  # the run's ETDump blocks (not the debug ones), for the operator table
    faults: list = []  # the first hard fault's registers

    def take(batch) -> None:
        for event in batch:
            if events:
                out.write(json.dumps(event.to_json()) + "\n")
            collected.add(event)
            if type(event).__name__ == "EtdumpBlock" and "debug" not in event.file_name:
                etdump[:] = [event]
            elif type(event).__name__ == "HardFault" and not faults:
                faults.append(event.registers)
        bound_summary(collected)

    try:
        with open(fd, "rb", buffering=0, closefd=True) as handle:
            while block := handle.read(BLOCK):
                take(parser.feed(block))
    except BrokenPipeError:
        raise  # the reader went away (| head): the command's caller handles it quietly
    except OSError as error:
        raise CommandError(f"{printable(str(source))}: {error.strerror or error}") from None
    take(parser.close())
    if events:
        return 0
    summary = collected.to_json()
    if etdump:
        rows = _etdump_rows(etdump[-1].data, err)
        if rows and _session_meta(path).get("emulated"):
            from etu.runner.etdump import EMULATED_TIME_NOTE

            for row in rows:
                row["time"] = None  # the runner's tick source reads 0 there
            summary["etdump_time_note"] = EMULATED_TIME_NOTE
        summary["etdump_operators"] = rows
    fault = None
    if faults:
        from etu.parsers.fault import decode_fault

        fault = decode_fault(faults[0], elf or _session_elf(path))
    summary["fault"] = fault.to_json() if fault is not None else None
    layers = _npu_layers(path)
    if layers is not None:
        summary.update(layers)
    if as_json:
        out.write(json.dumps(summary) + "\n")
        return 0
    out.write(f"{printable(str(source))}: {summary['lines']} lines, verdict {summary['verdict']}\n")
    model = summary["model"]
    if model.get("pte_size"):
        method = printable(str(model.get("method")))
        out.write(f"  program {_n(model['pte_size'])} B, method {method}\n")
    for report in summary["pmu"]:
        cpu = report.get("cpu_cycles_note") or report["cpu_cycles"]
        out.write(
            f"  PMU: {report['npu_inferences']} inferences, NPU {report['npu_cycles']} cycles, "
            f"CPU {cpu} cycles\n"
        )
    _inference_lines(summary, out)
    pool = summary["allocators"].get("method_allocator") or {}
    if pool.get("size"):  # a runner printing %zu leaves figures unknown (None)
        out.write(f"  method allocator: {_n(pool.get('used'))} / {_n(pool['size'])} B\n")
    for row in summary.get("etdump_operators") or []:
        time = "n/a" if row["time"] is None else f"{row['time']:,}"
        out.write(
            f"  etdump {row['block']}: {printable(row['operator'])} on {printable(row['where'])}"
            f", time {time}\n"
        )
    if summary.get("etdump_time_note"):
        out.write(f"  etdump times: {summary['etdump_time_note']}\n")
    _layer_lines(summary, out)
    for error in summary["errors"]:
        name = printable(error.get("status_name") or "")
        out.write(f"  error {name}: {printable(error['text'])}\n")
    if fault is not None:
        out.write("  fault:\n")
        for line in fault.lines():
            out.write(f"    {printable(line)}\n")
    return 0


def _inference_lines(summary: dict, out: TextIO) -> None:
    """How many inferences ran and, with several PMU reports, the per-inference spread."""
    from etu.parsers.log_summary import spread

    count = summary.get("inference_count")
    if isinstance(count, int) and count > 1:
        out.write(f"  inferences: {count} (ET_NUM_INFERENCES)\n")
    rows = summary.get("inferences") or []
    for name, label in (("npu_cycles", "NPU cycles"), ("cpu_cycles", "CPU cycles")):
        found = spread(row[name] for row in rows)
        if found:
            out.write(
                f"  {label} per inference over {found['n']} reports: min {found['min']:,.0f}, "
                f"median {found['median']:,.0f}, max {found['max']:,.0f}\n"
            )


def _npu_layers(path: Path) -> dict | None:
    """A session's measured NPU cycles per layer (its PMU trace), None without a trace."""
    from etu.runner.npu_layers import session_layers

    if not path.is_dir():
        return None
    found = session_layers(path, _session_meta(path))
    return found.to_json() if found is not None else None


def _layer_lines(summary: dict, out: TextIO) -> None:
    """Measured beside Vela's estimate, one line per layer (PMU trace of an FVP run)."""
    from etu.parsers.text import printable

    if summary.get("npu_layers_error"):
        out.write(f"  NPU layers: {printable(summary['npu_layers_error'])}\n")
    layers = summary.get("npu_layers") or []
    if not layers:
        return
    out.write(f"  NPU cycles per layer ({printable(str(summary.get('npu_layers_source')))}),"
              " measured / Vela estimate:\n")  # fmt: skip
    for layer in layers:
        estimate = layer["estimated_cycles"]
        ratio = layer["ratio"]
        out.write(
            f"    {printable(layer['name'])[:48]:<48} {layer['measured_cycles']:>10,} / "
            + (f"{estimate:,} (×{ratio:.2f})" if estimate and ratio is not None else "n/a")
            + "\n"
        )
    for warning in summary.get("npu_layers_warnings") or []:
        out.write(f"  NPU layers: {printable(warning)}\n")


def _session_meta(path: Path) -> dict:
    """A session folder's meta.json ({} for a plain log or an unreadable meta)."""
    from etu.runner.history import read_meta

    if not path.is_dir():
        return {}
    return read_meta(path)  # a FIFO or a device refused, the fields type-checked


def _session_elf(path: Path) -> Path | None:
    """The firmware a session folder recorded (meta.json's ``elf``), if it is still there."""
    elf = _session_meta(path).get("elf")
    return Path(elf) if isinstance(elf, str) and Path(elf).is_file() else None


def _n(value) -> str:
    """A figure with thousands separators; ``?`` when the runner did not print it."""
    return f"{value:,}" if isinstance(value, int) else "?"


def _etdump_rows(data: bytes, err: TextIO) -> list[dict] | None:
    """The per-operator table from the run's ETDump (ExecuTorch's Inspector, lazily)."""
    from etu.parsers.text import printable

    try:
        from etu.runner.etdump import etdump_operators

        return etdump_operators(data)
    except Exception as error:  # a foreign library reading device-sent bytes
        notice(err, f"etdump: {printable(describe_error(error))}")
        return None
