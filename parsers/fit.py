"""Does this program fit this firmware? Verdicts joined from the program, its Ethos-U
payloads, the firmware's memory map and (optionally) Vela's report.

Each verdict names what is needed, what the firmware has, and the build flag that fixes a
shortfall, using the runner's CMake options (runtime_formats.md §6.3–6.4), or for a Zephyr
image the Kconfig symbols (parsers/zephyr_image.py). Pure: decoded objects in, verdicts out.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from etu.parsers.program_facts import cpu_operators, delegates
from etu.parsers.program_needs import (
    CORTEX_M_BUILD_FLAG,
    FAST_MEMORY_ID,
    cortex_m_scratch,
    kernel_library,
    metadata_estimate,
    method_pool_need,
)
from etu.parsers.pte import Program, Tensor
from etu.parsers.zephyr_image import kconfig_fix

if TYPE_CHECKING:
    from etu.parsers.memory_map import MemoryMap
    from etu.parsers.ptd import DataFile
    from etu.parsers.vela import VelaReport

OK, WARN, FAIL = "ok", "warn", "fail"
_ORDER = {FAIL: 0, WARN: 1, OK: 2}

METHOD_POOL_FLAG = "ET_ARM_BAREMETAL_METHOD_ALLOCATOR_POOL_SIZE"
TEMP_POOL_FLAG = "ET_ARM_BAREMETAL_SCRATCH_TEMP_ALLOCATOR_POOL_SIZE"
FAST_SCRATCH_FLAG = "ET_ARM_BAREMETAL_FAST_SCRATCH_TEMP_ALLOCATOR_POOL_SIZE"
PLANNED_FAST_FLAG = "ET_ARM_BAREMETAL_PLANNED_FAST_MEMORY_SIZE"

# Which system configs the runner's CMake accepts, and with which memory modes (§6.4).
RUNNER_SYSTEM_CONFIGS: dict[str, tuple[str, tuple[str, ...]]] = {
    "Ethos_U55_High_End_Embedded": ("corstone-300", ("Shared_Sram", "Sram_Only")),
    "Ethos_U55_Deep_Embedded": ("corstone-300", ("Shared_Sram", "Sram_Only")),
    "Ethos_U65_High_End": ("corstone-300", ("Shared_Sram", "Sram_Only", "Dedicated_Sram*")),
    "Ethos_U85_SYS_DRAM_Low": ("corstone-320", ("Dedicated_Sram*", "Sram_Only")),
    "Ethos_U85_SYS_DRAM_Mid": ("corstone-320", ("Dedicated_Sram*", "Sram_Only")),
    "Ethos_U85_SYS_DRAM_High": ("corstone-320", ("Dedicated_Sram*", "Sram_Only")),
}
PLATFORM_NPUS = {"corstone-300": ("ethos-u55", "ethos-u65"), "corstone-320": ("ethos-u85",)}
DEDICATED_SRAM_DEFAULT = 0x60000  # the runner's fast scratch for a plain Dedicated_Sram


@dataclass(frozen=True, slots=True)
class Verdict:
    check: str
    status: str  # ok | warn | fail
    need: int | str | None
    have: int | str | None
    message: str
    fix: str | None = None


def vela_flags(compile_flags: str | None) -> dict[str, str]:
    """``--name=value`` pairs of a delegate's ``compile_flags`` spec (last one wins)."""
    return dict(re.findall(r"--([\w-]+)=(\S+)", compile_flags or ""))


def is_dedicated_sram(memory_mode: str | None) -> bool:
    return (
        bool(memory_mode) and re.fullmatch(r"Dedicated_Sram(_\d+[KM]B)?", memory_mode) is not None
    )


def fast_scratch_size_for(memory_mode: str) -> int:
    """The fast scratch the runner's CMake reserves for a Dedicated_Sram mode."""
    match = re.fullmatch(r"Dedicated_Sram_(\d+)([KM])B", memory_mode)
    if not match:
        return DEDICATED_SRAM_DEFAULT
    return int(match.group(1)) * (1024 if match.group(2) == "K" else 1024 * 1024)


