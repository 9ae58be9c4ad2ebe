"""Vela's output, read back: one :class:`VelaReport` from an output folder or a single file.

Vela (ethos-u-vela) writes a summary CSV per run, a per-layer CSV with
``--verbose-performance``, a debug XML with ``--enable-debug-db`` and prints a report on stdout
(which ExecuTorch does not save; etu's compile step keeps it as ``vela_stdout.txt``). The
format modules are :mod:`etu.parsers.vela_csv`, :mod:`etu.parsers.vela_debug_db` and
:mod:`etu.parsers.vela_stdout`; this module finds the files and picks the one run they describe.
The report it fills in (and its JSON record) is :mod:`etu.parsers.vela_report`, re-exported here
so ``from etu.parsers.vela import ...`` keeps working.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, TypeVar

from etu.parsers.errors import ParseError, WrongKindError
from etu.parsers.files import open_regular, read_regular
from etu.parsers.vela_csv import (
    MEMORY_AREAS,
    PER_LAYER_UNITS,
    SUMMARY_COLUMNS,
    SUMMARY_UNITS,
    LayerRow,
    Number,
    PerLayerCsv,
    SummaryCsv,
    decode_text,
    is_finite_number,
    looks_like_per_layer_header,
    looks_like_summary_header,
    parse_per_layer_csv,
    parse_summary_csv,
)
from etu.parsers.vela_debug_db import DebugDb, parse_debug_db
from etu.parsers.vela_report import HEADLINE_UNITS, VelaCall, VelaReport, vela_record
from etu.parsers.vela_stdout import STDOUT_SUMMARY_UNITS, VelaStdout, parse_vela_stdout

__all__ = [
    "HEADLINE_UNITS",
    "MEMORY_AREAS",
    "PER_LAYER_UNITS",
    "STDOUT_SUMMARY_UNITS",
    "SUMMARY_COLUMNS",
    "SUMMARY_UNITS",
    "DebugDb",
    "LayerRow",
    "PerLayerCsv",
    "SummaryCsv",
    "VelaCall",
    "VelaReport",
    "VelaStdout",
    "load_vela_report",
    "parse_debug_db",
    "parse_per_layer_csv",
    "parse_summary_csv",
    "parse_vela_stdout",
    "vela_record",
]

STDOUT_NAMES = ("vela_stdout.txt", "stdout.txt")  # etu's capture first, then a shell redirect
COMPILE_RECORD_NAME = "etu_compile.json"  # written by runner/aot.py beside Vela's files
MAX_FILE_BYTES = 512 * 1024 * 1024  # Vela's text outputs are KB to a few MB


# --------------------------------------------------------------------------- loading


def load_vela_report(path: str | os.PathLike[str], *, strict: bool = True) -> VelaReport:
    """Read a Vela output folder, or one summary/per-layer CSV, debug XML or saved stdout.

    A folder is searched for ``*_summary_*.csv``, ``*_per-layer.csv``, ``*_debug.xml``,
    ``vela_stdout.txt``/``stdout.txt`` and ``etu_compile.json`` (ExecuTorch's intermediates
    layout, with the files under ``output/``, is followed too). A file that cannot be read
    raises :class:`ParseError` naming it (with ``strict=False`` it becomes a warning instead);
    partial data is returned with warnings saying what is missing.
    """
    target = Path(path)
    if target.is_dir():
        files = _folder_files(target)
        if not any(files[kind] for kind in ("summary", "per_layer", "debug", "stdout")):
            raise WrongKindError(
                "no Vela output here (no *_summary_*.csv, *_per-layer.csv, *_debug.xml"
                " or vela_stdout.txt)",
                source=str(target),
            )
    elif target.exists():  # a FIFO or a device is refused by _sniff, never opened blocking
        files = _empty_files()
        files[_sniff(target)].append(target)
        record = target.parent / COMPILE_RECORD_NAME
        if record.is_file() and record != target:
            files["record"].append(record)
    else:
        raise ParseError("no such file or folder", source=str(target))
    return _build(files, strict)


def _empty_files() -> dict[str, list[Path]]:
    return {"summary": [], "per_layer": [], "debug": [], "stdout": [], "record": []}


def _folder_files(folder: Path) -> dict[str, list[Path]]:
    files = _empty_files()
    try:
        entries = sorted(p for p in folder.iterdir() if p.is_file())
    except OSError as error:
        raise ParseError(f"cannot list: {error.strerror or error}", source=str(folder)) from None
    for entry in entries:
        name = entry.name
        if name.endswith(".csv") and "_summary_" in name:
            files["summary"].append(entry)
        elif name.endswith("_per-layer.csv"):
            files["per_layer"].append(entry)
        elif name.endswith("_debug.xml"):
            files["debug"].append(entry)
        elif name in STDOUT_NAMES:
            files["stdout"].append(entry)
        elif name == COMPILE_RECORD_NAME:
            files["record"].append(entry)
        elif name.endswith(".csv"):
            kind = _sniff_csv(entry)
            if kind:
                files[kind].append(entry)
    files["stdout"].sort(key=lambda p: STDOUT_NAMES.index(p.name))
    vela_files = files["summary"] or files["per_layer"] or files["debug"] or files["stdout"]
    nested = folder / "output"
    if not vela_files and nested.is_dir():  # ExecuTorch's <intermediates>/output/out_*
        inner = _folder_files(nested)
        inner["record"] = files["record"] + inner["record"]
        return inner
    return files


def _read(path: Path) -> bytes:
    return read_regular(path, "a Vela output file", MAX_FILE_BYTES)


def _head(path: Path, size: int) -> bytes:
    """The first ``size`` bytes of a regular file (a FIFO or a device is refused)."""
    fd, _ = open_regular(path, "a Vela output file", MAX_FILE_BYTES)
    try:
        return os.read(fd, size)
    except OSError as error:
        raise ParseError(f"cannot read: {error.strerror or error}", source=str(path)) from None
    finally:
        os.close(fd)


def _sniff_csv(path: Path) -> str | None:
    try:
        head = _head(path, 4096)
    except ParseError:
        return None
    first = head.decode("utf-8", "replace").lstrip("\ufeff").splitlines()[:1]
    cells = first[0].split(",") if first else []
    if looks_like_summary_header(cells):
        return "summary"
    if looks_like_per_layer_header(cells):
        return "per_layer"
    return None


def _sniff(path: Path) -> str:
    """Which kind of Vela file one file is, from its content (names can be anything)."""
    kind = _sniff_csv(path)
    if kind:
        return kind
    head = _head(path, 512)
    text = head.decode("utf-8", "replace").lstrip("\ufeff \t\r\n")
    if text.startswith("<") or path.suffix.lower() == ".xml":
        return "debug"
    return "stdout"


def _build(files: dict[str, list[Path]], strict: bool) -> VelaReport:
    report = VelaReport()
    loader = _Loader(report, strict)

    stdout: VelaStdout | None = None
    others = files["summary"] or files["per_layer"] or files["debug"]
    for path in files["stdout"][:1]:
        if others and _size(path) == 0:  # Vela printed nothing that was captured
            report.warnings.append(f"{path}: empty; not read")
            continue
        stdout = loader.load(path, parse_vela_stdout)
    for path in files["stdout"][1:]:
        report.warnings.append(f"{path}: not read ({files['stdout'][0].name} was used)")
    if stdout is not None:
        if not stdout.recognised and not others:
            loader.fail(
                WrongKindError(
                    "not a Vela output file (no summary CSV or per-layer header, no debug"
                    " XML and no Vela report in the text)",
                    source=str(files["stdout"][0]),
                )
            )
        elif not stdout.recognised:
            report.warnings.append(f"{files['stdout'][0]}: no Vela report found in the text")
        _take_stdout(report, stdout)

    mtimes: list[float] = []
    summary_styles: list[str] = []
    for path in files["summary"]:
        parsed = loader.load(path, parse_summary_csv)
        if parsed is None:
            continue
        report.summaries.extend(parsed.rows)
        report.summary_sources.extend([str(path)] * len(parsed.rows))
        mtimes.extend([_mtime(path)] * len(parsed.rows))
        if parsed.number_style:
            summary_styles.append(parsed.number_style)
    report.primary = _choose_primary(report, mtimes)

    network = report.summary.get("network") if report.summary else None
    per_layer_path = _choose(files["per_layer"], network, "_per-layer.csv", report)
    if per_layer_path is not None:
        per_layer = loader.load(per_layer_path, parse_per_layer_csv)
        if per_layer is not None:
            report.per_layer = per_layer.rows
            report.per_layer_layout = per_layer.layout
            report.per_layer_from = "csv"
    if report.per_layer_from is None and stdout is not None and stdout.per_layer:
        report.per_layer = stdout.per_layer
        report.per_layer_layout = stdout.per_layer_layout
        report.per_layer_from = "stdout"
        report.warnings.append(
            "per-layer rows come from Vela's stdout table (values rounded to 2 decimals)"
        )

    debug_path = _choose(files["debug"], network, "_debug.xml", report)
    if debug_path is not None:
        debug = loader.load(debug_path, parse_debug_db)
        if debug is not None:
            report.debug_db = debug.tables
            report.debug_db_layout = debug.layout

    for path in files["record"][:1]:
        report.compile_record = _compile_record(path, report)
    _version(report, stdout)
    report.compiler_core = (
        report.per_layer_layout
        or report.debug_db_layout
        or {"float": "legacy", "integer": "regor"}.get(summary_styles[0] if summary_styles else "")
    )
    _check_consistency(report)
    report.calls = _calls(report, stdout)
    order = [
        str(p)
        for kind in ("summary", "per_layer", "debug", "stdout", "record")
        for p in files[kind]
    ]
    report.sources.sort(key=lambda name: order.index(name) if name in order else len(order))
    return report


class _HasWarnings(Protocol):
    warnings: list[str]


_Parsed = TypeVar("_Parsed", bound=_HasWarnings)


class _Loader:
    """Parse one file, record it in ``sources`` and prefix its warnings with its name."""

    def __init__(self, report: VelaReport, strict: bool) -> None:
        self.report = report
        self.strict = strict

    def load(self, path: Path, parse: Callable[[bytes, str], _Parsed]) -> _Parsed | None:
        name = str(path)
        try:
            parsed = parse(_read(path), name)
        except ParseError as error:
            self.fail(error.with_source(name))
            return None
        self.report.sources.append(name)
        self.report.warnings.extend(f"{path.name}: {w}" for w in parsed.warnings)
        return parsed

    def fail(self, error: ParseError) -> None:
        if self.strict:
            raise error
        self.report.warnings.append(str(error))


def _take_stdout(report: VelaReport, stdout: VelaStdout) -> None:
    report.stdout = stdout.summary
    report.stdout_summaries = stdout.summaries
    report.errors.extend(stdout.errors)
    report.vela_warnings.extend(stdout.vela_warnings)
    report.vela_info.extend(stdout.info)
    report.allocation_peak_bytes = stdout.allocation_peak_bytes
    summary = stdout.summary or {}
    report.npu_operators = summary.get("npu_operators")
    report.cpu_operators = summary.get("cpu_operators")
    report.npu_operator_names = summary.get("npu_operator_names")
    report.cpu_operator_names = summary.get("cpu_operator_names")
    if len(stdout.summaries) > 1:
        report.warnings.append(
            f"Vela's stdout holds {len(stdout.summaries)} network summaries (one per Vela call,"
            " i.e. per Ethos-U delegate); the headline is the last call, the total sums them"
        )


def _calls(report: VelaReport, stdout: VelaStdout | None) -> list[VelaCall]:
    """One call per stdout summary when Vela was called several times, else the headline."""
    if stdout is not None and len(stdout.summaries) > 1:
        calls = []
        for index, summary in enumerate(stdout.summaries):
            layers = stdout.summary_layers[index] if index < len(stdout.summary_layers) else []
            cycles = summary.get("cycles_total")
            if not is_finite_number(cycles):
                values = [row.cycles for row in layers]
                known = bool(values) and all(is_finite_number(v) for v in values)
                cycles = sum(v for v in values if v is not None) if known else None
            calls.append(
                VelaCall(
                    index=index,
                    network=summary.get("network"),
                    cycles=cycles,
                    nn_macs=_finite(summary.get("nn_macs")),
                    sram_used_kib=_finite(summary.get("sram_memory_used")),
                    dram_used_kib=_finite(summary.get("dram_memory_used")),
                    on_chip_flash_used_kib=_finite(summary.get("on_chip_flash_memory_used")),
                    off_chip_flash_used_kib=_finite(summary.get("off_chip_flash_memory_used")),
                    npu_operators=summary.get("npu_operators"),
                    cpu_operators=summary.get("cpu_operators"),
                    layers=layers,
                    source="stdout",
                )
            )
        return calls
    if not report.summaries and not report.stdout_summaries:
        return []
    return [
        VelaCall(
            index=0,
            network=report.network,
            cycles=report.cycles,
            nn_macs=report.nn_macs,
            sram_used_kib=report.sram_used_kib,
            dram_used_kib=report.dram_used_kib,
            on_chip_flash_used_kib=report.on_chip_flash_used_kib,
            off_chip_flash_used_kib=report.off_chip_flash_used_kib,
            npu_operators=report.npu_operators,
            cpu_operators=report.cpu_operators,
            layers=list(report.per_layer),
            source="summary",
        )
    ]


def _finite(value: Any) -> Number | None:
    return value if is_finite_number(value) else None


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return -1


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _choose_primary(report: VelaReport, mtimes: list[float]) -> int:
    """Several summary rows (several runs shared an output folder): pick the one the stdout
    describes, else the newest file, and say so."""
    if len(report.summaries) <= 1:
        return 0
    chosen = None
    if report.stdout:
        keys = ("system_config", "accelerator_configuration", "memory_mode")
        for index, row in enumerate(report.summaries):
            if all(report.stdout.get(k) in (None, row.get(k)) for k in keys):
                chosen = index
    if chosen is None:
        chosen = max(range(len(mtimes)), key=lambda i: (mtimes[i], i))
    files = sorted(set(report.summary_sources))
    report.warnings.append(
        f"{len(report.summaries)} summary rows in {len(files)} file(s) (Vela names its files by"
        f" system config only, so runs sharing an output folder pile up); headline numbers use"
        f" {Path(report.summary_sources[chosen]).name} row {chosen + 1}"
    )
    return chosen


def _choose(paths: list[Path], network: Any, suffix: str, report: VelaReport) -> Path | None:
    if not paths:
        return None
    chosen = paths[0]
    if isinstance(network, str):
        for path in paths:
            if path.name == f"{network}{suffix}":
                chosen = path
    for path in paths:
        if path != chosen:
            report.warnings.append(f"{path}: not read ({chosen.name} matches the summary)")
    return chosen


def _compile_record(path: Path, report: VelaReport) -> dict[str, Any] | None:
    """etu's own record of the compile; a broken one is a warning, never fatal."""
    try:
        text, _ = decode_text(_read(path), str(path), "a JSON file")
        record = json.loads(text)
    except (ParseError, ValueError, RecursionError) as error:
        report.warnings.append(f"{path}: not readable JSON ({str(error).splitlines()[0]})")
        return None
    if not isinstance(record, dict):
        report.warnings.append(f"{path}: not a JSON object")
        return None
    report.sources.append(str(path))
    return record


