"""How the Run tab starts a run and hears from it, without widgets of its own.

:class:`LaunchPlan` is what a plan function gives the panel's start worker (the command,
the session's meta, what the header shows); :class:`RunBridge` hands a run's events to the
panel in batches; :func:`preflight` lists what would make the next run fail.

Threading (as everywhere in the console): ``RunController`` calls its listener on the
process's reader threads. :class:`RunBridge` only appends to a lock-protected buffer there;
a timer thread posts one :class:`RunBatch` per ~50 ms, and never a second one before the
panel has taken the first, so a flood coalesces into bigger batches instead of a queue.
"""

from __future__ import annotations

import gc
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from etu.fvp.command import FvpOptions
from etu.fvp.launch import LaunchError, prepare_fvp_launch
from etu.parsers.errors import describe_error
from etu.parsers.fit import FAIL, OK, check_fit
from etu.parsers.runner_events import Event
from etu.runner.process import ProcessStats
from etu.runner.run import ByteSource, RunListener, RunOutcome
from etu.runner.run_model import Chunk, LaunchInfo, split_events
from etu.runner.runtime_run import QEMU_BOARD
from etu.tui.screens.open_file import OpenFileScreen
from etu.tui.widgets.formatting import short_path
from etu.tui.widgets.run_messages import RunBatch, RunEnded, RunStats

BATCH_SECONDS = 0.05
# Fit checks whose failure makes a run fail (the Vela report's config is only advice)
PREFLIGHT_CHECKS = ("target", "program_placement", "cpu_kernels", "method_allocator",
                    "ethosu_scratch", "scratch_in_sram", "region", "system_config",
                    "external_data")  # fmt: skip
# checks whose warning also stops a run: another program baked in, and Vela blocks in a
# .ptd (the runner etu builds loads no .ptd: InvalidExternalData at init)
PREFLIGHT_WARNINGS = ("program_placement", "external_data")
# and, for a firmware etu built, the version-skew checks its build made (runner.skew_sources)


@dataclass(slots=True)
class LaunchPlan:
    """What a run starts: ``argv`` (empty for a board's port), the session's ``meta``,
    what the header shows (``info``), the NPU its PMU reports are read for, and the
    session's ``kind`` (fvp, qemu, board, command...)."""

    argv: list[str]
    meta: dict = field(default_factory=dict)
    info: LaunchInfo = field(default_factory=lambda: LaunchInfo([]))
    npu: str | None = None
    kind: str = "command"
    source: ByteSource | None = None  # what the run reads, when not argv's process


def target_kind(target: str) -> str:
    """What a Run target is, in words for titles and dialogs."""
    return "the emulated board" if target == QEMU_BOARD else "an FVP"


def qemu_launch(elf: Path) -> LaunchInfo:
    """The emulated board's command for ``elf`` (QEMU mps3-an547, UART0 on stdout), for
    the header's preview: nothing is started or allocated."""
    from etu.runner.runtime_run import QemuMissing, qemu_argv, qemu_label

    try:
        argv = qemu_argv(elf)
    except QemuMissing as error:
        raise LaunchError(str(error)) from None
    return LaunchInfo(argv, simulator=argv[0], found_via="PATH", target=QEMU_BOARD, emulated=True,
                      label=qemu_label(elf))  # fmt: skip


def qemu_plan(elf: Path) -> LaunchPlan:
    """The run of ``elf`` on the emulated board, with etu's NPU bridge when the runner was
    built with it (runner.runtime_run.prepare_qemu_run)."""
    from etu.runner.npu_bridge import BridgeError
    from etu.runner.runtime_run import QemuMissing, prepare_qemu_run

    try:
        run = prepare_qemu_run(elf)
    except (QemuMissing, BridgeError) as error:
        raise LaunchError(str(error)) from None
    info = LaunchInfo(run.argv, simulator=run.argv[0], found_via="PATH", target=QEMU_BOARD,
                      emulated=True, label=str(run.meta.get("label") or ""))  # fmt: skip
    return LaunchPlan(run.argv, run.meta, info, None, "qemu", run.source)


