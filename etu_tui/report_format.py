"""``etu report`` rendered: Markdown to paste into an issue, or one self-contained HTML file.

The report (runner/report.py) becomes sections of paragraphs, tables and code blocks once;
both formats render those. Every text that came from outside (device lines, file names,
operator names) is neutralised (safe_text.printable) and then escaped for the format: HTML
entities in HTML; in Markdown, HTML entities too (renderers pass raw HTML through) and the
characters that would break a table or start markup. The HTML has no script, no external
link or font, and a Content-Security-Policy that forbids loading anything.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from typing import Any

from etu.parsers.text import printable
from etu.tui.numbers import number

TITLES = {
    "session": "Session",
    "program": "Program",
    "fit": "Fit verdicts",
    "vela": "Vela estimate",
    "ending": "How the run ended",
    "pmu": "PMU counters",
    "allocators": "Allocator use",
    "outputs": "Outputs",
    "tools": "Tool versions and hashes",
}

# What a session's process was, by session kind (a board session has none of its own).
PROCESS_NAMES = {"fvp": "simulator", "qemu": "emulator (QEMU)", "board": "monitor"}


@dataclass(slots=True)
class Section:
    id: str
    title: str
    items: list[tuple] = field(
        default_factory=list
    )  # ("p", text) ("table", head, rows) ("code", text)

    def p(self, text: str) -> None:
        self.items.append(("p", text))

    def table(self, head: list[str], rows: list[list[Any]]) -> None:
        self.items.append(("table", head, rows))

    def code(self, text: str) -> None:
        self.items.append(("code", text))


def sections(report: dict) -> list[Section]:
    out = {key: Section(key, TITLES[key]) for key in TITLES}
    s = report["session"]
    sim = " (etu stand-in FVP: numbers are SIMULATED)" if s["simulated"] else ""
    out["session"].table(
        ["field", "value"],
        [["session", s["id"]], ["started", s["started_text"]], ["kind", s["kind"] + sim],
         ["target", s["target"]], ["duration", f"{number(s['duration_s'])} s"],
         ["session format", s["format"]]],
    )  # fmt: skip
    for warning in s["warnings"]:
        out["session"].p(f"Warning: {warning}")

    p = report["program"]
    section = out["program"]
    if not p.get("available"):
        section.p(f"Program {p.get('name') or '?'}: {p.get('error') or p['source']}")
    else:
        section.p(f"{p['name']} ({number(p['file_size'])} B) from {p['source']}")
        section.table(
            ["NPU (delegate calls)", "CPU (kernel calls)", "constant data", "plans"],
            [[p["delegate_calls"], p["kernel_calls"], f"{number(p['constant_data_size'])} B",
              ", ".join(p["plans"])]],
        )  # fmt: skip
        if p["cpu_operators"]:
            section.table(
                ["CPU operator", "dtypes", "calls"],
                [[op["name"], ", ".join(op["dtypes"]), op["calls"]] for op in p["cpu_operators"]],
            )
        else:
            section.p("No operator runs on the CPU.")
        if p["delegates"]:
            section.table(
                ["delegate", "NPU target", "payload", "scratch"],
                [[d["id"], d["npu_target"] or "-", f"{number(d['payload_size'])} B",
                  f"{number(d['scratch_size'])} B"] for d in p["delegates"]],
            )  # fmt: skip
        section.p("EXECUTORCH_SELECT_OPS_LIST for a selective kernel build:")
        section.code(p["select_ops_list"] or "(empty: no portable kernel needed)")

    fit = report["fit"]
    if not fit.get("available"):
        out["fit"].p(f"Not checked: {fit['why']}")
    else:
        out["fit"].p(f"Overall: {fit['status']} (regions from {fit['regions_from']})")
        out["fit"].table(
            ["status", "check", "message", "fix"],
            [[v["status"], v["check"], v["message"], v["fix"] or ""] for v in fit["verdicts"]],
        )

    vela = report["vela"]
    if not vela["available"]:
        out["vela"].p(f"No estimate: {vela['source']}")
    else:
        head = vela["headline"] or {}
        out["vela"].p(f"An ESTIMATE by Vela (from {vela['source']}), not a measurement.")
        keys = ("accelerator", "system_config", "memory_mode", "cycles", "npu_cycles",
                "inference_time_s", "sram_used_kib", "flash_used_kib", "dram_used_kib")  # fmt: skip
        rows = [[key, number(head.get(key))] for key in keys]
        rows += [["npu_operators", number(vela["npu_operators"])],
                 ["cpu_operators", number(vela["cpu_operators"])]]  # fmt: skip
        out["vela"].table(["figure", "value"], rows)

    e = report["ending"]
    line = f" (log line {e['proof_line']})" if e["proof_line"] else ""
    process = PROCESS_NAMES.get(s["kind"], "simulator")
    status = "" if e["returncode"] is None else f"; {process} exit status {number(e['returncode'])}"
    out["ending"].p(f"Ended: {e['reason']}{line}; runner verdict {e['verdict'] or '-'}{status}")
    out["ending"].code(e["proof"] or "(no line proves it)")
    if e["errors"]:
        out["ending"].table(
            ["line", "error", "status"],
            [[err.get("line"), err.get("text"), err.get("status_name") or ""]
             for err in e["errors"]],
        )  # fmt: skip

    pmu = report["pmu"]
    rows = [["NPU active cycles (ethosu_pmu_cycle_cntr)", number(pmu["npu_cycles"])],
            ["CPU cycles (inference runtime)",
             pmu.get("cpu_cycles_note") or number(pmu["cpu_cycles"])],
            ["NPU inferences", number(pmu["npu_inferences"])]]  # fmt: skip
    rows += [[name, number(value)] for name, value in pmu["counters"].items()]
    if pmu["npu_cycles"] is None and not pmu["counters"]:
        out["pmu"].p("The run printed no PMU report.")
    out["pmu"].table(["counter", "value"], rows)

    alloc = report["allocators"]
    method = alloc.get("method_allocator") or {}
    temp = alloc.get("temp_allocator") or {}
    out["allocators"].table(
        ["allocator", "bytes"],
        [["method allocator used", number(method.get("used"))],
         ["method allocator size", number(method.get("size"))],
         ["planned buffers", number(alloc.get("planned"))], ["loaded", number(alloc.get("loaded"))],
         ["inputs", number(alloc.get("input"))], ["executor", number(alloc.get("executor"))],
         ["temp allocator", number(temp.get("size"))]],
    )  # fmt: skip

    if not report["outputs"]:
        out["outputs"].p("The run printed no output tensor.")
    for o in report["outputs"]:
        more = f" (first {o['shown']})" if o["shown"] < (o["numel"] or 0) else ""
        out["outputs"].p(f"Output {o['index']}: {o['numel']} x {o['dtype'] or '?'}{more}")
        out["outputs"].code(" ".join(number(v) for v in o["values"]) or "(no values printed)")
    _losses_section(out["outputs"], report.get("losses"))

    t = report["tools"]
    out["tools"].table(
        ["tool or file", "version or hash"],
        [["etu", number(t["etu"])], ["executorch", number(t["executorch"])],
         ["ethos-u-vela (installed)", number(t["ethos-u-vela"])],
         ["Vela (that made the estimate)", number(t["vela_in_report"])],
         ["Python", t["python"]],
         [PROCESS_NAMES.get(s["kind"], "simulator"),
          f"{t['simulator'] or '-'}" + (" (stand-in)" if t["simulated"] else "")],
         ["program sha256", number(t["program_sha256"])],
         ["firmware", number(t["firmware"])], ["firmware sha256", number(t["firmware_sha256"])]],
    )  # fmt: skip
    if t["command"]:
        out["tools"].p("Command:")
        out["tools"].code(" ".join(str(a) for a in t["command"]))
    return list(out.values())


# --------------------------------------------------------------------------- Markdown

# Characters that start markup anywhere; underscores only at a word's edge (intraword ones
# never emphasise, and identifiers stay readable); block markers only at the start, a
# number's dot only when a list item would start there (``1. x``, never ``0.1.0``).
_MD_SPECIAL = re.compile(r"([\\`*\[\]|~])|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")
_MD_BLOCK_START = re.compile(r"^(\s*)(?:([#>+=-])|(\d+)([.)])(?=\s|$))")


def _losses_section(section: Section, losses: dict | None) -> None:
    """Both losses per output, from the session's saved host comparison (etu compare)."""
    if not losses:
        section.p("Not compared with the host reference (etu compare SESSION saves one).")
        return
    section.p(f"Against the host reference: {losses['reference']}. Float model: "
              f"{losses.get('quantization_note') or 'not known'}."
              + (" The target side is simulated." if losses.get("simulated") else ""))  # fmt: skip

    def figures(side: dict | None) -> str:
        if not side:
            return "-"
        exact = ""
        if side.get("differing") is not None:
            exact = f"{side['differing']} of {side['count']} differ, max {side['max_lsb']} LSB · "
        snr = "inf" if side.get("snr_db") is None else f"{side['snr_db']:.1f}"
        return f"{exact}SNR {snr} dB"

    section.table(
        ["output", "verdict", "deployment (reference → target)",
         "quantisation (float model → reference)"],
        [[o["index"], o.get("verdict") or "-", figures(o.get("deployment")),
          figures(o.get("quantization"))] for o in losses["outputs"]],
    )  # fmt: skip


