"""The program × board matrix (``etu matrix``): every program on every target, one recorded
session per cell, and the results as a table, JSON and JUnit XML for CI.

A target is a labgrid place with the board profile that speaks to it (``PROFILE:PLACE``,
acquired through runner.boards.place for the cell and released after it) or the emulated
board (QEMU mps3-an547 with ExecuTorch's real runner, built as ``etu run --board qemu-an547``
builds it). Each cell is a session like any other run's (History lists it, with its place),
so the matrix adds no record of its own: its cells point at their sessions. A cell that
cannot start (the firmware does not build, the place is held or the coordinator is away, the
flash fails) says why in one line and the others still run.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from xml.etree import ElementTree

from etu.parsers.errors import describe_error, first_line
from etu.parsers.text import printable

EMULATED = "emulated"  # the emulated board's column
QEMU_BOARD = "qemu-an547"
FIRMWARE_SUFFIXES = (".elf", ".axf", ".img", ".bin", ".hex")
# Cells that ran no session: why, and the exit status each gives (docs/cli.md).
NOT_STARTED = "not_started"  # the firmware, the place, the port: nothing ran (2)
FLASH_FAILED = "flash_failed"  # the flash itself failed (8, as etu flash)
NOT_RUN = "not_run"  # the matrix was stopped before this cell (6, as killed)
NOT_RUN_STATUS = {NOT_STARTED: 2, FLASH_FAILED: 8, NOT_RUN: 6}

Status = Callable[[str], None]


class MatrixError(ValueError):
    """A program or target the matrix cannot take: one line naming it."""


@dataclass(frozen=True, slots=True)
class Target:
    """A column: a labgrid place with its board profile, or the emulated board."""

    name: str  # as shown: ``PROFILE:PLACE`` or ``emulated``
    profile: str
    place: str | None = None

    @property
    def emulated(self) -> bool:
        return self.place is None


def parse_target(spec: str) -> Target:
    """``PROFILE:PLACE`` (``wiseeye2:desk-1``); raises MatrixError with one line if not."""
    profile, colon, place = spec.partition(":")
    if not colon or not profile.strip() or not place.strip():
        raise MatrixError(f"--board {spec}: expected PROFILE:PLACE (e.g. wiseeye2:desk-1)")
    return Target(f"{profile.strip()}:{place.strip()}", profile.strip(), place.strip())


def emulated_target() -> Target:
    return Target(EMULATED, QEMU_BOARD)


@dataclass(frozen=True, slots=True)
class Program:
    """A row: a ``.pte`` (its runner built per board), a firmware, or a firmware with files
    placed at addresses (``FW.img,model.pte@0xB7B000``), as ``etu flash`` takes them."""

    spec: str
    files: tuple  # runner.boards.flash.FlashFile, in flash order

    @property
    def name(self) -> str:
        """The row's name: the program's file (the placed ``.pte`` when there is one)."""
        placed = [f.path for f in self.files if f.path.suffix == ".pte"]
        return (placed or [self.files[0].path])[0].name

    @property
    def pte(self) -> Path | None:
        """The program alone, to be built into each board's runner; None for a firmware."""
        if len(self.files) == 1 and self.files[0].address is None:
            path = self.files[0].path
            return path if path.suffix not in FIRMWARE_SUFFIXES else None
        return None


def parse_program(spec: str) -> Program:
    """A row from ``PROGRAM.pte``, ``FW.elf`` or ``FW.img,model.pte@ADDRESS``; each file must
    be there (one line naming the first that is not)."""
    from etu.runner.boards.flash import FlashError, parse_file_spec

    try:
        files = tuple(parse_file_spec(part.strip()) for part in spec.split(",") if part.strip())
    except FlashError as error:
        raise MatrixError(str(error)) from None
    if not files:
        raise MatrixError(f"{spec!r}: no program file")
    for file in files:
        if not file.path.is_file():
            raise MatrixError(f"{file.path}: no such file")
    return Program(spec, files)


