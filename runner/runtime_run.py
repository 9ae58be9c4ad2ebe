"""The real runner on the emulated board: QEMU mps3-an547 with UART0 on stdout.

The same RunController (parser → session) as the FVP path. QEMU has no NPU and no cycle
model: sessions say so in their label. The run ends when the runner exits (SYSRESETREQ with
``-no-reboot``) or at etu's time limit.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from etu.runner.run import ProcessSource, RunController, RunListener

if TYPE_CHECKING:
    from etu.runner.npu_bridge import NpuBridge

QEMU = "qemu-system-arm"
QEMU_BOARD = "qemu-an547"  # also the Run tab's target for the emulated board
QEMU_LABEL = "emulated board (QEMU, no NPU): timings are not cycles"
NPU_LABEL = "emulated board (QEMU) + functional Ethos-U model: outputs exact, no timing"
DEFAULT_TIME_LIMIT = 60.0


class QemuMissing(RuntimeError):
    pass


def qemu_argv(elf: Path, bridge: NpuBridge | None = None) -> list[str]:
    """QEMU's command line; with ``bridge``, the board's DDR and UART1 are etu's (the NPU)."""
    qemu = shutil.which(QEMU)
    if qemu is None:
        raise QemuMissing(f"{QEMU}: not found on PATH (make system-deps installs qemu-system-arm)")
    if bridge is None:
        return [qemu, "-M", "mps3-an547", "-nographic", "-no-reboot", "-monitor", "none",
                "-serial", "stdio", "-kernel", str(elf)]  # fmt: skip
    return [qemu, "-M", f"mps3-an547,{bridge.machine_options}", "-nographic", "-no-reboot",
            "-monitor", "none", "-serial", "stdio", *bridge.qemu_args(),
            "-kernel", str(elf)]  # fmt: skip


class BridgedSource(ProcessSource):
    """QEMU with etu's NPU bridge: served while QEMU runs, closed when it ends (however)."""

    def __init__(self, argv: list[str], bridge: NpuBridge) -> None:
        super().__init__(argv, pass_fds=bridge.pass_fds)
        self.bridge = bridge

    def bind(self, on_output, on_exit, on_stats, on_notice) -> None:
        def ended(returncode: int | None) -> None:
            self.bridge.close()
            on_exit(returncode)

        super().bind(on_output, ended, on_stats, on_notice)

    def start(self) -> BridgedSource:
        self.bridge.start()
        try:
            super().start()
        finally:
            self.bridge.child_started()
        return self


def qemu_label(elf: Path) -> str:
    """What a run of ``elf`` on the emulated board is: with or without etu's NPU bridge."""
    from etu.runner.runtime_build import firmware_options

    return NPU_LABEL if firmware_options(elf).get("npu_bridge") else QEMU_LABEL


def npu_bridge_for(elf: Path) -> NpuBridge | None:
    """The bridge the runner ELF was built for (its build record beside it says), or None."""
    from etu.runner.npu_bridge import bridge_for
    from etu.runner.runtime_build import firmware_options

    return bridge_for(Path(elf), firmware_options(elf))


@dataclass
class QemuRun:
    """What a run of a runner ELF on the emulated board starts: QEMU's argv, the session's
    meta, and the byte source when etu serves the runner's NPU part (else the process)."""

    argv: list[str]
    meta: dict
    source: BridgedSource | None


def prepare_qemu_run(elf: Path) -> QemuRun:
    """The run of ``elf``; raises QemuMissing or BridgeError (one line each)."""
    elf = Path(elf).resolve()
    bridge = npu_bridge_for(elf)
    argv = qemu_argv(elf, bridge)
    meta = qemu_meta(elf)
    if bridge is None:
        return QemuRun(argv, meta, None)
    meta.update(label=NPU_LABEL, npu_model=bridge.executor.name)
    return QemuRun(argv, meta, BridgedSource(argv, bridge))


def run_on_qemu(
    elf: Path,
    *,
    sessions: Path,
    listener: RunListener | None = None,
    time_limit: float = DEFAULT_TIME_LIMIT,
    meta: dict | None = None,
) -> RunController:
    """Start the runner ELF on QEMU; the caller waits on the returned controller."""
    run = prepare_qemu_run(elf)
    return RunController(
        run.argv, sessions=sessions, kind="qemu", meta={**run.meta, **(meta or {})},
        listener=listener, time_limit=time_limit, source=run.source,
    ).start()  # fmt: skip


def qemu_meta(elf: Path) -> dict:
    """What a session on the emulated board records about it: its label and target, the ELF
    and its hash, and the program baked into it (runner.session.firmware_meta)."""
    from etu.runner.bundleio import firmware_inputs
    from etu.runner.session import firmware_meta

    elf = Path(elf).resolve()
    inputs = firmware_inputs(elf)  # which inputs the runner reads (etu compare uses them)
    return {
        "board": QEMU_BOARD,
        "label": QEMU_LABEL,
        "target": QEMU_BOARD,
        **firmware_meta(elf),
        "simulated": False,
        "emulated": True,
        **({"inputs": inputs} if inputs is not None else {}),
    }


def symbolize(elf: Path, address: int) -> str | None:
    """The function symbol holding ``address`` (Thumb bit ignored), from the ELF's symtab."""
    from elftools.elf.elffile import ELFFile

    address &= ~1
    with open(elf, "rb") as handle:
        symtab = ELFFile(handle).get_section_by_name(".symtab")
        if symtab is None:
            return None
        for symbol in symtab.iter_symbols():
            if symbol["st_info"]["type"] != "STT_FUNC" or not symbol["st_size"]:
                continue
            start = symbol["st_value"] & ~1
            if start <= address < start + symbol["st_size"]:
                return symbol.name
    return None


def describe_fault(registers: dict, elf: Path | None = None) -> str:
    """One line: the fault in words, PC/LR symbolised (see :mod:`etu.parsers.fault`)."""
    from etu.parsers.fault import decode_fault

    return decode_fault(registers, elf).summary()