def launch_plan(target: str, elf: Path, limit: int | None) -> LaunchPlan:
    """The plan for running ``elf`` on ``target`` (an FVP's target or the emulated board).
    Blocking (it looks for the simulator); raises LaunchError with one line."""
    if target == QEMU_BOARD:
        return qemu_plan(elf)
    launch = prepare_fvp_launch(target, elf, FvpOptions(timelimit=limit))
    info = LaunchInfo(
        list(launch.argv),
        simulator=str(launch.executable),
        found_via=launch.found_via,
        simulated=launch.simulated,
        target=launch.target.target,
    )
    meta = launch.meta()
    recorded = firmware_inputs(elf)  # the session says which inputs the runner read
    if recorded is not None:
        meta["inputs"] = recorded
    return LaunchPlan(list(launch.argv), meta, info, launch.target.npu, "fvp")


def firmware_inputs(elf: Path | None) -> dict | None:
    """The inputs a firmware etu built runs on (its build record), None when not known."""
    from etu.runner.bundleio import firmware_inputs as recorded

    if elf is None:
        return None
    try:
        return recorded(Path(elf))
    except (OSError, ValueError):
        return None


def inputs_label(chosen: str | None, elf: Path | None) -> str:
    """The next run's inputs in words: the chosen ones, else the firmware's (all ones,
    the runner's fallback, when its build record names none)."""
    from etu.runner.compare import ONES_INPUTS

    if chosen is not None:
        return chosen
    return str((firmware_inputs(elf) or ONES_INPUTS).get("source"))


def inputs_plan(target: str, pte: Path | None, inputs: str, limit: int | None, say) -> LaunchPlan:
    """The run of ``pte`` on ``inputs`` (``FILE.npy``, ``FILE.npz`` or ``random:SEED``) as
    ``etu run --board … PROGRAM --inputs`` does it: the runner built with them bundled
    (BundleIO) in ``PROGRAM.<board>/``, once per request, then run on ``target``. Blocking
    (a build takes minutes); raises LaunchError with one line."""
    from etu.runner.build_plan import RuntimeBuildError
    from etu.runner.bundleio import BundleError
    from etu.runner.run_inputs import firmware_for_inputs
    from etu.runner.runtime_source import SourceError
    from etu.runner.workspace import board_for_target

    if pte is None:
        raise LaunchError(f"inputs {inputs}: open the program first (its runner is built "
                          "with the inputs bundled)")  # fmt: skip
    board = board_for_target(target)
    if board is None:
        raise LaunchError(f"inputs {inputs}: no firmware board for {target}")
    try:
        elf, _built = firmware_for_inputs(Path(pte), board, inputs, progress=say)
    except (BundleError, RuntimeBuildError, SourceError) as error:
        raise LaunchError(f"inputs {inputs}: {error}") from None
    return launch_plan(target, elf, limit)


def next_run_hint(target: str, inputs: str | None, elf: Path | None, notes: list[str]) -> str:
    """The banner before a run: the key, the target, the inputs and what they mean to the
    program (``notes``: its integer IO, one sentence each)."""
    hint = f"Press r to run on {target} · inputs {inputs_label(inputs, elf)} (I"
    hint += "; its runner is built with them)" if inputs is not None else ")"
    hint += " · L layers"
    return hint + "".join(f"\n  {note}" for note in notes)


def start_failure(error: Exception, root: Path) -> str:
    """One line for a run that could not start (``root``: its sessions folder)."""
    if isinstance(error, LaunchError):
        return str(error)
    if isinstance(error, OSError):
        return f"{root}: {error.strerror or error}"
    return describe_error(error)


def serves_npu(elf: Path | None) -> bool:
    """Whether ``elf`` is a runner built with etu's NPU bridge (its build record says)."""
    from etu.runner.runtime_build import firmware_options

    return elf is not None and bool(firmware_options(elf).get("npu_bridge"))


def same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return a == b


