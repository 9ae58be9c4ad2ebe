"""Vela's two CSV files: ``<net>_summary_<SystemConfig>.csv`` and ``<net>_per-layer.csv``.

The summary CSV is written by Python's ``csv.writer`` (CRLF rows) with the same 52 columns in
every Vela from 3.12 to 5.2; it is still read column by column, by name, so an older, newer or
hand-edited file keeps whatever it has and the missing columns become warnings. The per-layer
CSV has two layouts: Regor's (``Original Operator, ..., Target, Staging Usage, ...``, written with
a bare ``",".join`` and no quoting) and the legacy Python core's (``TFLite_operator, ...``, a
``csv.writer`` table with two columns both named ``Network%``, repeated per NPU subgraph).

Every number Vela prints is an estimate from its performance model, not a measurement.
"""

from __future__ import annotations

import contextlib
import csv
import io
import itertools
import math
import re
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from etu.parsers.errors import FormatError, ParseError, TruncatedError, WrongKindError

Number = int | float

# --------------------------------------------------------------------------- shared text helpers

MEMORY_AREAS = ("sram", "dram", "on_chip_flash", "off_chip_flash")
AREA_LABELS = {  # Vela's display names (stdout, *_storage_area) → CSV identifier
    "SRAM": "sram",
    "DRAM": "dram",
    "On-chip Flash": "on_chip_flash",
    "Off-chip Flash": "off_chip_flash",
}

_INT = re.compile(r"[-+]?\d+\Z")
_FLOAT = re.compile(
    r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?\Z|[-+]?(?:nan|inf|infinity)\Z", re.IGNORECASE
)
_HEX = re.compile(r"0[xX][0-9a-fA-F]+\Z")
_MAX_NUMBER_TEXT = 64  # longer digit strings are not Vela numbers (and int() refuses > 4300)


def to_number(text: str, *, hex_ok: bool = False) -> Number | None:
    """``"42"`` → 42, ``"8704.0"`` → 8704.0, ``"NaN"`` → nan; anything else → None.

    Integers stay ``int`` and decimals stay ``float``, exactly as Vela formatted them (Regor
    writes integer bytes/cycles, the legacy core writes ``8704.0``).
    """
    value = text.strip()
    if not value or len(value) > _MAX_NUMBER_TEXT:
        return None
    if _INT.match(value):
        return int(value)
    if _FLOAT.match(value):
        return float(value)
    if hex_ok and _HEX.match(value):
        return int(value, 16)
    return None


def decode_text(data: bytes | str, source: str | None, what: str) -> tuple[str, list[str]]:
    """Bytes → text for a file Vela wrote with Python's default text I/O.

    A NUL byte or undecodable binary is a :class:`WrongKindError`. Non-UTF-8 text that is still
    plain text (Vela on a Windows box writes the locale code page) is read as Latin-1 with a
    warning rather than refused.
    """
    warnings: list[str] = []
    if isinstance(data, str):
        text = data
    else:
        raw = bytes(data)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            text = raw.decode("latin-1")
            controls = sum(1 for ch in text if ord(ch) < 32 and ch not in "\t\r\n")
            if "\x00" not in text and controls == 0:
                warnings.append(f"{what} is not UTF-8; read as Latin-1")
            else:
                raise WrongKindError(
                    f"binary data, not {what} (invalid UTF-8)",
                    offset=error.start,
                    source=source,
                ) from None
    nul = text.find("\x00")
    if nul >= 0:
        raise WrongKindError(f"binary data (NUL character), not {what}", offset=nul, source=source)
    return text.removeprefix("\ufeff"), warnings


@contextlib.contextmanager
def text_parse_errors(source: str | None) -> Iterator[None]:
    """Low-level csv/XML/number errors become one-line ParseErrors naming the file."""
    try:
        yield
    except ParseError as error:
        raise (error.with_source(source) if source else error) from None
    except (
        csv.Error,
        ElementTree.ParseError,
        UnicodeError,
        ValueError,
        OverflowError,
        RecursionError,
    ) as error:
        message = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise FormatError(message, source=source) from None


def short(text: str, limit: int = 40) -> str:
    """A cell or line quoted for a one-line message."""
    text = text.replace("\r", " ").replace("\n", " ")
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")


def is_finite_number(value: Any) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and (isinstance(value, int) or math.isfinite(value))
    )


# --------------------------------------------------------------------------- summary CSV


