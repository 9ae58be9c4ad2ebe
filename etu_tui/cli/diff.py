"""etu diff: what changed between two sessions, two programs or two Vela outputs."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TextIO

from etu.tui.cli.errors import CommandError
from etu.tui.cli.sessions import add_workspace_options, sessions_folder
from etu.tui.numbers import number, percent

HELP = "compare two sessions, two .pte programs or two Vela outputs (exit 1 when they differ)"
PROGRAM_SUFFIXES = (".pte", ".bpte")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "a", metavar="A", help="a session (folder, name or prefix), .pte or Vela output"
    )
    parser.add_argument("b", metavar="B", help="the same kind of thing as A")
    parser.add_argument(
        "--rtol", type=float, default=1e-5, help="relative tolerance (default 1e-5)"
    )
    parser.add_argument(
        "--atol", type=float, default=1e-8, help="absolute tolerance (default 1e-8)"
    )
    add_workspace_options(parser)
    parser.add_argument("--json", action="store_true", help="one JSON object")


def run(args: argparse.Namespace, *, out: TextIO, err: TextIO) -> int:
    from etu.runner.diff import DiffError, Tolerance, diff_programs, diff_sessions, diff_vela
    from etu.runner.history import resolve_session

    tol = Tolerance(rtol=args.rtol, atol=args.atol)
    a, b = Path(args.a), Path(args.b)
    try:
        if a.suffix in PROGRAM_SUFFIXES or b.suffix in PROGRAM_SUFFIXES:
            result = diff_programs(a, b, tol)
        else:
            root = sessions_folder(args)
            sa, sb = resolve_session(args.a, root), resolve_session(args.b, root)
            if sa is not None and sb is not None:
                result = diff_sessions(sa, sb, tol)
                _mark_simulated(result, sa, sb)
            elif sa is None and sb is None and a.exists() and b.exists():
                result = diff_vela(a, b, tol)
            else:
                missing = args.a if sa is None else args.b
                raise DiffError(f"{missing}: not a session under {root}, a .pte or a Vela output")
    except DiffError as error:
        raise CommandError(f"{error}") from None
    if args.json:
        out.write(json.dumps(result) + "\n")
    else:
        out.write(format_diff(result))
    return 0 if result["equal"] else 1


def _mark_simulated(result: dict, a: Path, b: Path) -> None:
    """Which sides the etu stand-in FVP printed (their figures and outputs are made up)."""
    from etu.runner.history import read_meta

    sides = [name for name, folder in (("A", a), ("B", b)) if read_meta(folder).get("simulated")]
    result["simulated"] = sides
    result["simulated_note"] = (
        f"SIMULATED: {' and '.join(sides)} ran on the etu stand-in FVP; its cycles and "
        "counters are made up and no model of the hardware computed its outputs, so what "
        "changed proves nothing about a model or a board"
    ) if sides else None  # fmt: skip


def _rows(items: list[dict], all_rows: bool = False) -> list[str]:
    lines = []
    for item in items:
        if item["equal"] and not all_rows:
            continue
        pct = percent(item.get("percent"), signed=True, missing="")
        pct = f" ({pct})" if pct else ""
        delta = number(item.get("delta"), signed=True, missing="")
        delta = f"  {delta}" if delta else ""
        mark = "=" if item["equal"] else "≠"
        label = item.get("label", item["name"])
        lines.append(
            f"  {mark} {label:<34} {number(item['a']):>16} → {number(item['b']):<16}{delta}{pct}"
        )
    return lines


def format_diff(result: dict) -> str:
    from etu.parsers.text import printable

    lines: list[str] = []
    kind = result["kind"]
    if kind == "sessions":
        a, b = result["a"], result["b"]
        if result.get("simulated_note"):
            lines.append(result["simulated_note"])
        for side, name in ((a, "A"), (b, "B")):
            program = f"{side['program']['name']} {side['program']['short']}"
            lines.append(f"{name} {side['id']}  {side['target']}  {program}")
        ending = result["ending"]
        if ending["changed"]:
            lines.append(f"ending: {ending['a']} → {ending['b']}")
            lines.append(f"  A: {printable(ending['a_proof'])}")
            lines.append(f"  B: {printable(ending['b_proof'])}")
        else:
            lines.append(f"ending: {ending['a']} (both)")
        for title, key in (("cycles", "cycles"), ("PMU counters", "counters"),
                           ("allocators", "allocators")):  # fmt: skip
            changed = _rows(result[key])
            lines.append(f"{title}:" + ("" if changed else " no change"))
            lines.extend(changed)
        if result.get("npu_layers"):  # both runs kept an FVP PMU trace
            layers = [{**r, "name": printable(r["name"])[:34]} for r in result["npu_layers"]]
            changed = _rows(layers)
            lines.append("NPU cycles per layer:" + ("" if changed else " no change"))
            lines.extend(changed)
        lines.append("outputs:" + ("" if result["outputs"] else " none printed"))
        for o in result["outputs"]:
            mark = "=" if o["equal"] else "≠"
            lines.append(
                f"  {mark} output {o['index']}: {o['compared']} values, max |Δ| "
                f"{number(o['max_abs_diff'])}, mean |Δ| {number(o['mean_abs_diff'])}, "
                f"cosine {o['cosine_similarity']:.6f}"
            )
        losses = result.get("losses") or []
        if losses:
            lines.append("losses (etu compare's saved verdicts):")
        for loss in losses:
            for name in ("a", "b"):
                side = loss[name]
                said = printable(side["verdict"]) if side and side.get("verdict") else (
                    "not compared (etu compare SESSION)")  # fmt: skip
                lines.append(f"  {name.upper()} output {loss['index']}: {said}")
        d = result["first_divergence"]
        if d is None:
            lines.append("log: the same (timestamps and addresses masked)")
        else:
            lines.append(f"log: first differs at line {d['line']}")
            lines.append(f"  A: {printable(d['a']) if d['a'] is not None else '(ended)'}")
            lines.append(f"  B: {printable(d['b']) if d['b'] is not None else '(ended)'}")
    elif kind == "programs":
        lines.append(f"A {result['a']['file']}")
        lines.append(f"B {result['b']['file']}")
        ops = result["operators"]
        labels = {"added": "operators added", "removed": "operators removed",
                  "cpu_added": "now on the CPU", "cpu_removed": "no longer on the CPU"}  # fmt: skip
        for key, label in labels.items():
            if ops[key]:
                lines.append(f"{label}: {', '.join(ops[key])}")
        lines.append("NPU/CPU split:")
        lines.extend(_rows(result["split"], all_rows=True))
        lines.append(f"delegates: {len(result['delegates'])}")
        for d in result["delegates"]:
            if d["a"] is None or d["b"] is None:
                side = "B only" if d["a"] is None else "A only"
                one = d["a"] or d["b"]
                lines.append(
                    f"  delegate {d['index']} ({side}): {one['id']}, "
                    f"payload {one['payload_size']:,} B"
                )
            else:
                lines.extend(_rows(d["changes"]))
        lines.append("planned memory:")
        lines.extend(_rows(result["planned_memory"], all_rows=True))
        lines.append("sizes:")
        lines.extend(_rows(result["sizes"], all_rows=True))
        lines.append(f"select ops A: {result['a']['select_ops_list'] or '(none)'}")
        lines.append(f"select ops B: {result['b']['select_ops_list'] or '(none)'}")
    else:
        lines.append(f"A {result['a']['path']}")
        lines.append(f"B {result['b']['path']}")
        lines.append("Vela estimate (changes against A):")
        lines.extend(_rows(result["metrics"], all_rows=True))
    lines.append("equal" if result["equal"] else "different")
    return "\n".join(lines) + "\n"