@dataclass(slots=True)
class Cell:
    """One program on one target: how it ended, in one line, and where its session is."""

    program: str
    program_path: str
    target: str
    ending: str  # a run's ending (runner.run.EXIT_STATUS) or NOT_STARTED / FLASH_FAILED / NOT_RUN
    reason: str  # the proof line, or why the cell did not run
    session: str | None = None
    seconds: float | None = None  # flash (if any) and run, wall clock
    run_seconds: float | None = None  # the session's own duration
    build_seconds: float | None = None  # building this program's runner for the board, if built
    exit_status: int = 0
    outputs: str | None = None  # the outputs against the reference, one line (or None)
    outputs_passed: bool | None = None
    place: str | None = None
    exporter: str | None = None
    holder: str | None = None
    firmware: str | None = None

    @property
    def passed(self) -> bool:
        return self.ending == "success" and self.outputs_passed is not False

    def to_json(self) -> dict:
        return {**asdict(self), "passed": self.passed}


@dataclass(slots=True)
class Matrix:
    programs: list[Program]
    targets: list[Target]
    cells: list[Cell] = field(default_factory=list)
    stopped: str | None = None  # why the matrix stopped early (a stop signal), if it did

    def cell(self, program: Program, target: Target) -> Cell | None:
        return next((c for c in self.cells if c.program_path == program.spec
                     and c.target == target.name), None)  # fmt: skip

    @property
    def exit_status(self) -> int:
        """0 when every cell passed; else the first failing cell's status (row by row)."""
        for cell in self.cells:
            if not cell.passed:
                return cell.exit_status or 1
        return 0

    def to_json(self) -> dict:
        return {
            "programs": [p.spec for p in self.programs],
            "targets": [t.name for t in self.targets],
            "cells": [c.to_json() for c in self.cells],
            "passed": sum(c.passed for c in self.cells),
            "failed": sum(not c.passed for c in self.cells),
            "stopped": self.stopped,
            "exit_status": self.exit_status,
        }


# --------------------------------------------------------------------------- firmware


def firmware_board(profile) -> str | None:
    """The board etu builds a runner for that this profile runs (qemu-an547 itself, an MPS3
    the Corstone build its memory preset names); None when etu builds none for it."""
    from etu.runner.workspace import FIRMWARE_BOARDS

    if profile.name in FIRMWARE_BOARDS:
        return profile.name
    preset = getattr(profile, "memory_preset", None)
    return preset if preset in FIRMWARE_BOARDS else None


def runner_firmware(
    pte: Path, board: str, *, build_dir: Path | None = None, status: Status | None = None
) -> tuple[Path, bool]:
    """The real runner of ``pte`` for ``board`` with the default options, as ``etu run
    --board qemu-an547 PROGRAM.pte`` has it: in ``PROGRAM.<board>/`` beside the program (or
    under ``build_dir``), reused when the last build there answered the same request.
    (elf, built now). Raises RuntimeBuildError, SourceError with one line."""
    from etu.runner.run_inputs import build_request, built_firmware, save_request
    from etu.runner.runtime_build import build_runner
    from etu.runner.workspace import firmware_dir

    folder = firmware_dir(pte, board)
    if build_dir is not None:
        folder = Path(build_dir) / folder.name
    wanted = build_request(pte, None)
    elf = built_firmware(folder, wanted)
    if elf is not None:
        return elf, False
    result = build_runner(pte, board, folder, progress=status)
    save_request(folder, result, wanted)
    return Path(result.elf), True


