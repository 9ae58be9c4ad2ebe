"""ETDump from the runner's UART, read with ExecuTorch's Inspector on the host.

The runner built with the event tracer prints its ETDump as base64 (the runner-log parser
turns it into ``EtdumpBlock`` events; runs save it as ``etdump-NNN.bin``). The Inspector
(imported lazily: it pulls in torch) turns it into events; etu keeps one row per operator
call: the operator, where it ran (CPU, or the delegate's backend), and its time in the
tracer's ticks. On QEMU the runner's tick source reads 0 (no PMU in this platform layer),
so times are 0 there: the table shows what ran, in order, not how long.
"""

from __future__ import annotations

import tempfile
import warnings
from pathlib import Path

_SKIP = {"OPERATOR_CALL"}


def etdump_operators(data: bytes) -> list[dict]:
    """Rows ``{block, index, operator, where, time, calls}`` from one ETDump's bytes."""
    from executorch.devtools import Inspector

    with tempfile.TemporaryDirectory(prefix="etu-etdump-") as work:
        path = Path(work) / "etdump.etdp"
        path.write_bytes(data)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "Output Buffer not found": no debug buffer
            inspector = Inspector(etdump_path=str(path))
    rows: list[dict] = []
    for block in inspector.event_blocks:
        for event in block.events:
            if event.name in _SKIP:
                continue
            raw = list(event.perf_data.raw) if event.perf_data is not None else []
            name = event.name.removeprefix("native_call_")
            rows.append(
                {
                    "block": block.name,
                    "index": len(rows),
                    "operator": name,
                    "where": event.delegate_backend_name
                    or ("delegate" if event.is_delegated_op else "CPU"),
                    "time": sum(raw) if raw else None,
                    "calls": len(raw) or 1,
                }
            )
    return rows


def etdump_intermediates(etdump: bytes, debug_buffer: bytes) -> dict[int, list]:
    """Every kernel call's outputs an ETDump kept in its debug buffer (a runner built with
    intermediate outputs), as numpy arrays by instruction index (the forward chain's)."""
    from executorch.devtools import Inspector

    with tempfile.TemporaryDirectory(prefix="etu-etdump-") as work:
        etdump_path, debug_path = Path(work) / "etdump.etdp", Path(work) / "debug_buffer.bin"
        etdump_path.write_bytes(etdump)
        debug_path.write_bytes(debug_buffer)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            inspector = Inspector(etdump_path=str(etdump_path), debug_buffer_path=str(debug_path))
    found: dict[int, list] = {}
    for block in inspector.event_blocks:
        for event in block.events:
            instruction = getattr(event, "_instruction_id", None)
            if event.name in _SKIP or not isinstance(instruction, int) or not event.debug_data:
                continue
            found[instruction] = [
                tensor.detach().numpy().copy() for tensor in event.debug_data
                if hasattr(tensor, "detach")
            ]  # fmt: skip
    return found


ETDUMP_CAP = 64 << 20  # the parser keeps at most 64 MiB of base64 text per block
EMULATED_TIME_NOTE = "no cycle counter on the emulated board (QEMU): times not measured"


def session_etdump(folder: Path) -> Path | None:
    """The newest ETDump a session saved (``etdump-NNN.bin``; debug buffers are not)."""
    found = sorted(Path(folder).glob("etdump-*.bin"))
    return found[-1] if found else None


def session_debug_buffer(folder: Path) -> tuple[Path, Path] | None:
    """The newest ETDump of a session and the debug buffer printed just before it (the
    runner prints the buffer first: ``debug_buffer-NNN.bin``, then ``etdump-NNN+1.bin``);
    None when the run kept no intermediate outputs."""
    etdump = session_etdump(folder)
    if etdump is None:
        return None
    number = int(etdump.stem.rpartition("-")[2] or 0)
    debug = Path(folder) / f"debug_buffer-{number - 1:03d}.bin"
    return (etdump, debug) if number > 1 and debug.is_file() else None


def session_operators(folder: Path) -> dict:
    """``{"rows": [...], "time_note": ...}`` for a session's ETDump. On the emulated board the
    runner's tick source reads 0: times are None there, with the note saying why."""
    from etu.parsers.files import read_regular
    from etu.runner.history import read_meta

    path = session_etdump(folder)
    if path is None:
        return {"rows": [], "time_note": None}
    rows = etdump_operators(read_regular(path, "an ETDump", ETDUMP_CAP, follow=False))
    meta = read_meta(Path(folder))
    note = None
    if meta.get("emulated"):
        note = EMULATED_TIME_NOTE
        for row in rows:
            row["time"] = None
    return {"rows": rows, "time_note": note}


def operators_in_child(folder: Path, *, timeout: float = 600.0) -> dict:
    """:func:`session_operators` in an isolated child (the Inspector imports torch), so the
    console never imports it. Raises runner.isolated.ChildError with one line."""
    from etu.runner.isolated import json_child

    return json_child("etu.runner.etdump", str(folder), what="reading the ETDump", timeout=timeout)


if __name__ == "__main__":
    import sys

    from etu.runner.isolated import print_json_record

    raise SystemExit(print_json_record(session_operators, Path(sys.argv[1])))