def _version(report: VelaReport, stdout: VelaStdout | None) -> None:
    said = stdout.vela_version if stdout else None
    recorded = None
    versions = (report.compile_record or {}).get("versions")
    if isinstance(versions, dict) and isinstance(versions.get("ethos-u-vela"), str):
        recorded = versions["ethos-u-vela"]
    if said:
        report.vela_version, report.vela_version_from = said, "stdout"
        if recorded and recorded != said:
            report.warnings.append(
                f"Vela's stdout says version {said} but {COMPILE_RECORD_NAME} records {recorded}"
            )
    elif recorded:
        report.vela_version, report.vela_version_from = recorded, COMPILE_RECORD_NAME


def _check_consistency(report: VelaReport) -> None:
    """Files from different runs in one folder disagree: say so rather than mix them."""
    summary = report.summary
    total = summary.get("cycles_total")
    if is_finite_number(total) and report.per_layer and report.per_layer_from == "csv":
        values = [row.cycles for row in report.per_layer]
        if all(is_finite_number(v) for v in values):
            layer_sum = sum(v for v in values if v is not None)
            if abs(layer_sum - total) > 0.5:
                report.warnings.append(
                    f"per-layer Op Cycles sum to {layer_sum:g} but cycles_total is {total:g}"
                    " (files from different runs?)"
                )
    if summary and report.stdout:
        for key in ("accelerator_configuration", "system_config", "memory_mode", "cycles_total"):
            mine, theirs = summary.get(key), report.stdout.get(key)
            if mine is None or theirs is None:
                continue
            same = (
                abs(mine - theirs) < 1
                if is_finite_number(mine) and is_finite_number(theirs)
                else mine == theirs
            )
            if not same:
                report.warnings.append(
                    f"summary CSV and Vela's stdout disagree on {key}: {mine} vs {theirs}"
                    " (files from different runs?)"
                )
    if report.summaries or report.failed:
        return
    if report.stdout is not None:
        report.warnings.append("no summary CSV: headline numbers come from Vela's stdout (rounded)")
    else:
        report.warnings.append("no summary CSV was read")