class _Firmwares:
    """Each program's runner built once per board, or the one line saying why it was not."""

    def __init__(self, build_dir: Path | None, status: Status) -> None:
        self.build_dir, self.status = build_dir, status
        self.built: dict[tuple[str, str], tuple[Path | None, str | None, float | None]] = {}

    def get(self, pte: Path, board: str) -> tuple[Path | None, str | None, float | None]:
        """(elf, why not, seconds spent building now)."""
        key = (str(pte), board)
        if key not in self.built:
            started = time.monotonic()

            def say(text: str) -> None:
                self.status(f"{pte.name} for {board}: {text}")

            try:
                elf, fresh = runner_firmware(pte, board, build_dir=self.build_dir, status=say)
                spent = round(time.monotonic() - started, 3) if fresh else None
                self.built[key] = (elf, None, spent)
            except (KeyboardInterrupt, SystemExit):
                raise
            except Exception as error:  # RuntimeBuildError, SourceError, OSError: one line
                self.built[key] = (None, f"{pte.name}: firmware not built: "
                                   f"{first_line(describe_error(error))}", None)  # fmt: skip
        return self.built[key]


# --------------------------------------------------------------------------- cells


def _from_outcome(cell: Cell, controller, outcome) -> Cell:
    from etu.runner.history import read_meta

    cell.ending, cell.reason = outcome.reason, printable(first_line(outcome.proof or ""))
    cell.exit_status = outcome.exit_status
    cell.session = str(controller.folder)
    meta = read_meta(controller.folder)
    started, ended = meta.get("started"), meta.get("ended")
    if isinstance(started, int | float) and isinstance(ended, int | float):
        cell.run_seconds = round(ended - started, 3)
    for key in ("place", "exporter", "holder"):
        value = meta.get(key)
        if isinstance(value, str) and value:
            setattr(cell, key, printable(value))
    return cell


def _wait(controller):
    """The run's outcome; a stop (Ctrl+C, SIGTERM, SIGHUP) ends it ``killed``, recorded."""
    from etu.runner.run import stop_reason

    try:
        return controller.wait()
    except KeyboardInterrupt as interrupt:
        controller.stop(stop_reason(interrupt))
        return controller.wait()


def run_emulated(
    cell: Cell, program: Program, firmwares: _Firmwares, *, sessions: Path, time_limit: float
) -> Cell:
    """The program on the emulated board: its runner (built if needed) on QEMU mps3-an547,
    recorded as ``etu run --board qemu-an547`` records it."""
    from etu.parsers.elf_map import check_arm_firmware
    from etu.parsers.errors import ParseError
    from etu.runner.npu_bridge import BridgeError
    from etu.runner.runtime_run import QemuMissing, run_on_qemu

    if program.pte is not None:
        elf, why, cell.build_seconds = firmwares.get(program.pte, QEMU_BOARD)
        if elf is None:
            return _not_started(cell, why or "firmware not built")
    elif len(program.files) == 1 and program.files[0].path.suffix in (".elf", ".axf"):
        elf = program.files[0].path
    else:
        return _not_started(cell, f"{program.spec}: the emulated board runs a .pte (its runner "
                            "is built) or a runner ELF, not files placed at addresses")  # fmt: skip
    try:
        check_arm_firmware(elf)
    except ParseError as error:
        return _not_started(cell, describe_error(error))
    cell.firmware = str(elf)
    started = time.monotonic()
    meta = {"program": str(program.pte)} if program.pte is not None else None
    try:
        controller = run_on_qemu(Path(elf), sessions=sessions, time_limit=time_limit, meta=meta)
    except (QemuMissing, BridgeError, OSError) as error:
        return _not_started(cell, first_line(describe_error(error)))
    outcome = _wait(controller)
    cell.seconds = round(time.monotonic() - started, 3)
    return _from_outcome(cell, controller, outcome)


