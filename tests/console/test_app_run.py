"""Pilot tests of the Run tab with real subprocesses of the stand-in FVP.

Nothing is mocked: the stand-in is installed under the real FVP names in a temporary folder,
found through ``ETU_FVP_DIR`` as a real FVP would be, and the app runs the demo firmware
through ``RunController``. Expected numbers come from the parser on the recorded session.
The flood and escape tests feed the panel through the same listener a run uses.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import threading
import time
from pathlib import Path

import psutil
import pytest
from textual.content import Content
from textual.pilot import Pilot
from textual.widgets import Input, Select, Static, TabbedContent

from etu.fvp.command import format_command
from etu.parsers.program_facts import program_target
from etu.parsers.runner_events import LogLine, MemoryReport, PmuReport
from etu.parsers.runner_log import RunnerLogParser, parse_log_bytes
from etu.parsers.vela import load_vela_report
from etu.runner.run import RunOutcome
from etu.runner.run_model import LaunchInfo, split_events
from etu.runner.session import SessionWriter, list_sessions, read_session, sessions_root
from etu.tui.app import PROGRAM_TAB, RUN_TAB, EtuApp
from etu.tui.widgets import (
    AllocatorPane,
    HexView,
    LogView,
    OutputsPane,
    PastRunsList,
    PmuPane,
    RunBanner,
    RunElfScreen,
    RunPanel,
)
from etu.tui.widgets.run_messages import RunBatch
from tests.console_helpers import (
    SIZE,
    open_run_tab,
    palette_search,
    screen_text,
    wait_run,
    wait_run_end,
)
from tools.screenshots import settle

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parent.parent.parent
DEMO = ROOT / "etu_tui" / "demo" / "demo_cnn.pte"
RUN_TIMEOUT = 60.0
STANDIN_ENV = ("ETU_STANDIN_FAULT", "ETU_STANDIN_INFERENCES", "ETU_STANDIN_LINE_DELAY")


async def _start_and_wait(pilot: Pilot) -> RunPanel:
    panel = await open_run_tab(pilot)
    await pilot.press("r")
    await wait_run_end(pilot, panel)
    return panel


def _plain(app: EtuApp, selector: str) -> str:
    """The text a Static holds (before wrapping)."""
    content = app.query_one(selector, Static).content
    return content.plain if isinstance(content, Content) else str(content)


def _footer(app: EtuApp) -> str:
    return screen_text(app).splitlines()[-1]


# ------------------------------------------------------------------------ a run


async def test_run_on_the_demo_firmware_succeeds(workspace: Path, standin: Path) -> None:
    app = EtuApp(workspace)
    async with app.run_test(size=SIZE) as pilot:
        panel = await open_run_tab(pilot)
        assert "STAND-IN FVP — numbers are simulated" in screen_text(app)
        simulator = _plain(app, "#run-simulator")
        assert simulator.startswith(" STAND-IN FVP — numbers are simulated ")
        assert f"{standin}/FVP_Corstone_SSE-300_Ethos-U55 (found via ETU_FVP_DIR)" in simulator
        await pilot.press("r")
        await wait_run_end(pilot, panel)
        live = panel.live
        assert live is not None and live.outcome is not None
        assert live.outcome.reason == "success", live.outcome

        # The session is on disk, in the workspace, with every byte.
        sessions = list_sessions(sessions_root(workspace))
        assert [live.folder] == sessions
        raw = (live.folder / "raw.log").read_bytes()
        assert raw.count(b"\n") >= 50
        meta = json.loads((live.folder / "meta.json").read_text())
        assert meta["exit_reason"] == "success" and meta["simulated"] is True

        banner = app.query_one(RunBanner)
        assert banner.state == "-success"
        assert "✓ success" in banner.text
        assert "Program complete, exiting." in banner.text
        assert live.folder.name in banner.text and str(workspace) not in banner.text
        assert banner.styles.background.g > banner.styles.background.r  # green

        # The exact command that ran, as format_command writes it; the next run's, shown
        # now, names its session folder (where the PMU trace goes) <session> until it exists.
        ran = format_command(meta["command"]).replace(str(live.folder.resolve()), "<session>")
        assert "<session>/pmu_trace.json" in ran
        assert _plain(app, "#run-command") == "$ " + ran

        # PMU: the cycles the runner printed, next to Vela's estimate, marked simulated.
        events = parse_log_bytes(raw)
        report = [e for e in events if isinstance(e, PmuReport)][-1]
        assert report.npu_cycles
        assert f"ethosu_pmu_cycle_cntr : {report.npu_cycles}".encode() in raw
        pmu = app.query_one(PmuPane)
        vela = load_vela_report(workspace / "vela").cycles
        assert f"NPU cycles {report.npu_cycles:,} simulated" in pmu.lines[0]
        assert f"Vela estimate {vela:,} cycles · simulated {report.npu_cycles:,}" in pmu.lines[1]
        assert "SIMULATED" in str(pmu.border_title)
        assert pmu.history[-1] == report.npu_cycles / report.npu_inferences

        # Allocator: the method pool's size from the runner's memory summary.
        memory = [e for e in events if isinstance(e, MemoryReport)][-1]
        size = memory.pools["method_allocator"].size
        assert size
        allocator = app.query_one(AllocatorPane)
        assert allocator.lines[0] == f"method pool {size:,} B"
        used = memory.pools["method_allocator"].used
        assert f"{used:,} B" in allocator.lines[1]

        outputs = app.query_one(OutputsPane)
        assert outputs.lines[0].startswith("[0] float · 10 el. · 1×10")
        # The stand-in printed these values: the pane's last line says so, compared or not.
        assert "SIMULATED" in str(outputs.border_title)
        assert outputs.lines[-1].strip().startswith("SIMULATED: printed by the etu stand-in")

        # The log holds every line the runner printed, in order.
        log = app.query_one(LogView)
        lines = [line for _, line in log.rows()]
        assert len(lines) == sum(1 for e in events if isinstance(e, LogLine))
        assert lines[-1].text == "Info: /OSCI/SystemC: Simulation stopped by user."
        text = screen_text(app)
        assert "Program complete, exiting." in text
        assert "r Start" in _footer(app)


async def test_missing_operator_ends_red_with_the_missing_kernel_line(
    workspace: Path, standin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ETU_STANDIN_FAULT", "missing-operator")
    app = EtuApp(workspace)
    async with app.run_test(size=SIZE) as pilot:
        panel = await _start_and_wait(pilot)
        outcome = panel.live.outcome
        assert outcome is not None and outcome.reason == "runner_error"
        assert "kernel 'quantized_decomposed::quantize_per_tensor.out' not found." in outcome.proof
        banner = app.query_one(RunBanner)
        assert banner.state == "-error"
        assert f"✗ runner_error · line {outcome.proof_line}" in banner.text
        assert outcome.proof in banner.text
        assert banner.styles.background.r > banner.styles.background.g  # red
        assert outcome.proof in screen_text(app)
        # Error lines are coloured: the E line is drawn differently from an I line.
        log = app.query_one(LogView)
        rows = list(log.rows())
        error_seq = next(seq for seq, line in rows if line.level == "E")
        info_seq = next(seq for seq, line in rows if line.level == "I")
        assert log.line_style(log.line(error_seq)[1]) != log.line_style(log.line(info_seq)[1])


async def test_stop_during_a_hang_ends_as_killed(
    workspace: Path, standin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ETU_STANDIN_FAULT", "hang")
    app = EtuApp(workspace)
    async with app.run_test(size=SIZE) as pilot:
        panel = await open_run_tab(pilot)
        await pilot.press("r")
        log = app.query_one(LogView)

        def started() -> bool:
            return any("Starting running" in line.text for _, line in log.rows())

        await wait_run(pilot, started, what="the hang run did not reach the inference")
        assert panel.running and panel.live.outcome is None
        assert "s Stop" in _footer(app)
        assert app.query_one(RunBanner).state == "-running"
        await pilot.press("s")
        await wait_run_end(pilot, panel)
        assert panel.live.outcome.reason == "killed"
        banner = app.query_one(RunBanner)
        assert banner.state == "-warning" and "killed" in banner.text
        assert read_session(panel.live.folder).meta["exit_reason"] == "killed"
        assert not panel.running


async def test_quitting_during_a_run_leaves_no_simulator(
    workspace: Path, standin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ETU_STANDIN_FAULT", "hang")
    app = EtuApp(workspace)
    async with app.run_test(size=SIZE) as pilot:
        panel = await open_run_tab(pilot)
        await pilot.press("r")
        await wait_run(pilot, lambda: panel.live.store.total > 5, what="the run did not start")
        simulators = [
            child
            for child in psutil.Process().children(recursive=True)
            if "etu.fvp.standin" in " ".join(child.cmdline())
        ]
        assert len(simulators) == 1
        pid = simulators[0].pid
    deadline = time.monotonic() + 10
    while psutil.pid_exists(pid):
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                break
        except psutil.NoSuchProcess:
            break
        assert time.monotonic() < deadline, "the simulator outlived the console"
        await asyncio.sleep(0.05)


# ------------------------------------------------------------------------ no FVP, ELF


async def test_no_fvp_found_says_where_it_looked(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "no-fvp"
    empty.mkdir()
    monkeypatch.setenv("ETU_FVP_DIR", str(empty))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.delenv("EXECUTORCH_ROOT", raising=False)
    app = EtuApp(workspace)
    async with app.run_test(size=SIZE) as pilot:
        panel = await open_run_tab(pilot)
        assert panel.header.preview is None and panel.header.preview_error
        assert "\n" not in panel.header.preview_error
        expected = "FVP_Corstone_SSE-300_Ethos-U55 not found (looked in ETU_FVP_DIR"
        assert expected in panel.header.preview_error
        assert expected in screen_text(app)
        await pilot.press("r")
        await wait_run_end(pilot, panel)
        banner = app.query_one(RunBanner)
        assert banner.state == "-error" and "could not start" in banner.text
        assert expected in banner.text
        assert not sessions_root(workspace).exists()  # nothing ran, nothing recorded


async def test_another_elf_and_target_change_the_command(workspace: Path, standin: Path) -> None:
    other = workspace.parent / "other.elf"
    shutil.copyfile(workspace / "firmware" / "arm_executor_runner.elf", other)
    app = EtuApp(workspace)
    async with app.run_test(size=SIZE) as pilot:
        panel = await open_run_tab(pilot)
        assert program_target(app.facts) == panel.target == "ethos-u55-128"  # compile spec
        await pilot.press("e")
        await pilot.pause()
        assert isinstance(app.screen, RunElfScreen)
        app.screen.query_one("#path", Input).value = str(other)
        await pilot.press("enter")
        await settle(pilot)
        assert panel.elf == other
        assert panel.header.preview is not None and panel.header.preview.command[-3] == str(other)
        panel.set_program(app.current_workspace, target="ethos-u85-256", vela_cycles=None)
        await settle(pilot)
        assert panel.header.preview.simulator.endswith("FVP_Corstone_SSE-320")
        assert "mps4_board.subsystem.ethosu.num_macs=256" in panel.header.preview.command
        assert str(other) in panel.header.preview.command  # a picked ELF stays for the workspace


# ------------------------------------------------------------------------ the log


def _line(n: int, text: str, level: str | None = "I", stream: str = "stdout") -> LogLine:
    return LogLine(n, text.encode(), b"\n", text, level, stream=stream)


async def test_flood_of_lines_keeps_the_ring_and_the_keys(workspace: Path) -> None:
    """100,000 lines pushed through the run listener as fast as a thread can: the app
    answers every key while it streams and keeps only the ring's lines. How fast it answers
    is benchmarked (benchmarks/bench_console_flood.py), not timed here."""
    total, ring, per_read = 100_000, 50_000, 500
    app = EtuApp(workspace)
    async with app.run_test(size=SIZE) as pilot:
        panel = await open_run_tab(pilot)
        panel.capacity = ring
        bridge = panel.attach(LaunchInfo(["flood"]))
        lines = [
            _line(n, f"I [executorch:flood.cpp:1 main()] line {n} " + "x" * 40)
            for n in range(1, total + 1)
        ]

        def feed() -> None:
            for start in range(0, total, per_read):  # 50,000 lines/s for 2 s
                bridge.on_events(lines[start : start + per_read])
                time.sleep(0.01)
            bridge.on_end(RunOutcome("success", 0, "flood done", None))

        feeder = threading.Thread(target=feed)
        feeder.start()
        log = app.query_one(LogView)
        for _ in range(5):
            before = log.time_mode
            await pilot.press("w")
            await wait_run(pilot, lambda b=before: log.time_mode != b, timeout=30)
        await asyncio.to_thread(feeder.join)
        await wait_run_end(pilot, panel)
        store = panel.live.store
        assert store.total == total
        assert len(store) == ring and store.first == total - ring
        assert log.row_count == ring
        first = next(iter(log.rows()))[1]
        assert first.line_no == total - ring + 1
        assert log.line(log.cursor)[1].line_no == total  # following: the newest line
        assert "last 50,000 of 100,000 lines" in str(app.query_one("#run-log-box").border_title)
        assert f"line {total} " in screen_text(app)
        assert bridge.batches < total // per_read  # batches were coalesced


async def test_filter_levels_find_time_and_hex(workspace: Path) -> None:
    app = EtuApp(workspace)
    async with app.run_test(size=SIZE) as pilot:
        panel = await open_run_tab(pilot)
        bridge = panel.attach()
        t0 = 1_700_000_000.0
        panel.live.started = t0
        chunks = [
            split_events([_line(1, "D [executorch:a.cpp:1 f()] debug detail", "D")], t0 + 1),
            split_events([_line(2, "I [executorch:a.cpp:2 f()] Model buffer loaded")], t0 + 1.5),
            split_events(
                [_line(3, "E [executorch:a.cpp:3 f()] kernel 'x' not found.", "E")], t0 + 2
            ),
            split_events([_line(4, "F [executorch:a.cpp:4 f()] assert failed", "F")], t0 + 2.25),
            split_events([_line(5, "Info: /OSCI/SystemC: loaded", None, "stderr")], t0 + 3),
            split_events([_line(6, "I [executorch:a.cpp:6 f()] Model run: 1")], t0 + 3.5),
        ]
        panel.post_message(RunBatch(panel.run_id, chunks, bridge))
        await pilot.pause()
        log = app.query_one(LogView)
        log.show(panel.live.store, t0)
        await pilot.pause()
        assert log.row_count == 6

        # Time column: relative to the start, delta to the line before, absolute clock.
        assert log.time_mode == "relative"
        assert log.render_line(0).text.startswith("    1.000 D [executorch")
        await pilot.press("w")
        assert log.time_mode == "delta"
        assert log.render_line(3).text.startswith("+   0.250 F [")
        await pilot.press("w")
        stamp = time.strftime("%H:%M:%S", time.localtime(t0 + 1.5))
        assert log.render_line(1).text.startswith(f"{stamp}.500 I [")
        await pilot.press("w")
        assert log.render_line(0).text.startswith("D [executorch")

        # Levels: errors and fatals only, then a text filter on top.
        for level in ("D", "I", "other"):
            app.run_panel.log_box.action_log_level(level)
        await pilot.pause()
        assert [line.line_no for _, line in log.rows()] == [3, 4]
        for level in ("D", "I", "other"):
            app.run_panel.log_box.action_log_level(level)
        await pilot.press("ctrl+f")
        await pilot.press(*"model")
        await pilot.press("enter")
        await pilot.pause()
        assert [line.line_no for _, line in log.rows()] == [2, 6]
        assert "2 shown" in str(app.query_one("#run-log-box").border_title)
        app.query_one("#run-filter", Input).value = "no such text"
        panel.log_box.apply_filter()
        assert log.row_count == 0
        assert "no lines match 'no such text'" in str(app.query_one("#run-log-box").border_title)
        app.query_one("#run-filter", Input).value = ""
        panel.log_box.apply_filter()
        assert log.row_count == 6

        # Find: next and previous match, wrapping; following stops.
        await pilot.press("slash")
        await pilot.press(*"executorch:a.cpp:")
        await pilot.press("enter")
        await pilot.pause()
        assert log.line(log.cursor)[1].line_no == 1
        assert not log.follow
        await pilot.press("escape")
        await pilot.press("right_square_bracket")
        assert log.line(log.cursor)[1].line_no == 2
        await pilot.press("left_square_bracket", "left_square_bracket")
        assert log.line(log.cursor)[1].line_no == 6  # wrapped around
        status = app.query_one("#run-find-status", Static).render()
        assert "5 of 5 matches · line 6" in str(status)  # 5 lines have the text
        # The match is highlighted in its row.
        row = log.render_line(log.cursor_row)
        styles = {segment.text: segment.style for segment in row if segment.text}
        assert styles["executorch:a.cpp:"] != styles["I ["]

        # Hex view of the cursor line: its bytes and line end.
        await pilot.press("h")
        await pilot.pause()
        hex_view = app.query_one(HexView)
        assert hex_view.has_class("-shown")
        assert hex_view.lines[0].startswith("line 6 · stdout · 39 bytes + LF")
        assert hex_view.lines[1].startswith("0000  49 20 5b 65 78 65 63 75  74 6f 72 63")

        # Follow: l turns it back on and the cursor goes to the newest line.
        await pilot.press("l")
        assert log.follow
        bridge.on_events([_line(7, "I [executorch:a.cpp:7 f()] one more")])
        await wait_run(pilot, lambda: log.row_count == 7, timeout=5)
        assert log.line(log.cursor)[1].line_no == 7
        bridge.on_end(RunOutcome("success", 0, "done", None))
        await wait_run_end(pilot, panel)


async def test_device_escape_sequences_are_shown_neutralised(workspace: Path) -> None:
    raw = (
        b"I [executorch:a.cpp:1 f()] title \x1b]0;pwned\x07 and \x1b[2J clear\n"
        b"E [executorch:a.cpp:2 f()] bidi \xe2\x80\xae evil\n"
    )
    parser = RunnerLogParser()
    events = parser.feed(raw) + parser.close()
    app = EtuApp(workspace)
    async with app.run_test(size=SIZE) as pilot:
        panel = await open_run_tab(pilot)
        bridge = panel.attach()
        bridge.on_events(events)
        proof = next(e for e in events if isinstance(e, LogLine) and e.line_no == 2).text
        bridge.on_end(RunOutcome("runner_error", 1, proof, 2))
        await wait_run_end(pilot, panel)
        log = app.query_one(LogView)
        rendered = [log.render_line(y) for y in range(log.row_count)]
        for strip in rendered:
            for segment in strip:
                assert not any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in segment.text)
                assert "\u202e" not in segment.text
        first = rendered[0].text
        assert "title \\x1b]0;pwned\\x07 and" in first
        text = screen_text(app)
        assert "\\x1b]0;pwned\\x07" in text and "\x1b]0;" not in text
        banner = app.query_one(RunBanner)
        assert "bidi <U+202E> evil" in banner.text and "\u202e" not in banner.text
        log.jump_to(log.seq_at(0))
        app.run_panel.log_box.action_log_hex()
        await pilot.pause()
        dump = "\n".join(app.query_one(HexView).lines)
        assert "1b 5d 30 3b" in dump and "64 07 20 61 6e 64" in dump  # the bytes as received


# ------------------------------------------------------------------------ past runs


async def test_a_past_run_is_being_read_until_its_reports_are_in(
    workspace: Path, standin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A past session's lines come first and its reports (PMU, outputs) from a child process
    after: until they are in, the Run tab is busy (what settle and scripts wait on). It read
    "not busy" with the PMU pane empty, a CI failure under load; a slow child shows it."""
    from etu.runner import session_events

    result = session_events.EventsChild.result

    def slow_result(child):
        time.sleep(1.0)  # a loaded machine's child process
        return result(child)

    monkeypatch.setattr(session_events.EventsChild, "result", slow_result)
    app = EtuApp(workspace)
    async with app.run_test(size=SIZE) as pilot:
        panel = await _start_and_wait(pilot)
        first = panel.live
        await pilot.press("r")
        await wait_run_end(pilot, panel)
        await settle(pilot)
        past = app.query_one(PastRunsList)
        past.focus()
        past.highlighted = 1
        await pilot.press("enter")
        await pilot.pause()
        assert panel.busy  # the lines may be shown; the reports are still being read
        await settle(pilot)
        assert panel.shown is not None and panel.shown.folder == first.folder
        assert panel.shown.pmu and app.query_one(PmuPane).lines


