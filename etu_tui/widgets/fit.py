"""The Fit tab: does the open program fit the firmware? One row per check, failing first.

The verdicts come from ``etu.parsers.fit.check_fit``; each names what is needed, what the
firmware has and, for a shortfall, the build flag that fixes it.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.content import Content
from textual.widgets import Static

from etu.parsers.fit import FAIL, OK, WARN, Verdict, worst_status
from etu.runner.workspace import FirmwareResult
from etu.tui.safe_text import printable
from etu.tui.widgets.formatting import nbytes, plural

MISSING = "–"
MARKERS = {FAIL: "✗ FAIL", WARN: "! WARN", OK: "✓ ok"}
STYLES = {FAIL: "$text-error", WARN: "$text-warning", OK: "$text-success"}
TAB_MARKS = {FAIL: "✗", WARN: "!", OK: "✓"}
# Checks whose integer need/have are byte counts (cpu_kernels counts operators).
BYTE_CHECKS = frozenset(
    {
        "program_placement",
        "method_allocator",
        "planned_fast_memory",
        "ethosu_scratch",
        "scratch_limit",
        "fast_scratch",
        "region",
    }
)
LONG_VALUE = 96


def amount(check: str, value: int | str | None) -> str:
    """A need or have: bytes for the size checks, else the value as the parser gives it."""
    if value is None:
        return MISSING
    if isinstance(value, int) and not isinstance(value, bool) and check in BYTE_CHECKS:
        return nbytes(value)
    text = str(value)
    return text if len(text) <= LONG_VALUE else text[: LONG_VALUE - 1] + "…"


def marker(status: str) -> Content:
    return Content.styled(MARKERS.get(status, status), f"{STYLES.get(status, '')} bold")


def tab_label(result: FirmwareResult | None) -> Content:
    """``Fit ✗``: the tab's label carries the worst status (``Fit –`` when not checked)."""
    if result is None or result.verdicts is None:
        return Content.assemble("Fit ", ("–", "dim"))
    status = worst_status(result.verdicts)
    return Content.assemble("Fit ", (TAB_MARKS[status], f"{STYLES[status]} bold"))


def headline(result: FirmwareResult | None, workspace: str) -> Content:
    """One line: the overall verdict, with the counts by status."""
    if result is None or result.label is None:
        return Content.assemble(
            ("– not checked: ", "bold"),
            (f"no firmware ELF beside {workspace or 'the program'}; press e to pick one", "dim"),
        )
    if result.verdicts is None:
        return Content.assemble(
            ("– not checked: ", "bold"),
            (f"{printable(result.label)} could not be used (see above)", "dim"),
        )
    verdicts = result.verdicts
    status = worst_status(verdicts)
    counts = {s: sum(v.status == s for v in verdicts) for s in (FAIL, WARN, OK)}
    tally = f"{counts[FAIL]} failing · {plural(counts[WARN], 'warning')} · {counts[OK]} ok"
    against = printable(f"{result.program or 'the program'} on {result.label}")
    if status == FAIL:
        head = ("✗ DOES NOT FIT ", f"{STYLES[FAIL]} bold")
    elif status == WARN:
        head = ("! FITS, WITH WARNINGS ", f"{STYLES[WARN]} bold")
    else:
        head = ("✓ FITS ", f"{STYLES[OK]} bold")
    vela = f" · with {result.vela}" if result.vela else " · no Vela report"
    return Content.assemble(head, (against, "bold"), (f" · {tally}{vela}", "dim"))


class FitHeadline(Static):
    """The overall verdict in one line, above the checks."""

    DEFAULT_CSS = """
    FitHeadline {
        height: auto;
        border: round $primary;
        border-title-style: bold;
        border-subtitle-color: $text-muted;
        padding: 0 1;
    }
    """

    def show(
        self,
        result: FirmwareResult | None,
        workspace: str,
        rebuild: str | None = None,
        notes: list[str] | None = None,
    ) -> None:
        """``notes``: the program's integer inputs and outputs, one sentence each ("this
        program takes int8 input: scale 0.0078, zero point -1")."""
        self.border_title = "Fit"
        self.border_subtitle = "e pick ELF · b copy rebuild" if rebuild else "e pick ELF"
        lines = [headline(result, workspace)]
        if rebuild:
            lines.append(Content.assemble(("rebuild ", "dim"), (rebuild, "bold $text-accent")))
        for note in notes or []:
            lines.append(Content.assemble(("ℹ ", "$text-accent bold"), printable(note)))
        self.update(Content("\n").join(lines))


def details(verdict: Verdict) -> Content:
    """The message, need/have, and the fix (highlighted) of one verdict."""
    lines = [Content(printable(verdict.message))]
    if verdict.need is not None or verdict.have is not None:
        lines.append(
            Content.assemble(
                ("need ", "dim"),
                (amount(verdict.check, verdict.need), "bold"),
                ("  have ", "dim"),
                (amount(verdict.check, verdict.have), "bold"),
            )
        )
    if verdict.fix and verdict.status != OK:
        lines.append(
            Content.assemble(
                (" fix ", "bold $background on $accent"),
                " ",
                (printable(verdict.fix), "bold $text-accent"),
            )
        )
    return Content("\n").join(lines)


class VerdictRow(Horizontal):
    """One check: status marker, name, and the details wrapping beside them."""

    DEFAULT_CSS = """
    VerdictRow {
        height: auto;
        padding: 0 1;
        margin-bottom: 1;
        &.verdict--fail { background: $error 12%; }
        &.verdict--warn { background: $warning 10%; }
        & > .verdict--marker { width: 8; }
        & > .verdict--check { width: 22; text-style: bold; }
        & > .verdict--details { width: 1fr; }
    }
    """

    def __init__(self, verdict: Verdict) -> None:
        super().__init__(classes=f"verdict--{verdict.status}")
        self.verdict = verdict

    def compose(self) -> ComposeResult:
        yield Static(marker(self.verdict.status), classes="verdict--marker")
        yield Static(self.verdict.check, classes="verdict--check", markup=False)
        yield Static(details(self.verdict), classes="verdict--details")


class FitChecks(VerticalScroll, can_focus=True):
    """Every check of the fit, failing ones first (the order ``check_fit`` gives)."""

    DEFAULT_CSS = """
    FitChecks {
        height: 1fr;
        border: round $primary;
        border-title-style: bold;
        border-subtitle-color: $text-muted;
        &:focus { border: round $accent; }
        & > .fit--empty { padding: 0 1; color: $text-muted; }
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.verdicts: list[Verdict] = []

    async def show(self, result: FirmwareResult | None) -> None:
        self.verdicts = list(result.verdicts or []) if result else []
        self.border_title = f"Checks ({len(self.verdicts)}) · failing first"
        await self.remove_children()
        if not self.verdicts:
            await self.mount(Static("No checks ran.", classes="fit--empty"))
            return
        await self.mount_all(VerdictRow(v) for v in self.verdicts)
        self.scroll_home(animate=False)

    def row_texts(self) -> list[str]:
        """Each row's text (marker, check, details) as plain text, for tests."""
        return [
            " ".join([MARKERS[v.status], v.check, details(v).plain.replace("\n", " ")])
            for v in self.verdicts
        ]