def run_on_place(
    cell: Cell,
    program: Program,
    target: Target,
    firmwares: _Firmwares,
    *,
    sessions: Path,
    time_limit: float,
    coordinator: str | None,
    status: Status,
) -> Cell:
    """The program flashed on the place's board and monitored into a board session that
    records the place; the place is held for the cell (runner.boards.place: labgrid's lock)
    and released after it, also when the cell fails or is stopped."""
    from etu.runner.boards.flash import FlashError, FlashFile, NeedMissing
    from etu.runner.boards.place import Place, PlaceError, place_info
    from etu.runner.boards.profiles import ProfileError, get_profile

    cell.place = target.place
    try:
        profile = get_profile(target.profile)
    except ProfileError as error:
        return _not_started(cell, str(error))
    if profile.method == "qemu":
        return _not_started(cell, f"{target.name}: {profile.name} is emulated here, not a "
                            "labgrid place (--emulated runs it)")  # fmt: skip
    try:  # a place that cannot be had is said before any firmware is built for it
        place_info(str(target.place), coordinator)
    except PlaceError as error:
        return _not_started(cell, str(error))
    files = list(program.files)
    if program.pte is not None:
        board = firmware_board(profile)
        if board is None:
            why = (f"{profile.name}: etu builds no runner for this board: give its firmware with "
                   "the program (FW.img,model.pte@ADDRESS)")  # fmt: skip
            return _not_started(cell, why)
        elf, why, cell.build_seconds = firmwares.get(program.pte, board)
        if elf is None:
            return _not_started(cell, why or "firmware not built")
        files = [FlashFile(Path(elf))]
    cell.firmware = str(files[0].path)
    started = time.monotonic()
    try:
        with Place(str(target.place), coordinator) as place:
            controller = _flash_and_monitor(profile, files, place, sessions=sessions,
                                            time_limit=time_limit, status=status)  # fmt: skip
            outcome = _wait(controller)
    except PlaceError as error:  # labgrid missing, the coordinator away, the place held
        return _not_started(cell, str(error))
    except NeedMissing as error:
        return _not_started(cell, str(error))
    except FlashError as error:
        cell.seconds = round(time.monotonic() - started, 3)
        cell.ending, cell.reason = FLASH_FAILED, printable(first_line(str(error)))
        cell.exit_status = NOT_RUN_STATUS[FLASH_FAILED]
        return cell
    cell.seconds = round(time.monotonic() - started, 3)
    return _from_outcome(cell, controller, outcome)


def _flash_and_monitor(
    profile, files: list, place, *, sessions: Path, time_limit: float, status: Status
):
    """Flash through the held place's serial port (power-cycled first when the profile asks)
    and start monitoring the boot: the started RunController. Raises FlashError (a port to
    follow missing included) or PlaceError."""
    from etu.runner.boards.flash import (
        FlashError,
        flash_board,
        flashed_session_meta,
        monitor_source,
    )
    from etu.runner.boards.place import PlaceSource, power_cycle_wanted, power_off_seconds
    from etu.runner.boards.ports import pick_ports
    from etu.runner.run import RunController

    url = place.serial_url()
    if power_cycle_wanted(profile):
        status(f"power-cycling place {place.name}")
        place.power_cycle(power_off_seconds(profile))
    link = pick_ports(profile, [], port=url, monitor=True)
    result = flash_board(profile, files, link, timelimit=time_limit, status=status)
    try:
        # the place's source: the coordinator going away ends the session ``incomplete``
        source = monitor_source(profile, result, timelimit=time_limit,
                                source_type=partial(PlaceSource, place))  # fmt: skip
        if source is None:
            raise FlashError(f"{profile.name}: flashed, but no port to follow its boot on")
        meta = {**flashed_session_meta(profile, files, result), **place.session_meta()}
        return RunController(sessions=sessions, kind="board", meta=meta, source=source).start()
    except BaseException:  # nothing monitors it: QEMU and the port go
        if result.source is not None:
            result.source.close()
        elif result.handle is not None:
            result.handle.close()
        raise


def _not_started(cell: Cell, why: str) -> Cell:
    cell.ending, cell.reason = NOT_STARTED, printable(first_line(why))
    cell.exit_status = NOT_RUN_STATUS[NOT_STARTED]
    return cell


