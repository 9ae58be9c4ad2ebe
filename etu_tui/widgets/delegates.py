"""Each delegate of a plan with its Ethos-U payload: what the NPU driver will be handed."""

from __future__ import annotations

from pathlib import Path

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.widgets import Static

from etu.parsers.errors import ParseError
from etu.parsers.ethosu import EthosUPayload, VelaIO, is_ethosu_delegate
from etu.parsers.ethosu_defaults import tosa_profile_problem
from etu.parsers.program_facts import DelegateInfo
from etu.parsers.pte import Program
from etu.runner.io_quantization import delegate_io_quantization
from etu.tui.safe_text import printable
from etu.tui.widgets.formatting import nbytes, shape

LABEL_WIDTH = 16


def _row(label: str, value: str | Content, style: str = "") -> Content:
    text = value if isinstance(value, Content) else Content.styled(printable(value), style)
    return Content.assemble((f"{label:<{LABEL_WIDTH}}", "dim"), text)


def npu_target(info: DelegateInfo) -> str | None:
    """The NPU the payload was compiled for, from the ``target`` compile spec.

    The command stream's FourCC (COP1/COP2) names a stream format, not the NPU: ExecuTorch
    1.5.1 writes COP1 for U55, U65 and U85 alike.
    """
    return info.delegate.spec("target")


def _io_rows(role: str, ios: list[VelaIO], grids: list | None = None) -> list[Content]:
    """Each NPU input or output; with ``grids`` (from :func:`delegate_io_quantization`)
    the integers it holds: dtype, scale and zero point, and which kernel says so."""
    if not ios:
        return [_row(role, "none")]
    rows = []
    for i, io in enumerate(ios):
        rows.append(
            _row(
                role if i == 0 else "",
                f"{i}: {shape(io.shape)} ×{io.elem_size} B = {nbytes(io.nbytes)}"
                f" · region {io.region} + {io.offset:#x}",
            )
        )
        grid = grids[i] if grids and i < len(grids) else None
        if grid is not None:  # the kernel that (de)quantizes it, on the CPU
            dtype, scale, zero, where = grid
            label = "  quantized" if where.startswith("quantize") else "  dequantized"
            rows.append(_row(label, f"{dtype} · scale {scale:.4g} · zp {zero} (CPU)"))
    return rows


def _external_rows(program: Program, info: DelegateInfo) -> list[Content]:
    """Each external Vela block: where its bytes are (the ``*.ptd`` beside the program), or
    what is wrong (no data file, a key no file has, bytes that do not hash to the key)."""
    from etu.parsers.external_blocks import data_files_beside, resolve

    payload = info.payload
    if payload is None or not payload.external_blocks:
        return []
    try:
        blocks = resolve(payload, info.delegate, data_files_beside(program))
    except ParseError as error:
        return [_row("external", f"✗ {error}", "$text-error")]
    rows = []
    for block in blocks:
        if block.ok:
            where = Path(block.data_file or "").name
            rows.append(_row("external", f"{block.block} → {where} · {nbytes(block.size or 0)} ✓"))
        else:
            rows.append(_row("external", f"✗ {block.message}", "$text-warning"))
    return rows


def tosa_rows(info: DelegateInfo) -> list[Content]:
    """The TOSA profile string the delegate was compiled with (``tosa_spec``), and a
    warning when it is not one upstream ExecuTorch makes."""
    tosa = info.delegate.spec("tosa_spec")
    if tosa is None:
        return []
    problem = tosa_profile_problem(tosa, npu_target(info))
    rows = [_row("TOSA profile", tosa)]
    if problem:
        rows.append(_row("warning", f"⚠ {problem}", "$text-warning"))
    return rows


def payload_content(program: Program, info: DelegateInfo) -> Content:
    delegate = info.delegate
    lines: list[Content] = [_row("backend", delegate.id, "bold")]
    where = f"{delegate.location_name} #{delegate.index}"
    try:
        span = program.delegate_span(delegate)
        where += f" · {nbytes(span.size)} at {span.offset:#x}"
    except ParseError as error:
        where += f" · {error.message}"
    lines.append(_row("payload", where))
    if info.error:
        lines.append(_row("payload error", f"✗ {info.error}", "$text-error bold"))
    payload: EthosUPayload | None = info.payload
    if payload is None:
        if not info.error and not is_ethosu_delegate(delegate.id):
            lines.append(_row("", "not an Ethos-U delegate: payload not decoded", "dim"))
        return Content("\n").join(lines)
    spec_target = npu_target(info)
    built_for = payload.target
    fmt = payload.command_stream_format or "external block"
    if built_for and spec_target and built_for != spec_target:
        npu = Content.assemble(
            (built_for, "bold"), (f"  ≠ compile spec target {spec_target}", "$text-error bold")
        )
    elif built_for:
        macs = payload.npu.macs_per_cycle if payload.npu else 0
        npu = Content.assemble(
            (built_for, "bold"), (f"  ({macs} MACs/cycle, per command stream)", "dim")
        )
    else:
        npu = Content.assemble((spec_target or "unknown", "bold"), ("  (compile spec)", "dim"))
    words = f" ({payload.command_stream_words} words)" if payload.command_stream_words else ""
    grids = delegate_io_quantization(info.plan, info.index, len(payload.inputs))
    lines += [
        _row("command stream", f"{fmt} · {nbytes(payload.command_stream_size)}{words}"),
        _row("NPU", npu),
        *tosa_rows(info),
        _row("weights", nbytes(payload.weights_size)),
        _row("scratch", nbytes(payload.scratch_size)),
        _row(
            "fast scratch",
            nbytes(payload.fast_scratch_size)
            if payload.fast_scratch_size is not None
            else "set by runner build",
        ),
        _row("layout", payload.layout, "dim"),
        *_io_rows("inputs", payload.inputs, grids[0]),
        *_io_rows("outputs", payload.outputs, grids[1]),
    ]
    lines += _external_rows(program, info)
    lines += [_row("warning", f"⚠ {w}", "$text-warning") for w in payload.warnings]
    return Content("\n").join(lines)


