"""Render the console's views to SVG through Textual itself, for docs and review.

Not part of the installed etu: ``make screenshots`` runs ``python -m tools.screenshots
OUT_DIR`` from the checkout's root, and the console tests share its steps. It writes one SVG
per tab of the demo workspace at 120×36, a terminal people use (:data:`TAB_SCREENSHOTS`),
the Run tab also at 80×24, the palette, help and Open dialog, and a file that fails to
open (:data:`SCREENSHOTS` names them all). Same size and steps every run, no clock; the
Boards tab with no serial port attached (the machine's own would change the picture). The
Fit view checks the demo against a firmware linked here with a temp pool too small for it
(needs arm-none-eabi-gcc; without it the view shows the demo's own firmware). The Run view
runs the demo firmware on the stand-in FVP in a scratch copy of the workspace and waits for
the host comparison of its outputs; what differs per run (host times, durations, process
samples, session folder names) is masked. The Compile view is its form before any compile
(nothing is compiled). The History view has three stand-in runs recorded in a scratch
workspace (the last with ``ETU_STANDIN_DRIFT``), the two newest compared; its times are the
render's own.
"""

from __future__ import annotations

import argparse
import asyncio
import html
import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from textual.pilot import Pilot
from textual.widgets import Input

from etu.tui.app import (
    BOARDS_TAB,
    COMPILE_TAB,
    DELEGATES_TAB,
    DEMO_WORKSPACE,
    FIT_TAB,
    HISTORY_TAB,
    MEMORY_TAB,
    NPU_TAB,
    PROGRAM_TAB,
    RUN_TAB,
    TENSORS_TAB,
    EtuApp,
)
from etu.tui.widgets import PickElfScreen
from etu.tui.widgets.run_log import LogView

SIZE = (120, 36)  # a laptop terminal or tmux pane people use
SMALL_SIZE = (80, 24)  # the smallest: the Run tab is drawn at it too
SETTLE_TIMEOUT = 10.0
# A real Vela run of another configuration (Ethos-U85-256, Sram_Only), for the NPU tab's
# compare table; shipped with the demo so nothing here reads tests/.
COMPARE_REPORT = DEMO_WORKSPACE / "compare" / "u85_256" / "vela"
DEMO_PROGRAM = DEMO_WORKSPACE / "demo_cnn.pte"
SMALL_TEMP_POOL = 1024  # bytes: far below the demo's Ethos-U scratch, so the fit fails
RUN_TIMEOUT = 60.0  # seconds for the stand-in run of the Run view
STANDIN_SETTINGS = ("ETU_STANDIN_FAULT", "ETU_STANDIN_INFERENCES", "ETU_STANDIN_LINE_DELAY")


async def settle(pilot: Pilot, timeout: float = SETTLE_TIMEOUT) -> None:
    """Wait until the program and Vela reports in flight are shown (or their errors are),
    then for idle."""
    app = pilot.app
    assert isinstance(app, EtuApp)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while app.busy:
        if loop.time() > deadline:
            raise TimeoutError("the program or a Vela report did not load in time")
        await pilot.pause(0.02)
    await pilot.pause()
    await pilot.wait_for_scheduled_animations()


def still_cursors(app: EtuApp) -> None:
    """A blinking cursor would make two runs differ."""
    for widget in app.screen.query(Input):
        widget.cursor_blink = False


async def _press(pilot: Pilot, *keys: str) -> None:
    await pilot.press(*keys)
    await pilot.pause()
    assert isinstance(pilot.app, EtuApp)
    still_cursors(pilot.app)
    for widget in pilot.app.screen.query("#path").results(Input):
        widget.value = "etu_tui/demo/"  # the same text on every machine
    await pilot.pause()


# Each tab of EtuApp.TABS and its picture (a test checks every tab has one).
TAB_SCREENSHOTS: dict[str, str] = {
    PROGRAM_TAB: "program.svg",
    TENSORS_TAB: "tensors.svg",
    DELEGATES_TAB: "delegate.svg",
    NPU_TAB: "npu.svg",
    MEMORY_TAB: "memory.svg",
    FIT_TAB: "fit.svg",
    RUN_TAB: "run.svg",
    COMPILE_TAB: "compile.svg",
    HISTORY_TAB: "history.svg",
    BOARDS_TAB: "boards.svg",
}
SMALL_RUN = "run-80x24.svg"
# Every file render_all writes.
SCREENSHOTS = (*TAB_SCREENSHOTS.values(), SMALL_RUN, "palette.svg", "open.svg", "help.svg",
               "error.svg")  # fmt: skip

