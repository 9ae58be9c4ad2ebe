"""Version skew between a program and the runner it runs on: kernel schemas, the command
stream against the Ethos-U driver, and what the driver says at run time.

ExecuTorch's code generator registers every kernel with a check that the program passes
exactly as many values as the schema has arguments, plus one for the return value
(``codegen/gen.py``: "+1 for the return value"); a mismatch ends the run with
``Expected N args received M`` and ``InvalidProgram``. Schemas change between releases
(an argument added to an ``.out`` operator), so a program exported by one ExecuTorch and
a runner built from another disagree. The schemas are the ``func:`` lines of the kernel
YAML files and of ATen's ``native_functions.yaml`` (with their ``autogen`` out variants).
The Ethos-U driver checks a command stream's NPU configuration and architecture version
(``ethosu_dev_verify_optimizer_config``) and the backend its format (COP1/COP2).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

# the runner's message when the counts differ (ET_KERNEL_CHECK_MSG in the generated code)
ARGS_RECEIVED = re.compile(r"Expected (\d+) ?args received (\d+)")


def schema_arguments(func: str) -> list[str]:
    """The arguments of a schema (``add.out(Tensor self, *, Tensor(a!) out) -> ...``), the
    keyword-only marker left out."""
    start = func.find("(")
    if start < 0:
        raise ValueError(f"schema {func!r}: no argument list")
    depth, current, arguments = 0, [], []
    for char in func[start + 1 :]:
        if char in "([":
            depth += 1
        elif char in ")]":
            depth -= 1
            if depth < 0:
                break
        if char == "," and depth == 0:
            arguments.append("".join(current).strip())
            current = []
        else:
            current.append(char)
    else:
        raise ValueError(f"schema {func!r}: the argument list does not end")
    arguments.append("".join(current).strip())
    return [argument for argument in arguments if argument and argument != "*"]


def schema_name(func: str, namespace: str) -> str:
    """``namespace::name.overload`` of a schema (its own namespace wins)."""
    name = func.split("(", 1)[0].strip()
    return name if "::" in name else f"{namespace}::{name}"


def schema_entries(text: str) -> list[dict[str, str]]:
    """The ``func:`` and ``autogen:`` lines of a kernel YAML file, one dict per entry.

    Every schema file of ATen and ExecuTorch writes an entry's ``func`` on the line that
    opens it (``- func: ...``) and ``autogen`` on one line of its own, so reading lines is
    enough; a YAML parser takes seconds on ``native_functions.yaml``.
    """
    entries: list[dict[str, str]] = []
    for line in text.splitlines():
        if line.startswith("- "):
            entries.append({})
            line = "  " + line[2:]
        if not entries or not line.startswith("  ") or line.startswith("   "):
            continue
        key, colon, value = line[2:].partition(":")
        if colon and key in ("func", "autogen"):
            entries[-1][key] = value.strip()
    return [entry for entry in entries if "func" in entry]


def boxed_arguments(
    entries: Iterable[Mapping], namespace: str = "aten"
) -> dict[str, int]:  # fmt: skip
    """Values a runner's kernel takes per operator: the schema's arguments plus the return.

    ``entries``: a kernel YAML file's list (``func:`` entries; ``op:`` entries carry no
    schema). ATen's ``autogen: x.out`` variants take the schema's arguments and one
    ``out`` per return value (``relu_(Tensor(a!) self)`` gives ``relu.out``: 1 + 1 + 1).
    """
    counts: dict[str, int] = {}
    for entry in entries:
        func = entry.get("func") if isinstance(entry, Mapping) else None
        if not isinstance(func, str):
            continue
        try:
            arguments = len(schema_arguments(func))
        except ValueError:
            continue
        counts[schema_name(func, namespace)] = arguments + 1
        autogen = entry.get("autogen")
        if isinstance(autogen, str):
            returns = _return_count(func)
            for variant in (name.strip() for name in autogen.split(",")):
                if "." in variant and variant.endswith("out"):  # relu_ → relu.out too
                    counts[schema_name(variant + "()", namespace)] = arguments + returns + 1
    return counts


def _return_count(func: str) -> int:
    returns = func.rsplit("->", 1)[-1].strip() if "->" in func else ""
    if not returns or returns == "()":
        return 0
    if returns.startswith("("):
        return max(1, len([part for part in returns[1:-1].split(",") if part.strip()]))
    return 1


@dataclass(frozen=True, slots=True)
class ArgumentSkew:
    """A kernel call of the program that the runner's kernel would refuse."""

    operator: str
    passed: int  # values the program's call passes
    expected: int  # values the runner's kernel takes
    plan: str
    instruction: int

    def message(self, runner: str) -> str:
        newer = "a newer" if self.passed > self.expected else "an older"
        return (
            f"{self.operator}: the program passes {self.passed} values, the kernel in "
            f"{runner} takes {self.expected} (the program was made by {newer} ExecuTorch "
            "than the runner; the run would end in InvalidProgram)"
        )