def _kib(n: int) -> str:
    """Bytes exactly, with a human unit beside them."""
    if n >= 1 << 20:
        return f"{n:,} B ({n / (1 << 20):.1f} MiB)"
    return f"{n:,} B ({n / 1024:.1f} KiB)" if n >= 1024 else f"{n:,} B"


def _pool_fix(flag: str, need: int, mm: MemoryMap | None = None) -> str:
    """The build setting that gives a pool ``need`` bytes: the runner's CMake flag, or for a
    Zephyr image (``mm.zephyr``) the Kconfig symbol it is sized by."""
    size = -(-need // 1024) * 1024  # whole KiB, rounded up
    if mm is not None and mm.zephyr and (fix := kconfig_fix(flag, size)) is not None:
        return fix
    return f"build the runner with -D{flag}={size:#x} ({size} bytes) or more"


def check_fit(
    program: Program,
    memory_map: MemoryMap,
    vela: VelaReport | None = None,
    *,
    target: str | None = None,
    data_files: list[DataFile] | None = None,
) -> list[Verdict]:
    """All verdicts, failing ones first. ``target`` is the FVP/board NPU when one is chosen;
    ``data_files``: the ``.ptd`` files the program's external blocks are looked up in."""
    infos = [info for info in delegates(program) if info.payload is not None]
    flags = vela_flags(infos[0].delegate.spec("compile_flags")) if infos else {}
    verdicts = [
        *_program_placement(program, memory_map),
        *_method_pool(program, memory_map),
        *_scratch(infos, memory_map, flags.get("memory-mode")),
        *_scratch_limit(infos, flags),
        *_fast_scratch(memory_map, flags.get("memory-mode")),
        *_targets(infos, memory_map, target),
        *_cpu_kernels(program, memory_map),
        *_config_pair(flags.get("system-config"), flags.get("memory-mode"), memory_map),
        *_regions(memory_map),
        *_vela_consistency(vela, flags),
        *_external_data(program, infos, memory_map, data_files or []),
        *_buffer_devices(program),
    ]
    return sorted(verdicts, key=lambda v: _ORDER[v.status])


def worst_status(verdicts: list[Verdict]) -> str:
    return min((v.status for v in verdicts), key=_ORDER.__getitem__, default=OK)


def fit_record(verdicts: list[Verdict]) -> dict:
    """The ``etu fit --json`` object (field names are a contract)."""
    return {"status": worst_status(verdicts), "verdicts": [asdict(v) for v in verdicts]}


# ------------------------------------------------------------------------------ checks


def _program_placement(program: Program, mm: MemoryMap) -> list[Verdict]:
    need = program.file_size
    pool = mm.pools.get("model_pte")
    if pool is not None:
        if pool.size < need:
            return [
                Verdict(
                    "program_placement",
                    FAIL,
                    need,
                    pool.size,
                    f"model_pte holds {_kib(pool.size)}, the program is {_kib(need)}",
                    "rebuild the runner with -DET_PTE_FILE_PATH=<this .pte> so the right program "
                    "is baked in",
                )
            ]
        status = OK if pool.size == need else WARN
        message = f"model_pte ({_kib(pool.size)}) in {pool.region or 'no region'} holds the program"
        if pool.size != need:
            message += (
                f"; it is {pool.size - need:,} bytes larger: a different program is baked in?"
            )
        return [Verdict("program_placement", status, need, pool.size, message)]
    files = mm.pools.get("input_file_allocator")
    if files is not None:
        status = OK if files.size >= need else FAIL
        return [
            Verdict(
                "program_placement",
                status,
                need,
                files.size,
                f"no baked-in program; the semihosting file pool holds {_kib(files.size)}",
                None
                if status == OK
                else _pool_fix("ET_ARM_BAREMETAL_SEMIHOSTING_FILE_ALLOCATOR_POOL_SIZE", need),
            )
        ]
    return [
        Verdict(
            "program_placement",
            WARN,
            need,
            None,
            "the firmware has neither model_pte nor a semihosting file pool: the program must be "
            "placed at ET_MODEL_PTE_ADDR by the loader",
        )
    ]


def _method_pool(program: Program, mm: MemoryMap) -> list[Verdict]:
    planned, inputs = method_pool_need(program)
    need = planned + inputs + metadata_estimate(program)
    pool = mm.pools.get("method_allocator")
    verdicts = []
    detail = (
        f"planned buffers {_kib(planned)} + unplanned inputs {_kib(inputs)} + method metadata "
        f"(estimated) {_kib(need - planned - inputs)}"
    )
    scratch = cortex_m_scratch(program)
    if scratch:
        detail += f"; the planned buffers hold {scratch:,} B of CMSIS-NN scratch"
    if pool is None:
        verdicts.append(
            Verdict(
                "method_allocator",
                WARN,
                need,
                None,
                f"no method_allocation_pool symbol in the ELF; need {detail}",
            )
        )
    elif pool.size < need:
        verdicts.append(
            Verdict(
                "method_allocator",
                FAIL,
                need,
                pool.size,
                f"method pool {_kib(pool.size)} is {need - pool.size:,} bytes short of {detail}",
                _pool_fix(METHOD_POOL_FLAG, need, mm),
            )
        )
    else:
        verdicts.append(
            Verdict(
                "method_allocator",
                OK,
                need,
                pool.size,
                f"method pool {_kib(pool.size)} covers {detail}",
            )
        )
    fast_need = sum(
        plan.non_const_buffer_sizes[FAST_MEMORY_ID]
        for plan in program.plans
        if len(plan.non_const_buffer_sizes) > FAST_MEMORY_ID
    )
    if fast_need:
        fast = mm.pools.get("planned_fast_memory")
        have = fast.size if fast else 0
        verdicts.append(
            Verdict(
                "planned_fast_memory",
                OK if have >= fast_need else FAIL,
                fast_need,
                have,
                f"planned buffer mem_id 3 needs {_kib(fast_need)}, the fast pool has {_kib(have)}",
                None if have >= fast_need else _pool_fix(PLANNED_FAST_FLAG, fast_need),
            )
        )
    return verdicts


def _scratch(infos, mm: MemoryMap, memory_mode: str | None) -> list[Verdict]:
    if not infos:
        return []
    need = max(info.payload.scratch_size for info in infos)
    pool = mm.pools.get("temp_allocator")
    if pool is None:
        return [
            Verdict(
                "ethosu_scratch",
                FAIL,
                need,
                None,
                "no temp_allocation_pool in the ELF: the Ethos-U scratch has nowhere to go",
                _pool_fix(TEMP_POOL_FLAG, need, mm),
            )
        ]
    verdicts = []
    if pool.size < need:
        verdicts.append(
            Verdict(
                "ethosu_scratch",
                FAIL,
                need,
                pool.size,
                f"the largest Ethos-U scratch is {_kib(need)}; the temp pool has "
                f"{_kib(pool.size)}: 'Failed to allocate scratch buffer' at the first inference",
                _pool_fix(TEMP_POOL_FLAG, need, mm),
            )
        )
    else:
        verdicts.append(
            Verdict(
                "ethosu_scratch",
                OK,
                need,
                pool.size,
                f"Ethos-U scratch {_kib(need)} fits the temp pool {_kib(pool.size)}",
            )
        )
    sram = _region_named(mm, "SRAM")
    if sram is not None and memory_mode and not is_dedicated_sram(memory_mode):
        in_sram = pool.region == sram.name
        verdicts.append(
            Verdict(
                "scratch_in_sram",
                OK if in_sram else FAIL,
                sram.name,
                pool.region,
                f"{memory_mode}: the NPU's scratch (temp pool) must be in SRAM; it is in "
                f"{pool.region or 'no known region'}",
                None if in_sram else "link .bss.tensor_arena into SRAM (ETHOSU_ARENA=0)",
            )
        )
    return verdicts


def _scratch_limit(infos, flags: dict[str, str]) -> list[Verdict]:
    """The compile-time scratch limit (ExecuTorch PR 22884, ``max_scratch_size``): the
    same budget a compile with a newer ExecuTorch checks, shown for the delegate's config."""
    from etu.parsers.ethosu_defaults import scratch_limit

    if not infos:
        return []
    need = max(info.payload.scratch_size for info in infos)
    given = infos[0].delegate.spec("max_scratch_size")
    digits = (given or "").strip()
    explicit = int(digits) if digits.isdigit() and len(digits) <= 20 else None
    limit = scratch_limit(infos[0].delegate.spec("target"), flags.get("system-config"),
                          flags.get("memory-mode"), flags.get("config"), explicit)  # fmt: skip
    if limit.size is None:
        return []
    if need > limit.size:
        return [
            Verdict(
                "scratch_limit",
                WARN,
                need,
                limit.size,
                f"Ethos-U scratch {_kib(need)} exceeds the compile-time limit {_kib(limit.size)} "
                f"({limit.basis}): ExecuTorch since PR 22884 refuses to compile it",
                "compile with a smaller scratch (--arena-cache-size, a smaller model) or pass "
                "max_scratch_size for a board with more SRAM",
            )
        ]
    return [
        Verdict(
            "scratch_limit",
            OK,
            need,
            limit.size,
            f"Ethos-U scratch {_kib(need)} within the compile-time limit {_kib(limit.size)} "
            f"(max_scratch_size, {limit.basis})",
        )
    ]


def _fast_scratch(mm: MemoryMap, memory_mode: str | None) -> list[Verdict]:
    pool = mm.pools.get("fast_scratch")
    if not is_dedicated_sram(memory_mode):
        if pool is not None and pool.size:
            return [
                Verdict(
                    "fast_scratch",
                    WARN,
                    0,
                    pool.size,
                    f"{memory_mode or 'this memory mode'} uses no fast scratch; "
                    f"{_kib(pool.size)} of dedicated SRAM is reserved for nothing",
                )
            ]
        return []
    need = fast_scratch_size_for(memory_mode)
    have = pool.size if pool else 0
    sram = _region_named(mm, "SRAM")
    verdicts = [
        Verdict(
            "fast_scratch",
            OK if have >= need else FAIL,
            need,
            have,
            f"{memory_mode} needs {_kib(need)} of dedicated SRAM as fast scratch; the ELF "
            f"reserves {_kib(have)}",
            None if have >= need else _pool_fix(FAST_SCRATCH_FLAG, need),
        )
    ]
    if pool is not None and sram is not None and pool.region != sram.name:
        verdicts.append(
            Verdict(
                "fast_scratch",
                FAIL,
                sram.name,
                pool.region,
                "the fast scratch must live in SRAM",
                "link .bss.ethosu_scratch into SRAM",
            )
        )
    return verdicts


def _targets(infos, mm: MemoryMap, target: str | None) -> list[Verdict]:
    verdicts = []
    for info in infos:
        spec_target = info.delegate.spec("target")
        built_for = info.payload.target
        where = f"{info.plan.name} delegate {info.index}"
        if spec_target and built_for and spec_target != built_for:
            verdicts.append(
                Verdict(
                    "target",
                    FAIL,
                    spec_target,
                    built_for,
                    f"{where}: compile spec says {spec_target} but the command "
                    f"stream was built for {built_for}",
                )
            )
        actual = built_for or spec_target
        if target and actual and actual != target:
            verdicts.append(
                Verdict(
                    "target",
                    FAIL,
                    actual,
                    target,
                    f"{where} was compiled for {actual}, the run targets {target}: "
                    "the driver rejects a command stream for another NPU config",
                    f"recompile with --target {shlex.quote(target)}",
                )
            )
        preset = getattr(mm, "preset", None)
        npus = PLATFORM_NPUS.get(preset or "")
        if npus and actual and not actual.startswith(npus):
            verdicts.append(
                Verdict(
                    "target",
                    FAIL,
                    actual,
                    preset,
                    f"{where} is for {actual}; a {preset} firmware drives {'/'.join(npus)}",
                )
            )
        if not any(v.check == "target" and v.message.startswith(where) for v in verdicts):
            verdicts.append(
                Verdict(
                    "target",
                    OK,
                    actual,
                    target or built_for,
                    f"{where}: command stream built for {actual}",
                )
            )
    return verdicts


def _cpu_kernels(program: Program, mm: MemoryMap) -> list[Verdict]:
    needed = [op.name for op in cpu_operators(program) if not op.is_prim]
    if not needed:
        return [Verdict("cpu_kernels", OK, 0, None, "no CPU kernels needed")]
    present = mm.kernel_names
    if not present:
        return [
            Verdict(
                "cpu_kernels",
                WARN,
                len(needed),
                None,
                "no kernel registry found in the ELF: cannot tell whether "
                f"{', '.join(needed)} are linked in",
            )
        ]
    missing = [name for name in needed if name not in present]
    if missing:
        return [
            Verdict(
                "cpu_kernels",
                FAIL,
                ",".join(needed),
                ",".join(sorted(present)),
                f"not in the firmware: {', '.join(missing)} (predicted 'Missing operator' "
                "and OperatorMissing 0x14 at load)",
                "rebuild with "
                + (
                    f"{CORTEX_M_BUILD_FLAG} (the Cortex-M kernels and CMSIS-NN; etu firmware "
                    "build adds them) and "
                    if any(kernel_library(name) == "cmsis-nn" for name in missing)
                    else ""
                )
                + shlex.quote("-DEXECUTORCH_SELECT_OPS_LIST=" + ",".join(needed)),
            )
        ]
    cmsis = sum(kernel_library(name) == "cmsis-nn" for name in needed)
    return [
        Verdict(
            "cpu_kernels",
            OK,
            len(needed),
            len(present),
            f"all {len(needed)} CPU kernels are registered in the firmware"
            + (f" ({cmsis} CMSIS-NN, from the Cortex-M backend)" if cmsis else ""),
        )
    ]


def _config_pair(system_config: str | None, memory_mode: str | None, mm) -> list[Verdict]:
    if not system_config or not memory_mode:
        return []
    pair = f"{system_config} + {memory_mode}"
    accepted = RUNNER_SYSTEM_CONFIGS.get(system_config)
    if accepted is None:
        return [
            Verdict(
                "system_config",
                FAIL,
                pair,
                None,
                f"the runner's build does not support SYSTEM_CONFIG={system_config} "
                "(FATAL Unsupported SYSTEM_CONFIG)",
                "recompile with one of " + ", ".join(RUNNER_SYSTEM_CONFIGS),
            )
        ]
    platform, modes = accepted
    matches = any(
        memory_mode == mode or (mode.endswith("*") and is_dedicated_sram(memory_mode))
        for mode in modes
    )
    if not matches:
        status = WARN if platform == "corstone-320" and memory_mode == "Shared_Sram" else FAIL
        return [
            Verdict(
                "system_config",
                status,
                pair,
                ", ".join(modes),
                f"the runner builds {system_config} with {', '.join(modes)} only",
                "recompile with a supported --memory-mode",
            )
        ]
    return [Verdict("system_config", OK, pair, platform, f"{pair} builds for {platform}")]


def _regions(mm: MemoryMap) -> list[Verdict]:
    verdicts = []
    for region in mm.regions:
        if region.used > region.length:
            verdicts.append(
                Verdict(
                    "region",
                    FAIL,
                    region.used,
                    region.length,
                    f"{region.name} overflows by {region.used - region.length:,} bytes",
                    "shrink the pools placed there or move them to a larger region",
                )
            )
    if not verdicts and mm.regions:
        verdicts.append(
            Verdict("region", OK, None, None, f"all {len(mm.regions)} memory regions have room")
        )
    return verdicts


def _vela_consistency(vela: VelaReport | None, flags: dict[str, str]) -> list[Verdict]:
    if vela is None or not flags:
        return []
    pairs = (("system-config", vela.system_config), ("memory-mode", vela.memory_mode))
    mismatched = [
        f"{name} {theirs} (program: {flags[name]})"
        for name, theirs in pairs
        if theirs and name in flags and theirs != flags[name]
    ]
    if mismatched:
        return [
            Verdict(
                "vela_report",
                WARN,
                None,
                None,
                "the Vela report is from another compile: " + "; ".join(mismatched),
            )
        ]
    return [Verdict("vela_report", OK, None, None, "the Vela report matches the program's config")]


def _external_data(program: Program, infos, mm: MemoryMap, files: list[DataFile]) -> list:
    """External Vela blocks: the ``.ptd`` bytes must live beside the program (in the region
    its pool is in), and the runner etu builds does not load ``.ptd`` files."""
    from etu.parsers.external_blocks import resolve

    blocks = [block for info in infos for block in resolve(info.payload, info.delegate, files)]
    if not blocks:
        return []
    bad = [block for block in blocks if not block.ok]
    if bad:
        return [
            Verdict(
                "external_data",
                FAIL,
                len(blocks),
                len(blocks) - len(bad),
                "; ".join(block.message for block in bad[:3]),
                "give the program's .ptd (etu fit --data FILE.ptd, or put it beside the program)",
            )
        ]
    used = {block.data_file for block in blocks}
    need = sum(f.file_size for f in files if f.source in used)
    pool = mm.pools.get("model_pte") or mm.pools.get("input_file_allocator")
    region = _region_named(mm, pool.region.upper()) if pool and pool.region else None
    names = ", ".join(sorted(f.name for f in files if f.source in used))
    unloaded = (
        "the runner etu builds does not load .ptd files (no NamedDataMap): it fails "
        "with InvalidExternalData unless the firmware provides them"
    )
    if region is None:
        return [
            Verdict(
                "external_data",
                WARN,
                need,
                None,
                f"{names}: {_kib(need)} of external blocks with no region to count them "
                f"against; {unloaded}",
            )
        ]
    status = WARN if region.free >= need else FAIL
    message = (
        f"{names}: {_kib(need)} of external blocks beside the program in {region.name} "
        f"({_kib(region.free)} free); {unloaded}"
    )
    fix = None if status == WARN else f"free {_kib(need - region.free)} in {region.name}"
    return [
        Verdict(
            "external_data",
            status,
            need,
            region.free,
            message,
            fix or "compile without --external-blocks to run on this firmware",
        )
    ]


def _buffer_devices(program: Program) -> list[Verdict]:
    """A planned buffer or tensor placed on a device other than the CPU: a microcontroller
    has no such device, and the runtime cannot allocate there."""
    found = []
    for plan in program.plans:
        for entry in plan.non_const_buffer_device:
            if not entry.is_cpu:
                found.append(f"{plan.name} buffer {entry.buffer_idx} on {entry.device}")
        devices = sorted({v.device for v in plan.values if isinstance(v, Tensor) and v.device_type})
        if devices:
            found.append(f"{plan.name} tensors on {', '.join(devices)}")
    if not found:
        return []
    return [
        Verdict(
            "buffer_devices",
            WARN,
            None,
            "cpu",
            f"the program places memory off the CPU ({'; '.join(found[:4])}): a "
            "microcontroller has only the CPU's memory",
            "export without device placement (no CUDA or other device annotations)",
        )
    ]


def _region_named(mm: MemoryMap, name: str):
    return next((r for r in mm.regions if r.name.upper() == name), None)