def preflight(
    target: str,
    program_target: str | None,
    program,
    firmware,
    elf: Path | None,
    *,
    to_build: bool = False,
) -> list[str]:
    """What would make the next run fail, checked before launching it: the program's NPU
    target against the run's, and the fit checks of the program (parsers.pte.Program)
    against the firmware to be run (``firmware``: the Memory tab's FirmwareResult), on the
    emulated board as on an FVP (another program baked in is found the same way).
    ``to_build``: the run builds its runner first (for the program, with etu's NPU bridge),
    so only what does not depend on a firmware is checked."""
    problems: list[str] = []
    emulated = target == QEMU_BOARD
    if to_build:
        program = firmware = elf = None
    if emulated:
        if program_target and program_target.startswith("ethos-u85"):
            problems.append(
                f"the program is compiled for {program_target}: the emulated board's NPU "
                "runs Ethos-U55/U65 command streams only (U85 is not emulated yet)"
            )
        elif program_target and not to_build and not serves_npu(elf):
            name = elf.name if elf is not None else "the firmware"
            problems.append(
                f"the program is compiled for the Ethos-U ({program_target}); {name} has no "
                "NPU driver layer: build the runner for this program (etu firmware build "
                "PROGRAM --board qemu-an547, and etu serves its NPU part) or run its CPU "
                "twin (etu compile --no-delegate)"
            )
    if program is not None:  # what the firmware's own build checked, on this program
        from etu.runner.skew_sources import firmware_skew

        problems += firmware_skew(program, elf)
    # the emulated board's NPU part is etu's: any U55/U65 target runs (checked above)
    found = fit_problems(program, firmware, elf, None if emulated else target)
    if found is not None:
        problems += found
    elif program_target and program_target != target and not emulated:
        problems.append(
            f"the program was compiled for {program_target}, the run targets "
            f"{target}: the driver rejects a command stream for another NPU config; fix: "
            f"run on {program_target}, or recompile with --target {target}"
        )
    return list(dict.fromkeys(problems))


def inputs_firmware(target: str, pte: Path | None, inputs: str) -> Path | None:
    """The runner a run of ``pte`` on ``inputs`` runs on ``target`` when it is built already
    (in ``PROGRAM.<board>/``, for exactly this request: runner.run_inputs, as the run asks);
    None when the run builds it first."""
    from etu.runner.run_inputs import build_request, built_firmware
    from etu.runner.workspace import board_for_target, firmware_dir

    board = board_for_target(target)
    if pte is None or board is None:
        return None
    try:
        return built_firmware(firmware_dir(Path(pte), board), build_request(Path(pte), inputs))
    except OSError:
        return None


def inputs_preflight(
    target: str, program_target: str | None, program, pte: Path | None, inputs: str
) -> tuple[list[str], list[str]]:
    """The pre-flight of a run on chosen ``inputs`` (problems, notes): on the runner built
    with them when it is there (reading that ELF: blocking), not on the firmware the Run
    tab shows; else only what needs no firmware, and a note that the run builds it first."""
    from etu.runner.workspace import load_firmware

    elf = inputs_firmware(target, pte, inputs)
    if elf is None:
        note = (f"inputs {inputs}: the run builds the runner with them first; its fit on "
                "that firmware is checked by the build")  # fmt: skip
        return preflight(target, program_target, program, None, None, to_build=True), [note]
    firmware = load_firmware(elf, program, None, workspace=None)
    note = f"inputs {inputs}: checked on the runner built with them, {elf}"
    return preflight(target, program_target, program, firmware, elf), [note]