def argument_skew(program, expected: Mapping[str, int]) -> list[ArgumentSkew]:
    """Each operator whose kernel calls pass another number of values than ``expected``
    (operator → values) says; one entry per operator, its first call. Operators the map
    does not hold are not judged."""
    found: dict[str, ArgumentSkew] = {}
    for plan in program.plans:
        names = [f"{op.name}.{op.overload}" if op.overload else op.name for op in plan.operators]
        for index, instruction in enumerate(plan.instructions):
            op_index = getattr(instruction, "op_index", None)
            if op_index is None or not 0 <= op_index < len(names):
                continue
            name = names[op_index]
            want = expected.get(name)
            passed = len(instruction.args)
            if want is not None and passed != want and name not in found:
                found[name] = ArgumentSkew(name, passed, want, plan.name, index)
    return list(found.values())


# -- the command stream against the Ethos-U driver ------------------------------------


def command_stream_arch(npu_id: int) -> tuple[int, int, int]:
    """The NPU architecture (major, minor, patch) a command stream was compiled for: the
    ``id`` word after its OPTIMIZER_CONFIG (``id_r``: patch bits 16-19, minor 20-27,
    major 28-31)."""
    return (npu_id >> 28) & 0xF, (npu_id >> 20) & 0xFF, (npu_id >> 16) & 0xF


def arch_text(arch: tuple[int, int, int]) -> str:
    return ".".join(map(str, arch))


def arch_problem(program: tuple[int, int, int], driver: tuple[int, int, int]) -> str | None:
    """The driver's own rule (``ethosu_dev_verify_optimizer_config``): the major versions
    match and the NPU's minor version is at least the command stream's."""
    if program[0] != driver[0] or program[1] > driver[1]:
        return (
            f"the command stream is for NPU architecture {arch_text(program)}, the runner's "
            f'Ethos-U driver is for {arch_text(driver)} ("NPU arch mismatch" at run time): '
            "compile with the Vela release that matches the driver, or update the driver"
        )
    return None


# COP2 command streams are read by the runner's backend since ExecuTorch 1.2 (2026-01-29)
COP2_SINCE = (1, 2)


def format_problem(fourcc: str | None, runner_version: tuple[int, int] | None) -> str | None:
    """A command-stream format the runner's backend refuses (``COP2`` before 1.2)."""
    if fourcc == "COP2" and runner_version is not None and runner_version < COP2_SINCE:
        return (
            f"the command stream is COP2 (Vela's newer format); the runner's ExecuTorch "
            f"{'.'.join(map(str, runner_version))} reads COP1 only (COP2 since 1.2): rebuild "
            "the runner from a newer ExecuTorch"
        )
    return None


# -- what the driver prints at run time (ETHOSU_LOG_SEVERITY info, or on a mismatch) ----

NPU_CONFIG_LINE = re.compile(
    r"(Optimizer|Ethos-U) config\. product=(\d+), cmd_stream_version=(\d+), macs_per_cc=(\d+)"
)
NPU_MISMATCH_LINE = re.compile(
    r"NPU (config|arch) mismatch\. npu\.(\w+)=([\d.]+), optimizer\.(\w+)=([\d.]+)"
)
PRODUCTS = ("ethos-u55", "ethos-u65", "ethos-u85")


@dataclass(frozen=True, slots=True)
class DriverSays:
    """One line of the Ethos-U driver about the NPU it found or a mismatch it refused."""

    kind: str  # npu_config / optimizer_config / mismatch
    text: str  # in words, for the log and the Run header
    target: str | None = None  # the NPU as an ExecuTorch target (``ethos-u55-256``)


def driver_line(message: str) -> DriverSays | None:
    """What an Ethos-U driver line says of the NPU's configuration, or None."""
    match = NPU_CONFIG_LINE.search(message)
    if match:
        side, product, version, macs = match.groups()
        name = PRODUCTS[int(product)] if int(product) < len(PRODUCTS) else f"product {product}"
        target = f"{name}-{1 << int(macs)}"
        what = f"{target} (command stream version {version})"
        if side == "Ethos-U":
            return DriverSays("npu_config", f"the NPU is {what}", target)
        return DriverSays("optimizer_config", f"the command stream is for {what}", target)

    match = NPU_MISMATCH_LINE.search(message)
    if match:
        what, field, npu, _same, optimizer = match.groups()
        if field == "macs_per_cc" and npu.isdigit() and optimizer.isdigit():
            field, npu, optimizer = "MACs", str(1 << int(npu)), str(1 << int(optimizer))
        return DriverSays(
            "mismatch",
            f"NPU {what} mismatch: the NPU has {field} {npu}, the command stream wants "
            f"{optimizer}: recompile for this NPU (etu compile --target) or run on the NPU "
            "it was compiled for",
        )
    match = ARGS_RECEIVED.search(message)
    if match:
        expected, received = match.groups()
        return DriverSays(
            "mismatch",
            f"a kernel took {received} values where the runner's takes {expected}: the "
            "program and the runner come from different ExecuTorch versions",
        )
    return None


def npu_problem(found: DriverSays, program_target: str | None) -> str | None:
    """The NPU the driver found at boot against the one the program was compiled for."""
    if found.kind != "npu_config" or not program_target or found.target == program_target:
        return None
    return (
        f"the NPU is {found.target}, the program is compiled for {program_target}: the driver "
        "will refuse its command stream; recompile for this NPU (etu compile --target) or run "
        "on the NPU it was compiled for"
    )