DEMO_VIEWS: list[tuple[str, tuple[str, ...]]] = [
    ("program.svg", ()),
    ("tensors.svg", ("t", "down", "down")),
    ("delegate.svg", ("d",)),
    ("palette.svg", ("i", "ctrl+p", *"select")),
    ("open.svg", ("escape", "o")),
    ("help.svg", ("escape", "question_mark")),
    ("boards.svg", ("escape", "B")),
]


async def npu_steps(pilot: Pilot) -> None:
    """The NPU tab of the demo, layers sorted by cycles, compared with a U85 run."""
    app = pilot.app
    assert isinstance(app, EtuApp)
    await settle(pilot)
    await _press(pilot, "n")
    if COMPARE_REPORT.is_dir():
        app.npu_panel.add_report(COMPARE_REPORT)
        await settle(pilot)
    await _press(pilot, "s")


async def render_npu(out_dir: Path, size: tuple[int, int] = SIZE) -> Path:
    app = EtuApp(DEMO_WORKSPACE)
    async with app.run_test(size=size) as pilot:
        await npu_steps(pilot)
        return Path(app.save_screenshot("npu.svg", str(out_dir)))


async def memory_steps(pilot: Pilot) -> None:
    """The Memory tab of the demo's firmware."""
    await settle(pilot)
    await _press(pilot, "m")


def small_scratch_firmware(out_dir: Path) -> Path:
    """Link the demo program into a runner whose temp pool cannot hold its Ethos-U scratch.
    Raises runner.firmware.FirmwareBuildError without arm-none-eabi-gcc."""
    from etu.parsers.program_facts import select_ops_list
    from etu.parsers.pte import open_program
    from etu.runner.firmware import build_stub_firmware

    with open_program(DEMO_PROGRAM) as program:
        ops = [op for op in select_ops_list(program).split(",") if op]
    elf = build_stub_firmware(DEMO_PROGRAM, out_dir, ops=ops, temp_pool=SMALL_TEMP_POOL).elf
    # its rebuild.sh names this checkout's absolute paths: a picture must look the same
    # from any folder (the Fit tab's rebuild line has a test of its own)
    (out_dir / "rebuild.sh").unlink(missing_ok=True)
    return elf


async def fit_steps(pilot: Pilot, elf: Path | None = None) -> None:
    """The Fit tab of the demo; with ``elf``, picked with e (the dialog is closed after)."""
    app = pilot.app
    assert isinstance(app, EtuApp)
    await settle(pilot)
    await _press(pilot, "f")
    if elf is not None:
        await pilot.press("e")
        await pilot.pause()
        assert isinstance(app.screen, PickElfScreen)
        app.screen.query_one("#path", Input).value = str(elf)
        await pilot.press("enter")
        await settle(pilot)


async def render_memory(out_dir: Path, size: tuple[int, int] = SIZE) -> Path:
    app = EtuApp(DEMO_WORKSPACE)
    async with app.run_test(size=size) as pilot:
        await memory_steps(pilot)
        return Path(app.save_screenshot("memory.svg", str(out_dir)))


async def render_fit(out_dir: Path, size: tuple[int, int] = SIZE) -> Path:
    from etu.runner.firmware import FirmwareBuildError

    with tempfile.TemporaryDirectory() as tmp:
        try:
            elf: Path | None = small_scratch_firmware(Path(tmp))
        except FirmwareBuildError:
            elf = None
        app = EtuApp(DEMO_WORKSPACE)
        async with app.run_test(size=size) as pilot:
            await fit_steps(pilot, elf)
            return Path(app.save_screenshot("fit.svg", str(out_dir)))


async def render_demo(out_dir: Path, size: tuple[int, int] = SIZE) -> list[Path]:
    from unittest import mock

    written = []
    app = EtuApp(DEMO_WORKSPACE)
    with mock.patch("serial.tools.list_ports.comports", return_value=[]):
        async with app.run_test(size=size) as pilot:
            await settle(pilot)
            for name, keys in DEMO_VIEWS:
                if keys:
                    await _press(pilot, *keys)
                written.append(Path(app.save_screenshot(name, str(out_dir))))
    return written