def flag_lines(text: str) -> str:
    """Command-line flags one per line (``--a --b=c`` → two lines), so a narrow column
    wraps between flags, not inside one; other values as they are."""
    words = text.split(" ")
    if sum(word.startswith("--") for word in words) < 2:
        return text
    lines: list[str] = []
    for word in words:
        if word.startswith("--") or not lines:
            lines.append(word)
        else:
            lines[-1] += f" {word}"
    return "\n".join(lines)


class CompileSpecs(Vertical):
    """Key → text rows; long values (compile flags) wrap under their own column."""

    DEFAULT_CSS = """
    CompileSpecs {
        height: auto;
        & > Horizontal { height: auto; }
        & .key { color: $text-primary; padding-right: 2; }
        & .value { width: 1fr; }
    }
    """

    def __init__(self, info: DelegateInfo, classes: str | None = None) -> None:
        super().__init__(classes=classes)
        self._specs = info.delegate.compile_specs

    def compose(self) -> ComposeResult:
        if not self._specs:
            yield Static(Content.styled("no compile specs", "dim"))
            return
        width = min(max(len(s.key) for s in self._specs) + 2, 28)
        for spec in self._specs:
            with Horizontal():
                key = Static(spec.key, classes="key", markup=False)
                key.styles.width = width
                yield key
                yield Static(flag_lines(spec.text), classes="value", markup=False)


def one_line(program: Program, info: DelegateInfo) -> Content:
    """The delegate in one line, for the Program tab."""
    target = (info.payload.target if info.payload else None) or npu_target(info)
    size = nbytes(program.delegate_span(info.delegate).size)
    parts = [(f"#{info.index} {printable(info.delegate.id)}", "bold"), f" · {size}"]
    if target:
        parts.append(f" · {target}")
    if info.error:
        parts.append(("  ✗ payload error", "$text-error bold"))
    return Content.assemble(*parts)


class DelegateCard(Horizontal):
    """One delegate: payload facts on the left, compile specs on the right; below each
    other when the card is too narrow for both (values would wrap inside words)."""

    DEFAULT_CSS = """
    DelegateCard {
        height: auto;
        border: round $primary;
        border-title-style: bold;
        margin-bottom: 1;
        & > .payload { width: 68; height: auto; padding: 0 1; }
        & > .specs { width: 1fr; padding: 0 1; border-left: vkey $primary-muted; }
        &.-stacked { layout: vertical; }
        &.-stacked > .payload { width: 1fr; }
        &.-stacked > .specs { border-left: none; border-top: hkey $primary-muted; }
    }
    """
    SIDE_BY_SIDE = 150  # columns the card needs for the payload (68) beside the specs

    def __init__(self, program: Program, info: DelegateInfo) -> None:
        super().__init__()
        self._program = program
        self._info = info
        self.border_title = (
            f"Delegate {info.index} · {printable(info.delegate.id)}"
            f" · plan {printable(info.plan.name)}"
        )

    def compose(self) -> ComposeResult:
        yield Static(payload_content(self._program, self._info), classes="payload")
        yield CompileSpecs(self._info, classes="specs")

    def on_resize(self) -> None:
        self.set_class(self.size.width < self.SIDE_BY_SIDE, "-stacked")


class DelegatesView(VerticalScroll):
    """The delegates of the shown plan, one card each."""

    DEFAULT_CSS = """
    DelegatesView { height: 1fr; }
    DelegatesView > .empty { color: $text-muted; padding: 1 2; }
    """

    async def show(self, program: Program | None, infos: list[DelegateInfo]) -> None:
        await self.remove_children()
        if program is None or not infos:
            note = "This plan has no delegates: everything runs on the CPU."
            await self.mount(Static(note, classes="empty"))
            return
        await self.mount_all(DelegateCard(program, info) for info in infos)
