"""The program header: what the file is, and how much of it runs on the NPU."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Static

from etu.parsers.program_facts import ProgramFacts
from etu.tui.safe_text import printable
from etu.tui.widgets.formatting import nbytes, plural


def _field(label: str, value: str) -> Content:
    return Content.assemble((label, "dim"), " ", (value, "bold"))


def summary_content(facts: ProgramFacts) -> Content:
    spans = facts.program.segment_spans
    program = facts.program
    header = program.extended_header
    identifier = program.file_identifier + (" (bundled)" if program.bundled else "")
    extended = (
        f"program {nbytes(header.program_size)}, segments at {header.segment_base_offset:#x}"
        if header
        else "none"
    )
    ids = sorted({info.delegate.id for info in facts.delegates})
    gap = "   "
    line1 = Content(gap).join(
        [
            _field("size", nbytes(program.file_size)),
            _field("identifier", identifier),
            _field("version", str(program.version)),
            _field("extended header", extended),
        ]
    )
    line2 = Content(gap).join(
        [
            _field("plans", str(len(program.plans))),
            _field("segments", f"{len(spans)} ({nbytes(sum(s.size for s in spans))})"),
            _field("constant data", nbytes(program.constant_data_size)),
            _field(
                "delegates",
                str(len(facts.delegates)) + (f" ({printable(', '.join(ids))})" if ids else ""),
            ),
        ]
    )
    split = [
        (f"◆ {plural(facts.delegate_calls, 'delegate call')} on NPU", "$text-success bold"),
        " · ",
        (f"○ {plural(facts.kernel_calls, 'kernel call')} on CPU", "$text-warning bold"),
    ]
    if facts.other_instructions:
        split += [" · ", f"{plural(facts.other_instructions, 'runtime instruction')}"]
    lines = [line1, line2, Content.assemble(*split)]
    lines += [Content.assemble(("⚠ ", "$text-warning"), w) for w in program.warnings]
    return Content("\n").join(lines)


class ProgramSummary(Static):
    """File name in the border, sizes and the NPU/CPU split inside."""

    DEFAULT_CSS = """
    ProgramSummary {
        height: auto;
        border: round $primary;
        border-title-style: bold;
        padding: 0 1;
    }
    """

    def show(self, facts: ProgramFacts) -> None:
        self.border_title = printable(facts.name)
        self.update(summary_content(facts))
