"""Version skew between a program and the runner it is built into, found before a run.

The ``ET12`` identifier only says the container matches; a program exported by another
ExecuTorch than the runner's source can still pass another number of values to a kernel
(a schema gained an argument), or carry a command stream the runner's Ethos-U driver does
not take. Either ends a run with ``InvalidProgram`` and little else ("the better part of a
day", pytorch/executorch PR 21582). The firmware build checks both with the runner's own
source and records what it found, so a pre-flight can check a program against a firmware
later without that source.
"""

from __future__ import annotations

import importlib.util
import re
import tarfile
from collections.abc import Callable, Mapping
from pathlib import Path

from etu.parsers.version_skew import (
    arch_problem,
    argument_skew,
    boxed_arguments,
    command_stream_arch,
    format_problem,
    schema_entries,
)

# the kernel YAML files whose ``func:`` lines carry schemas, with their default namespace
SCHEMA_FILES = (
    ("kernels/quantized/quantized.yaml", "quantized_decomposed"),
    ("kernels/portable/custom_ops.yaml", "aten"),
    ("backends/cortex_m/ops/operators.yaml", "cortex_m"),
)
# ATen's schemas: ExecuTorch's code generator reads them from the build's torchgen
ATEN_SCHEMAS = "packaged/ATen/native/native_functions.yaml"
# the Ethos-U architecture a driver's register interface was written for
_ARCH_DEFINE = re.compile(rb"#define\s+NNX_ARCH_VERSION_(MAJOR|MINOR|PATCH)\s+(\d+)")
DRIVER_INTERFACES = {
    "ethos-u55": "src/ethosu55_interface.h",
    "ethos-u65": "src/ethosu65_interface.h",
    "ethos-u85": "src/ethosu85_interface.h",
}


class SkewError(Exception):
    """The program and the runner disagree; the message names both sides and the fix."""


def _load_schemas(path: Path) -> list[dict[str, str]]:
    return schema_entries(path.read_text(encoding="utf-8"))


def aten_schema_file() -> Path | None:
    """torchgen's ``native_functions.yaml`` (the one the runner's code generator reads)."""
    spec = importlib.util.find_spec("torchgen")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / ATEN_SCHEMAS
    return path if path.is_file() else None


def runner_arguments(root: Path, operators: list[str] | None = None) -> dict[str, int]:
    """Values each kernel of a runner built from the source at ``root`` takes (operator →
    count), for ``operators`` only when given."""
    counts: dict[str, int] = {}
    aten = aten_schema_file()
    if aten is not None:
        counts.update(boxed_arguments(_load_schemas(aten), "aten"))
    for relative, namespace in SCHEMA_FILES:
        path = root / relative
        if path.is_file():
            counts.update(boxed_arguments(_load_schemas(path), namespace))
    if operators is not None:
        counts = {name: counts[name] for name in operators if name in counts}
    return counts


def check_arguments(program, expected: Mapping[str, int], pte: Path, runner: str) -> None:
    """Raise :class:`SkewError` when a kernel call of ``program`` would be refused."""
    found = argument_skew(program, expected)
    if found:
        more = f" (and {len(found) - 1} more operators)" if len(found) > 1 else ""
        raise SkewError(
            f"{pte}: version skew: {found[0].message(runner)}{more}; recompile the program "
            "with the ExecuTorch the runner is built from, or point ETU_EXECUTORCH_SRC at the "
            "source the program was made with"
        )


def driver_arch(driver: Path | None, product: str) -> tuple[int, int, int] | None:
    """The NPU architecture version the Ethos-U driver at ``driver`` (a folder or a
    ``.tar.gz`` of the core driver) was written for, for ``product`` (``ethos-u55``...)."""
    relative = DRIVER_INTERFACES.get(product)
    if driver is None or relative is None:
        return None
    text = b""
    if driver.is_dir():
        path = driver / relative
        text = path.read_bytes() if path.is_file() else b""
    elif driver.is_file() and tarfile.is_tarfile(driver):
        with tarfile.open(driver) as archive:
            for member in archive:
                if member.isfile() and member.name.endswith("/" + relative):
                    handle = archive.extractfile(member)
                    text = handle.read() if handle is not None else b""
                    break
    parts = dict((name, int(value)) for name, value in _ARCH_DEFINE.findall(text))
    if {b"MAJOR", b"MINOR", b"PATCH"} <= parts.keys():
        return parts[b"MAJOR"], parts[b"MINOR"], parts[b"PATCH"]
    return None