async def test_a_past_run_is_reopened_read_only(
    workspace: Path, standin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = EtuApp(workspace)
    async with app.run_test(size=SIZE) as pilot:
        panel = await _start_and_wait(pilot)
        first = panel.live
        assert first.outcome.reason == "success"
        first_cycles = first.pmu[-1].npu_cycles
        first_lines = first.store.total
        monkeypatch.setenv("ETU_STANDIN_FAULT", "missing-operator")
        await pilot.press("r")
        await wait_run_end(pilot, panel)
        assert panel.live.outcome.reason == "runner_error"
        assert panel.live is not first
        await settle(pilot)

        past = app.query_one(PastRunsList)
        assert [run.folder for run in past.runs] == list_sessions(sessions_root(workspace))
        assert past.option_count == 2  # the current run, then the first one
        past.focus()
        past.highlighted = 1
        await pilot.press("enter")
        await settle(pilot)
        shown = panel.shown
        assert shown is not None and not shown.live and shown.folder == first.folder
        banner = app.query_one(RunBanner)
        assert banner.text.startswith(f"Past run {first.folder.name} · read-only · ✓ success")
        assert str(workspace) not in banner.text
        assert shown.store.total == first_lines
        assert f"NPU cycles {first_cycles:,} simulated" in app.query_one(PmuPane).lines[0]
        title = str(app.query_one("#run-log-box").border_title)
        assert title.endswith(f"· {first.folder.name}")
        # Timestamps come from the session's index: the first line arrived after the start.
        assert shown.store.line(0)[0] >= shown.started

        # Back to the current run.
        past.highlighted = 0
        await pilot.press("enter")
        await pilot.pause()
        assert panel.shown is panel.live
        assert app.query_one(RunBanner).state == "-error"


async def test_a_session_cut_short_is_reopened_with_its_escapes_neutralised(
    workspace: Path,
) -> None:
    writer = SessionWriter(sessions_root(workspace), "fvp", {"target": "ethos-u55-128"})
    writer.write_output(b"I [executorch:a.cpp:1 f()] hello \x1b]0;pwned\x07\n", when=100.0)
    writer.write_output(b"I [executorch:a.cpp:2 f()] Starting running 1 inferences...\n")
    folder = writer.folder  # never finished: the console was killed
    app = EtuApp(workspace)
    async with app.run_test(size=SIZE) as pilot:
        panel = await open_run_tab(pilot)
        panel.open_past_run(folder)
        await settle(pilot)
        shown = panel.shown
        assert shown is not None and shown.folder == folder
        assert shown.store.line(0)[0] == 100.0
        banner = app.query_one(RunBanner)
        assert banner.state == "-warning" and "incomplete" in banner.text
        assert "no end recorded" in banner.text
        text = screen_text(app)
        assert "hello \\x1b]0;pwned\\x07" in text
        assert str(workspace) not in text


# ------------------------------------------------------------------------ keys


async def test_run_keys_are_in_the_footer_of_the_run_tab_only(
    workspace: Path, standin: Path
) -> None:
    app = EtuApp(workspace)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        footer = _footer(app)
        assert "itdnmfukjB Tabs" in footer and "r Start" not in footer and "/ Find" not in footer
        await pilot.press("r")  # not a key of the Program tab
        await pilot.pause()
        assert app.run_panel.live is None
        await pilot.press("n")
        await pilot.pause()
        footer = _footer(app)
        assert "s Sort" in footer and "q Quit" in footer and "r Start" not in footer
        await pilot.press("u")
        await pilot.pause()
        footer = _footer(app)
        for key in ("itdnmfukjB Tabs", "r Start", "s Stop", "/ Find", "z Zoom", "q Quit"):
            assert key in footer, key
        for key in ("c Copy ops", "p Plan", "a Compare", "s Sort", "e Pick ELF"):
            assert key not in footer, key
        assert isinstance(app.focused, LogView)


async def test_palette_starts_a_run_from_another_tab(workspace: Path, standin: Path) -> None:
    app = EtuApp(workspace)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.query_one(TabbedContent).active == PROGRAM_TAB
        await palette_search(
            pilot, "start the firmware",
            "Run: start the firmware on the target (an FVP or the emulated board)",
        )  # fmt: skip
        await pilot.press("enter")
        await pilot.pause()
        assert app.query_one(TabbedContent).active == RUN_TAB
        await wait_run_end(pilot, app.run_panel)
        assert app.run_panel.live.outcome.reason == "success"


async def test_palette_copies_select_ops_from_the_run_tab(workspace: Path) -> None:
    """The Run tab hides the program's keys from its footer; the palette still has them."""
    app = EtuApp(workspace)
    async with app.run_test(size=SIZE) as pilot:
        await open_run_tab(pilot)
        await pilot.press("c")  # hidden here, and inert
        await pilot.pause()
        assert app.clipboard == ""
        await palette_search(pilot, "copy select", "Program: copy EXECUTORCH_SELECT_OPS_LIST")
        await pilot.press("enter")
        await pilot.pause()
        assert app.clipboard == app.facts.select_ops
        assert app.query_one(TabbedContent).active == PROGRAM_TAB


# ------------------------------------------------------------------- pre-flight


async def test_preflight_stops_a_run_for_another_npu_and_runs_anyway_when_asked(
    workspace: Path, standin: Path
) -> None:
    from etu.tui.screens.preflight import PreflightScreen

    app = EtuApp(workspace)
    async with app.run_test(size=SIZE) as pilot:
        panel = await open_run_tab(pilot)
        assert panel.preflight() == []  # the demo on its own firmware and target
        panel.query_one("#run-target", Select).value = "ethos-u85-256"
        await pilot.pause()
        problems = panel.preflight()
        assert any("ethos-u55-128" in p and "ethos-u85-256" in p for p in problems), problems
        await pilot.press("r")
        await pilot.pause()
        assert isinstance(app.screen, PreflightScreen)
        assert "Pre-flight" in screen_text(app) and "ethos-u85-256" in screen_text(app)
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, PreflightScreen)
        assert panel.live is None, "cancel starts nothing"
        await pilot.press("r")
        await pilot.pause()
        await pilot.press("r")  # run anyway
        await pilot.pause()
        assert panel.live is not None
        await wait_run_end(pilot, panel)


