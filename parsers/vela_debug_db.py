"""Vela's debug database, ``<net>_debug.xml`` (``--enable-debug-db``).

A ``<debug>`` root holding ``<table name="...">`` elements whose text is a CDATA block of CSV:
a header of quoted column names, then one row per entry. Regor (5.x) writes ``perf_debug``,
``perf``, ``perf_debug_main``, ``perf_debug_conn``, ``tensors``, ``cmdstream``, ``queue``,
``group``, ``perf_debug_wd``, ``optimised`` and ``source``; the legacy core writes ``source``,
``optimised``, ``queue`` and ``cmdstream``. Links: ``queue.optimised_id → optimised.id →
optimised.source_id → source.id``; ``perf.id = queue.scheduled_id``.

Regor quotes every cell that is not all digits, so ``"-1"``, ``"1.000000"`` and hex addresses
such as ``"0x1000"`` arrive quoted: cells are converted by what they look like, except in
``name``/``operator`` columns, which stay text. Empty cells become ``None``.
"""

from __future__ import annotations

import csv
import io
import re
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass, field
from typing import Any

from etu.parsers.errors import FormatError, TruncatedError, WrongKindError
from etu.parsers.vela_csv import decode_text, text_parse_errors, to_number

REGOR_TABLES = (
    "perf_debug",
    "perf",
    "perf_debug_main",
    "perf_debug_conn",
    "tensors",
    "cmdstream",
    "queue",
    "group",
    "perf_debug_wd",
    "optimised",
    "source",
)
LEGACY_TABLES = ("source", "optimised", "queue", "cmdstream")
_TEXT_COLUMNS = frozenset({"name", "operator"})
_TABLE_HEAD = re.compile(r"<table\s+name\s*=\s*[\"']([^\"']{0,200})[\"']\s*>\s*<!\[CDATA\[")
_TABLE_TAIL = re.compile(r"\]\]>\s*</table>")


def _table_blocks(text: str) -> list[tuple[str, str]]:
    """(name, CDATA body) of each complete ``<table>`` in a malformed document, found in
    one left-to-right pass (a regex with a lazy ``.*?`` per block rescans to the end for
    every unclosed table: quadratic on a hostile file)."""
    blocks = []
    position = 0
    while (start := text.find("<table", position)) != -1:
        head = _TABLE_HEAD.match(text, start)
        if head is None:
            position = start + 6
            continue
        close = text.find("]]>", head.end())
        if close == -1:
            break  # no later table can be complete either
        tail = _TABLE_TAIL.match(text, close)
        if tail is not None:
            blocks.append((head[1], text[head.end() : close]))
            position = tail.end()
        else:
            position = close + 3
    return blocks


_FORBIDDEN = re.compile(r"<!(?:DOCTYPE|ENTITY)", re.IGNORECASE)
_DEBUG_OPEN = re.compile(r"<debug\b")
# name="value" pairs; a name starts where a run of word characters starts ((?<!\w)), so a
# long run is read once, not once from each of its characters (quadratic; issue 20).
_ATTRIBUTE = re.compile(r"(?<!\w)(\w++)\s*+=\s*+[\"']([^\"']*+)[\"']")


def _root_attributes(text: str) -> dict[str, str]:
    """The attributes of the first ``<debug ...>`` tag of a malformed document: the text from
    the first ``<debug`` to the next ``>``, found once (a regex search rescanned the rest of
    the text from every later ``<debug`` when no ``>`` follows: quadratic; issue 20)."""
    start = _DEBUG_OPEN.search(text)
    if start is None:
        return {}
    close = text.find(">", start.end())
    if close == -1:  # no later <debug has a ">" after it either
        return {}
    return dict(_ATTRIBUTE.findall(text[start.end() : close]))


