"""The NPU tab's measured view: per layer, the NPU cycles an FVP run's PMU trace measured
beside Vela's estimate (runner/npu_layers.py), for the newest session of the open program
that kept a trace. The stand-in FVP's figures are labelled simulated."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from textual.message import Message

from etu.runner.npu_layers import STANDIN_SOURCE, SessionLayers
from etu.tui.safe_text import printable
from etu.tui.widgets.npu import bar, count
from etu.tui.widgets.virtual_table import Column, VirtualTable

MISSING = "—"
BAR = 8  # cells of the share-of-cycles bar (a row fits an 80-column terminal)


@dataclass
class MeasuredRead(Message):
    """The newest traced session of the program was read (``found`` None: there is none);
    ``request`` tells a stale read apart."""

    found: tuple[Path, SessionLayers] | None
    request: int


def ratio_text(ratio: float | None) -> str:
    return MISSING if ratio is None else f"×{ratio:.2f}"


def measured_title(found: tuple[Path, SessionLayers] | None) -> str:
    """``Measured · SIMULATED (stand-in FVP) · 8 layers · SESSION · ...`` or why not."""
    if found is None:
        return "Measured · no FVP session of this program kept a PMU trace"
    folder, layers = found
    if layers.error:
        return f"Measured · {folder.name}: {layers.error}"
    source = layers.measured_source or "?"
    if source == STANDIN_SOURCE:
        source = "SIMULATED (stand-in FVP)"
    named = "Vela's debug DB" if layers.debug_db else "per NPU operation (no debug DB)"
    return f"Measured · {source} · {len(layers.layers)} layers · {folder.name} · {named}"


class MeasuredTable(VirtualTable):
    """One row per layer: measured cycles (per inference), Vela's estimate, their ratio."""

    COMPONENT_CLASSES: ClassVar[set[str]] = VirtualTable.COMPONENT_CLASSES | {
        "measured--slower",
    }

    DEFAULT_CSS = """
    MeasuredTable {
        & > .measured--slower { color: $text-warning; }
    }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._rows: list[dict] = []
        self._total = 0

    def show_layers(self, layers: SessionLayers | None) -> None:
        self._rows = list(layers.layers) if layers is not None else []
        self._total = sum(row["measured_cycles"] for row in self._rows) or 1
        name = max((len(str(row["name"])) for row in self._rows), default=10)
        columns = [
            Column("#", max(len(str(len(self._rows))), 3), "right"),
            Column("layer", min(max(name, 10), 28), shrink=True),
            Column("measured", 10, "right"),
            Column("", BAR),
            Column("Vela est.", 9, "right"),
            Column("ratio", 6, "right"),
        ]
        self.reset(len(self._rows), columns)

    def layer(self, index: int) -> dict:
        """The layer shown at ``index``, for tests and scripts."""
        return self._rows[index]

    def row_cells(self, index: int) -> Sequence[str]:
        row = self._rows[index]
        share = 100 * row["measured_cycles"] / self._total
        return (
            str(index),
            printable(str(row["name"])),
            count(row["measured_cycles"]),
            bar(share, BAR),
            count(row["estimated_cycles"]) if row["estimated_cycles"] else MISSING,
            ratio_text(row["ratio"]),
        )

    def row_class(self, index: int) -> str | None:
        ratio = self._rows[index]["ratio"]
        return "measured--slower" if ratio is not None and ratio > 1.5 else None
