"""etu inspect: decode .pte files."""

from __future__ import annotations

import argparse
import json
import os
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from etu.parsers.errors import ParseError
from etu.parsers.text import printable as p
from etu.tui.cli.errors import notice
from etu.tui.numbers import nbytes, plural

NPU_OPERATION_LINES = 200  # per delegate, in the text form

HELP = "decode .pte files: plans, delegates, Ethos-U payloads, CPU operators"
DATA_HELP = (
    "a .ptd data file holding the programs' external Vela blocks (repeatable; default: the "
    "*.ptd files beside each program that has external blocks)"
)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "files", nargs="+", type=Path, metavar="FILE",
        help="programs to decode (.pte, .bpte, or a firmware ELF: the program baked into it);"
        " a .ptd data file shows its named data",
    )  # fmt: skip
    parser.add_argument(
        "--data", action="append", type=Path, default=None, metavar="FILE.ptd", help=DATA_HELP
    )
    parser.add_argument(
        "--json", action="store_true", help="one JSON object per file per line (JSON Lines)"
    )


def run(args: argparse.Namespace, *, out: TextIO, err: TextIO) -> int:
    return inspect_command(args.files, as_json=args.json, out=out, err=err, data=args.data)


def inspect_command(
    files: Sequence[Path],
    *,
    as_json: bool,
    out: TextIO,
    err: TextIO,
    data: Sequence[Path] | None = None,
) -> int:
    """Print one record per file in argument order; a bad file never stops the others.
    ``data``: the ``.ptd`` files external blocks are looked up in (else those beside each
    program)."""
    from etu.parsers.firmware_program import (
        decode_embedded_program,
        find_embedded_program,
        is_elf,
    )
    from etu.parsers.program_facts import inspect_record
    from etu.parsers.pte import open_program

    failed = 0
    for path in files:
        try:
            if is_data_path(path):
                record = data_file_record(path)
                if as_json:
                    out.write(json.dumps(record) + "\n")
                else:
                    out.write(format_data_file(record) + "\n")
                continue
            found = find_embedded_program(path) if is_elf(path) else None
            opened = decode_embedded_program(path, found) if is_elf(path) else open_program(path)
            with opened as program:
                record = inspect_record(program)
                external = add_external_data(record, program, path, data, embedded=found)
                add_npu_operations(record, program, external)
                record["io_quantization"] = io_quantization_record(program, path, found)
            if found is not None:  # where in the firmware the program is
                record["firmware"] = found.to_json()
        except ParseError as error:
            failed += 1
            message = str(error.with_source(str(path)))
            if as_json:
                out.write(json.dumps({"file": str(path), "error": message}) + "\n")
            else:
                notice(err, p(message))
            continue
        if as_json:
            out.write(json.dumps(record) + "\n")
        else:
            out.write(format_inspect(record) + "\n")
    out.flush()
    return 1 if failed else 0


def is_data_path(path: Path) -> bool:
    """A ``.ptd`` (identifier ``FT01``), whatever its name."""
    from etu.parsers.files import open_regular
    from etu.parsers.ptd import is_data_file

    try:  # a FIFO or a device is never opened for reading (it could block)
        fd, _size = open_regular(path, "a file", 1 << 62)
    except ParseError:
        return False
    try:
        return is_data_file(os.pread(fd, 8, 0))
    except OSError:
        return False
    finally:
        os.close(fd)


def data_file_record(path: Path) -> dict:
    """The ``etu inspect --json`` record of a ``.ptd``. Raises ParseError."""
    from etu.parsers.ptd import open_data_file

    return open_data_file(path).to_json()


def format_data_file(record: dict) -> str:
    lines = [
        f"{p(record['file'])}  {nbytes(record['file_size'])}  {record['file_identifier']}"
        "  (ExecuTorch data file)",
        f"  {len(record['segments'])} segments, "
        f"{nbytes(record['header']['segment_data_size'])} of segment data",
    ]
    for entry in record["named_data"]:
        layout = entry["tensor_layout"]
        shape = f"  {p(layout['dtype'])} {layout['sizes']}" if layout else ""
        lines.append(
            f"  {p(entry['key'][:80])}  segment {entry['segment_index']}  "
            f"{nbytes(entry['size'])} at {entry['offset']:#x}{shape}"
        )
    lines.extend(f"  warning: {p(w)}" for w in record["warnings"])
    return "\n".join(lines)


