"""The PMU pane's lines for a session on the emulated board with etu's Ethos-U bridge: the
functional model's counts per delegate beside Vela's estimate, never cycles
(``runner.runtime_run.NPU_LABEL``), and the banner's one-line summary for 80×24.

Text a device printed (operation kinds, errors) goes through ``printable``.
"""

from __future__ import annotations

from collections.abc import Sequence

from textual.content import Content

from etu.parsers.runner_events import NpuInvoke
from etu.tui.safe_text import printable

MISSING = "–"


def count(value: float | None) -> str:
    return MISSING if value is None else f"{round(value):,}"


# The emulated board's NPU: the functional model's counts, never cycles (runner.runtime_run)
EXECUTORS = {"model": "etu's Ethos-U model", "reference": "TOSA reference model"}
NPU_WIDTH = 54  # a line of the PMU pane's text (60 columns less border and padding)
VelaCall = tuple[float | None, float | None]  # one Vela call's (cycles, nn_macs)


def _cut(text: str, width: int = NPU_WIDTH) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def npu_kinds(event: NpuInvoke) -> str:
    kinds = ", ".join(f"{n} {printable(k)}" for k, n in (event.kinds or {}).items())
    return f"{count(event.operations)}: {kinds}" if kinds else count(event.operations)


def npu_delegate_lines(
    delegate: int | None, event: NpuInvoke, invokes: int, vela: VelaCall | None
) -> list[Content]:
    """One delegate's invokes: who answered, what the model counted, beside Vela's."""
    name = f"delegate {delegate}" if delegate is not None else "an unnamed delegate"
    who = EXECUTORS.get(event.executor or "", "etu")
    head = f"{name} · {invokes} invoke{'' if invokes == 1 else 's'} · {who}"
    if not event.ok:
        where = ""
        if event.operation is not None:
            where = f" at operation {event.operation}"
            where += f" ({printable(event.command)})" if event.command else ""
        return [
            Content.styled(_cut(f"{name} · failed{where}"), "$text-error bold"),
            Content.styled(f"  {printable(event.error or event.text)}", "$text-error"),
        ]
    lines = [Content.styled(_cut(head), "bold")]
    if event.executor == "model":
        lines.append(labelled("  operations", _cut(npu_kinds(event), NPU_WIDTH - 13)))
        macs = count(event.macs)
        note = ""
        if vela is not None and vela[1] is not None:
            same = event.macs is not None and round(vela[1]) == event.macs
            note = "= Vela's count" if same else f"Vela {count(vela[1])}"
        lines.append(labelled("  MACs      ", macs, note))
    if event.bytes_read is not None or event.bytes_written is not None:
        moved = f"{count(event.bytes_read)} read · {count(event.bytes_written)} written"
        what = "  bytes     " if event.executor == "model" else "  bytes in/out"
        lines.append(labelled(what, moved))
    if event.fallback:
        lines.append(Content.styled(_cut(f"  model lacks: {printable(event.fallback)}"), "dim"))
    if vela is not None and vela[0]:
        lines.append(Content.styled(f"  Vela estimate {count(vela[0])} cycles", "dim"))
    return lines


def npu_lines(
    npu: dict[int | None, NpuInvoke],
    invokes: dict[int | None, int],
    vela_calls: Sequence[VelaCall],
    label: str,
) -> list[Content]:
    """The PMU pane of a session on the emulated board with etu's NPU: its label, then per
    delegate the functional model's operations, MACs and bytes beside Vela's estimate
    (Vela's calls pair with the delegates in order when there are as many)."""
    lines = [Content.styled(printable(label), "$text-warning bold")]
    delegates = sorted(npu, key=lambda d: -1 if d is None else d)
    paired = len(vela_calls) == len(delegates)
    if len(delegates) > 2:  # one line each: the pane is 12 lines high
        for delegate in delegates:
            event = npu[delegate]
            name = f"d{delegate}" if delegate is not None else "d?"
            if not event.ok:
                text = f"{name} failed: {printable(event.error or event.text)}"
                lines.append(Content.styled(_cut(text), "$text-error"))
                continue
            figures = [f"{count(event.operations)} ops"] if event.operations is not None else []
            figures += [f"{count(event.macs)} MACs"] if event.macs is not None else []
            figures += [f"{count(event.bytes_read)} B read"] if event.bytes_read is not None else []
            lines.append(Content(_cut(f"{name} · " + " · ".join(figures or ["answered"]))))
    else:
        for k, delegate in enumerate(delegates):
            vela = vela_calls[k] if paired else None
            lines += npu_delegate_lines(delegate, npu[delegate], invokes.get(delegate, 0), vela)
    if not delegates:
        lines.append(Content.styled("No NPU invoke yet: etu answers each one.", "dim"))
    if not paired or len(delegates) > 2:
        cycles = sum(c for c, _ in vela_calls if c) if vela_calls else 0
        if cycles:
            lines.append(Content.styled(f"Vela estimate {count(cycles)} cycles", "dim"))
    return lines


def compact(value: int, unit: str = "") -> str:
    """``2.24 M``, ``69.1 k``: three digits (a one-line summary's numbers)."""
    for size, prefix in ((10**9, "G"), (10**6, "M"), (10**3, "k")):
        if value >= size:
            return f"{value / size:.3g} {prefix}{unit}"
    return f"{value} {unit}".rstrip()


def npu_summary(npu: dict[int | None, NpuInvoke]) -> str | None:
    """One line for the banner (it shows at 80×24, where the panes do not): what the
    emulated NPU did in the last answered invoke of each delegate. None without invokes
    or when one failed (the ending names the operation then)."""
    events = list(npu.values())
    if not events or not all(e.ok for e in events):
        return None
    who = {e.executor for e in events}
    head = "NPU, no timing: " if who == {"model"} else "NPU (TOSA reference model), no timing: "
    figures = [f"{len(events)} delegates"] if len(events) > 1 else []
    if who == {"model"}:
        figures.append(f"{compact(sum(e.operations or 0 for e in events))} ops")
        figures.append(f"{compact(sum(e.macs or 0 for e in events))} MACs")
    if all(e.bytes_read is not None for e in events):
        figures.append(f"{compact(sum(e.bytes_read or 0 for e in events), 'B')} read")
        figures.append(f"{compact(sum(e.bytes_written or 0 for e in events), 'B')} written")
    return head + " · ".join(figures)


def labelled(label: str, value: str, note: str = "") -> Content:
    parts: list[tuple[str, str] | str] = [(label, "dim"), " ", (value, "bold")]
    if note:
        parts += [" ", (note, "dim")]
    return Content.assemble(*parts)