def runner_version(root: Path) -> tuple[int, int] | None:
    """(major, minor) of the ExecuTorch source at ``root`` (its ``version.txt``)."""
    path = root / "version.txt"
    match = re.match(r"(\d+)\.(\d+)", path.read_text().strip()) if path.is_file() else None
    return (int(match.group(1)), int(match.group(2))) if match else None


def stream_problems(
    program, version: tuple[int, int] | None, arch_of: Callable[[str], tuple | None]
) -> list[str]:  # fmt: skip
    """Each delegate's command stream against the runner: its format against the runner's
    ``version``, its NPU architecture against ``arch_of(product)`` (the driver's)."""
    from etu.parsers.program_facts import delegates

    problems: list[str] = []
    for info in delegates(program):
        payload = info.payload
        if payload is None:
            continue
        problem = format_problem(payload.command_stream_format, version)
        npu = payload.npu
        arch = arch_of(npu.product) if npu is not None and npu.product else None
        if problem is None and arch is not None and payload.npu_id is not None:
            problem = arch_problem(command_stream_arch(payload.npu_id), arch)
        if problem:
            problems.append(problem)
    return list(dict.fromkeys(problems))


def check_program(
    pte: Path, root: Path, commit: str | None, driver: Path | None, operators: list[str]
) -> dict:
    """Check the program at ``pte`` against a runner built from ``root`` (and the Ethos-U
    driver at ``driver``); raise :class:`SkewError` with the first mismatch. Returns what
    the firmware record keeps for later checks: the kernels' value counts, the driver's
    NPU architecture per product, the runner's version."""
    from etu.parsers.pte import open_program

    runner = f"the runner's ExecuTorch ({(commit or 'unknown commit')[:10]})"
    expected = runner_arguments(root, operators)
    version = runner_version(root)
    archs: dict[str, list[int]] = {}

    def arch_of(product: str) -> tuple[int, int, int] | None:
        arch = driver_arch(driver, product)
        if arch is not None:
            archs[product] = list(arch)
        return arch

    with open_program(pte) as program:
        check_arguments(program, expected, pte, runner)
        problems = stream_problems(program, version, arch_of)
    if problems:
        raise SkewError(f"{pte}: version skew: {problems[0]}")
    return {
        "kernel_arguments": expected,
        "driver_arch": archs,
        "runner_version": list(version) if version else None,
    }


def firmware_skew(program, elf: Path | None) -> list[str]:
    """What the firmware record beside ``elf`` (an ``etu firmware build``) says its runner
    would refuse in ``program``: kernel calls with another value count, a command stream
    for a newer NPU architecture than its driver's, COP2 on a runner before 1.2. Empty
    when there is no record (a firmware etu did not build is not judged here)."""
    import json

    from etu.runner.runtime_build import RECORD_NAME

    record_path = elf.parent / RECORD_NAME if elf is not None else None
    if record_path is None or not record_path.is_file() or record_path.stat().st_size > 1 << 20:
        return []
    try:
        options = json.loads(record_path.read_text(encoding="utf-8")).get("options") or {}
    except (OSError, ValueError, AttributeError):
        return []
    problems: list[str] = []
    counts = options.get("kernel_arguments")
    if isinstance(counts, dict):
        clean = {k: v for k, v in counts.items() if isinstance(k, str) and isinstance(v, int)}
        runner = f"{elf.name}'s runner"
        fix = (
            "; fix: recompile the program with the ExecuTorch the runner is built from, or "
            "rebuild the firmware (etu firmware build) from the source the program was made with"
        )
        problems += [
            f"version skew: {s.message(runner)}{fix}" for s in argument_skew(program, clean)
        ]
    version = options.get("runner_version")
    version = tuple(version[:2]) if isinstance(version, list) and len(version) >= 2 else None
    archs = options.get("driver_arch") if isinstance(options.get("driver_arch"), dict) else {}

    def arch_of(product: str) -> tuple | None:
        arch = archs.get(product)
        return tuple(arch) if isinstance(arch, list) and len(arch) == 3 else None

    problems += [f"version skew: {p}" for p in stream_problems(program, version, arch_of)]
    return problems