def add_external_data(
    record: dict, program, path: Path, data: Sequence[Path] | None, *, embedded=None
) -> dict:
    """Resolve each delegate's external Vela blocks against the ``.ptd`` files: the record
    gains ``data_files`` (the files looked in, with any error), each Ethos-U delegate
    ``external_data`` (one entry per external block: key, status, file, size). Returns
    (plan name, delegate index) → {block: bytes} for the blocks found."""
    from etu.parsers.external_blocks import (
        external_payloads,
        find_data_files,
        open_data_files,
        resolve,
    )
    from etu.parsers.program_facts import delegates

    infos = [info for info in delegates(program) if info.payload is not None]
    has_external = any(info.payload.external_blocks for info in infos)
    if data is not None:
        paths = list(data)
    elif has_external and embedded is None:
        paths = find_data_files(path)
    else:
        paths = []
    files, errors = open_data_files(paths)
    record["data_files"] = [
        {"file": f.source, "file_size": f.file_size, "keys": len(f.entries)} for f in files
    ]
    record["data_file_errors"] = errors
    found: dict = {}
    by_key = {(plan["name"], d["index"]): d for plan in record["plans"] for d in plan["delegates"]}
    for info in infos:
        blocks = resolve(info.payload, info.delegate, files)
        delegate = by_key.get((info.plan.name, info.index))
        if delegate is not None:
            delegate["external_data"] = [block.to_json() for block in blocks]
        found[(info.plan.name, info.index)] = external_payloads(blocks, files)
        record["warnings"].extend(block.message for block in blocks if not block.ok)
    record["warnings"].extend(errors)
    return found


def add_npu_operations(record: dict, program, external: dict | None = None) -> None:
    """Each Ethos-U delegate's record gains ``npu_operations`` (its decoded command stream),
    ``npu_operations_note`` (why there are none: U85, external stream) and
    ``npu_operations_error`` (a stream that does not decode, one line). ``external``: the
    bytes of external blocks (:func:`add_external_data`)."""
    from etu.parsers.ethosu_commands import program_operations
    from etu.parsers.program_facts import delegates

    decoded = {
        (d.plan, d.index): d for d in program_operations(program, delegates(program), external)
    }
    operators = _debug_db_operators(program, list(decoded.values()))
    for plan in record["plans"]:
        for delegate in plan["delegates"]:
            found = decoded.get((plan["name"], delegate["index"]))
            if found is None:
                continue
            delegate.update(found.to_json())
            joined = operators.get((found.plan, found.index), {})
            for op in delegate["npu_operations"]:
                if op["index"] in joined:
                    op["vela_operator"] = joined[op["index"]].operator
                    op["vela_source_operator"] = joined[op["index"]].source


def _debug_db_operators(program, decoded: list) -> dict:
    """Each operation's network operator, from Vela's debug database in the ``vela/``
    folder beside the program (``--enable-debug-db``), for the delegate it belongs to."""
    from etu.parsers.npu_sources import join_debug_db
    from etu.parsers.vela_debug_db import parse_debug_db

    path = Path(program.source).parent / "vela" / "out_debug.xml"
    try:
        db = parse_debug_db(path.read_bytes(), str(path)) if path.is_file() else None
    except (OSError, ParseError):
        return {}  # the database only adds names: the operations stand without it
    found = {}
    for item in decoded if db is not None else []:
        joined = join_debug_db(item.stream, db) if item.stream else None
        if joined:
            found[(item.plan, item.index)] = joined
    return found


