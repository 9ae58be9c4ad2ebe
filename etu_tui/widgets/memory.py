"""The Memory tab: a firmware ELF's memory regions, runner pools, sections and symbols.

Usage numbers are the parser's replay of GNU ld's ``--print-memory-usage`` for the same
link (``etu.parsers.memory_map``); sizes are exact bytes, as a linker map prints them.
"""

from __future__ import annotations

from collections.abc import Sequence

from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.content import Content
from textual.widgets import Static

from etu.parsers.elf_map import Symbol
from etu.parsers.memory_map import MemoryMap, PlacedSection, Pool, Region
from etu.runner.workspace import FirmwareResult
from etu.tui.safe_text import printable
from etu.tui.screens.open_file import OpenFileScreen
from etu.tui.widgets.error_panel import ProblemBox
from etu.tui.widgets.formatting import nbytes
from etu.tui.widgets.virtual_table import Column, VirtualTable, fit

MISSING = "–"
REGION_BAR = 40
POOL_BAR = 8
FULL, EMPTY = "█", "░"
BLOCKS = " ▏▎▍▌▋▊▉█"
NEAR_FULL = 90.0  # percent: a region this full is shown in the warning colour


def gauge(percentage: float, width: int) -> str:
    """A share of 0–100 % as a bar of ``width`` cells (eighths of a cell), padded with ░."""
    eighths = round(max(0.0, min(percentage, 100.0)) / 100 * width * 8)
    full, part = divmod(eighths, 8)
    text = FULL * full + (BLOCKS[part] if part else "")
    return text + EMPTY * (width - len(text))


def address(value: int) -> str:
    return f"{value:#010x}"


# ------------------------------------------------------------------------- errors


class FirmwareError(ProblemBox):
    """The firmware (or the fit check) could not be read, in one line; the rest is fine."""

    def show_error(self, title: str, line: str | None, hint: str = "") -> None:
        self.show_lines(title, [line] if line else [], hint)


# ------------------------------------------------------------------------- regions


def reserved_in(region: Region, memory_map: MemoryMap | None) -> tuple[int, str]:
    """Bytes of ``region`` reserved on purpose, and by what: the runner's pools placed
    there, and the stack/heap span (the linker counts from the heap's start to the stack's
    end, gap included). A region full of reservations is not overflowing."""
    if memory_map is None:
        return 0, ""
    inside = [s for s in memory_map.sections if s.region == region.name]
    pools = sum(p.size for p in memory_map.pools.values() if p.region == region.name)
    if any(k in s.name for s in inside for k in ("stack", "heap")):
        others = sum(s.size for s in inside if not any(k in s.name for k in ("stack", "heap")))
        span = max(region.used - others, 0)
        return span, "stack/heap"
    if pools:
        return min(pools, region.used), "runner pools"
    return 0, ""


def _tail(region: Region, reserved: tuple[int, str]) -> str:
    if region.overflow:
        return f"overflow {nbytes(region.overflow)}"
    amount, what = reserved
    if amount and region.percent >= NEAR_FULL:
        return f"reserved: {what}"
    return f"free {nbytes(region.free)}"


def region_line(
    region: Region,
    name_width: int,
    bar_width: int = REGION_BAR,
    used_width: int = 30,
    reserved: tuple[int, str] = (0, ""),
) -> Content:
    """``SRAM ████░░ 2,097,152 / 2,097,152 B 100.0% free 0 B``, red past capacity; a
    region full of stack/heap or pool reservations says so, in the plain colour."""
    tail_text = _tail(region, reserved)
    if region.overflow:
        style = "$text-error"
    elif tail_text.startswith("reserved"):
        style = "$text-primary"
    elif region.percent >= NEAR_FULL:
        style = "$text-warning"
    else:
        style = "$text-success"
    used = f"{region.used:,} / {region.length:,} B"
    tail = Content.styled(tail_text, "$text-error bold" if region.overflow else "dim")
    return Content.assemble(
        (f"{region.name:<{name_width}} ", "bold"),
        (gauge(region.percent, bar_width), style),
        " ",
        (f"{used:>{used_width}}", "bold" if region.overflow else ""),
        " ",
        (f"{region.percent:6.1f}%", f"{style} bold"),
        "  ",
        tail,
    )


def region_lines(
    regions: Sequence[Region], width: int, memory_map: MemoryMap | None = None
) -> list[Content]:
    """One line per region, the bars as wide as ``width`` allows (8 to 40 cells), so
    every region stays on one line at 80 columns."""
    reserved = [reserved_in(r, memory_map) for r in regions]
    name_width = max(len(r.name) for r in regions)
    used_width = max(len(f"{r.used:,} / {r.length:,} B") for r in regions)
    tail_width = max(len(_tail(r, res)) for r, res in zip(regions, reserved, strict=True))
    rest = name_width + 1 + 1 + used_width + 1 + 7 + 2 + tail_width
    bar = max(8, min(REGION_BAR, width - rest)) if width > 0 else REGION_BAR
    return [
        region_line(r, name_width, bar, used_width, res)
        for r, res in zip(regions, reserved, strict=True)
    ]


