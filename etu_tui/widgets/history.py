"""The History tab: every recorded session of the workspace, two compared side by side, a
figure charted over one program's sessions, and a replay in the Run tab's panes.

The panel owns its keys and its state (rows, sort, the two marked sessions, the figure).
Listing and diffing run in thread workers that only post messages (runner/history.py and
runner/diff.py do the reading); the handlers here update the widgets. Replay is asked of
the app with :class:`ReplayRequested`: the Run tab's panes show the session, at once or at
the pace its ``raw.index`` recorded.
"""

from __future__ import annotations

from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import DataTable, Static
from textual.worker import get_current_worker

from etu.parsers.text import printable
from etu.runner.history import SessionRow
from etu.tui.keys import bindings
from etu.tui.numbers import number, percent, plural, seconds
from etu.tui.widgets.full_screen import fill_screen

# (column title, key of SessionRow or a function of it, numeric)
COLUMNS: tuple[tuple[str, str, bool], ...] = (
    ("when", "started", False),
    ("kind", "kind", False),
    ("target", "target", False),
    ("program", "program", False),
    ("firmware", "firmware", False),
    ("ending", "ending", False),
    ("NPU cycles", "npu_cycles", True),
    ("CPU cycles", "cpu_cycles", True),
    ("method alloc", "method_allocator_used", True),
    ("temp alloc", "temp_allocator", True),
    ("time", "duration_s", True),
)
# Figures the chart can follow over one program's sessions: (row attribute, title).
FIGURES: tuple[tuple[str, str], ...] = (
    ("npu_cycles", "NPU cycles"),
    ("cpu_cycles", "CPU cycles"),
    ("method_allocator_used", "method allocator used (B)"),
)
MARK = "●"
# The panes' keys, as the other panes write theirs (lower case, key then word).
COMPARE_KEYS = "space mark · v compare"
# The compare's columns fit 78 cells (the pane at 120 columns, beside the chart, or at 80,
# without it): a label (mark, name) of at most LABEL_WIDTH, A and B of at most VALUE_WIDTH
# (62,914,560 is 10), then the change and the percent.
LABEL_WIDTH = 28
VALUE_WIDTH = 14
CHART_KEYS = "g next figure"
PLACE_KEYS = "p next place"


@dataclass
class HistoryListed(Message):
    """The workspace's sessions, or why they could not be listed."""

    rows: list[SessionRow]
    request: int
    error: str | None = None


@dataclass
class SessionRecorded(Message):
    """A session finished recording in ``folder`` (a Run tab run, a board the Boards tab
    flashed, a run stopped with ``s``): posted by the panel that ran it, it bubbles to the
    app, which has the History tab list it at once."""

    folder: Path | None


@dataclass
class DiffReady(Message):
    """Two marked sessions compared (runner.diff's record), or why not."""

    result: dict[str, object] | None
    error: str | None
    request: int


@dataclass
class ReplayRequested(Message):
    """Show ``folder`` in the Run tab's panes; ``timed``: at the recorded pace."""

    folder: Path
    timed: bool


@dataclass(slots=True)
class SortState:
    column: int = 0  # index in COLUMNS
    reverse: bool = True  # newest first
    time_reverse: bool = True  # the direction of the last sort by time


def _sort_key(row: SessionRow, column: int):
    attr = COLUMNS[column][1]
    value = getattr(row, attr)
    if attr == "program" or attr == "firmware":
        value = value["name"]
    elif attr == "ending":
        value = value["reason"]
    missing = value is None
    return (missing, value if not missing else 0)


