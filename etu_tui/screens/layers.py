"""The Layers view: where precision is lost, layer by layer (``etu compare --layers``).

For the Run tab's shown session (on the inputs it ran on) or the open program (all ones,
the fallback): every layer in graph order with its module path, the unit it ran on, SQNR,
cosine and largest error against the float model; the first layer below the threshold and
the largest single drop marked. The comparison imports torch and takes seconds: it runs in
an isolated child (:func:`etu.runner.layers.layers_in_child`) from a worker thread, which
posts :class:`LayersComputed`; the screen shows "computing…" until then, and an error as
one line.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Label, Static

from etu.parsers.errors import describe_error
from etu.runner.target_layers import target_cell, target_verdict
from etu.tui.keys import bindings
from etu.tui.safe_text import printable
from etu.tui.widgets.virtual_table import Column, VirtualTable

FIRST_BELOW = "▼"  # the first layer whose SQNR is below the threshold
LARGEST_DROP = "↓"  # the layer that lost the most SQNR from the one before
WEAKEST = "◆"
MISSING = "–"

Compute = Callable[[Path | None, Path | None], dict]


def _number(value: float | None, form: str) -> str:
    return MISSING if value is None else format(value, form)


def sqnr_text(row: dict) -> str:
    """The layer's SQNR; no error at all is "exact"."""
    if row.get("sqnr_db") is None and row.get("cosine") is not None:
        return "exact"
    return _number(row.get("sqnr_db"), ".1f")


def target_text(row: dict) -> str:
    """The target's integers against the host's (–: the run kept none for this layer)."""
    return target_cell(row) or MISSING


def target_line(summary: dict) -> Content | None:
    """Where the target's layers come from, or why there are none (a session only)."""
    target = summary.get("target")
    if not isinstance(target, dict):
        return None
    if not target.get("source"):
        return Content.styled(f"target: {printable(str(target.get('note') or ''))}", "dim")
    verdict, equal = target_verdict(target)
    return Content.assemble(
        ("target: ", "bold"),
        f"{target.get('read', 0)} of {target.get('cpu_layers', 0)} CPU layers read · ",
        (verdict, "$text-success" if equal else "$text-error bold"),
        (f" · {printable(str(target['source']))}", "dim"),
    )


def marks(row: dict) -> str:
    return "".join(
        mark
        for mark, key in ((FIRST_BELOW, "first_below_threshold"), (LARGEST_DROP, "largest_drop"),
                          (WEAKEST, "weakest"))
        if row.get(key)
    )  # fmt: skip


def module_text(row: dict) -> str:
    module = row.get("module")
    if module is None:
        return "?"
    return module or "(forward)"


def summary_lines(record: dict) -> list[Content]:
    """Under the table: the layers the markers name."""
    summary = record.get("layers_summary") or {}
    threshold = summary.get("sqnr_threshold_db")
    rows = {row["name"]: row for row in record.get("layers") or []}
    first = summary.get("first_below_threshold")
    drop = summary.get("largest_drop") or {}
    weakest = summary.get("weakest")

    def named(name: str | None) -> str:
        row = rows.get(name or "")
        return f"{name} ({module_text(row)})" if row else str(name)

    threshold_text = f"{threshold:g} dB" if isinstance(threshold, int | float) else "threshold"
    below = (
        Content.assemble((f"{FIRST_BELOW} first below {threshold_text}: ", "$text-error bold"),
                         printable(named(first)))
        if first
        else Content.styled(f"{FIRST_BELOW} no layer below {threshold_text}", "$text-success")
    )  # fmt: skip
    lines = [below]
    if drop.get("name"):
        lines.append(Content.assemble((f"{LARGEST_DROP} largest drop: ", "$text-warning bold"),
                                      printable(named(drop["name"])),
                                      f" −{drop.get('drop_db', 0):.1f} dB"))  # fmt: skip
    if weakest:
        lines.append(Content.assemble((f"{WEAKEST} weakest: ", "bold"), printable(named(weakest)),
                                      f" {sqnr_text(rows.get(weakest, {}))} dB"))  # fmt: skip
    target = target_line(summary)
    if target is not None:
        lines.append(target)
    return lines