class RegionBars(Static):
    """One bar per memory region: used of capacity, percent, and the overflow in red."""

    DEFAULT_CSS = """
    RegionBars {
        height: auto;
        border: round $primary;
        border-title-style: bold;
        border-subtitle-color: $text-muted;
        padding: 0 1;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.regions: list[Region] = []
        self.lines: list[str] = []  # the plain text of each region's line, for tests
        self._shown: tuple[FirmwareResult | None, str] | None = None

    def show(self, result: FirmwareResult | None, workspace: str) -> None:
        self._shown = (result, workspace)
        memory_map = result.memory_map if result else None
        self.regions = list(memory_map.regions) if memory_map else []
        if result is None or result.label is None:
            self.border_title = "Regions"
            self.border_subtitle = "e pick ELF"
            self.lines = []
            first = Content.assemble(
                (f"No firmware ELF beside {workspace or 'the program'}", "bold"),
                (" (looked for firmware/*.elf and *.elf).", "dim"),
            )
            hint = Content.styled(
                "Press e to pick the runner's ELF: its .map or .ld beside it gives the regions.",
                "dim",
            )
            self.update(Content("\n").join([first, hint]))
            return
        self.border_subtitle = "e pick another ELF"
        if memory_map is None:
            self.border_title = f"Regions · {printable(result.label)}"
            self.lines = []
            self.update(Content.styled("The firmware could not be read (see above).", "bold"))
            return
        preset = f" · {memory_map.preset} layout" if memory_map.preset else ""
        self.border_title = f"Regions · {printable(result.label)} · {result.regions_text}{preset}"
        if not self.regions:
            self.lines = []
            self.update(Content.styled("No memory regions: usage cannot be told.", "bold"))
            return
        lines = region_lines(self.regions, self.content_region.width, memory_map)
        self.lines = [line.plain for line in lines]
        self.update(Content("\n").join(lines))

    def on_resize(self) -> None:
        if self.regions and self._shown is not None:
            self.show(*self._shown)


# ------------------------------------------------------------------------- pools


POOL_COLUMNS = (
    Column("pool", 20),
    Column("symbol", 26),
    Column("size", 13, "right"),
    Column("region", 6),
    Column("share of region", POOL_BAR + 7),
)  # 84 cells: what the box has at 140 columns beside the kernels


def pool_cells(pool: Pool, region: Region | None) -> list[str]:
    share = pool.size * 100.0 / region.length if region and region.length else None
    return [
        pool.role,
        pool.symbol or f"({pool.source})",
        nbytes(pool.size),
        pool.region or "?",
        MISSING if share is None else f"{gauge(share, POOL_BAR)} {share:5.1f}%",
    ]


def table_line(cells: Sequence[str], columns: Sequence[Column]) -> str:
    return " ".join(fit(text, c.width, c.justify) for text, c in zip(cells, columns, strict=True))


class PoolGauges(Static):
    """The runner's pools by role: symbol, size, region and how much of the region it takes."""

    DEFAULT_CSS = """
    PoolGauges {
        width: 1fr;
        height: auto;
        border: round $primary;
        border-title-style: bold;
        padding: 0 1;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.pools: list[Pool] = []
        self.lines: list[str] = []

    def show(self, result: FirmwareResult | None) -> None:
        memory_map = result.memory_map if result else None
        self.pools = list(memory_map.pools.values()) if memory_map else []
        self.border_title = f"Runner pools ({len(self.pools)})"
        if memory_map is None:
            self.lines = []
            self.update(Content.styled("No firmware read.", "dim"))
            return
        if not self.pools:
            self.lines = []
            self.update(Content.styled("None of the runner's pool symbols are in this ELF.", "dim"))
            return
        header = table_line([c.label for c in POOL_COLUMNS], POOL_COLUMNS)
        self.lines = [
            table_line(pool_cells(p, memory_map.region_named(p.region or "")), POOL_COLUMNS)
            for p in self.pools
        ]
        self.update(
            Content("\n").join(
                [Content.styled(header, "bold $text-primary"), *map(Content, self.lines)]
            )
        )


class KernelsView(Static):
    """The kernel registry found in the image: operator names and the kernels' code bytes."""

    DEFAULT_CSS = """
    KernelsView {
        width: 52;
        height: auto;
        border: round $primary;
        border-title-style: bold;
        padding: 0 1;
    }
    """

    def show(self, result: FirmwareResult | None) -> None:
        memory_map = result.memory_map if result else None
        if memory_map is None:
            self.border_title = "Kernels"
            self.update(Content.styled("No firmware read.", "dim"))
            return
        kernels = memory_map.kernels
        self.border_title = f"Kernels ({len(kernels.names)})"
        code = MISSING if kernels.code_bytes is None else nbytes(kernels.code_bytes)
        where = {"ld_map": " (ld map)", "symbols": " (symbols)"}.get(kernels.code_from or "", "")
        first = Content.assemble(
            ("names found ", "dim"),
            (str(len(kernels.names)), "bold"),
            ("  code ", "dim"),
            (code, "bold"),
            (where, "dim"),
        )
        names = [Content(name) for name in kernels.names] or [
            Content.styled("no operator names in the image", "dim")
        ]
        self.update(Content("\n").join([first, *names]))


