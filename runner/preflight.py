"""What would make the next run fail, checked before launching it.

The Run tab, a Boards flash and ``etu run`` ask the same questions: the program's NPU
target against the run's, the version-skew checks of the firmware's own build, and the
fit of the program on the firmware to be run (another program baked in, kernels, pools,
regions, Vela blocks in a ``.ptd``). Headless: programs and firmware records in, one
sentence per problem out, each with its fix.
"""

from __future__ import annotations

from pathlib import Path

from etu.parsers.fit import FAIL, OK, check_fit
from etu.runner.runtime_run import QEMU_BOARD

# Fit checks whose failure makes a run fail (the Vela report's config is only advice)
PREFLIGHT_CHECKS = ("target", "program_placement", "cpu_kernels", "method_allocator",
                    "ethosu_scratch", "scratch_in_sram", "region", "system_config",
                    "external_data")  # fmt: skip
# checks whose warning also stops a run: another program baked in, and Vela blocks in a
# .ptd (the runner etu builds loads no .ptd: InvalidExternalData at init)
PREFLIGHT_WARNINGS = ("program_placement", "external_data")
# and, for a firmware etu built, the version-skew checks its build made (runner.skew_sources)


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
