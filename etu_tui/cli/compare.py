"""etu compare: a run's outputs against the host reference (ExecuTorch's host kernels, each
Ethos-U delegate through the TOSA reference model) or saved arrays."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TextIO

from etu.parsers.errors import describe_error, first_line
from etu.tui.cli.errors import CommandError

HELP = "compare a recorded run's outputs with the host reference (or .npy files): errors, SNR"


def configure(parser: argparse.ArgumentParser) -> None:
    from etu.runner.compare import DEFAULT_ATOL, DEFAULT_RTOL

    parser.add_argument("session", type=Path, help="a session folder (.etu/sessions/...)")
    parser.add_argument(
        "--reference", nargs="+", default=["host"], metavar="host|FILE.npy",
        help="host (the host reference of etu reference, same inputs) or one .npy per output",
    )  # fmt: skip
    parser.add_argument("--pte", type=Path, help="the program, when the session names none")
    parser.add_argument(
        "--tosa", type=Path, metavar="PATH",
        help="a delegated program's TOSA graphs (a .tosa file or a folder; default: vela/ "
        "beside the program), as etu reference takes them",
    )  # fmt: skip
    parser.add_argument("--rtol", type=float, default=DEFAULT_RTOL, help="relative tolerance")
    parser.add_argument("--atol", type=float, default=DEFAULT_ATOL, help="absolute tolerance")
    parser.add_argument("--json", action="store_true", help="one JSON object")


def run(args: argparse.Namespace, *, out: TextIO, err: TextIO) -> int:
    """0 all outputs pass, 1 some fail, 2 cannot compare."""
    from etu.runner.compare import CompareError, compare_session

    reference = "host" if args.reference == ["host"] else [Path(p) for p in args.reference]
    try:
        record = compare_session(
            args.session, reference=reference, pte=args.pte, rtol=args.rtol, atol=args.atol,
            tosa=args.tosa,
        )  # fmt: skip
    except (CompareError, OSError, ValueError, RuntimeError) as error:
        raise CommandError(
            f"{args.session}: {first_line(str(error)) or describe_error(error)}"
        ) from None
    if args.json:
        out.write(json.dumps(record) + "\n")
    else:
        write_text(record, args.rtol, args.atol, out)
    return 0 if record["passed"] else 1


def _metrics_line(o: dict) -> str:
    """One side's figures: exact integer counts when there are some, the float metrics."""
    cosine = "n/a" if o["cosine_similarity"] is None else f"{o['cosine_similarity']:.6f}"
    snr = "inf" if o["snr_db"] is None else f"{o['snr_db']:.1f} dB"
    exact = ""
    if o.get("differing") is not None:
        lsb = "n/a" if o.get("max_lsb") is None else str(o["max_lsb"])
        unit = f" {o['integer_dtype']}" if o.get("integer_dtype") else ""
        exact = f"exact{unit}: {o['differing']} differ, max {lsb} LSB  "
    return (f"n={o['count']}  {exact}max|e|={o['max_abs_error']:.3g}  "
            f"mean|e|={o['mean_abs_error']:.3g}  rmse={o['rmse']:.3g}  cos={cosine}  "
            f"snr={snr}  worst at [{o['worst_index']}]")  # fmt: skip


def write_text(record: dict, rtol: float, atol: float, out: TextIO) -> None:
    """The verdict per output first (deployment, quantisation), then each side's figures."""
    from etu.runner.io_quantization import io_line, real_formula

    if record.get("simulated"):
        out.write(f"{record['simulated_note']}\n")
    for o in record["outputs"]:
        verdict = o.get("verdict") or ("PASS" if o["passed"] else "FAIL")
        out.write(f"output {o['index']}: {'PASS' if o['passed'] else 'FAIL'} · {verdict}\n")
    for index in record["missing_outputs"]:
        out.write(f"output {index}: not printed by the target\n")
    out.write(f"reference: {record['reference']} (rtol {rtol:g}, atol {atol:g})\n")
    for note in record.get("reference_notes") or []:
        out.write(f"  reference note: {note}\n")
    out.write(f"float model: {record.get('quantization_note') or 'not known'}\n")
    if record.get("io_quantization"):
        for q in record["io_quantization"]:
            out.write(f"  {io_line(q)}\n")
    for o in record["outputs"]:
        deployment = o.get("deployment") or o
        out.write(f"output {o['index']} deployment (reference → target): "
                  f"{_metrics_line(deployment)}\n")  # fmt: skip
        if o.get("quantization"):
            out.write(f"output {o['index']} quantisation (float model → reference): "
                      f"{_metrics_line(o['quantization'])}\n")  # fmt: skip
        if o.get("target_integers") is not None and o.get("io_quantization"):
            q = o["io_quantization"]
            shown = " ".join(str(v) for v in o["target_integers"][:8])
            more = " …" if len(o["target_integers"]) > 8 else ""
            out.write(f"  target {q['integer_dtype']}: {shown}{more} (real = {real_formula(q)})\n")
        if o["note"]:
            out.write(f"  note: {o['note']}\n")
