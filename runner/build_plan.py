"""What a runner build needs to know of a program, and what it refuses, before any tool runs.

Pure derivations from etu's own decoder (the program's operators, delegates, pool needs,
kernel sources) and the checks on what reaches a build command (operator names, plain
paths, the program file). ``runner/runtime_build.py`` configures and builds from them.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

POOL_MARGIN = 0.25  # auto pools: the fit check's need plus a quarter ...
POOL_MARGIN_MIN = 16 * 1024  # ... and at least 16 KiB
CPU_TEMP_POOL = 64 * 1024  # temp pool of a program with no delegate scratch
PORTABLE_CPU = "kernels/portable/cpu/"


class RuntimeBuildError(RuntimeError):
    """The runner could not be built; one line naming the step and the cause."""

    status = 1  # the exit status of `etu firmware build`


class BuildInputError(RuntimeBuildError):
    """An input the build refuses before configuring (a bad operator name, a path a build
    command's shell would interpret); exit status 2."""

    status = 2


# namespace::name or namespace::name.overload, identifier characters only: anything else
# would reach upstream's generated C (selected_prim_ops.h) and its codegen's shell commands.
OPERATOR_NAME = re.compile(r"[A-Za-z_]\w*::[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)?\Z", re.ASCII)
# What a path handed to ninja (which runs build commands with /bin/sh -c, and upstream's own
# custom commands are not VERBATIM) may hold.
_PLAIN_PATH = re.compile(r"[\w./+@%=,:~-]+\Z", re.ASCII)


def check_operator_names(ops: list[str], where: str) -> None:
    for op in ops:
        if not OPERATOR_NAME.match(op):
            raise BuildInputError(
                f"{where}: operator name {op!r} is not namespace::name(.overload) of "
                "identifier characters; refusing to build with it"
            )


def check_plain_path(path: Path, what: str, variable: str) -> None:
    if not _PLAIN_PATH.match(str(path)):
        raise BuildInputError(
            f"{path}: the {what} path holds characters a build command's shell would "
            f"interpret (spaces, quotes, $, `, ;, newlines); set {variable} to a plain path"
        )


def check_program_file(pte: Path) -> None:
    """A regular, readable file (not a FIFO, a device, a link loop), before anything else."""
    from etu.parsers.errors import ParseError, describe_error
    from etu.parsers.files import GiB, open_regular

    try:
        fd, _size = open_regular(pte, "an ExecuTorch program", 4 * GiB)
    except ParseError as error:
        raise BuildInputError(describe_error(error)) from None
    os.close(fd)


@dataclass(frozen=True)
class BuildFacts:
    """What a build needs of a program (the console's view is parsers.program_facts')."""

    ops: list[str]  # non-prim CPU operators
    delegated: bool
    delegate_ids: list[str]
    npu_targets: list[str]
    method_need: int
    method_detail: str
    scratch: int
    memory_mode: str | None
    all_ops: list[str] = field(default_factory=list)  # every operator table entry, prim too
    external_blocks: list[str] = field(default_factory=list)  # Vela blocks kept in a .ptd
    # ETDump with intermediate outputs: (its debug buffer, what it takes from the method pool)
    debug_need: tuple[int, int] = (0, 0)
    # inputs/outputs not in contiguous dim order ("input 0", ...): the Cortex-M backend's NHWC
    reordered_io: list[str] = field(default_factory=list)


def build_facts(pte: Path) -> BuildFacts:
    """What the build needs to know of the program, from etu's own decoder."""
    from etu.parsers.errors import ParseError
    from etu.parsers.fit import vela_flags
    from etu.parsers.program_facts import cpu_operators, delegates
    from etu.parsers.program_needs import (
        intermediate_pool_bytes,
        metadata_estimate,
        method_pool_need,
    )
    from etu.parsers.pte import open_program

    try:
        with open_program(pte) as program:
            ops = [op.name for op in cpu_operators(program) if not op.is_prim]
            every = sorted({op.qualified_name for plan in program.plans for op in plan.operators})
            infos = delegates(program)
            planned, inputs = method_pool_need(program)
            metadata = metadata_estimate(program)
            scratch = max((i.payload.scratch_size for i in infos if i.payload), default=0)
            targets = sorted({i.payload.target for i in infos if i.payload and i.payload.target})
            ids = [i.delegate.id for i in infos]
            flags = vela_flags(infos[0].delegate.spec("compile_flags")) if infos else {}
            external = sorted({b for i in infos if i.payload for b in i.payload.external_blocks})
            debug = intermediate_pool_bytes(program)
            reordered = reordered_io(program)
    except ParseError as error:  # an unreadable program is a refused input (2), not a build
        raise BuildInputError(str(error)) from None
    need = planned + inputs + metadata
    detail = (
        f"planned {planned:,} B + unplanned inputs {inputs:,} B + metadata (estimated) "
        f"{metadata:,} B"
    )
    mode = flags.get("memory-mode")
    return BuildFacts(ops, bool(ids), ids, targets, need, detail, scratch, mode, every, external,
                        debug, reordered)  # fmt: skip


def reordered_io(program) -> list[str]:
    """The forward method's inputs and outputs whose dim order is not contiguous."""
    from etu.parsers.pte import Tensor

    plan = program.plans[0] if program.plans else None
    if plan is None:
        return []
    found = []
    for kind, indices in (("input", plan.inputs), ("output", plan.outputs)):
        for number, index in enumerate(indices):
            value = plan.values[index] if 0 <= index < len(plan.values) else None
            order = list(value.dim_order) if isinstance(value, Tensor) else []
            if order and order != sorted(order):
                found.append(f"{kind} {number} (dim order {','.join(map(str, order))})")
    return found


def refuse_bundled_reordered(pte: Path, facts: BuildFacts) -> None:
    """Upstream's BundledProgram stores every tensor contiguous (``TensorSpec.from_tensor``
    with ``const=True`` calls ``.contiguous()``), and the runner copies those bytes into the
    input as they are and compares outputs stride by stride: a channels-last input or output
    (the Cortex-M backend's) would be scrambled, then abort the run. Refused before a build."""
    if facts.reordered_io:
        raise BuildInputError(
            f"{pte}: {', '.join(facts.reordered_io)} "
            f"{'are' if len(facts.reordered_io) > 1 else 'is'} not in contiguous order "
            "(channels-last, as the Cortex-M backend makes it) and ExecuTorch's "
            "BundledProgram stores tensors contiguous, so BundleIO (--inputs, --bundleio) "
            "would scramble it; build without them (the runner's inputs are all ones)"
        )


def auto_pools(facts: BuildFacts) -> tuple[dict[str, int], str]:
    """Pools from the fit check's need plus the stated margin, rounded up to KiB."""

    def sized(need: int) -> int:
        total = need + max(int(need * POOL_MARGIN), POOL_MARGIN_MIN)
        return -(-total // 1024) * 1024

    method = sized(facts.method_need)
    temp = sized(facts.scratch) if facts.scratch else CPU_TEMP_POOL
    basis = f"method pool = fit need ({facts.method_detail}) + max(25 %, 16 KiB); temp pool = " + (
        f"Ethos-U scratch {facts.scratch:,} B + max(25 %, 16 KiB)"
        if facts.scratch
        else f"{CPU_TEMP_POOL // 1024} KiB (no delegate scratch)"
    )
    return {"method": method, "temp": temp}, basis


def parse_pools(text: str) -> dict[str, int] | None:
    """``auto`` → None; ``METHOD,TEMP`` (bytes, 0x…, or with K/M) → sizes."""
    if text.strip().lower() == "auto":
        return None
    parts = [p.strip() for p in text.split(",")]
    if len(parts) != 2:
        raise RuntimeBuildError(f"--pools {text!r}: expected auto or METHOD,TEMP")
    return {"method": _size(parts[0]), "temp": _size(parts[1])}


def parse_select_ops(text: str) -> list[str] | None:
    """``auto`` → None (the program's own operators); else the comma-separated list."""
    if text.strip().lower() == "auto":
        return None
    return [op.strip() for op in text.split(",") if op.strip()]


def _size(text: str) -> int:
    match = re.fullmatch(r"(0x[0-9a-fA-F]+|\d+)\s*([KkMm]?)(?:i?B)?", text)
    if not match:
        raise RuntimeBuildError(f"pool size {text!r}: expected bytes, 0x…, or a K/M suffix")
    value = int(match.group(1), 0) * {"": 1, "k": 1024, "m": 1 << 20}[match.group(2).lower()]
    if value <= 0:
        raise RuntimeBuildError(f"pool size {text!r}: must be positive")
    return value


# What the emulated board's NPU bridge serves (runner/npu_bridge.py executes the streams).
BRIDGED_NPUS = ("ethos-u55", "ethos-u65")


def npu_bridged(facts: BuildFacts, board: str) -> bool:
    """A delegated program on the emulated board: its NPU part runs in etu, over UART1."""
    return board == "qemu-an547" and facts.delegated


def refuse_external_blocks(pte: Path, facts: BuildFacts) -> None:
    """The pinned runner creates no NamedDataMap: a program whose Vela blocks are in a
    ``.ptd`` would fail at init with InvalidExternalData, so it is refused before a build."""
    if facts.external_blocks:
        raise BuildInputError(
            f"{pte}: its Ethos-U {' and '.join(facts.external_blocks)} are in a .ptd file and "
            "the runner etu builds does not load .ptd files; compile without --external-blocks"
        )


def refuse_delegated(pte: Path, facts: BuildFacts, board: str) -> None:
    """The emulated board takes Ethos-U55/U65 delegates (etu runs them); nothing else."""
    if not npu_bridged(facts, board):
        return
    others = sorted(set(facts.delegate_ids) - {"EthosUBackend"})
    if others:
        raise BuildInputError(
            f"{pte}: the program delegates to {', '.join(others)}; the emulated board "
            "(QEMU mps3-an547) runs only Ethos-U delegates. Compile the CPU twin with "
            "`etu compile ... --no-delegate` and run that"
        )
    unserved = [t for t in facts.npu_targets if not t.startswith(BRIDGED_NPUS)]
    if unserved or not facts.npu_targets:
        raise BuildInputError(
            f"{pte}: the program is compiled for {', '.join(unserved) or 'an unknown NPU'}; "
            "the emulated board's NPU executes Ethos-U55 and Ethos-U65 command streams "
            "only (U85 is not emulated yet). Build for corstone-320 and run it on an FVP "
            "or a board, or compile for ethos-u55/-u65"
        )


@dataclass(frozen=True)
class KernelPlan:
    """What the build compiles for the program's operators (see runner.kernel_sources)."""

    portable_sources: list[str]  # relative to kernels/portable/cpu (as the record has them)
    portable_whole: bool  # a portable kernel could not be placed: upstream's whole library
    libraries: dict[str, dict]  # library → {operators: {op: file}, helpers, whole, unplaced}
    notes: list[str]
    # the Cortex-M backend's kernels (cortex_m::*, CMSIS-NN), relative to the source root
    cortex_m_sources: list[str] = field(default_factory=list)
    cortex_m_whole: bool = False

    @property
    def cortex_m(self) -> bool:
        return bool(self.cortex_m_sources or self.cortex_m_whole)


def kernel_plan(root: Path, ops: list[str]) -> KernelPlan:
    """Place every operator of ``ops`` in its kernel library's sources, or say why not."""
    from etu.runner.kernel_sources import LIBRARIES, load_index, select_kernels

    index = load_index(root)
    selections, unknown = select_kernels(index, ops)
    if unknown:
        searched = ", ".join(library.yaml for library in LIBRARIES)
        raise RuntimeBuildError(
            f"{unknown[0]}: no kernel library in the ExecuTorch source {root} defines it "
            f"(searched {searched}); recompile the program with the installed ExecuTorch, "
            "point ETU_EXECUTORCH_SRC at the source it was made with, or leave the "
            "operator out with --select-ops"
        )
    notes = []
    for selection in selections.values():
        if selection.whole:
            why = index.missing_lists.get(selection.library) or (
                f"{', '.join(selection.unplaced)} could not be placed in one source file"
            )
            notes.append(f"building the whole {selection.library} kernel library: {why}")
    portable = selections.get("portable")
    cortex_m = selections.get("cortex_m")
    return KernelPlan(
        portable_sources=[
            source.removeprefix(PORTABLE_CPU) for source in portable.sources
        ] if portable and not portable.whole else [],
        portable_whole=bool(portable and portable.whole),
        libraries={
            name: {"operators": dict(sel.kernels), "helpers": sel.helpers if sel.kernels else [],
                   "whole": sel.whole, "unplaced": sel.unplaced}
            for name, sel in sorted(selections.items())
        },
        notes=notes,
        cortex_m_sources=cortex_m.sources if cortex_m and not cortex_m.whole else [],
        cortex_m_whole=bool(cortex_m and cortex_m.whole),
    )  # fmt: skip