@contextmanager
def standin_workspace(folder: Path) -> Iterator[Path]:
    """A copy of the demo workspace and the stand-in FVP under ``folder``, which becomes the
    working folder while in the block, both named by relative paths (``demo``, ``fvp``): the
    command on the Run tab then reads the same on every machine. Yields the workspace."""
    from etu.fvp.standin import install_standin

    workspace = folder / "demo"
    workspace.mkdir(parents=True)
    shutil.copyfile(DEMO_PROGRAM, workspace / DEMO_PROGRAM.name)
    for sub in ("firmware", "vela"):
        shutil.copytree(DEMO_WORKSPACE / sub, workspace / sub)
    install_standin(folder / "fvp")
    names = ("ETU_FVP_DIR", *STANDIN_SETTINGS)
    saved = {name: os.environ.get(name) for name in names}
    cwd = Path.cwd()
    os.chdir(folder)
    os.environ["ETU_FVP_DIR"] = "fvp"
    for name in STANDIN_SETTINGS:
        os.environ.pop(name, None)
    try:
        yield Path("demo")
    finally:
        os.chdir(cwd)
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


async def run_steps(pilot: Pilot, timeout: float = RUN_TIMEOUT) -> None:
    """The Run tab after a completed stand-in run, its outputs compared with the host, the
    log's time column off and what differs per run masked."""
    app = pilot.app
    assert isinstance(app, EtuApp)
    await settle(pilot)
    await _press(pilot, "u")
    await settle(pilot)
    panel = app.run_panel
    panel.stable = True
    panel.log_box.time_mode = "off"
    await pilot.press("r")
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while panel.running:
        if loop.time() > deadline:
            raise TimeoutError("the stand-in run did not end in time")
        await pilot.pause(0.05)
    await settle(pilot)
    while pending_workers(panel.shown):  # the host comparison, the ETDump
        if loop.time() > deadline:
            raise TimeoutError("the outputs were not compared in time")
        await pilot.pause(0.05)
    await settle(pilot)
    log = app.query_one(LogView)
    rest_deadline = loop.time() + 5.0
    while not log.at_rest and loop.time() < rest_deadline:  # best effort: see LogView
        await pilot.pause(0.05)
    await settle(pilot)
    relative_command(app)
    still_cursors(app)
    await pilot.pause()
    await pilot.wait_for_scheduled_animations()


def relative_command(app: EtuApp) -> None:
    """The Run tab's command names the scratch workspace by its absolute path, which differs
    per render: shown relative to the working folder (the scratch folder, see
    :func:`standin_workspace`), as it would be typed there."""
    from textual.content import Content
    from textual.widgets import Static

    prefix = f"{Path.cwd().resolve()}{os.sep}"
    for widget in app.query("#run-command").results(Static):
        text = widget.content.plain if isinstance(widget.content, Content) else ""
        if prefix in text:
            widget.update(Content(text.replace(prefix, "")))


def pending_workers(record) -> bool:
    """A finished run's host comparison or ETDump reading is still under way (their notes
    say so until the result is in)."""
    if record is None:
        return False
    notes = (record.comparison_note, record.operators_note)
    return any(note is not None and note.endswith("…") for note in notes)


async def render_run(out_dir: Path, size: tuple[int, int] = SIZE, name: str = "run.svg") -> Path:
    folder = out_dir.resolve()  # the block below changes the working folder
    with tempfile.TemporaryDirectory() as tmp, standin_workspace(Path(tmp)) as workspace:
        app = EtuApp(workspace)
        async with app.run_test(size=size) as pilot:
            await run_steps(pilot)
            return out_dir / Path(app.save_screenshot(name, str(folder))).name


async def compile_steps(pilot: Pilot) -> None:
    """The Compile tab's form before any compile: the built-in cnn for the demo's target."""
    await settle(pilot)
    await _press(pilot, "k")
    await settle(pilot)


async def render_compile(out_dir: Path, size: tuple[int, int] = SIZE) -> Path:
    app = EtuApp(DEMO_WORKSPACE)
    async with app.run_test(size=size) as pilot:
        await compile_steps(pilot)
        return Path(app.save_screenshot("compile.svg", str(out_dir)))


async def render_error(out_dir: Path, size: tuple[int, int] = SIZE) -> Path:
    with tempfile.TemporaryDirectory() as tmp:
        bad = Path(tmp) / "notes.pte"
        bad.write_text("Not a program: a text file saved with the wrong extension.\n")
        app = EtuApp(bad)
        async with app.run_test(size=size, notifications=True) as pilot:
            await settle(pilot)
            return Path(app.save_screenshot("error.svg", str(out_dir)))