def fit_problems(program, firmware, elf: Path | None, target: str | None) -> list[str] | None:
    """The fit verdicts of ``program`` against ``firmware`` (a FirmwareResult of ``elf``)
    that would make a run fail, each with its fix: another program baked in, kernels,
    pools, regions, Vela blocks in the ``.ptd`` files beside the program, the NPU ``target``
    (None: not checked). None when they cannot be checked (no program, or ``firmware`` is
    not that ELF's)."""
    from etu.parsers.external_blocks import data_files_beside

    same = (
        firmware is not None
        and firmware.memory_map is not None
        and firmware.path is not None
        and elf is not None
        and same_file(firmware.path, elf)
    )
    if not same or program is None:
        return None
    bundled = baked_bundle(program, elf)
    try:
        data_files = data_files_beside(program)
        verdicts = check_fit(
            bundled or program, firmware.memory_map, None, target=target, data_files=data_files
        )
    except Exception:  # the Fit tab reports a check that cannot run
        return []
    finally:
        if bundled is not None:
            bundled.close()
    return [
        f"{verdict.message}; fix: {verdict.fix}" if verdict.fix else verdict.message
        for verdict in verdicts
        if verdict.check in PREFLIGHT_CHECKS
        and (verdict.status == FAIL
             or (verdict.check in PREFLIGHT_WARNINGS and verdict.status != OK))
    ]  # fmt: skip


def baked_bundle(program, elf: Path):
    """The bundled program (``.bpte``: the program with its inputs, BundleIO) a runner etu
    built has baked in (its build record names it), when it embeds ``program``'s very
    bytes: judged in its place (opened: the caller closes it); None otherwise."""
    from etu.parsers.pte import open_program
    from etu.runner.runtime_build import firmware_options

    baked = firmware_options(elf).get("baked")
    source = getattr(program, "source", None)
    if not (isinstance(baked, str) and baked.endswith(".bpte") and isinstance(source, str)):
        return None
    try:
        bundle = open_program(Path(baked))
    except Exception:  # gone or unreadable: the program itself is judged
        return None
    try:
        own = Path(source).read_bytes()
        with open(baked, "rb") as file:
            file.seek(bundle.program_offset)
            if bundle.bundled and file.read(len(own)) == own:
                return bundle
    except OSError:
        pass
    bundle.close()
    return None


def flash_preflight(program, program_target: str | None, elf: Path, board: str) -> list[str]:
    """The pre-flight of a Boards flash of ``elf`` to ``board`` (a profile name): what the
    Run tab checks before a run, on the firmware to be flashed. Blocking (reads the ELF)."""
    from etu.runner.workspace import load_firmware

    firmware = load_firmware(elf, program, None, workspace=None)
    if board == QEMU_BOARD:
        return preflight(QEMU_BOARD, program_target, program, firmware, elf)
    return fit_problems(program, firmware, elf, None) or []


INTEGER_IO = ("int8", "uint8", "int16", "uint16", "int32", "int64")


def io_notes(program, pte: Path | None) -> list[str]:
    """For a program that takes or gives integers itself (its first plan's inputs and
    outputs), one sentence each: "this program takes int8 input: scale 0.0078, zero point
    -1" (runner.io_quantization: the program's kernels, else Vela's out_vela.npz beside
    it). A float input quantized on the CPU needs nothing from the user: no sentence."""
    from etu.runner.io_quantization import io_quantization
    from etu.runner.tosa_graphs import VELA_FOLDER

    plans = getattr(program, "plans", None)
    if not plans:
        return []
    vela = Path(pte).parent / VELA_FOLDER if pte is not None else None
    try:
        folder = vela if vela is not None and vela.is_dir() else None
        found = io_quantization(plans[0], folder, plans)
    except Exception:  # a view's note: never a reason not to run
        return []
    return [q.sentence() for q in found if q.dtype in INTEGER_IO]


class HeapFreeze:
    """For the length of a run, what the console already holds (widgets, caches, the
    decoded program) is moved out of the garbage collector's full passes: a flood of lines
    allocates enough to trigger them every few seconds, and walking the whole UI took
    50-90 ms each time, on whichever thread ran it. Thawed when the run ends."""

    def __init__(self) -> None:
        self.frozen = False

    def freeze(self) -> None:
        if not self.frozen:
            gc.freeze()
            self.frozen = True

    def thaw(self) -> None:
        if self.frozen:
            gc.unfreeze()  # back into the oldest generation: collected as usual again
            self.frozen = False