class HistoryPanel(Vertical):
    """Sessions table (sortable), a side-by-side compare of two marked sessions, a chart."""

    DEFAULT_CSS = """
    HistoryPanel {
        & #history-table { height: 2fr; min-height: 6; border: round $primary; }
        & #history-bottom { height: 3fr; min-height: 10; }
        & #history-compare { width: 2fr; height: 1fr; border: round $secondary; }
        & #history-chart { width: 1fr; height: 1fr; border: round $secondary; }
        & #history-compare, #history-chart { border-subtitle-color: $text-muted; }
        & #history-status { height: 1; padding: 0 1; color: $text-muted; }
        & #history-places { height: auto; max-height: 3; padding: 0 1; display: none; }
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = bindings("history")

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.workspace: Path | None = None
        self.rows: list[SessionRow] = []
        self.sort = SortState()
        self.marked: list[str] = []  # session ids, at most two, in marking order
        self.figure = 0
        self.chart_points: list[tuple[str, float]] = []  # (session id, value) as charted
        # per-inference min/median/max of the charted sessions that ran several (x, spread)
        self.chart_spread: list[tuple[int, dict[str, float]]] = []
        self.chart_program = ""
        self.diff: dict | None = None
        self._requests = {"list": 0, "diff": 0}
        self.all_rows: list[SessionRow] = []  # every listed session; ``rows``: those shown
        self.place_filter: str | None = None  # only the sessions held through this place

    def compose(self) -> ComposeResult:
        yield Static("No workspace open.", id="history-status")
        yield Static(id="history-places")
        table = DataTable(id="history-table", cursor_type="row", zebra_stripes=True)
        table.border_title = "Sessions"
        yield table
        with Horizontal(id="history-bottom"):
            compare = DataTable(id="history-compare", cursor_type="row", show_cursor=False)
            compare.border_title = "Compare"
            compare.border_subtitle = COMPARE_KEYS
            yield compare
            yield self._make_chart()

    def _make_chart(self):
        try:
            from textual_plotext import PlotextPlot
        except ImportError:  # pragma: no cover - the chart is optional when not installed
            chart = Static("textual-plotext is not installed: no chart", id="history-chart")
        else:
            chart = PlotextPlot(id="history-chart")
        chart.border_title = "Chart"
        chart.border_subtitle = CHART_KEYS
        chart.ALLOW_MAXIMIZE = True  # g shows it full screen where it is hidden (80 columns)
        chart.can_focus = True
        return chart

    # ------------------------------------------------------------------ loading

    def set_workspace(self, workspace: Path | None) -> None:
        self.workspace = workspace
        self.action_refresh()

    def session_recorded(self, folder: Path | None) -> None:
        """A session ended in this console: list the sessions again (no ctrl+r)."""
        if self.workspace is not None:
            self.action_refresh()

    def action_refresh(self) -> None:
        self._requests["list"] += 1
        if self.workspace is None:
            self.query_one("#history-status", Static).update("No workspace open.")
            return
        self.query_one("#history-status", Static).update("Reading sessions…")
        self._list(self.workspace, self._requests["list"])

    @work(thread=True, exclusive=True, group="history-list")
    def _list(self, workspace: Path, request: int) -> None:
        from etu.runner.history import list_rows
        from etu.runner.session import sessions_root

        try:
            rows = list_rows(sessions_root(workspace), workspace=workspace)
            error = None
        except OSError as exc:  # a folder that vanished: a message, never a crash
            rows, error = [], f"{exc.filename or workspace}: {exc.strerror or exc}"
        if not get_current_worker().is_cancelled:
            self.post_message(HistoryListed(rows, request, error))

    def on_history_listed(self, message: HistoryListed) -> None:
        if message.request != self._requests["list"]:
            return
        message.stop()
        self.all_rows = message.rows
        if self.place_filter not in self.places():
            self.place_filter = None
        self.rows = self._shown_rows()
        ids = {row.id for row in self.rows}
        self.marked = [m for m in self.marked if m in ids]
        status = message.error or self._status()
        self.query_one("#history-status", Static).update(status)
        self._fill_table()
        self._chart()
        self._show_places()
        if self.diff is None:
            self._compare_hint()

    # ------------------------------------------------------------------ places

    def places(self) -> list[str]:
        """The labgrid places the listed sessions were held through, by name."""
        return sorted({row.place for row in self.all_rows if row.place})

    def _shown_rows(self) -> list[SessionRow]:
        if self.place_filter is None:
            return list(self.all_rows)
        return [row for row in self.all_rows if row.place == self.place_filter]

    def action_next_place(self) -> None:
        """Show only the next place's sessions; after the last place, every session."""
        places = self.places()
        if not places:
            self.place_filter = None
            self.app.notify("No session was recorded through a labgrid place.")
            return
        at = places.index(self.place_filter) + 1 if self.place_filter in places else 0
        self.place_filter = places[at] if at < len(places) else None
        self.rows = self._shown_rows()
        self._fill_table()
        self._chart()
        self._show_places()
        self.query_one("#history-status", Static).update(self._status())

    def _show_places(self) -> None:
        """Per place: sessions passed and failed, their median time, the newest ending
        (the filtered place marked): shown only when some session used a place."""
        from etu.runner.history import place_summaries

        box = self.query_one("#history-places", Static)
        summaries = place_summaries(self.all_rows)
        box.display = bool(summaries)
        if not summaries:
            return
        parts = []
        for found in summaries:
            mark = "▸" if found.place == self.place_filter else ""
            took = f" {seconds(found.median_s)}" if found.median_s is not None else ""
            parts.append(f"{mark}{printable(found.place)} {found.passed}✓ {found.failed}✗"
                         f"{took} last {printable(found.last_ending)}")  # fmt: skip
        box.update("Places: " + " · ".join(parts) + f" ({PLACE_KEYS})")

    def _status(self) -> str:
        if not self.rows:
            return "No recorded session yet: runs from the Run tab and `etu run` appear here."
        simulated = " · * stand-in FVP: SIMULATED" if any(r.simulated for r in self.rows) else ""
        if self.place_filter is not None:
            simulated = f" · place {printable(self.place_filter)}{simulated}"
        return (
            f"{plural(len(self.rows), 'session')} · sorted by {COLUMNS[self.sort.column][0]}"
            f"{' ↓' if self.sort.reverse else ' ↑'}{simulated}"
        )

    # ------------------------------------------------------------------ table

    def sorted_rows(self) -> list[SessionRow]:
        column = self.sort.column
        rows = sorted(self.rows, key=lambda r: _sort_key(r, column), reverse=self.sort.reverse)
        missing = [r for r in rows if _sort_key(r, column)[0]]
        return [r for r in rows if not _sort_key(r, column)[0]] + missing

    def _cells(self, row: SessionRow) -> list[str]:
        mark = f"{MARK} " if row.id in self.marked else "  "
        line = row.ending["proof_line"]
        kind = printable(row.kind) + ("*" if row.simulated else "")
        if row.place:  # a session held through a labgrid place
            kind += f" @{printable(row.place)}"
        return [
            mark + (row.started_text or row.id),
            kind,
            printable(row.target),
            printable(f"{row.program['name']} {row.program['short']}".strip()),
            printable(f"{row.firmware['name']} {row.firmware['short']}".strip()),
            printable(row.ending["reason"] + (f" @{line}" if line else "")),
            number(row.npu_cycles),
            number(row.cpu_cycles),
            number(row.method_allocator_used),
            number(row.temp_allocator),
            seconds(row.duration_s),
        ]

    def _fill_table(self) -> None:
        table = self.query_one("#history-table", DataTable)
        current = self.current_row()
        table.clear(columns=True)
        for title, _attr, _numeric in COLUMNS:
            arrow = ""
            if COLUMNS[self.sort.column][0] == title:
                arrow = " ↓" if self.sort.reverse else " ↑"
            table.add_column(title + arrow, key=title)
        for row in self.sorted_rows():
            table.add_row(*self._cells(row), key=row.id)
        if current is not None:
            with suppress(Exception):  # the row is gone
                table.move_cursor(row=table.get_row_index(current.id))
        table.border_title = f"Sessions ({len(self.rows)})"

    def current_row(self) -> SessionRow | None:
        table = self.query_one("#history-table", DataTable)
        if not self.rows or table.row_count == 0:
            return None
        try:
            key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        except Exception:
            return None
        return next((r for r in self.rows if r.id == key), None)

    def action_sort(self) -> None:
        """Next column; a second press on the same column would be confusing, so the first
        column (time) toggles newest/oldest first when the cycle comes back to it."""
        self.sort.column = (self.sort.column + 1) % len(COLUMNS)
        if self.sort.column == 0:
            self.sort.time_reverse = not self.sort.time_reverse
            self.sort.reverse = self.sort.time_reverse
        else:
            self.sort.reverse = COLUMNS[self.sort.column][2]  # numbers: biggest first
        self._fill_table()
        self.query_one("#history-status", Static).update(self._status())

    @on(DataTable.HeaderSelected, "#history-table")
    def _header_clicked(self, event: DataTable.HeaderSelected) -> None:
        column = event.column_index
        if column == self.sort.column:
            self.sort.reverse = not self.sort.reverse
        else:
            self.sort.column, self.sort.reverse = column, COLUMNS[column][2]
        if column == 0:
            self.sort.time_reverse = self.sort.reverse
        self._fill_table()
        self.query_one("#history-status", Static).update(self._status())

    @on(DataTable.RowHighlighted, "#history-table")
    def _row_moved(self) -> None:
        self._chart()

    # ------------------------------------------------------------------ compare

    def action_mark(self) -> None:
        row = self.current_row()
        if row is None:
            return
        if row.id in self.marked:
            self.marked.remove(row.id)
        else:
            self.marked = [*self.marked, row.id][-2:]
        self._fill_table()
        if len(self.marked) == 2:
            self.action_compare()
        elif self.diff is None:
            self._compare_hint()

    def _compare_hint(self) -> None:
        """Until two sessions are compared, the pane says how (never an empty box)."""
        table = self.query_one("#history-compare", DataTable)
        table.clear(columns=True)
        table.add_column("nothing compared yet")
        marked = len(self.marked)
        table.add_row("Mark two sessions with space: they are compared side by side.")
        if marked == 1:
            table.add_row("One marked: mark another.")
        table.border_title = "Compare"

    def action_compare(self) -> None:
        if len(self.marked) != 2:
            self.app.notify("Mark two sessions with space first.", severity="warning")
            return
        # A is the older, B the newer: the change reads as "what happened since"
        pair = sorted((r for r in self.rows if r.id in self.marked), key=lambda r: r.started or 0)
        folders = [Path(r.folder) for r in pair]
        self._requests["diff"] += 1
        self._diff(folders[0], folders[1], self._requests["diff"])

    @work(thread=True, exclusive=True, group="history-diff")
    def _diff(self, a: Path, b: Path, request: int) -> None:
        from etu.runner.diff import DiffError, diff_sessions

        try:
            result, error = diff_sessions(a, b), None
        except (DiffError, OSError, ValueError) as exc:
            result, error = None, str(exc)
        self.post_message(DiffReady(result, error, request))

    def on_diff_ready(self, message: DiffReady) -> None:
        if message.request != self._requests["diff"]:
            return
        message.stop()
        self.diff = message.result
        table = self.query_one("#history-compare", DataTable)
        table.clear(columns=True)
        if message.result is None:
            table.border_title = f"Compare · {printable(message.error or '')}"
            return
        result = message.result
        a, b = result["a"]["id"], result["b"]["id"]
        for title in ("", f"A {_short_id(a)}", f"B {_short_id(b)}", "Δ", "%"):
            table.add_column(title)
        for label, left, right, delta, pct in compare_rows(result):
            table.add_row(label, left, right, delta, pct)
        verdict = "equal" if result["equal"] else "different"
        table.border_title = f"Compare · {verdict} (rtol 1e-5, atol 1e-8)"

    # ------------------------------------------------------------------ chart

    def action_next_figure(self) -> None:
        """The next figure; at 80 columns, where the compare takes the row, the chart first
        fills the screen (``g`` again: the next figure, Escape: back)."""
        chart = self.query_one("#history-chart")
        if not chart.region.area and self.screen.maximized is not chart:
            fill_screen(self, chart, self.query_one("#history-table").focus)
            return
        self.figure = (self.figure + 1) % len(FIGURES)
        self._chart()

    def _chart(self) -> None:
        row = self.current_row()
        attr, title = FIGURES[self.figure]
        self.chart_spread = []
        if row is None:
            self.chart_points, self.chart_program = [], ""
        else:
            same = [r for r in self.rows if r.program["sha256"] == row.program["sha256"]]
            same.sort(key=lambda r: r.started or 0)
            self.chart_program = row.program["name"] or row.program["short"]
            charted = [r for r in same if getattr(r, attr) is not None]
            self.chart_points = [(r.id, float(getattr(r, attr))) for r in charted]
            self.chart_spread = [
                (x, found)
                for x, r in enumerate(charted, 1)
                if (found := inference_spread(r, attr)) is not None
            ]
        chart = self.query_one("#history-chart")
        sessions = plural(len(self.chart_points), "session")
        label = f"{title} · {printable(self.chart_program)} · {sessions}"
        if self.chart_spread:
            label += " · min/median/max per inference"
        chart.border_title = f"Chart · {label}"
        plt = getattr(chart, "plt", None)
        if plt is None:
            return
        plt.clear_data()
        plt.clear_figure()
        if self.chart_points:
            xs = list(range(1, len(self.chart_points) + 1))
            plt.plot(xs, [v for _, v in self.chart_points], marker="braille")
            plt.scatter(xs, [v for _, v in self.chart_points], marker="dot")
            if self.chart_spread:  # runs with several inferences: their spread per inference
                spread_xs = [x for x, _ in self.chart_spread]
                for key, marker in (("min", "v"), ("median", "x"), ("max", "^")):
                    values = [found[key] for _, found in self.chart_spread]
                    plt.scatter(spread_xs, values, marker=marker, label=key)
            step = max(1, len(xs) // 6)
            plt.xticks(xs[::step], [_short_id(i) for i, _ in self.chart_points][::step])
            here = spread_text(row, attr) if row is not None else ""
            plt.xlabel(f"this session: {here}" if here else "session (oldest → newest)")
            plt.title(title)
        else:
            note = self.chart_note(row, title)
            plt.title(note)
            if note.endswith("QEMU"):
                plt.xlabel("QEMU counts no cycles")
        chart.refresh()

    def chart_note(self, row: SessionRow | None, title: str) -> str:
        """Why the chart is empty: no session, or none of the program's recorded the
        figure (an emulated board counts no NPU cycles)."""
        if row is None:
            return f"{title}: no session to chart"
        same = [r for r in self.rows if r.program["sha256"] == row.program["sha256"]]
        cycles = FIGURES[self.figure][0].endswith("_cycles")
        if cycles and same and all(r.kind == "qemu" for r in same):
            return f"{title}: none on QEMU"
        return f"{title}: none recorded in this program's sessions"

    # ------------------------------------------------------------------ replay

    def action_replay(self) -> None:
        self._replay(timed=False)

    def action_replay_timed(self) -> None:
        self._replay(timed=True)

    def _replay(self, timed: bool) -> None:
        row = self.current_row()
        if row is None:
            return
        self.post_message(ReplayRequested(Path(row.folder), timed))


def inference_spread(row: SessionRow, figure: str) -> dict[str, float] | None:
    """A session's per-inference ``{min, median, max}`` of ``figure`` (several PMU reports),
    None without one; every value checked to be a number (summary.json is read from disk)."""
    found = (row.spread or {}).get(figure)
    if not isinstance(found, dict):
        return None
    values = {key: found.get(key) for key in ("min", "median", "max")}
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in values.values()):
        return None
    return {key: float(v) for key, v in values.items()}