class LayersComputed(Message):
    """The worker's answer: the ``layers`` record, or one line saying why there is none."""

    def __init__(self, request: int, record: dict | None, error: str | None) -> None:
        super().__init__()
        self.request = request
        self.record = record
        self.error = error


class LayersTable(VirtualTable):
    """One row per layer in graph order; the first below the threshold and the largest
    drop coloured."""

    COMPONENT_CLASSES: ClassVar[set[str]] = VirtualTable.COMPONENT_CLASSES | {
        "layers--below",
        "layers--drop",
    }
    DEFAULT_CSS = """
    LayersTable {
        & > .layers--below { color: $text-error; }
        & > .layers--drop { color: $text-warning; }
    }
    """
    COLUMNS = (
        Column("", 3),
        Column("#", 3, "right"),
        Column("layer", 24, shrink=True),
        Column("module", 14, shrink=True),
        Column("unit", 4),
        Column("SQNR dB", 7, "right"),
        Column("cosine", 7, "right"),
        Column("max|e|", 8, "right"),
        Column("target", 8, "right"),
    )

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(self.COLUMNS, id=id)
        self.rows: list[dict] = []

    def show(self, rows: list[dict]) -> None:
        self.rows = list(rows)
        self.reset(len(self.rows))

    def row_cells(self, index: int) -> list[str]:
        row = self.rows[index]
        name = str(row.get("name"))
        delegate = row.get("delegate")
        several = len({r.get("delegate") for r in self.rows} - {None}) > 1
        if several and delegate is not None:
            name += f"@{delegate}"
        return [
            marks(row), str(index), name, module_text(row), str(row.get("unit") or MISSING),
            sqnr_text(row), _number(row.get("cosine"), ".5f"),
            _number(row.get("max_abs_error"), ".3g"), target_text(row),
        ]  # fmt: skip

    def row_class(self, index: int) -> str | None:
        row = self.rows[index]
        if row.get("below_threshold"):
            return "layers--below"
        if row.get("largest_drop"):
            return "layers--drop"
        return None

    def row_texts(self) -> list[str]:
        """Each row's cells joined, for tests."""
        return [" ".join(self.row_cells(i)) for i in range(len(self.rows))]