def md_escape(text: Any) -> str:
    """Plain text that renders as itself in a Markdown paragraph or table cell."""
    text = html.escape(printable(str(text)), quote=False).replace("\t", " ")
    text = _MD_SPECIAL.sub(lambda m: "\\" + m.group(0), text)
    return _MD_BLOCK_START.sub(_escape_block_start, text)


def _escape_block_start(match: re.Match[str]) -> str:
    indent, marker, digits, dot = match.groups()
    return f"{indent}\\{marker}" if marker else f"{indent}{digits}\\{dot}"


def render_markdown(report: dict) -> str:
    lines = [f"# etu report: {md_escape(report['session']['id'])}", ""]
    for section in sections(report):
        lines += [f"## {section.title}", ""]
        for item in section.items:
            if item[0] == "p":
                lines += [md_escape(item[1]), ""]
            elif item[0] == "code":
                body = printable(str(item[1])).replace("```", "` ` `")
                lines += ["```text", body, "```", ""]
            else:
                _, head, rows = item
                lines.append("| " + " | ".join(md_escape(h) for h in head) + " |")
                lines.append("|" + "---|" * len(head))
                for row in rows:
                    lines.append("| " + " | ".join(md_escape(number(c)) for c in row) + " |")
                lines.append("")
    return "\n".join(lines)


