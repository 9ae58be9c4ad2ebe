"""etu report: Markdown whose tables render (parsed with markdown-it), and one HTML file
that opens in headless Chromium with no console error, no request, every section, and a
device's hostile text shown as text."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from etu.runner.report import SECTIONS
from tests.browser import chromium, console_errors, save_artifact
from tests.history_workspace import add_v1_sessions, etu, make_workspace, record_run

HOSTILE = '<img src=x onerror="document.title=1"> | `x` *y* [a](http://example.com) \x1b[31m'


@pytest.fixture(scope="module")
def ws(tmp_path_factory) -> dict:
    ws = make_workspace(tmp_path_factory.mktemp("report") / "ws")
    old = add_v1_sessions(ws)
    run = record_run(ws)
    hostile = run.parent / (run.name[:-3] + "999")  # a copy whose proof line is hostile
    hostile.mkdir()
    for path in run.iterdir():
        (hostile / path.name).write_bytes(path.read_bytes())
    meta = json.loads((hostile / "meta.json").read_text())
    (hostile / "meta.json").write_text(json.dumps(meta | {"proof": HOSTILE}))
    return {"ws": ws, "run": run, "old": old[0], "hostile": hostile}


def markdown_tokens(text: str):
    return MarkdownIt("commonmark").enable("table").parse(text)


def test_markdown_has_every_section_and_its_tables_render(ws) -> None:
    result = etu("report", ws["run"].name, cwd=ws["ws"])
    assert result.returncode == 0, result.stderr
    tokens = markdown_tokens(result.stdout)
    headings = [tokens[i + 1].content for i, t in enumerate(tokens) if t.type == "heading_open"
                and t.tag == "h2"]  # fmt: skip
    assert headings == ["Session", "Program", "Fit verdicts", "Vela estimate",
                        "How the run ended", "PMU counters", "Allocator use", "Outputs",
                        "Tool versions and hashes"]  # fmt: skip
    tables = [t for t in tokens if t.type == "table_open"]
    assert len(tables) >= 9
    html = MarkdownIt("commonmark").enable("table").render(result.stdout)
    assert "<td>ETHOSU_PMU_AXI1_RD_DATA_BEAT_RECEIVED</td>" in html
    assert "<td>quantized_decomposed::quantize_per_tensor.out</td>" in html
    assert "<td>54,916</td>" in html and "demo_cnn.pte" in html
    assert "Program complete, exiting." in html and "SIMULATED" in html
    # every row has as many cells as its header
    rows = html.split("<tr>")
    assert all(r.count("<td>") in (0, 2, 3, 4) for r in rows)


def test_markdown_neutralises_device_text(ws) -> None:
    text = etu("report", ws["hostile"].name, cwd=ws["ws"]).stdout
    html = MarkdownIt("commonmark").enable("table").render(text)
    assert "<img" not in html and "<a " not in html and "\x1b" not in html
    assert "&lt;img src=x" in html


def test_html_opens_in_chromium_with_every_section(ws, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    result = etu("report", ws["hostile"].name, "--format", "html", "-o", str(out), cwd=ws["ws"])
    assert result.returncode == 0 and out.is_file(), result.stderr
    text = out.read_text()
    assert not re.search(r"<(script|link|img|a|iframe|object)\b", text)  # nothing to load
    with chromium() as driver:
        driver.get(out.as_uri())
        for section in SECTIONS:
            element = driver.find_element("id", section)
            assert element.is_displayed() and element.text.strip()
        assert driver.title.startswith("etu report:")  # the hostile onerror never ran
        assert not driver.find_elements("tag name", "img")
        assert '<img src=x onerror="document.title=1">' in driver.find_element("id", "ending").text
        pmu = driver.find_element("id", "pmu").text
        assert "ETHOSU_PMU_NPU_IDLE" in pmu and "54,916" in pmu
        assert console_errors(driver) == []
        save_artifact(driver, "report.png")


def test_report_of_an_older_session_and_errors(ws) -> None:
    result = etu("report", ws["old"].name, cwd=ws["ws"])
    assert result.returncode == 0 and "session format | 1" in result.stdout
    assert "ETHOSU\\_PMU\\_NPU\\_IDLE" not in result.stdout  # intraword _ stays readable
    assert "ETHOSU_PMU_NPU_IDLE" in result.stdout
    missing = etu("report", "nope", cwd=ws["ws"])
    assert missing.returncode == 2 and missing.stderr.startswith("etu: nope: no such session")