def outputs_verdict(folder: Path, *, compare: bool = False) -> tuple[str | None, bool | None]:
    """The session's outputs against a reference, one line, and whether they pass: the saved
    host comparison (``etu compare``'s compare.json; with ``compare``, made now in a child
    process), else the runner's own BundleIO check; (None, None) when the session has none."""
    from etu.runner.compare import CompareError, compare_in_child, load_comparison
    from etu.runner.history import load_summary

    record = load_comparison(folder)
    if record is None and compare:
        try:
            record = compare_in_child(folder)
        except CompareError as error:
            return f"not compared: {first_line(str(error))}", None
    if record is not None:
        rows = [row for row in record.get("outputs") or [] if isinstance(row, dict)]
        passed = bool(record.get("passed"))
        first = next((str(row.get("verdict")) for row in rows if row.get("verdict")), "")
        word = f"outputs {'✓' if passed else '✗'} vs the reference"
        deployment = first.split(" · ")[0]  # the deployment's part comes first
        return printable(f"{word}: {deployment}" if deployment else word), passed
    try:
        checks = load_summary(folder).get("bundleio") or []
    except Exception:  # a summary that cannot be read: no verdict, the ending still stands
        return None, None
    checks = [c for c in checks if isinstance(c, dict) and isinstance(c.get("passed"), bool)]
    if not checks:
        return None, None
    passed = all(c["passed"] for c in checks)
    failed = sum(not c["passed"] for c in checks)
    text = "BundleIO: outputs match" if passed else f"BundleIO: {failed} of {len(checks)} fail"
    return text, passed


def run_matrix(
    programs: Sequence[Program],
    targets: Sequence[Target],
    *,
    sessions: Path,
    time_limit: float = 60.0,
    coordinator: str | None = None,
    build_dir: Path | None = None,
    compare: bool = False,
    status: Status = lambda text: None,
    on_cell: Callable[[Cell], None] = lambda cell: None,
) -> Matrix:
    """Every program on every target, row by row, one session per cell. A stop (Ctrl+C,
    SIGTERM, SIGHUP) ends the running cell ``killed`` (recorded) and the rest ``not_run``."""
    matrix = Matrix(list(programs), list(targets))
    firmwares = _Firmwares(build_dir, status)
    for program in matrix.programs:
        for target in matrix.targets:
            cell = Cell(program.name, program.spec, target.name, NOT_RUN, "")
            if matrix.stopped is not None:
                cell.reason = f"not run: the matrix was {matrix.stopped}"
                cell.exit_status = NOT_RUN_STATUS[NOT_RUN]
                matrix.cells.append(cell)
                continue
            status(f"{program.name} on {target.name}…")
            try:
                if target.emulated:
                    run_emulated(cell, program, firmwares, sessions=sessions,
                                 time_limit=time_limit)  # fmt: skip
                else:
                    run_on_place(cell, program, target, firmwares, sessions=sessions,
                                 time_limit=time_limit, coordinator=coordinator,
                                 status=status)  # fmt: skip
            except KeyboardInterrupt as interrupt:  # a stop before the run began
                from etu.runner.run import stop_reason

                cell.ending, cell.reason = "killed", stop_reason(interrupt)
                cell.exit_status = 6
            except Exception as error:  # anything unforeseen: this cell says it, the rest run
                _not_started(cell, describe_error(error))
            if cell.ending == "killed":
                matrix.stopped = cell.reason or "stopped"
            elif cell.session is not None:
                cell.outputs, cell.outputs_passed = outputs_verdict(Path(cell.session),
                                                                    compare=compare)  # fmt: skip
            matrix.cells.append(cell)
            on_cell(cell)
    return matrix


# --------------------------------------------------------------------------- outputs