def npu_operation_lines(delegate: dict) -> list[str]:
    """The delegate's NPU operations: counts per kind, then one line each."""
    if delegate.get("npu_operations_error"):
        return [f"      command stream error: {p(delegate['npu_operations_error'])}"]
    if delegate.get("npu_operations_note"):
        return [f"      NPU operations: {p(delegate['npu_operations_note'])}"]
    ops = delegate.get("npu_operations") or []
    if not ops:
        return []
    counts: dict[str, int] = {}
    for op in ops:
        counts[op["kind"]] = counts.get(op["kind"], 0) + 1
    kinds = ", ".join(f"{n} {kind.replace('_', ' ')}" for kind, n in counts.items())
    lines = [f"      NPU operations: {len(ops)} ({kinds})"]
    shown = ops[:NPU_OPERATION_LINES]
    lines += [f"        {op['index']:>3}  {p(op['summary'])}" for op in shown]
    if len(ops) > len(shown):
        lines.append(f"        … {len(ops) - len(shown)} more (--json lists them all)")
    return lines


def io_quantization_record(program, path: Path, found) -> list[dict]:
    """Per input and output of the first plan: dtype, the integers the NPU sees, scale and
    zero point (the program's quantize/dequantize kernels, Vela's out_vela.npz beside it)."""
    from etu.runner.io_quantization import io_quantization

    if not program.plans:
        return []
    vela = Path(path).parent / "vela" if found is None else None
    folder = vela if vela is not None and vela.is_dir() else None
    return [q.to_json() for q in io_quantization(program.plans[0], folder, program.plans)]


def _external_text(entry: dict) -> str:
    """One external block in words, named once (its message starts with its name):
    ``external cmd_data: 1,788 bytes in program.ptd``, ``external cmd_data: MISSING: key…``,
    ``external NO_DATA_FILE: cmd_data is in a .ptd file…``."""
    block, message = entry["block"], entry["message"]
    mark = "" if entry["status"] == "ok" else f"{entry['status'].upper()}: "
    rest = message.removeprefix(f"{block}: ")
    if rest == message and message.startswith(f"{block} "):
        return f"external {mark}{message}"
    return f"external {block}: {mark}{rest}"


def _block_text(payload: dict, external: dict, block: str, label: str) -> str:
    """``COP1 command stream 3,300 B``, or for an external block where its bytes are."""
    if block not in payload.get("external_blocks", {}):
        size = payload["command_stream_size" if block == "cmd_data" else "weights_size"]
        prefix = f"{payload['command_stream_format']} " if block == "cmd_data" else ""
        return f"{prefix}{label} {nbytes(size)}"
    entry = external.get(block) or {}
    if entry.get("size") is not None:
        return f"{label} {nbytes(entry['size'])} in {p(Path(entry['data_file']).name)}"
    return f"{label} external (key {p(payload['external_blocks'][block][:12])}…)"


