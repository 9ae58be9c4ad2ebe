"""etu compare: a run's outputs against the host reference (ExecuTorch's host kernels, each
Ethos-U delegate through the TOSA reference model) or saved arrays."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TextIO

from etu.parsers.errors import describe_error, first_line
from etu.tui.cli.errors import CommandError
from etu.tui.cli.sessions import add_workspace_options, sessions_folder

HELP = "compare a recorded run's outputs with the host reference (or .npy files): errors, SNR"


def configure(parser: argparse.ArgumentParser) -> None:
    from etu.runner.compare import DEFAULT_ATOL, DEFAULT_RTOL
    from etu.runner.layers import DEFAULT_SQNR_THRESHOLD_DB

    parser.add_argument(
        "session", nargs="?",
        help="the session: its folder, name, or a unique name prefix (as etu report takes "
        "it); optional with --layers --pte PROGRAM.pte",
    )  # fmt: skip
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
    parser.add_argument(
        "--layers", action="store_true",
        help="also compare every layer with the float model (SQNR, cosine, max error; the "
        "first below --sqnr-threshold and the largest drop marked)",
    )  # fmt: skip
    parser.add_argument(
        "--sqnr-threshold", type=float, default=DEFAULT_SQNR_THRESHOLD_DB, metavar="DB",
        help=f"with --layers: mark the first layer below this SQNR (default "
        f"{DEFAULT_SQNR_THRESHOLD_DB:g} dB)",
    )  # fmt: skip
    parser.add_argument(
        "--inputs", metavar="FILE.npy|FILE.npz|random:SEED",
        help="with --layers --pte (no session): the inputs to compare the layers on, as etu "
        "reference takes them; default all ones (a session's are the ones its run read)",
    )  # fmt: skip
    parser.add_argument("--json", action="store_true", help="one JSON object")
    add_workspace_options(parser)


def _session_folder(args: argparse.Namespace) -> Path:
    """The session ``args.session`` names, resolved as etu report and etu diff resolve it;
    anything else a one-line "no such session"."""
    from etu.runner.history import resolve_session, session_problem

    root = sessions_folder(args)
    folder = resolve_session(args.session, root)
    if folder is None:
        raise CommandError(session_problem(args.session, root))
    return folder


def _named_once(folder: Path, message: str) -> str:
    """``message`` led by the session folder, unless it names it already."""
    return message if str(folder) in message else f"{folder}: {message}"


def run(args: argparse.Namespace, *, out: TextIO, err: TextIO) -> int:
    """0 all outputs pass, 1 some fail, 2 cannot compare."""
    from etu.runner.compare import CompareError, compare_session

    if args.session is None:
        if not (args.layers and args.pte is not None):
            raise CommandError("a session folder is needed (or --layers --pte PROGRAM.pte)")
        from etu.tui.cli.reference import inputs_argument

        record = program_layers_record(args.pte, args, inputs_argument(args.inputs))
        if args.json:
            out.write(json.dumps(record) + "\n")
        else:
            write_layers_text(record, out)
        return 0
    if args.inputs is not None:  # a run's outputs compare on the inputs it read
        raise CommandError("--inputs is for --layers --pte PROGRAM.pte without a session: a "
                           "session is compared on the inputs its run read")  # fmt: skip
    folder = _session_folder(args)
    reference = "host" if args.reference == ["host"] else [Path(p) for p in args.reference]
    try:
        record = compare_session(
            folder, reference=reference, pte=args.pte, rtol=args.rtol, atol=args.atol,
            tosa=args.tosa,
        )  # fmt: skip
    except (CompareError, OSError, ValueError, RuntimeError) as error:
        raise CommandError(
            _named_once(folder, first_line(str(error)) or describe_error(error))
        ) from None
    if args.layers:
        from etu.runner.compare import session_program_path

        program = session_program_path(folder, args.pte)
        if program is None:
            raise CommandError(f"{folder}: the session names no program file; pass "
                               "--pte PROGRAM.pte")  # fmt: skip
        layers = program_layers_record(program, args, _session_inputs(folder), folder)
        record = {**record, "layers": layers["layers"], "layers_summary": layers["layers_summary"]}
    if args.json:
        out.write(json.dumps(record) + "\n")
    else:
        write_text(record, args.rtol, args.atol, out)
        if args.layers:
            write_layers_text({**record, "program": str(program)}, out)
    return 0 if record["passed"] else 1


def _session_inputs(folder: Path) -> Path | None:
    """The inputs the session's run read (its saved file; None: all ones), as the outputs'
    comparison takes them: the layers are compared on the same ones."""
    from etu.runner.compare import CompareError, inputs_file, session_inputs, session_outputs

    try:
        inputs = session_inputs(session_outputs(folder)[1])
        if inputs["kind"] == "bundle":
            raise CompareError("a BundleIO run whose inputs etu did not record: compare "
                               "its layers with --layers --pte PROGRAM.pte (all ones)")  # fmt: skip
        return inputs_file(inputs)
    except CompareError as error:
        raise CommandError(_named_once(folder, first_line(str(error)))) from None


def program_layers_record(
    program: Path, args: argparse.Namespace, inputs: Path | str | None = None,
    session: Path | None = None,
) -> dict:  # fmt: skip
    """The per-layer comparison of ``program`` (``--layers``) on ``inputs`` (a file,
    ``random:SEED``, None: all ones), with the target's layers where ``session`` kept them,
    or a one-line error."""
    from etu.runner.layers import LayersError, program_layers

    if not Path(program).is_file():
        raise CommandError(f"{program}: no such program file")
    try:
        return program_layers(Path(program), tosa=args.tosa, inputs=inputs,
                              threshold_db=args.sqnr_threshold, session=session)  # fmt: skip
    except (LayersError, OSError, ValueError, RuntimeError) as error:
        raise CommandError(first_line(str(error)) or describe_error(error)) from None


def _number(value: float | None, form: str, none: str) -> str:
    return none if value is None else format(value, form)


def _module_label(layer: dict) -> str:
    """The layer's nn.Module path; the model's own forward, or not known, said so."""
    from etu.parsers.text import printable

    module = layer.get("module")
    if module is None:
        return "?"
    return printable(module) if module else "(forward)"


def write_layers_text(record: dict, out: TextIO) -> None:
    """One row per layer in graph order, the markers beside the rows they name."""
    from etu.parsers.text import printable as neutralise

    summary = record["layers_summary"]
    threshold = summary["sqnr_threshold_db"]
    out.write(f"layers of {record['program']} against {summary['float_model']} (inputs "
              f"{summary['inputs']}; SQNR threshold {threshold:g} dB)\n")  # fmt: skip
    several = len({layer["delegate"] for layer in record["layers"]} - {None}) > 1
    if several:
        out.write("layer@N: a layer of delegate N (each delegate's graph names its own)\n")
    target = summary.get("target") if isinstance(summary.get("target"), dict) else None
    column = f" {'target':>10}" if target and target.get("source") else ""
    out.write(f"{'#':>3}  {'layer':<28} {'module':<20} {'unit':<4} {'SQNR dB':>8} "
              f"{'real':>6} {'cosine':>9} {'max|e|':>9}{column}\n")  # fmt: skip
    drop = summary.get("largest_drop") or {}
    for k, layer in enumerate(record["layers"]):
        name = layer["name"] + (f"@{layer['delegate']}" if several and layer["delegate"] is not
                                None else "")  # fmt: skip
        marks = []
        if layer.get("first_below_threshold"):
            marks.append(f"first below {threshold:g} dB")
        if layer.get("largest_drop"):
            marks.append(f"largest drop ({drop.get('drop_db', 0):.1f} dB)")
        if layer.get("weakest"):
            marks.append("weakest")
        if layer.get("note"):
            marks.append(layer["note"])
        sqnr = "exact" if layer["sqnr_db"] is None and layer["cosine"] is not None else (
            _number(layer["sqnr_db"], ".1f", "n/a"))  # fmt: skip
        out.write(
            f"{k:>3}  {neutralise(name):<28} {_module_label(layer):<20} "
            f"{layer['unit']:<4} {sqnr:>8} "
            f"{_number(layer.get('program_scale_sqnr_db'), '.1f', '-'):>6} "
            f"{_number(layer['cosine'], '.6f', 'n/a'):>9} "
            f"{_number(layer['max_abs_error'], '.3g', 'n/a'):>9}"
            f"{f' {_target_cell(layer):>10}' if column else ''}"
            f"{'  ← ' + '; '.join(marks) if marks else ''}\n"
        )
    out.write(
        "SQNR dB: on each layer's fitted scale; real: on the scale calibration chose "
        "(the program's quantize kernel, the compile record), clipping included\n"
    )
    weakest = next((layer for layer in record["layers"] if layer.get("weakest")), None)
    if weakest is not None:
        out.write(f"weakest layer: {neutralise(weakest['name'])} ({_module_label(weakest)}, "
                  f"{weakest['sqnr_db']:.1f} dB)\n")  # fmt: skip
    first = summary.get("first_below_threshold")
    out.write(f"first below {threshold:g} dB: {neutralise(first) if first else 'none'}\n")
    out.write(f"note: {summary['note']}\n")
    if target is not None:
        out.write(f"target: {_target_summary(target)}\n")


def _target_cell(layer: dict) -> str:
    from etu.runner.target_layers import target_cell

    return target_cell(layer) or "n/a"  # n/a: the run kept none for this layer


def _target_summary(target: dict) -> str:
    from etu.parsers.text import printable
    from etu.runner.target_layers import target_verdict

    if not target.get("source"):
        return printable(str(target.get("note") or ""))
    read = target.get("read", 0)
    verdict = target_verdict(target)[0]
    note = f"; {target['note']}" if target.get("note") else ""
    return (f"{read} of {target.get('cpu_layers', 0)} CPU layers read from "
            f"{printable(str(target['source']))}: {verdict}{note}")  # fmt: skip


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
    if record.get("inputs"):
        from etu.parsers.text import printable
        from etu.runner.compare import inputs_text

        out.write(f"inputs: {printable(inputs_text(record['inputs']))}\n")
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