class LayersScreen(ModalScreen[None]):
    """The per-layer comparison of a session's program (or the open program), computed
    when the screen opens. Escape closes; the result is kept by the opener's cache."""

    DEFAULT_CSS = """
    LayersScreen {
        align: center middle;
        & > Vertical {
            width: 100%;
            height: 100%;
            border: round $accent;
            border-title-style: bold;
            border-subtitle-color: $text-muted;
            background: $surface;
        }
        & #layers-about { height: auto; padding: 0 1; color: $text-muted; }
        & #layers-status { height: auto; padding: 0 1; }
        & #layers-status.-error { color: $text-error; text-style: bold; }
        & LayersTable { height: 1fr; }
        & #layers-summary { height: auto; max-height: 5; padding: 0 1; }
        & Label { color: $text-muted; padding: 0 1; }
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = bindings("layers_screen")

    def __init__(
        self,
        pte: Path | None,
        session: Path | None = None,
        *,
        label: str = "",
        record: dict | None = None,
        compute: Compute | None = None,
        on_result: Callable[[dict], None] | None = None,
    ) -> None:
        """``record``: a result already computed (shown at once); ``compute`` replaces the
        isolated child (tests); ``on_result`` keeps a computed record (the opener's cache)."""
        super().__init__()
        self.pte, self.session = pte, session
        self.label = label or (Path(session).name if session else Path(pte or "").name)
        self.record = record
        self.error: str | None = None
        self.compute = compute
        self.on_result = on_result
        self._request = 0
        self._started = 0.0

    @classmethod
    def kept_in(
        cls, records: dict[tuple[str, str], dict], pte: Path | None, session: Path | None,
        label: str,
    ) -> LayersScreen:  # fmt: skip
        """The view of ``pte`` (on ``session``'s inputs when given) that shows a record
        already in ``records`` at once and keeps a new one there."""
        key = (str(pte or ""), str(session or ""))

        def keep(record: dict) -> None:
            records[key] = record

        return cls(pte, session, label=label, record=records.get(key), on_result=keep)

    @classmethod
    def of(
        cls, records: dict[tuple[str, str], dict], pte: Path | None, session: Path | None,
        stable: bool,
    ) -> LayersScreen | None:  # fmt: skip
        """The view the Run tab opens (:meth:`kept_in`), labelled by the session or the
        program (a session by its stable name in snapshots); None with neither."""
        if pte is None and session is None:
            return None
        label = session.name if session is not None else (pte.name if pte else "")
        if session is not None and stable:
            from etu.tui.widgets.run_panes import session_name

            label = session_name(session.name, True)
        return cls.kept_in(records, pte, session, label)

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = f"Layers · {printable(self.label)}"
            box.border_subtitle = "Escape closes"
            yield Static(id="layers-about")
            yield Static(id="layers-status")
            yield LayersTable(id="layers-table")
            yield Static(id="layers-summary")
            yield Label(
                f"{FIRST_BELOW} first below threshold · {LARGEST_DROP} largest drop · {WEAKEST} "
                "weakest · SQNR on fitted scales",
                markup=False,
            )

    def on_mount(self) -> None:
        if self.record is not None:
            self._show()
        else:
            self.start()
        self.query_one(LayersTable).focus()

    @property
    def computing(self) -> bool:
        return self.record is None and self.error is None

    def start(self) -> None:
        """Compute the layers in a worker (the child imports torch: seconds)."""
        self._request += 1
        self.record, self.error = None, None
        self._started = time.monotonic()
        self._show()
        self.set_interval(1.0, self._tick, name="layers-elapsed")
        self.run_worker(partial(self._compute_in_thread, self._request), thread=True,
                        group="layers", exit_on_error=False)  # fmt: skip

    def _compute_in_thread(self, request: int) -> None:
        from etu.runner.layers import LayersError, layers_in_child

        compute = self.compute or layers_in_child
        try:
            self.post_message(LayersComputed(request, compute(self.pte, self.session), None))
        except LayersError as error:
            self.post_message(LayersComputed(request, None, str(error).splitlines()[0]))
        except Exception as error:  # a broken comparison must never take the console down
            self.post_message(LayersComputed(request, None, describe_error(error)))

    def on_layers_computed(self, message: LayersComputed) -> None:
        if message.request != self._request:
            return
        self.record, self.error = message.record, message.error
        if message.record is not None and self.on_result is not None:
            self.on_result(message.record)
        self._show()

    def _tick(self) -> None:
        if self.computing:
            self._show_status()

    def _show_status(self) -> None:
        status = self.query_one("#layers-status", Static)
        status.set_class(self.error is not None, "-error")
        status.display = self.record is None
        if self.error is not None:
            status.update(Content.assemble("✗ ", printable(self.error)))
        elif self.record is None:
            took = int(time.monotonic() - self._started)
            status.update(Content.assemble(
                ("computing… ", "bold"),
                (f"{took} s · the program on the host, each delegate's TOSA graph with its "
                 "activations kept, the float model with every node's output", "dim"),
            ))  # fmt: skip

    def _show(self) -> None:
        self._show_status()
        record = self.record or {}
        summary = record.get("layers_summary") or {}
        about = self.query_one("#layers-about", Static)
        table = self.query_one(LayersTable)
        if self.record is None:
            where = "the session's inputs" if self.session else "all ones (the fallback)"
            about.update(f"{printable(Path(self.pte).name) if self.pte else 'the program'} · "
                         f"inputs: {where}")  # fmt: skip
            table.show([])
            self.query_one("#layers-summary", Static).update("")
            return
        program = Path(str(record.get("program") or "")).name
        model = Path(str(summary.get("float_model") or "")).name
        threshold = summary.get("sqnr_threshold_db", 0)
        about.update(printable(f"{program} against {model} · inputs {summary.get('inputs')} · "
                               f"SQNR threshold {threshold:g} dB"))  # fmt: skip
        table.show(record.get("layers") or [])
        self.query_one("#layers-summary", Static).update(Content("\n").join(summary_lines(record)))

    def action_close(self) -> None:
        self.dismiss(None)