def format_inspect(record: dict) -> str:
    """The readable form of an inspect record, for a terminal."""
    header = record["extended_header"]
    lines = [
        f"{p(record['file'])}  {nbytes(record['file_size'])}  {record['file_identifier']}"
        + ("  (bundled program)" if record["bundled"] else "")
        + (
            f"  (baked into the firmware: {p(record['firmware']['section'])} at "
            f"{record['firmware']['address']:#x})"
            if record.get("firmware")
            else ""
        ),
        "  extended header: "
        + (
            f"program {nbytes(header['program_size'])}, segments at "
            f"{header['segment_base_offset']:#x} ({nbytes(header['segment_data_size'])})"
            if header
            else "none (no segment data)"
        ),
    ]
    from etu.runner.io_quantization import CONFIG_METHOD

    config = [plan["name"] for plan in record["plans"] if CONFIG_METHOD.fullmatch(plan["name"])
              and not plan["instructions"] and plan["values"] == 1]  # fmt: skip
    for plan in record["plans"]:
        if plan["name"] in config:
            continue
        kinds = ", ".join(f"{p(k)} {n}" for k, n in plan["value_kinds"].items())
        lines.append(
            f"  plan {p(repr(plan['name']))}: {plural(plan['values'], 'value')} ({kinds}); "
            f"{plural(plan['instructions'], 'instruction')}: "
            f"{plural(plan['delegate_calls'], 'delegate call')} (NPU), "
            f"{plural(plan['kernel_calls'], 'kernel call')} (CPU)"
        )
        lines.append(f"    inputs {plan['inputs']}  outputs {plan['outputs']}")
        planned = ", ".join(f"mem_id {k}: {nbytes(v)}" for k, v in plan["planned_memory"].items())
        lines.append(f"    planned memory: {planned or 'none'}")
        devices = [d for d in plan.get("non_const_buffer_device") or [] if d["device_type"]]
        if devices or plan.get("tensor_devices"):
            where = [f"buffer {d['buffer_idx']} on {p(d['device'])}" for d in devices]
            where += [f"{n} tensors on {p(k)}" for k, n in plan["tensor_devices"].items()]
            lines.append(f"    devices: {', '.join(where)} (not the CPU)")
        for delegate in plan["delegates"]:
            specs = delegate["compile_specs"]
            lines.append(
                f"    delegate {delegate['index']}: {p(delegate['id'])}, "
                f"{delegate['payload_location']} payload {nbytes(delegate['payload_size'])}"
                + (f", target {p(specs['target'])}" if "target" in specs else "")
                + (f", {p(delegate['tosa_spec'])}" if delegate.get("tosa_spec") else "")
            )
            if delegate.get("tosa_spec_warning"):
                lines.append(f"      warning: {p(delegate['tosa_spec_warning'])}")
            payload = delegate["ethosu"]
            if payload:
                external = {e["block"]: e for e in delegate.get("external_data") or []}
                lines.append(
                    f"      {_block_text(payload, external, 'cmd_data', 'command stream')}, "
                    f"{_block_text(payload, external, 'weight_data', 'weights')}, "
                    f"scratch {nbytes(payload['scratch_size'])}"
                )
                lines.extend(f"      {p(_external_text(e))}" for e in external.values())
                for role in ("inputs", "outputs"):
                    for io in payload[role]:
                        lines.append(
                            f"      {role[:-1]:<6} shape {io['shape']} x{io['elem_size']} B "
                            f"at region {io['region']} +{io['offset']:#x}"
                        )
            if delegate["ethosu_error"]:
                lines.append(f"      payload error: {p(delegate['ethosu_error'])}")
            lines.extend(npu_operation_lines(delegate))
    if config:  # one constant each: the integer IO figures shown at the end
        names = ", ".join(p(name) for name in config)
        lines.append(f"  config methods ({len(config)}, one constant each): {names}")
    if record["segments"]:
        segs = ", ".join(f"{s['offset']:#x}+{nbytes(s['size'])}" for s in record["segments"])
        lines.append(f"  segments: {segs}")
    lines.append(f"  constant data: {nbytes(record['constant_data_size'])}")
    ops = record["cpu_operators"]
    if ops:
        lines.append("  CPU operators:")
        from etu.parsers.program_needs import CORTEX_M_BUILD_FLAG, kernel_library

        libraries = set()
        for op in ops:
            dtypes = p(", ".join(op["dtypes"]))
            library = kernel_library(str(op["name"]))  # which runner library runs it
            libraries.add(library)
            label = {"cmsis-nn": "  CMSIS-NN"}.get(library, f"  {library}")
            lines.append(f"    {p(op['name'])}  ({dtypes})  x{op['calls']}{label}")
        select = shlex.quote(f"EXECUTORCH_SELECT_OPS_LIST={record['select_ops_list']}")
        lines.append(f"  {p(select)}")
        if "cmsis-nn" in libraries:  # upstream's runner registers cortex_m kernels only so
            lines.append(f"  {CORTEX_M_BUILD_FLAG} (the Cortex-M kernels and CMSIS-NN)")
    else:
        lines.append("  CPU operators: none (everything is delegated)")
    if record.get("io_quantization"):
        from etu.runner.io_quantization import io_line

        lines.extend(f"  {p(io_line(q))}" for q in record["io_quantization"])
    lines.extend(f"  warning: {p(w)}" for w in record["warnings"])
    return "\n".join(lines)