def _area_columns(suffixes: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(f"{area}_{suffix}" for area in MEMORY_AREAS for suffix in suffixes)


_TRAFFIC = (
    "feature_map_read_bytes",
    "feature_map_write_bytes",
    "weight_read_bytes",
    "weight_write_bytes",
    "total_bytes",
)

# The 52 columns of Vela 3.12 … 5.2, in file order (ethosu/vela/stats_writer.py).
SUMMARY_COLUMNS: tuple[str, ...] = (
    "experiment",
    "network",
    "accelerator_configuration",
    "system_config",
    "memory_mode",
    "core_clock",
    "arena_cache_size",
    *_area_columns(("bandwidth",)),
    "weights_storage_area",
    "feature_map_storage_area",
    "inferences_per_second",
    "batch_size",
    "inference_time",
    "passes_before_fusing",
    "passes_after_fusing",
    *_area_columns(("memory_used",)),
    "total_original_weights",
    "total_npu_encoded_weights",
    *_area_columns(_TRAFFIC),
    "nn_macs",
    "nn_tops",
    "cycles_npu",
    "cycles_sram_access",
    "cycles_dram_access",
    "cycles_on_chip_flash_access",
    "cycles_off_chip_flash_access",
    "cycles_total",
)

SUMMARY_TEXT_COLUMNS = frozenset(
    {
        "experiment",
        "network",
        "accelerator_configuration",
        "system_config",
        "memory_mode",
        "weights_storage_area",
        "feature_map_storage_area",
    }
)


def _summary_units() -> dict[str, str]:
    units = dict.fromkeys(SUMMARY_TEXT_COLUMNS, "text")
    units |= {
        "core_clock": "Hz",
        "arena_cache_size": "KiB (address-space maximum when unset)",
        "inferences_per_second": "1/s (NaN when inference_time is 0)",
        "batch_size": "count",
        "inference_time": "s (= cycles_total / core_clock)",
        "passes_before_fusing": "count (Regor: CPU + NPU ops; legacy: passes)",
        "passes_after_fusing": "count (Regor: ops after cascading; legacy: cascaded passes)",
        "total_original_weights": "bytes",
        "total_npu_encoded_weights": "bytes",
        "nn_macs": "MACs per inference",
        "nn_tops": "TOPS (nn_macs × 2 × inferences_per_second / 1e12)",
        "cycles_npu": "NPU cycles per inference",
        "cycles_total": "NPU cycles per inference (per op max of compute and memory, summed)",
    }
    for area in MEMORY_AREAS:
        units[f"{area}_bandwidth"] = "GiB/s design peak (decimal GB/s in Vela <= 3.12)"
        units[f"{area}_memory_used"] = "KiB"
        for suffix in _TRAFFIC:
            units[f"{area}_{suffix}"] = "bytes per inference"
        units[f"cycles_{area}_access"] = "cycles per inference"
    return units


SUMMARY_UNITS: dict[str, str] = _summary_units()

PER_LAYER_MARKERS = ("Op Cycles", "NNG Operator")


def looks_like_summary_header(cells: list[str]) -> bool:
    """At least three of Vela's summary column names (old files have fewer, never other ones)."""
    known = sum(1 for cell in cells if cell.strip() in SUMMARY_UNITS)
    return known >= 3


def looks_like_per_layer_header(cells: list[str]) -> bool:
    names = {cell.strip() for cell in cells}
    return all(marker in names for marker in PER_LAYER_MARKERS)


@dataclass(slots=True)
class SummaryCsv:
    """One summary CSV: its rows (usually one), every column under its CSV name."""

    rows: list[dict[str, Any]]
    columns: list[str]
    missing_columns: list[str] = field(default_factory=list)
    unknown_columns: list[str] = field(default_factory=list)
    # "integer": Regor prints whole bytes/cycles; "float": the legacy core prints ``8704.0``.
    number_style: str | None = None
    warnings: list[str] = field(default_factory=list)
    source: str | None = None


def parse_summary_csv(data: bytes | str, source: str | None = None) -> SummaryCsv:
    """Read ``<net>_summary_<SystemConfig>.csv``.

    Raises :class:`ParseError` when there is no usable header and data row. A missing column,
    a short (truncated) row or a non-numeric cell in a numeric column is a warning, and the
    cell is left out (missing) or ``None`` (not a number).
    """
    with text_parse_errors(source):
        text, warnings = decode_text(data, source, "a Vela summary CSV")
        if not text.strip():
            raise TruncatedError("empty file, not a Vela summary CSV", source=source)
        table = [row for row in csv.reader(io.StringIO(text, newline="")) if any(row)]
        if not table:
            raise TruncatedError("empty file, not a Vela summary CSV", source=source)
        header = [cell.strip() for cell in table[0]]
        if not looks_like_summary_header(header):
            if looks_like_per_layer_header(header):
                raise WrongKindError(
                    "a per-layer CSV, not a summary CSV", field="header", source=source
                )
            raise WrongKindError(
                f"not a Vela summary CSV (header starts {short(','.join(header), 60)})",
                field="header",
                source=source,
            )
        body = [row for row in table[1:] if [c.strip() for c in row] != header]
        if not body:
            raise TruncatedError("header row only, no data row", field="row 2", source=source)

        result = SummaryCsv(rows=[], columns=header, warnings=warnings, source=source)
        seen: set[str] = set()
        for name in header:
            if name in seen:
                result.warnings.append(f"column {name!r} appears twice; the first one is used")
            seen.add(name)
        result.missing_columns = [name for name in SUMMARY_COLUMNS if name not in seen]
        result.unknown_columns = [name for name in header if name not in SUMMARY_UNITS]
        if result.missing_columns:
            result.warnings.append(
                f"{len(result.missing_columns)} of Vela's {len(SUMMARY_COLUMNS)} summary columns"
                f" missing: {', '.join(result.missing_columns[:8])}"
                + (" …" if len(result.missing_columns) > 8 else "")
            )
        cut_last_row = not text.endswith(("\n", "\r"))
        for index, cells in enumerate(body):
            line = index + 2
            last = index == len(body) - 1
            result.rows.append(
                _summary_row(header, cells, line, last and cut_last_row, result.warnings)
            )
        result.number_style = _number_style(result.rows)
        return result


def _summary_row(
    header: list[str], cells: list[str], line: int, cut: bool, warnings: list[str]
) -> dict[str, Any]:
    if len(cells) < len(header):
        missing = header[len(cells) :]
        if cut and cells:
            missing = header[len(cells) - 1 : len(cells)] + missing
            cells = cells[:-1]  # the file ends inside this cell: its text is incomplete
        warnings.append(
            f"row {line} has {len(cells)} of {len(header)} cells (truncated file?);"
            f" no value for {', '.join(missing[:6])}" + (" …" if len(missing) > 6 else "")
        )
    elif len(cells) > len(header):
        warnings.append(f"row {line} has {len(cells) - len(header)} cells more than the header")
    elif cut:
        warnings.append(
            f"file ends without a newline: the last value ({header[-1]}) may be cut short"
        )
    row: dict[str, Any] = {}
    for name, cell in zip(header, cells, strict=False):
        if name in row:
            continue
        text = cell.strip()
        if name in SUMMARY_TEXT_COLUMNS:
            row[name] = text
            continue
        value = to_number(text)
        if value is None and (name in SUMMARY_UNITS or text):
            if name in SUMMARY_UNITS:
                warnings.append(f"row {line} column {name}: not a number: {short(text)}")
            else:
                row[name] = text  # a column this reader does not know: keep the text
                continue
        row[name] = value
    return row


def _number_style(rows: list[dict[str, Any]]) -> str | None:
    for row in rows:
        for name in ("cycles_total", "cycles_npu", "sram_total_bytes"):
            value = row.get(name)
            if isinstance(value, float):
                return "float"
            if isinstance(value, int):
                return "integer"
    return None


# --------------------------------------------------------------------------- per-layer CSV

REGOR_PER_LAYER_COLUMNS: tuple[str, ...] = (
    "Original Operator",
    "NNG Operator",
    "Target",
    "Staging Usage",
    "Peak% (Staging)",
    "Op Cycles",
    "Network% (cycles)",
    "NPU",
    "SRAM AC",
    "DRAM AC",
    "OnFlash AC",
    "OffFlash AC",
    "MAC Count",
    "Network% (MAC)",
    "Util% (MAC)",
    "Name",
)
# As written (the first column is TFLite_operator or TOSA_operator); the two ``Network%`` become
# ``Network% (cycles)`` and ``Network% (MAC)`` in the rows, as in Regor's layout and in MLIA.
LEGACY_PER_LAYER_COLUMNS: tuple[str, ...] = (
    "TFLite_operator",
    "NNG Operator",
    "SRAM Usage",
    "Peak%",
    "Op Cycles",
    "Network%",
    "NPU",
    "SRAM AC",
    "DRAM AC",
    "OnFlash AC",
    "OffFlash AC",
    "MAC Count",
    "Network%",
    "Util%",
    "Name",
)
PER_LAYER_UNITS: dict[str, str] = {
    "Staging Usage": "bytes of staging (fast) memory live during the op",
    "SRAM Usage": "bytes of SRAM live during the op",
    "Peak% (Staging)": "% of the staging memory's peak",
    "Peak%": "% of the SRAM peak",
    "Op Cycles": "cycles (this op's estimate; the column sums to cycles_total)",
    "Network% (cycles)": "% of cycles_total",
    "NPU": "NPU compute cycles",
    "SRAM AC": "SRAM access cycles",
    "DRAM AC": "DRAM access cycles",
    "OnFlash AC": "On-chip Flash access cycles",
    "OffFlash AC": "Off-chip Flash access cycles",
    "MAC Count": "MACs",
    "Network% (MAC)": "% of nn_macs",
    "Util% (MAC)": "MAC Count / (Op Cycles × MACs per cycle) × 100 (100 when Op Cycles is 0)",
    "Util%": "MAC utilisation %",
}
_LAYER_TEXT_COLUMNS = frozenset({"Original Operator", "NNG Operator", "Target", "Name"})
_OPERATOR_COLUMNS = ("Original Operator", "TFLite_operator", "TOSA_operator")


def _is_text_layer_column(name: str) -> bool:
    return name in _LAYER_TEXT_COLUMNS or name.endswith("_operator")


class LayerRow(dict):
    """One per-layer row: a plain dict (CSV column → value) with normalised accessors.

    The accessors read both layouts, so a UI can sort Regor and legacy tables alike:
    ``sorted(rows, key=lambda r: r.cycles or 0, reverse=True)``.
    """

    __slots__ = ()

    def _number(self, *names: str) -> Number | None:
        for name in names:
            value = self.get(name)
            if isinstance(value, int | float) and not isinstance(value, bool):
                return value
        return None

    @property
    def cycles(self) -> Number | None:
        """``Op Cycles``: the op's estimated cycles (int for Regor, float for legacy)."""
        return self._number("Op Cycles")

    @property
    def npu_cycles(self) -> Number | None:
        return self._number("NPU")

    @property
    def macs(self) -> Number | None:
        return self._number("MAC Count")

    @property
    def staging_bytes(self) -> Number | None:
        """Bytes live in the staging/fast memory (legacy: ``SRAM Usage``)."""
        return self._number("Staging Usage", "SRAM Usage")

    @property
    def cycles_percent(self) -> Number | None:
        return self._number("Network% (cycles)")

    @property
    def util_percent(self) -> Number | None:
        return self._number("Util% (MAC)", "Util%")

    @property
    def name(self) -> str | None:
        value = self.get("Name")
        return value if isinstance(value, str) else None

    @property
    def operator(self) -> str | None:
        """The input network's op type (``Conv2D``, ``CONV_2D`` …), else the scheduled one."""
        for key in _OPERATOR_COLUMNS:
            value = self.get(key)
            if isinstance(value, str) and value and value != "N/A":
                return value
        return self.nng_operator

    @property
    def nng_operator(self) -> str | None:
        value = self.get("NNG Operator")
        return value if isinstance(value, str) else None

    @property
    def target(self) -> str | None:
        """``NPU`` or ``CPU``; legacy tables list NPU ops only."""
        value = self.get("Target")
        if isinstance(value, str) and value:
            return value
        return "NPU" if any(key in self for key in ("TFLite_operator", "TOSA_operator")) else None


@dataclass(slots=True)
class PerLayerCsv:
    """A per-layer table. ``layout`` is ``"regor"`` or ``"legacy"``."""

    rows: list[LayerRow]
    columns: list[str]
    layout: str
    subgraphs: int = 1  # legacy: one header (and table) per NPU subgraph
    warnings: list[str] = field(default_factory=list)
    source: str | None = None


def per_layer_layout(header: list[str]) -> str:
    if "Target" in header or "Original Operator" in header or "Staging Usage" in header:
        return "regor"
    if (header and header[0].endswith("_operator")) or "SRAM Usage" in header:
        return "legacy"
    return "regor"


def rename_duplicate_columns(header: list[str]) -> list[str]:
    """Legacy tables name two columns ``Network%``: the cycles share, then the MAC share."""
    names: list[str] = []
    network_seen = 0
    for name in header:
        if name == "Network%":
            network_seen += 1
            name = "Network% (cycles)" if network_seen == 1 else "Network% (MAC)"
        base, n = name, 1
        while name in names:
            n += 1
            name = f"{base} ({n})"
        names.append(name)
    return names


MAX_ROW_WARNINGS = 100  # a broken file gets a summary, not one warning per row


def parse_per_layer_csv(data: bytes | str, source: str | None = None) -> PerLayerCsv:
    """Read ``<net>_per-layer.csv`` (Regor or legacy layout).

    Raises :class:`ParseError` when there is no per-layer header. A short (truncated) row is
    skipped with a warning; a header with no rows is a warning, not an error.
    """
    with text_parse_errors(source):
        text, warnings = decode_text(data, source, "a Vela per-layer CSV")
        # Streamed: rows are read one at a time (no list of every line or cell), so a file
        # of millions of short or broken rows costs what its kept rows cost.
        lines = (line for line in io.StringIO(text) if line.strip())
        first_line = next(lines, None)
        if first_line is None:
            raise TruncatedError("empty file, not a Vela per-layer CSV", source=source)
        first_line = first_line.rstrip("\r\n")
        first = next(csv.reader([first_line]))
        if not looks_like_per_layer_header(first):
            if looks_like_summary_header(first):
                raise WrongKindError(
                    "a summary CSV, not a per-layer CSV", field="header", source=source
                )
            raise WrongKindError(
                f"not a Vela per-layer CSV (header starts {short(first_line, 60)})",
                field="header",
                source=source,
            )
        header = [cell.strip() for cell in first]
        layout = per_layer_layout(header)
        if layout == "regor":
            # Regor joins cells with "," and never quotes: split the same way.
            table = itertools.chain(
                [first_line.split(",")], (line.rstrip("\r\n").split(",") for line in lines)
            )
        else:
            table = (row for row in csv.reader(io.StringIO(text, newline="")) if any(row))
        columns = rename_duplicate_columns(header)
        result = PerLayerCsv(
            rows=[], columns=columns, layout=layout, warnings=warnings, source=source
        )
        result.subgraphs = 0
        ends_cleanly = text.endswith(("\n", "\r"))
        skipped = 0
        row_warnings: list[str] = []
        cells = next(table, None)
        index = 0
        while cells is not None:
            following = next(table, None)
            last = following is None
            if [cell.strip() for cell in cells] == header:
                result.subgraphs += 1
            elif len(cells) < len(columns) and len(result.warnings) >= MAX_ROW_WARNINGS:
                skipped += 1  # a short row past the warning cap: counted, not described
            else:
                line = index + 1
                row_warnings.clear()
                row = layer_row(columns, cells, f"row {line}", row_warnings, join_name=True)
                if len(result.warnings) < MAX_ROW_WARNINGS:
                    result.warnings.extend(row_warnings)
                else:
                    skipped += len(row_warnings)
                if row is not None:
                    if last and not ends_cleanly:
                        result.warnings.append(
                            f"file ends without a newline: row {line} ({columns[-1]}) may be "
                            "cut short"
                        )
                    result.rows.append(row)
            cells = following
            index += 1
        if skipped:
            result.warnings.append(f"... and {skipped:,} more row warnings")
        result.subgraphs = max(result.subgraphs, 1)
        if not result.rows:
            result.warnings.append("per-layer CSV has a header but no layer rows")
        return result


def layer_row(
    columns: list[str],
    cells: list[str],
    where: str,
    warnings: list[str],
    *,
    join_name: bool,
) -> LayerRow | None:
    """Cells → LayerRow; None (with a warning) when the row is too short to trust."""
    if len(cells) < len(columns):
        warnings.append(
            f"{where} has {len(cells)} of {len(columns)} cells (truncated?); row skipped"
        )
        return None
    if len(cells) > len(columns):
        if join_name and columns[-1] == "Name":
            # Vela writes names unquoted: a comma in a name splits it over several cells.
            cells = [*cells[: len(columns) - 1], ",".join(cells[len(columns) - 1 :])]
            warnings.append(f"{where}: the layer name contains commas (Vela does not quote it)")
        else:
            warnings.append(f"{where} has {len(cells) - len(columns)} cells more than the header")
            cells = cells[: len(columns)]
    row = LayerRow()
    for name, cell in zip(columns, cells, strict=False):
        text = cell.strip()
        if _is_text_layer_column(name):
            row[name] = text
            continue
        value = to_number(text)
        if value is None:
            warnings.append(f"{where} column {name}: not a number: {short(text)}")
        row[name] = value
    return row