async def test_preflight_names_a_firmware_with_another_program_baked_in(
    workspace: Path, standin: Path
) -> None:
    program = workspace / DEMO.name
    program.write_bytes(program.read_bytes() + bytes(4096))  # a bigger program, same graph
    app = EtuApp(workspace)
    async with app.run_test(size=SIZE) as pilot:
        panel = await open_run_tab(pilot)
        problems = panel.preflight()
        assert any("model_pte" in p for p in problems), problems
        await pilot.press("r")
        await pilot.pause()
        assert "model_pte" in screen_text(app)


async def test_preflight_on_the_emulated_board_names_another_program_baked_in(
    workspace: Path,
) -> None:
    """The emulated board gets the FVP's fit pre-flight too (issue 23 §3, issue 24 §3): a
    firmware with another program baked in is named before QEMU starts."""
    program = workspace / DEMO.name
    program.write_bytes(program.read_bytes() + bytes(4096))
    app = EtuApp(workspace)
    async with app.run_test(size=SIZE) as pilot:
        panel = await open_run_tab(pilot)
        app.query_one("#run-target", Select).value = "qemu-an547"
        await wait_run(pilot, lambda: "EMULATED BOARD" in _plain(app, "#run-simulator"))
        problems = panel.preflight()
        assert any("model_pte" in p for p in problems), problems