def spread_text(row: SessionRow, figure: str) -> str:
    """``min 10 · median 12 · max 15 over 3 inferences`` or ``""``."""
    found = inference_spread(row, figure)
    if found is None:
        return ""
    n = (row.spread or {}).get(figure, {}).get("n")
    over = f" over {n} reports" if isinstance(n, int) else ""
    return (f"min {number(round(found['min']))} · median {number(round(found['median']))} · "
            f"max {number(round(found['max']))}{over}")  # fmt: skip


def _short_id(session_id: str) -> str:
    """``20261123-213507-fvp-000`` → ``21:35:07``."""
    parts = session_id.split("-")
    if len(parts) >= 2 and len(parts[1]) == 6 and parts[1].isdigit():
        clock = parts[1]
        return f"{clock[:2]}:{clock[2:4]}:{clock[4:]}"
    return session_id[:8]


def compare_rows(result: dict) -> list[tuple[str, str, str, str, str]]:
    """The compare table's rows: (what, A, B, change, % change), changed figures marked."""

    def fmt(value: object, width: int = VALUE_WIDTH) -> str:
        text = printable(number(value))
        return text if len(text) <= width else text[: width - 1] + "…"

    def cut(name: str, width: int = LABEL_WIDTH - 6) -> str:
        return name if len(name) <= width else name[: width - 1] + "…"

    rows: list[tuple[str, str, str, str, str]] = []
    ending = result["ending"]
    mark = "≠ " if ending["changed"] else "  "
    rows.append((mark + "ending", ending["a"], ending["b"], "", ""))
    for group in ("cycles", "counters", "allocators"):
        for item in result[group]:
            if item["a"] is None and item["b"] is None:
                continue
            rows.append((
                ("  " if item["equal"] else "≠ ") + item["name"].removeprefix("ETHOSU_PMU_"),
                fmt(item["a"]), fmt(item["b"]),
                number(item["delta"], signed=True, missing=""),
                percent(item["percent"], signed=True, missing=""),
            ))  # fmt: skip
    for layer in result.get("npu_layers") or []:  # both runs kept an FVP PMU trace
        rows.append((
            ("  " if layer["equal"] else "≠ ") + "NPU " + cut(printable(layer["name"])),
            fmt(layer["a"]), fmt(layer["b"]),
            number(layer["delta"], signed=True, missing=""),
            percent(layer["percent"], signed=True, missing=""),
        ))  # fmt: skip
    for output in result["outputs"]:
        rows.append((
            ("  " if output["equal"] else "≠ ") + f"output {output['index']} (max |Δ|, cos)",
            f"{output['numel_a']} values", f"{output['numel_b']} values",
            fmt(output["max_abs_diff"], 10), f"{output['cosine_similarity']:.6f}",
        ))  # fmt: skip
    diverge = result["first_divergence"]
    if diverge is not None:
        left, right = around_difference(diverge["a"], diverge["b"])
        rows.append((f"≠ log line {diverge['line']}", fmt(left, 12), fmt(right, 12), "", ""))
    else:
        rows.append(("  log", "the same", "the same", "", ""))
    return rows


def around_difference(a: str | None, b: str | None, before: int = 12) -> tuple[str, str]:
    """Both lines from a little before where they first differ (``…`` marks the cut)."""
    if a is None or b is None:
        return (a if a is not None else "(ended)", b if b is not None else "(ended)")
    same = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        same += 1
    start = max(0, same - before)
    cut = "…" if start else ""
    return cut + a[start:], cut + b[start:]


def replay_schedule(line_times: list[tuple[int, float]], speed: float = 1.0) -> list[float]:
    """Seconds after the start at which each recorded line is shown again (raw.index)."""
    if not line_times:
        return []
    first = line_times[0][1]
    return [max(0.0, (when - first) / speed) for _, when in line_times]


__all__ = [
    "COLUMNS",
    "FIGURES",
    "DiffReady",
    "HistoryListed",
    "HistoryPanel",
    "ReplayRequested",
    "compare_rows",
    "inference_spread",
    "replay_schedule",
    "spread_text",
]