class RunElfScreen(OpenFileScreen):
    """The open-file modal, asking for the firmware ELF to run on the chosen target."""

    DIALOG_TITLE = "Firmware ELF to run"
    PLACEHOLDER = "path/to/arm_executor_runner.elf"
    HINT = "Enter use · Tab complete · Escape cancel · the FVP loads it with -a"
    QEMU_HINT = "Enter use · Tab complete · Escape cancel · QEMU loads it with -kernel"

    def __init__(self, start: str = "", target: str = "") -> None:
        super().__init__(start)
        if target == QEMU_BOARD:
            self.HINT = self.QEMU_HINT
        self.DIALOG_TITLE = f"Firmware ELF to run on {target_kind(target)}"

    @classmethod
    def at(cls, elf: Path | None, workspace: Path | None, target: str) -> RunElfScreen:
        """The dialog prefilled with the current ELF, else the workspace folder."""
        if elf is not None:
            return cls(short_path(elf), target)
        return cls(f"{short_path(workspace)}{os.sep}" if workspace else "", target)


class InputsScreen(OpenFileScreen):
    """The next run's inputs: a .npy/.npz file (Tab completes it), ``random:SEED``, or
    nothing for the firmware's own (all ones, the fallback). Dismisses with the text ("":
    the fallback) or None (cancelled); a choice ``etu run --inputs`` would refuse is said
    under the field and not taken."""

    DIALOG_TITLE = "Inputs of the next run"
    PLACEHOLDER = "empty: all ones (fallback) · FILE.npy · FILE.npz · random:SEED"
    HINT = "Enter use · Tab complete · Escape cancel · bundled into the runner (BundleIO)"

    def on_input_submitted(self, event) -> None:
        from etu.runner.bundleio import BundleError, parse_inputs_option

        event.prevent_default()  # OpenFileScreen's handler would dismiss with a Path
        event.stop()
        text = event.value.strip()
        if text:
            try:
                parse_inputs_option(text)
            except BundleError as error:
                from textual.widgets import Static

                from etu.tui.safe_text import printable

                self.query_one("#matches", Static).update(printable(str(error)))
                return
        self.dismiss(text)


class RunBridge(RunListener):
    """A RunListener that hands a run's events to a Textual widget in batches.

    Called on the process's threads; never touches a widget. Posts go out under the lock,
    so the last batch (with the end) can never overtake an earlier one.
    """

    def __init__(self, target, run_id: int, interval: float = BATCH_SECONDS) -> None:
        self._target = target  # anything with a thread-safe post_message (a widget)
        self.run_id = run_id
        self._interval = interval
        self._lock = threading.Lock()
        self._chunks: list[Chunk] = []
        self._in_flight = False
        self._closed = threading.Event()
        self.batches = 0  # RunBatch messages posted (for benchmarks)
        self._thread = threading.Thread(
            target=self._loop, name=f"etu-run-{run_id}-batches", daemon=True
        )
        self._thread.start()

    def on_events(self, events: list[Event]) -> None:
        chunk = split_events(events, time.time())  # here, off the UI thread
        with self._lock:
            self._chunks.append(chunk)

    def on_stats(self, stats: ProcessStats) -> None:
        if not self._closed.is_set():
            self._target.post_message(RunStats(self.run_id, stats))

    def on_end(self, outcome: RunOutcome) -> None:
        with self._lock:
            self._closed.set()
            chunks, self._chunks = self._chunks, []
            self._target.post_message(RunEnded(self.run_id, outcome, chunks))

    def _loop(self) -> None:
        while not self._closed.wait(self._interval):
            self.flush()

    def flush(self) -> None:
        with self._lock:
            if not self._chunks or self._in_flight or self._closed.is_set():
                return
            chunks, self._chunks = self._chunks, []
            self._in_flight = True
            self.batches += 1
            if not self._target.post_message(RunBatch(self.run_id, chunks, self)):
                self._closed.set()  # the widget is gone

    def delivered(self) -> None:
        """The widget took the last batch: the next may be posted."""
        with self._lock:
            self._in_flight = False

    def close(self) -> None:
        self._closed.set()