async def test_the_emulated_board_is_a_run_target(workspace: Path) -> None:
    """qemu-an547 in the target list: the firmware boots on QEMU for real (no FVP needed),
    labelled as the emulated board; a delegated program is flagged before the run."""
    app = EtuApp(workspace)
    async with app.run_test(size=SIZE) as pilot:
        panel = await open_run_tab(pilot)
        app.query_one("#run-target", Select).value = "qemu-an547"
        await wait_run(pilot, lambda: "EMULATED BOARD" in _plain(app, "#run-simulator"))
        assert "qemu-system-arm" in _plain(app, "#run-command")
        (problem,) = panel.preflight()
        assert "no NPU" in problem and "--no-delegate" in problem
        assert panel.start_run()  # "run anyway": the stand-in firmware runs no model
        await wait_run_end(pilot, panel)
        live = panel.live
        # it printed the runner's success line, but a firmware that ran no model never ends
        # as a success (issue 24 §3): its ending says what ran
        assert live.outcome.reason == "no_model", live.outcome
        assert "stand-in runner firmware ran" in live.outcome.proof
        banner = _plain(app, "#run-banner")
        assert "no_model" in banner or "no model" in banner, banner
        assert "✓" not in banner
        assert live.launch.emulated and not live.launch.simulated
        meta = json.loads((live.folder / "meta.json").read_text())
        assert meta["label"].startswith("emulated board (QEMU, no NPU)") and meta["emulated"]
        assert "Program complete" in "\n".join(
            live.store.entry(i)[4] for i in range(live.store.total)
        )