# ------------------------------------------------------------------------- tables


class SectionsTable(VirtualTable):
    """Allocated output sections by run address: where each runs, loads, and its region."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.sections: list[PlacedSection] = []

    def show(self, result: FirmwareResult | None) -> None:
        memory_map = result.memory_map if result else None
        self.sections = sorted(
            (s for s in memory_map.sections if s.size) if memory_map else (),
            key=lambda s: (s.address, s.name),
        )
        # Columns as wide as what they hold; where a section loads (mostly "=": the same
        # place) is one column that narrows first, the names last.
        rows = [self.row_cells(i) for i in range(len(self.sections))]
        widths = [max((len(row[i]) for row in rows), default=0) for i in range(5)]
        columns = [
            Column("section", min(max(widths[0], 8), 24), shrink=True),
            Column("run addr", 10),
            Column("size", max(widths[2], 4), "right"),
            Column("region", max(widths[3], 6)),
            Column("loads from", max(widths[4], 10), shrink=True),
        ]
        self.reset(len(self.sections), columns)

    def row_cells(self, index: int) -> Sequence[str]:
        s = self.sections[index]
        moved = s.load_address != s.address
        return (
            s.name,
            address(s.address),
            nbytes(s.size),
            s.region or "?",
            f"{s.load_region or '?'} {address(s.load_address)}" if moved else "=",
        )


class SymbolsTable(VirtualTable):
    """The largest sized symbols, code and data."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.symbols: list[Symbol] = []

    def show(self, result: FirmwareResult | None) -> None:
        self.symbols = list(result.symbols) if result and result.memory_map else []
        name = max((len(s.name) for s in self.symbols), default=0)
        section = max((len(s.section or "") for s in self.symbols), default=0)
        columns = [
            Column("symbol", min(max(name, 8), 40), shrink=True),
            Column("size", 14, "right"),
            Column("section", min(max(section, 7), 16)),
        ]
        self.reset(len(self.symbols), columns)

    def row_cells(self, index: int) -> Sequence[str]:
        s = self.symbols[index]
        return (s.name, nbytes(s.size), s.section or MISSING)


# ------------------------------------------------------------------------- warnings


def is_copy_note(warning: str) -> bool:
    """The linker's note on an initialised section (``.data``) whose bytes load elsewhere
    and are copied at start-up: normal for every runner, so not shown as a warning."""
    return "startup code must copy" in warning


class MemoryWarnings(VerticalScroll):
    """The parser's warnings on the ELF, its map and their agreement."""

    DEFAULT_CSS = """
    MemoryWarnings {
        height: auto;
        max-height: 9;
        border: round $primary;
        border-title-style: bold;
        & > Static { height: auto; padding: 0 1; }
    }
    """

    def compose(self) -> ComposeResult:
        yield Static(id="memory-warnings-text")

    def show(self, result: FirmwareResult | None) -> None:
        warnings = [
            w
            for w in (result.warnings if result and result.memory_map else [])
            if not is_copy_note(w)
        ]
        self.border_title = f"Warnings ({len(warnings)})"
        text = self.query_one("#memory-warnings-text", Static)
        if not warnings:
            text.update(Content.styled("No warnings.", "dim"))
            return
        text.update(
            Content("\n").join(
                Content.assemble(("⚠ ", "$text-warning bold"), printable(warning))
                for warning in warnings
            )
        )


def pools_height(result: FirmwareResult | None) -> int:
    """Rows of the pools-and-kernels strip, borders included: the taller of the two."""
    memory_map = result.memory_map if result else None
    if memory_map is None:
        return 3
    pools = len(memory_map.pools) + 1 if memory_map.pools else 1
    kernels = 1 + max(len(memory_map.kernels.names), 1)
    return min(max(pools, kernels), 8) + 2


# ------------------------------------------------------------------------- pick


class PickElfScreen(OpenFileScreen):
    """The open-file modal, asking for a firmware ELF instead."""

    DIALOG_TITLE = "Pick a firmware ELF"
    PLACEHOLDER = "path/to/arm_executor_runner.elf"
    HINT = "Enter read · Tab complete · Escape cancel · its .map or .ld gives the regions"