# --------------------------------------------------------------------------- HTML

CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 70em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; margin: .5em 0 1em; }
th, td { border: 1px solid #ccc; padding: .2em .6em; text-align: left; vertical-align: top; }
th { background: #f3f3f3; } td.n { text-align: right; font-variant-numeric: tabular-nums; }
pre { background: #f6f6f6; padding: .5em; white-space: pre-wrap; word-break: break-all; }
.note { color: #a40; }
"""


def _h(text: Any) -> str:
    return html.escape(printable(str(text)), quote=True)


def render_html(report: dict) -> str:
    title = f"etu report: {report['session']['id']}"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'\">",
        f"<title>{_h(title)}</title><style>{CSS}</style></head><body>",
        f"<h1>{_h(title)}</h1>",
    ]
    if report["session"]["simulated"]:
        parts.append('<p class="note">Run on the etu stand-in FVP: every number is SIMULATED.</p>')
    for section in sections(report):
        parts.append(f'<section id="{section.id}"><h2>{_h(section.title)}</h2>')
        for item in section.items:
            if item[0] == "p":
                parts.append(f"<p>{_h(item[1])}</p>")
            elif item[0] == "code":
                parts.append(f"<pre>{_h(item[1])}</pre>")
            else:
                _, head, rows = item
                parts.append("<table><thead><tr>")
                parts.append("".join(f"<th>{_h(h)}</th>" for h in head))
                parts.append("</tr></thead><tbody>")
                for row in rows:
                    cells = []
                    for cell in row:
                        text = number(cell)
                        numeric = bool(re.fullmatch(r"[-+]?[\d,.]+( B)?", text))
                        cells.append(
                            f'<td class="n">{_h(text)}</td>' if numeric else f"<td>{_h(text)}</td>"
                        )
                    parts.append("<tr>" + "".join(cells) + "</tr>")
                parts.append("</tbody></table>")
        parts.append("</section>")
    parts.append("</body></html>\n")
    return "\n".join(parts)