@dataclass(slots=True)
class DebugDb:
    """The tables of one debug XML, rows as dicts (column → int/float/str/None)."""

    tables: dict[str, list[dict[str, Any]]]
    columns: dict[str, list[str]]
    attributes: dict[str, str] = field(default_factory=dict)  # root: source (and optimised)
    layout: str | None = None  # "regor" or "legacy"
    warnings: list[str] = field(default_factory=list)
    source: str | None = None

    def row_counts(self) -> dict[str, int]:
        return {name: len(rows) for name, rows in self.tables.items()}


def parse_debug_db(data: bytes | str, source: str | None = None) -> DebugDb:
    """Read ``<net>_debug.xml``. A truncated file keeps its complete tables, with a warning."""
    with text_parse_errors(source):
        text, warnings = decode_text(data, source, "a Vela debug XML")
        if not text.strip():
            raise TruncatedError("empty file, not a Vela debug XML", source=source)
        if _FORBIDDEN.search(text):
            raise FormatError(
                "DTD or entity declarations are not accepted (Vela never writes them)",
                source=source,
            )
        result = DebugDb(tables={}, columns={}, warnings=warnings, source=source)
        try:
            root = ElementTree.fromstring(text)
        except ElementTree.ParseError as error:
            blocks = _table_blocks(text)
            if "<debug" not in text or not blocks:
                message = str(error).splitlines()[0]
                truncated = "no element found" in message or "unclosed" in message
                kind = TruncatedError if truncated else FormatError
                if "<debug" not in text and not text.lstrip().startswith("<"):
                    raise WrongKindError(
                        f"not a Vela debug XML ({message})", source=source
                    ) from None
                raise kind(f"XML: {message}", source=source) from None
            result.warnings.append(
                f"XML is malformed or truncated ({str(error).splitlines()[0]});"
                f" read the {len(blocks)} complete table(s)"
            )
            result.attributes = _root_attributes(text)
            for name, body in blocks:
                _add_table(result, name, body)
        else:
            if root.tag != "debug":
                raise WrongKindError(
                    f"XML root is <{root.tag[:40]}>, not Vela's <debug>", source=source
                )
            result.attributes = {str(k): str(v) for k, v in root.attrib.items()}
            for element in root:
                if element.tag != "table":
                    result.warnings.append(f"unexpected element <{element.tag}> skipped")
                    continue
                name = element.get("name")
                if not name:
                    result.warnings.append("a <table> without a name was skipped")
                    continue
                _add_table(result, name, element.text or "")
        if not result.tables:
            result.warnings.append("debug XML holds no tables")
        result.layout = _layout(result)
        return result


def _add_table(result: DebugDb, name: str, body: str) -> None:
    if name in result.tables:
        result.warnings.append(f"table {name!r} appears twice; the second copy is ignored")
        return
    table = [row for row in csv.reader(io.StringIO(body.strip("\r\n"), newline="")) if row]
    if not table:
        result.warnings.append(f"table {name!r} is empty (no header)")
        result.tables[name], result.columns[name] = [], []
        return
    header = [cell.strip() for cell in table[0]]
    rows: list[dict[str, Any]] = []
    for index, cells in enumerate(table[1:], start=2):
        if len(cells) != len(header):
            result.warnings.append(
                f"table {name!r} row {index} has {len(cells)} cells for {len(header)} columns"
            )
        row: dict[str, Any] = {}
        for column, cell in zip(header, cells, strict=False):
            row[column] = _cell(column, cell)
        for column in header[len(cells) :]:
            row[column] = None
        rows.append(row)
    result.tables[name], result.columns[name] = rows, header


def _cell(column: str, cell: str) -> Any:
    if cell == "":
        return None
    if column in _TEXT_COLUMNS:
        return cell
    value = to_number(cell, hex_ok=True)
    return cell if value is None else value


def _layout(db: DebugDb) -> str | None:
    if "perf" in db.tables or "perf_debug" in db.tables:
        return "regor"
    if "file_offset" in db.columns.get("cmdstream", ()) or "optimised" in db.attributes:
        return "legacy"
    if db.tables and set(db.tables) <= set(LEGACY_TABLES):
        return "legacy"
    return None