def cell_text(cell: Cell) -> str:
    """A table cell: ``✓ 1.2s`` or ``✗ runner_error: the proof line``, then the outputs."""
    seconds = cell.run_seconds if cell.run_seconds is not None else cell.seconds
    took = f" {seconds:.1f}s" if seconds is not None else ""
    if cell.ending == "success":
        text = f"✓{took}"
    else:
        text = f"✗ {cell.ending}{took}: {cell.reason}" if cell.reason else f"✗ {cell.ending}"
    if cell.outputs:
        text += f" · {cell.outputs}"
    return text


def table_text(matrix: Matrix, width: int | None = None) -> str:
    """Rows programs, columns targets; each cell cut to ``width`` characters (None: whole)."""

    def cut(text: str) -> str:
        if width is None or len(text) <= width:
            return text
        return text[: max(1, width - 1)] + "…"

    header = ["program", *(t.name for t in matrix.targets)]
    rows = [header]
    for program in matrix.programs:
        row = [program.name]
        for target in matrix.targets:
            cell = matrix.cell(program, target)
            row.append(cut(cell_text(cell)) if cell is not None else "")
        rows.append(row)
    rows = [[printable(text) for text in row] for row in rows]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = ["  ".join(text.ljust(widths[i]) for i, text in enumerate(row)).rstrip()
             for row in rows]  # fmt: skip
    return "\n".join(lines) + "\n"


def _one_line(text: str) -> str:
    """Text for the XML: one line, every control or invisible character shown escaped
    (XML 1.0 cannot carry most control characters at all; a CI page shows what came)."""
    return printable(first_line(text)) if text else ""


def junit_xml(matrix: Matrix) -> str:
    """JUnit XML: one testsuite per target, one testcase per program; a failed cell has a
    ``failure`` (its ending and one-line reason), a cell not run a ``skipped``."""
    suites = ElementTree.Element("testsuites", name="etu matrix")
    total = failures = skipped = 0
    for target in matrix.targets:
        cells = [c for c in matrix.cells if c.target == target.name]
        suite = ElementTree.SubElement(suites, "testsuite", name=_one_line(target.name))
        suite_failures = suite_skipped = 0
        suite_time = 0.0
        for cell in cells:
            case = ElementTree.SubElement(
                suite,
                "testcase",
                name=_one_line(cell.program),
                classname=_one_line(f"etu.matrix.{target.name}"),
            )
            seconds = cell.seconds or 0.0
            suite_time += seconds
            case.set("time", f"{seconds:.3f}")
            if cell.ending == NOT_RUN:
                ElementTree.SubElement(case, "skipped", message=_one_line(cell.reason))
                suite_skipped += 1
            elif not cell.passed:
                reason = cell.reason if cell.ending != "success" else (cell.outputs or "")
                message = _one_line(f"{cell.ending}: {reason}")
                failure = ElementTree.SubElement(case, "failure", type=cell.ending,
                                                 message=message)  # fmt: skip
                failure.text = message
                suite_failures += 1
            if cell.session:
                session = _one_line(f"session {cell.session}")
                ElementTree.SubElement(case, "system-out").text = session
        suite.set("tests", str(len(cells)))
        suite.set("failures", str(suite_failures))
        suite.set("errors", "0")
        suite.set("skipped", str(suite_skipped))
        suite.set("time", f"{suite_time:.3f}")
        total += len(cells)
        failures += suite_failures
        skipped += suite_skipped
    suites.set("tests", str(total))
    suites.set("failures", str(failures))
    suites.set("errors", "0")
    suites.set("skipped", str(skipped))
    ElementTree.indent(suites)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        + ElementTree.tostring(suites, encoding="unicode")
        + "\n"
    )


__all__ = [
    "EMULATED",
    "Cell",
    "Matrix",
    "MatrixError",
    "Program",
    "Target",
    "cell_text",
    "emulated_target",
    "junit_xml",
    "outputs_verdict",
    "parse_program",
    "parse_target",
    "run_matrix",
    "runner_firmware",
    "table_text",
]