def record_standin_runs(workspace: Path, drifts: tuple[int, ...] = (0, 0, 3)) -> list[Path]:
    """Run the workspace's firmware on the stand-in once per drift (sessions recorded as
    the Run tab records them); the session folders, oldest first."""
    from etu.fvp.command import FvpOptions
    from etu.fvp.launch import prepare_fvp_launch
    from etu.runner.run import RunController
    from etu.runner.session import sessions_root

    elf = workspace / "firmware" / "arm_executor_runner.elf"
    folders = []
    for drift in drifts:
        launch = prepare_fvp_launch("ethos-u55-128", elf, FvpOptions(timelimit=60))
        env = {**os.environ, "ETU_STANDIN_DRIFT": str(drift)}
        controller = RunController(
            launch.argv, sessions=sessions_root(workspace), kind="fvp", meta=launch.meta(),
            env=env, npu=launch.target.npu,
        ).start()  # fmt: skip
        controller.wait(RUN_TIMEOUT)
        folders.append(controller.folder)
        time.sleep(1.0)  # session folders are named by the second
    return folders


async def history_steps(pilot: Pilot, timeout: float = RUN_TIMEOUT) -> None:
    """The History tab with the two newest sessions marked and compared."""
    from textual.widgets import DataTable

    from etu.tui.widgets.history import HistoryPanel

    app = pilot.app
    assert isinstance(app, EtuApp)
    await settle(pilot)
    await _press(pilot, "j")
    panel = app.query_one(HistoryPanel)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not panel.rows:
        if loop.time() > deadline:
            raise TimeoutError("the sessions were not listed in time")
        await pilot.pause(0.05)
    await pilot.pause()
    panel.query_one("#history-table", DataTable).move_cursor(row=0)
    await pilot.press("space", "down", "space")
    while panel.diff is None:
        if loop.time() > deadline:
            raise TimeoutError("the two sessions were not compared in time")
        await pilot.pause(0.05)
    await settle(pilot)


async def render_history(out_dir: Path, size: tuple[int, int] = SIZE) -> Path:
    folder = out_dir.resolve()  # the block below changes the working folder
    with tempfile.TemporaryDirectory() as tmp, standin_workspace(Path(tmp)) as workspace:
        record_standin_runs(workspace)
        app = EtuApp(workspace)
        async with app.run_test(size=size) as pilot:
            await history_steps(pilot)
            return out_dir / Path(app.save_screenshot("history.svg", str(folder))).name


async def render_all(out_dir: Path) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    return [
        *await render_demo(out_dir),
        await render_npu(out_dir),
        await render_memory(out_dir),
        await render_fit(out_dir),
        await render_run(out_dir),
        await render_run(out_dir, SMALL_SIZE, SMALL_RUN),
        await render_compile(out_dir),
        await render_error(out_dir),
        await render_history(out_dir),
    ]


# One run of text in a Textual SVG: its x (one cell is CELL_WIDTH wide) and its line.
_SVG_TEXT = re.compile(
    r'<text class="[^"]*" x="(?P<x>[\d.]+)" y="[\d.]+" textLength="[\d.]+" '
    r'clip-path="url\(#terminal-(?:\d+-)?line-(?P<line>\d+)\)">(?P<text>[^<]*)</text>'
)
CELL_WIDTH = 12.2  # px per terminal column in Textual's SVG export


def visible_text(svg: str) -> list[str]:
    """The characters a Textual SVG screenshot shows, one string per terminal line (colours,
    styles and the export's per-render ids left out): two pictures of the same view compare
    equal whatever their ids."""
    rows: dict[int, list[tuple[int, str]]] = {}
    for match in _SVG_TEXT.finditer(svg):
        column = round(float(match["x"]) / CELL_WIDTH)
        text = html.unescape(match["text"]).replace("\xa0", " ")
        rows.setdefault(int(match["line"]), []).append((column, text))
    lines = []
    for number in range(max(rows, default=-1) + 1):
        line = ""
        for column, text in sorted(rows.get(number, [])):
            line = line.ljust(column) + text
        lines.append(line.rstrip())
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.screenshots", description=__doc__)
    parser.add_argument("out_dir", type=Path, help="folder for the SVG files")
    args = parser.parse_args(argv)
    for path in asyncio.run(render_all(args.out_dir)):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
