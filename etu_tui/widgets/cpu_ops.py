"""The operators left on the CPU, and the selective-build value that registers them."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.content import Content
from textual.widgets import Static

from etu.parsers.program_facts import CpuOperator
from etu.parsers.program_needs import CORTEX_M_BUILD_FLAG, CORTEX_M_PREFIX, kernel_library
from etu.tui.safe_text import printable
from etu.tui.widgets.formatting import plural

# Which library's kernel runs each operator in the runner (parsers.program_needs.kernel_library).
LIBRARY_LABELS = {
    "cmsis-nn": "CMSIS-NN",
    "quantized": "quantized",
    "portable": "portable",
}


def operators_content(ops: list[CpuOperator]) -> Content:
    if not ops:
        return Content.styled("none: every instruction is delegated", "$text-success")
    lines = []
    for op in ops:
        library = kernel_library(op.name)
        if op.is_prim:
            marker = ("prim ", "$text-secondary")
        elif library == "cmsis-nn":
            marker = ("◆ ", "$text-success")
        else:
            marker = ("○ ", "$text-warning")
        lines.append(Content.assemble(marker, (printable(op.name), "bold")))
        dtypes = ", ".join(op.dtypes) or "no tensor args"
        note = "  (prim op: always registered, not in the list)" if op.is_prim else ""
        label = "" if op.is_prim else f" · {LIBRARY_LABELS.get(library, library)}"
        lines.append(
            Content.styled(f"    {dtypes} · {plural(op.calls, 'call')}{label}{note}", "dim")
        )
    return Content("\n").join(lines)


class SelectOps(Static):
    """The ``EXECUTORCH_SELECT_OPS_LIST`` value, verbatim, ready to copy."""

    DEFAULT_CSS = """
    SelectOps {
        height: auto;
        border: round $secondary;
        border-title-color: $text-secondary;
        border-subtitle-color: $text-muted;
        padding: 0 1;
    }
    """

    def __init__(self) -> None:
        super().__init__("")
        self.value = ""
        self.border_title = "EXECUTORCH_SELECT_OPS_LIST"
        self.border_subtitle = "c copy"

    def show(self, value: str) -> None:
        self.value = value  # what `c` copies: the list alone
        if not value:
            self.update(Content.styled("(empty)", "dim"))
            return
        content = Content(printable(value))
        if CORTEX_M_PREFIX in value:  # upstream's runner registers these only with the flag
            content = Content.assemble(
                content,
                ("\n" + f"+ {CORTEX_M_BUILD_FLAG} (Cortex-M kernels and CMSIS-NN)", "dim"),
            )
        self.update(content)


class CpuOpsView(VerticalScroll):
    """Operators with the dtypes their calls see; prim ops marked and left out of the list."""

    DEFAULT_CSS = """
    CpuOpsView {
        height: 1fr;
        border: round $primary;
        border-title-style: bold;
        & > #cpu-ops { height: auto; padding: 0 1; margin-bottom: 1; }
    }
    """

    def compose(self) -> ComposeResult:
        yield Static(id="cpu-ops")
        yield SelectOps()

    def show(self, ops: list[CpuOperator], select_ops: str) -> None:
        self.border_title = f"CPU operators ({len(ops)})"
        self.query_one("#cpu-ops", Static).update(operators_content(ops))
        self.query_one(SelectOps).show(select_ops)
