"""etu reference: what a program should output, NPU delegates included, without a run."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TextIO

from etu.parsers.errors import describe_error, first_line
from etu.tui.cli.errors import CommandError

HELP = "what a program should output: CPU kernels on the host, each Ethos-U delegate by TOSA"
SHOWN_VALUES = 16  # values printed per tensor in text (--json has them all)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("program", type=Path, help="an ExecuTorch program (.pte)")
    parser.add_argument(
        "--inputs", metavar="FILE.npy|FILE.npz|random:SEED",
        help=".npy (one input), .npz (one array per input, in order) or random:SEED (drawn "
        "as etu run --inputs draws them: the same bytes); default all ones",
    )  # fmt: skip
    parser.add_argument(
        "--tosa", type=Path, metavar="PATH",
        help="the delegates' TOSA graphs: a .tosa file or a folder (default: vela/ beside "
        "the program, as etu compile keeps it)",
    )  # fmt: skip
    parser.add_argument("--json", action="store_true", help="one JSON object")


def run(args: argparse.Namespace, *, out: TextIO, err: TextIO) -> int:
    """0 the reference was made, 2 it cannot be (no TOSA graph, unreadable inputs...)."""
    from etu.parsers.errors import ParseError
    from etu.runner.reference import ReferenceError, program_reference
    from etu.runner.segment_program import SegmentError
    from etu.runner.tosa_graphs import TosaMatchError

    if not args.program.is_file():
        raise CommandError(f"{args.program}: no such file")
    try:
        reference = program_reference(args.program, inputs=inputs_argument(args.inputs),
                                      tosa=args.tosa)  # fmt: skip
    except (ReferenceError, TosaMatchError, SegmentError, ParseError, OSError) as error:
        raise CommandError(
            f"{args.program}: {first_line(str(error)) or describe_error(error)}"
        ) from None
    record = reference.to_json()
    if args.json:
        out.write(json.dumps(record) + "\n")
        return 0
    out.write(format_reference(record))
    return 0


def inputs_argument(text: str | None) -> Path | str | None:
    """``--inputs`` as the host reference takes it: ``random:SEED`` as it is, else a file."""
    from etu.runner.bundleio import RANDOM_PREFIX

    if text is None or text.startswith(RANDOM_PREFIX):
        return text
    return Path(text)


def _values(values: list) -> str:
    shown = [f"{v:.6g}" if isinstance(v, float) else str(v) for v in values[:SHOWN_VALUES]]
    more = f" … ({len(values):,} values)" if len(values) > SHOWN_VALUES else ""
    return " ".join(shown) + more


def format_reference(record: dict) -> str:
    lines = [f"reference: {record['reference']}"]
    for delegate in record["delegates"]:
        how = delegate["matched_by"]
        lines.append(
            f"delegate {delegate['index']} ({delegate['backend']}): TOSA graph "
            f"{delegate['tosa']} (matched by {how})"
        )
        if delegate["note"]:
            lines.append(f"  note: {delegate['note']}")
        for kind, rows in (("input ", delegate["inputs"]), ("output", delegate["outputs"])):
            for row in rows:
                tosa = row["tosa"]
                lines.append(
                    f"  {kind} value {row['value']}: {row['dtype']} {row['shape']} ↔ "
                    f"{tosa['name']} {tosa['dtype']} {tosa['shape']}"
                    + ("" if row["layout"] == "same" else f" ({row['layout']})")
                )
    for output in record["outputs"]:
        lines.append(f"output {output['index']}: {output['dtype']} {output['shape']}")
        lines.append(f"  {_values(output['values'])}")
    lines.append(f"float model: {record['float_outputs_note']}")
    for output in record["float_outputs"] or []:
        lines.append(f"float model output {output['index']}: {output['shape']}")
        lines.append(f"  {_values(output['values'])}")
    for note in record["notes"]:
        lines.append(f"note: {note}")
    return "\n".join(lines) + "\n"
