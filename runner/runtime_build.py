"""Build ExecuTorch's own arm_executor_runner around a program, with a library cache.

The CMake project (``runner/runtime_platform``) adds the upstream tree as a subdirectory,
so the core libraries, the kernels and the runner are all built by ExecuTorch's own CMake
with its own toolchain file. One build tree per (source commit, compiler, CPU, board kind,
options) lives in the build cache; every program is configured into that tree, so ninja
rebuilds only what the new program changes (its model header, its selected-ops libraries,
the kernels it newly needs) and relinks. Concurrent builds of one tree wait on a file lock.

Every tool runs with an argument list; a failing step is a RuntimeBuildError whose message
is one line naming the step and the first error line.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from etu.runner.build_plan import (
    BuildInputError,
    RuntimeBuildError,
    auto_pools,
    build_facts,
    check_operator_names,
    check_plain_path,
    check_program_file,
    kernel_plan,
    npu_bridged,
    refuse_bundled_reordered,
    refuse_delegated,
    refuse_external_blocks,
)
from etu.runner.build_turns import cold_builds_take_turns, flatcc_in_the_source
from etu.runner.runtime_source import (
    ENV_CMSIS,
    ENV_CMSIS_NN,
    ENV_DRIVER,
    RuntimeSource,
    SourceError,
    cache_root,
    find_executorch,
    find_sibling,
)

PROJECT = Path(__file__).resolve().parent / "runtime_platform"
BOARDS = ("qemu-an547", "corstone-300", "corstone-320")
BOARD_NPU = {"corstone-300": "ethos-u55-128", "corstone-320": "ethos-u85-256"}
ELF_NAME = "arm_executor_runner.elf"
MAP_NAME = "arm_executor_runner.map"
RECORD_NAME = "etu_firmware.json"
REBUILD_NAME = "rebuild.sh"
BUILD_TIMEOUT = 1800
MAX_INFERENCES = 1_000_000  # ET_NUM_INFERENCES: the runner's loop count (an int)

Progress = Callable[[str], None]


def staged_name(program: Path) -> str:
    """The name a program gets in the build tree: etu's, from its content (hex), never the
    user's path. A new program is a new path in the configure line, so every upstream
    command that reads it runs again (upstream's selective-build step does not list the
    program among its dependencies: with one fixed name its operator list went stale)."""
    from etu.parsers.files import GiB, sha256_regular

    digest = sha256_regular(program, "an ExecuTorch program", 4 * GiB)[:16]
    return f"program-{digest}{'.bpte' if program.suffix == '.bpte' else '.pte'}"


def stage_program(program: Path, staged: Path) -> Path:
    """``program`` copied to ``staged`` in the build tree (once: the name is its content);
    other programs staged there before are removed."""
    if not staged.is_file():
        partial = staged.with_name(staged.name + ".partial")
        shutil.copyfile(program, partial)
        os.replace(partial, staged)
    for old in staged.parent.glob("program-*.*pte"):
        if old != staged:
            with contextlib.suppress(OSError):
                old.unlink()
    return staged


@dataclass
class RuntimeBuild:
    elf: Path
    map_file: Path
    board: str
    build_dir: Path
    configure_command: list[str]
    build_command: list[str]
    pools: dict[str, int]
    pool_basis: str
    select_ops: list[str]
    kernel_sources: list[str]
    source: dict
    cache_key: str
    seconds: dict[str, float] = field(default_factory=dict)
    reused_tree: bool = False
    options: dict = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    kernel_libraries: dict = field(default_factory=dict)
    kernel_notes: list[str] = field(default_factory=list)
    build_env: dict[str, str] = field(default_factory=dict)  # ccache's settings, if any

    def to_json(self) -> dict:
        data = asdict(self)
        for key in ("elf", "map_file", "build_dir"):
            data[key] = str(data[key])
        data["rebuild"] = rebuild_text(self.configure_command, self.build_command,
                                       self.build_env)  # fmt: skip
        return data


def rebuild_text(configure: list[str], build: list[str], env: dict[str, str] | None = None) -> str:
    """The two commands as a shell would run them, with the build's environment first."""
    prefix = "".join(f"export {name}={shlex.quote(value)}\n" for name, value in (env or {}).items())
    return f"{prefix}{shlex.join(configure)}\n{shlex.join(build)}\n"


CMSIS_NN_ARCHIVES = "cmsis-nn*.tar.gz"
CMSIS_NN_MARKER = "Include/arm_nnfunctions.h"
_CMSIS_NN_VERSION = re.compile(r'set\(\s*CMSIS_NN_VERSION\s+"([0-9a-fA-F]{7,40})"')


def pinned_cmsis_nn(root: Path) -> str | None:
    """The CMSIS-NN commit the source's Cortex-M backend fetches (``CMSIS_NN_VERSION``)."""
    try:
        text = (Path(root) / "backends/cortex_m/CMakeLists.txt").read_text(errors="replace")
    except OSError:
        return None
    match = _CMSIS_NN_VERSION.search(text)
    return match.group(1).lower() if match else None


def cmsis_nn_source(source: RuntimeSource, say: Progress) -> Path:
    """CMSIS-NN for the Cortex-M backend, handed to upstream's CMake as ``CMSIS_NN_LOCAL_PATH``
    (the build never fetches): ``ETU_CMSIS_NN_SRC`` (a checkout or an archive), else an
    archive beside the ExecuTorch one or in the source mirror. An archive named for another
    commit than the source pins is used with a warning (its kernels may not match)."""
    found = find_sibling(source, ENV_CMSIS_NN, CMSIS_NN_ARCHIVES, CMSIS_NN_MARKER)
    if found is None:
        pinned = pinned_cmsis_nn(source.root) or "the commit backends/cortex_m/CMakeLists.txt pins"
        raise SourceError(
            f"the program has Cortex-M backend (cortex_m::) kernels and the build needs CMSIS-NN "
            f"at {pinned}: set {ENV_CMSIS_NN} to a checkout or an archive of it"
        )
    pinned = pinned_cmsis_nn(source.root)
    given = os.environ.get(ENV_CMSIS_NN) or ""
    named = re.search(r"-([0-9a-fA-F]{7,40})\.tar", Path(given).name if given else "")
    if not given:
        archives = sorted(Path(source.given).expanduser().parent.glob(CMSIS_NN_ARCHIVES))
        named = re.search(r"-([0-9a-fA-F]{7,40})\.tar", archives[-1].name) if archives else None
    if pinned and named and not pinned.startswith(named.group(1).lower()):
        say(f"warning: CMSIS-NN {named.group(1)} is not the commit the source pins ({pinned[:8]})")
    return found


def compiler_version() -> str:
    gcc = shutil.which("arm-none-eabi-gcc")
    if gcc is None:
        raise RuntimeBuildError(
            "arm-none-eabi-gcc: not found on PATH (make system-deps installs gcc-arm-none-eabi)"
        )
    for tool in ("cmake", "ninja"):
        if shutil.which(tool) is None:
            raise RuntimeBuildError(f"{tool}: not found on PATH (make system-deps installs it)")
    result = subprocess.run([gcc, "-dumpfullversion"], capture_output=True, text=True, check=False)
    return result.stdout.strip() or "unknown"


def venv_tool(name: str) -> Path:
    """A tool from this Python's environment (flatc comes with the executorch wheel)."""
    candidate = Path(sys.executable).parent / name
    if candidate.is_file():
        return candidate
    found = shutil.which(name)
    if found is None:
        raise RuntimeBuildError(f"{name}: not found beside {sys.executable} nor on PATH")
    return Path(found)


def ccache_settings() -> dict[str, str]:
    """ccache's settings for a build, empty when ccache is not installed or ``ETU_CCACHE=0``.

    ExecuTorch's CMake puts ccache in front of the compiler whenever it finds one; etu's own
    targets get it too. With paths under the build cache made relative (``CCACHE_BASEDIR``),
    build trees that differ only in options (BundleIO, the NPU bridge, another board)
    compile the objects they share once: one tree's object is another's cache hit. The
    cache lives in etu's build cache beside the trees it serves, unless ``CCACHE_DIR`` says
    otherwise."""
    if os.environ.get("ETU_CCACHE", "1") == "0" or shutil.which("ccache") is None:
        return {}
    root = cache_root()
    return {"CCACHE_BASEDIR": str(root),
            "CCACHE_DIR": os.environ.get("CCACHE_DIR") or str(root / "ccache"),
            "CCACHE_NOHASHDIR": "true"}  # fmt: skip


def build_runner(
    pte: Path,
    board: str,
    out: Path,
    *,
    pools: dict[str, int] | None = None,
    select_ops: list[str] | None = None,
    bundleio: bool = False,
    etdump: bool = False,
    intermediates: bool = False,
    fault_on_start: bool = False,
    progress: Progress | None = None,
    workspace: Path | None = None,
    source: RuntimeSource | None = None,
    jobs: int | None = None,
    bundle_inputs: tuple[Path, ...] = (),
    bundle_seed: int = 0,
    bundle_expected: tuple[Path, ...] = (),
    inputs: str | None = None,
    num_inferences: int = 1,
) -> RuntimeBuild:
    """Build the runner for ``board`` with ``pte`` baked in; ELF, map, record in ``out``.
    ``inputs`` (``FILE.npy``, ``FILE.npz`` or ``random:SEED``) bundles those inputs (BundleIO);
    the tensors are saved beside the ELF and the record's ``options.inputs`` says what they
    are. ``intermediates``: the ETDump also keeps every kernel call's outputs (a debug buffer
    taken from the method pool, which grows by as much). ``num_inferences``: the runner's
    ``ET_NUM_INFERENCES`` (it runs the method that many times; one PMU report sums them)."""
    say = progress or (lambda _text: None)
    if not 1 <= num_inferences <= MAX_INFERENCES:
        raise BuildInputError(f"--num-inferences {num_inferences}: expected 1 to {MAX_INFERENCES}")
    if board not in BOARDS:
        raise RuntimeBuildError(f"--board {board}: expected one of {', '.join(BOARDS)}")
    if not Path(pte).exists() and not Path(pte).is_symlink():
        raise RuntimeBuildError(f"{pte}: no such program file")
    check_program_file(Path(pte))
    pte = Path(pte).resolve()
    started = time.monotonic()
    facts = build_facts(pte)
    refuse_external_blocks(pte, facts)
    refuse_delegated(pte, facts, board)
    program_pte = pte
    inputs_record: dict | None = None
    if inputs is not None and bundle_inputs:
        raise BuildInputError("--inputs and --bundle-input name the inputs twice: use --inputs")
    bundleio = bundleio or inputs is not None
    if bundleio:
        refuse_bundled_reordered(pte, facts)
        pte, inputs_record = _bundle(
            program_pte, Path(out).resolve(), inputs, bundle_inputs, bundle_seed,
            bundle_expected, say,
        )  # fmt: skip
    source = source or find_executorch(workspace)
    root = source.root
    gcc_version = compiler_version()
    if pools is None:
        pools, basis = auto_pools(facts)
    else:
        basis = "given with --pools"
    etdump = etdump or intermediates
    debug_buffer, debug_pool = facts.debug_need
    if intermediates:
        pools = {**pools, "method": pools["method"] + debug_pool}
        basis += (f"; + {debug_pool:,} B for the ETDump debug buffer ({debug_buffer:,} B) and "
                  "its base64 text")  # fmt: skip
    chosen_ops = list(facts.ops if select_ops is None else select_ops)
    check_operator_names(chosen_ops, "--select-ops" if select_ops is not None else str(pte))
    check_operator_names(facts.all_ops, str(pte))
    kernels = kernel_plan(root, chosen_ops)
    for note in kernels.notes:
        say(note)

    bridged = npu_bridged(facts, board)
    ethosu = board in BOARD_NPU or bridged
    npu = BOARD_NPU.get(board)
    if ethosu and facts.npu_targets:
        npu = facts.npu_targets[0]
    options = {
        "board_kind": "ethos-u" if ethosu else "cpu",
        "board": board if ethosu else "cpu",
        "npu": npu,
        "etdump": etdump,
        **({"npu_bridge": True} if bridged else {}),
    }
    cmsis_nn: Path | None = None
    if kernels.cortex_m:  # only these trees change: every other program keeps its tree
        cmsis_nn = cmsis_nn_source(source, say)
        options["cortex_m"] = True
        options["cmsis_nn"] = str(cmsis_nn)
    # CMake ties a build tree to its source folder: another checkout or install of etu
    # (another PROJECT path) gets its own tree rather than a configure error.
    key_text = json.dumps(
        {"commit": source.commit, "root": str(root), "gcc": gcc_version, "cpu": "cortex-m55",
         "project": _project_hash(), "project_dir": str(PROJECT), **options},
        sort_keys=True,
    )  # fmt: skip
    key = hashlib.sha256(key_text.encode()).hexdigest()[:16]
    # Only the runner's own file (and what it links) sees these: one tree serves them all.
    # BundleIO is one of them: ExecuTorch's devtools are configured into every tree (an
    # add_subdirectory, no compile flag of the runtime changes), so a bundled program's
    # build adds the bundled_program library to its tree instead of building a tree of its own.
    options["bundleio"] = bundleio
    options["etdump_intermediates"] = intermediates
    options["num_inferences"] = num_inferences  # a compile definition: the same tree serves
    options["cpu"] = "cortex-m55"
    options["cpu_cycle_counter"] = reads_cpu_cycles(root)
    build_dir = cache_root() / "runtime-build" / key
    check_plain_path(build_dir, "build cache", "ETU_BUILD_CACHE")
    check_plain_path(root, "ExecuTorch source", "ETU_EXECUTORCH_SRC")
    build_dir.mkdir(parents=True, exist_ok=True)
    staged = build_dir / staged_name(pte)

    defines = {
        "CMAKE_TOOLCHAIN_FILE": str(root / "examples/arm/ethos-u-setup/arm-none-eabi-gcc.cmake"),
        "TARGET_CPU": "cortex-m55",
        "CMAKE_BUILD_TYPE": "Release",
        "EXECUTORCH_ROOT": str(root),
        "ETU_BOARD": board,
        "EXECUTORCH_BUILD_ARM_BAREMETAL": "ON" if ethosu else "OFF",
        "EXECUTORCH_BUILD_KERNELS_QUANTIZED": "ON",
        "EXECUTORCH_BUILD_DEVTOOLS": "ON",
        "EXECUTORCH_BUILD_ARM_ETDUMP": "ON" if etdump else "OFF",
        "EXECUTORCH_ENABLE_EVENT_TRACER": "ON" if etdump else "OFF",
        "EXECUTORCH_BUILD_CPUINFO": "OFF",
        "EXECUTORCH_BUILD_PTHREADPOOL": "OFF",
        "FLATC_EXECUTABLE": str(venv_tool("flatc")),
        "PYTHON_EXECUTABLE": sys.executable,
        "ET_PTE_FILE_PATH": str(staged),
        "ETU_SELECT_OPS": ",".join(chosen_ops) if select_ops is not None else "",
        "ETU_PORTABLE_KERNEL_SOURCES": ";".join(kernels.portable_sources),
        "ETU_PORTABLE_KERNELS_WHOLE": "ON" if kernels.portable_whole else "OFF",
        "EXECUTORCH_BUILD_CORTEX_M": "ON" if kernels.cortex_m else "OFF",
        "ETU_CORTEX_M": "ON" if kernels.cortex_m else "OFF",
        "ETU_CORTEX_M_KERNEL_SOURCES": ";".join(kernels.cortex_m_sources),
        "ETU_CORTEX_M_KERNELS_WHOLE": "ON" if kernels.cortex_m_whole else "OFF",
        "CMSIS_NN_LOCAL_PATH": str(cmsis_nn or ""),
        "ET_ARM_BAREMETAL_METHOD_ALLOCATOR_POOL_SIZE": str(pools["method"]),
        "ET_ARM_BAREMETAL_SCRATCH_TEMP_ALLOCATOR_POOL_SIZE": str(pools["temp"]),
        "ET_BUNDLE_IO": "ON" if bundleio else "OFF",
        "ET_NUM_INFERENCES": str(num_inferences),
        "ET_DUMP_INTERMEDIATE_OUTPUTS": "ON" if intermediates else "OFF",
        "ET_DEBUG_BUFFER_SIZE": str(debug_buffer) if intermediates else "",
        "ETU_FAULT_ON_START": "ON" if fault_on_start else "OFF",
        # upstream's rule (corstone_utils.cmake): Shared_Sram/Sram_Only put the NPU's
        # scratch (the temp pool, .bss.tensor_arena) in SRAM, Dedicated_Sram in DDR
        "ETHOSU_ARENA": "0" if facts.memory_mode in ("Shared_Sram", "Sram_Only") else "1",
    }
    if ethosu:
        driver = find_sibling(
            source, ENV_DRIVER, "ethos-u-core-driver*.tar.gz", "include/ethosu_driver.h"
        )
        cmsis = find_sibling(source, ENV_CMSIS, "cmsis-core*.tar.gz", "CMSIS/Core/Include")
        if driver is None or cmsis is None:
            missing = (
                "Ethos-U core driver (ETU_ETHOSU_DRIVER_SRC)"
                if driver is None
                else ("CMSIS-Core (ETU_CMSIS_SRC)")
            )
            raise SourceError(f"{board}: the Ethos-U build needs the {missing}: set it to a "
                              "checkout or a tarball")  # fmt: skip
        sdk = build_dir / "ethos-sdk"
        (sdk / "core_platform").mkdir(parents=True, exist_ok=True)
        (sdk / "core_software").mkdir(parents=True, exist_ok=True)
        link = sdk / "core_software" / "core_driver"
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(driver, target_is_directory=True)
        defines.update({
            "ETU_ETHOSU_DRIVER_SRC": str(driver),
            "ETU_ETHOS_SDK_PATH": str(sdk),
            "ETHOS_SDK_PATH": str(sdk),
            "CMSIS_PATH": str(cmsis),
            "ETHOSU_TARGET_NPU_CONFIG": npu,
            "ETU_NPU_CONFIG": npu,
            "FETCH_ETHOS_U_CONTENT": "OFF",
            "ETU_NPU_BRIDGE": "ON" if bridged else "OFF",
        })  # fmt: skip
    skew = _check_skew(pte, source, driver if ethosu else None, facts.all_ops)
    ccache = ccache_settings()
    if ccache:
        defines["CMAKE_C_COMPILER_LAUNCHER"] = defines["CMAKE_CXX_COMPILER_LAUNCHER"] = "ccache"
    else:
        defines["CCACHE_PROGRAM"] = "OFF"  # ExecuTorch's CMake would pick ccache up itself
    configure = ["cmake", "-S", str(PROJECT), "-B", str(build_dir), "-G", "Ninja",
                 *[f"-D{name}={value}" for name, value in defines.items()]]  # fmt: skip
    build = ["cmake", "--build", str(build_dir), "--target", "arm_executor_runner",
             "-j", str(jobs or os.cpu_count() or 2)]  # fmt: skip

    seconds: dict[str, float] = {}
    lock_path = build_dir.with_name(build_dir.name + ".lock")
    with open(lock_path, "w") as lock:
        say(f"waiting for the build tree {build_dir}")
        fcntl.flock(lock, fcntl.LOCK_EX)
        reused = (build_dir / "build.ninja").is_file()
        stage_program(pte, staged)
        say(f"configure ({'reusing the cached libraries' if reused else 'new library build'})")
        t0 = time.monotonic()
        with flatcc_in_the_source(build_dir.parent, root, True, say):
            _run_step(configure, "configure", build_dir, say, ccache)
        seconds["configure"] = time.monotonic() - t0
        with cold_builds_take_turns(build_dir.parent, not reused and bool(ccache), say):
            t0 = time.monotonic()
            say("build")
            with flatcc_in_the_source(build_dir.parent, root, etdump, say):
                _run_step(build, "build", build_dir, say, ccache)
            seconds["build"] = time.monotonic() - t0
        out = Path(out).resolve()
        out.mkdir(parents=True, exist_ok=True)
        elf = out / ELF_NAME
        built = build_dir / "arm_executor_runner"
        if not built.is_file():
            built = build_dir / "arm_executor_runner.elf"
        shutil.copy2(built, elf)
        shutil.copy2(build_dir / MAP_NAME, out / MAP_NAME)
    seconds["total"] = time.monotonic() - started
    result = RuntimeBuild(
        elf=elf, map_file=out / MAP_NAME, board=board, build_dir=build_dir,
        configure_command=configure, build_command=build, pools=pools, pool_basis=basis,
        select_ops=chosen_ops, kernel_sources=kernels.portable_sources,
        kernel_libraries=kernels.libraries, kernel_notes=kernels.notes,
        source={"root": str(root), "origin": source.origin, "given": source.given,
                "commit": source.commit},
        cache_key=key, seconds=seconds, reused_tree=reused, build_env=ccache,
        options={**options, "fault_on_start": fault_on_start, "compiler": gcc_version, **skew,
                 "program": str(program_pte), "baked": str(pte),
                 **({"inputs": inputs_record} if inputs_record else {})},
    )  # fmt: skip
    (out / RECORD_NAME).write_text(json.dumps(result.to_json(), indent=2) + "\n")
    (out / REBUILD_NAME).write_text("#!/bin/sh\nset -e\n" + result.to_json()["rebuild"])
    return result


def reads_cpu_cycles(root: Path) -> bool | None:
    """Whether the source's ``arm_perf_monitor.cpp`` reads the Cortex-M cycle counter on a
    Cortex-M55: guarded by ``__PMU_PRESENT`` since PR 21833 (2026-08-14); before it, by
    ``__ARM_ARCH_8_1M_MAIN__``, which GCC's M55 build does not define (always 0 cycles).
    None when the file is not there or has neither guard."""
    path = Path(root) / "examples/arm/executor_runner/arm_perf_monitor.cpp"
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    if "__PMU_PRESENT" in text:
        return True
    if "__ARM_ARCH_8_1M_MAIN__" in text:
        return False
    return None


def _check_skew(pte: Path, source, driver: Path | None, operators: list[str]) -> dict:
    """Refuse a program the runner would refuse at run time (runner.skew_sources); what was
    checked goes into the record, for pre-flights of this firmware."""
    from etu.runner.skew_sources import SkewError, check_program

    try:
        return check_program(pte, source.root, source.commit, driver, operators)
    except SkewError as error:
        raise BuildInputError(str(error)) from None


def _bundle(
    program: Path, out: Path, inputs: str | None, files: tuple[Path, ...], seed: int,
    expected: tuple[Path, ...], say: Progress,
) -> tuple[Path, dict]:  # fmt: skip
    """The bundled program (``out/program.bpte``) and the record of its inputs, which are
    saved as ``out/inputs.npz`` (what ``etu compare`` runs the reference on)."""
    from etu.runner.bundleio import (
        INPUTS_FILE,
        BundleError,
        choose_inputs,
        legacy_inputs,
        make_bundled,
        save_inputs,
    )

    say("bundling inputs and expected outputs (.bpte)")
    try:
        if inputs is not None:
            tensors, record = choose_inputs(program, inputs)
        else:
            tensors, record = legacy_inputs(program, files, seed)
        bundled = make_bundled(program, out / "program.bpte", tensors=tensors,
                               expected=expected)  # fmt: skip
        record["file"] = str(save_inputs(tensors, out / INPUTS_FILE))
    except BundleError as error:  # names the file or the input already
        raise BuildInputError(str(error)) from None
    except (OSError, ValueError, RuntimeError) as error:
        raise RuntimeBuildError(f"{program}: BundleIO: {error}") from None
    if expected:
        record["expected"] = "files: " + ", ".join(str(p) for p in expected)
    return bundled, record


def load_record(folder: Path) -> dict | None:
    from etu.parsers.errors import ParseError
    from etu.parsers.files import MiB, read_json

    path = Path(folder) / RECORD_NAME
    if not path.exists():
        return None
    try:
        record = read_json(path, "a firmware build record", 16 * MiB)
    except ParseError:
        return None
    return record if isinstance(record, dict) else None


def firmware_options(elf: Path) -> dict:
    """The build options recorded beside a runner ELF (``etu_firmware.json``: the program,
    the NPU bridge, the inputs...); {} for firmware etu did not build."""
    options = (load_record(Path(elf).parent) or {}).get("options")
    return options if isinstance(options, dict) else {}


def _project_hash() -> str:
    digest = hashlib.sha256()
    for path in sorted(PROJECT.rglob("*")):
        if path.is_file():
            digest.update(path.name.encode() + path.read_bytes())
    return digest.hexdigest()[:12]


_NINJA_STEP = re.compile(rb"^\[(\d+)/(\d+)\] (.*)$")


def _run_step(
    argv: list[str], step: str, cwd: Path, say: Progress, env: dict[str, str] | None = None
) -> None:
    """Run one step, reporting ninja's ``[n/N]`` lines; keep the tail for the error."""
    from etu.runner.process import kill_group, spawn

    tail: list[str] = []
    try:
        # its own process group, the parent-death signal and etu's reaper: a stopped or
        # killed etu takes cmake, ninja and every compiler they started with it
        process = spawn(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                        stdin=subprocess.DEVNULL, start_new_session=True,
                        env={**os.environ, **(env or {})})  # fmt: skip
    except FileNotFoundError:
        raise RuntimeBuildError(f"{argv[0]}: not found ({step})") from None
    deadline = time.monotonic() + BUILD_TIMEOUT
    assert process.stdout is not None
    try:
        for raw in process.stdout:
            line = raw.rstrip(b"\r\n")
            tail.append(line.decode("utf-8", "replace"))
            del tail[:-400]
            match = _NINJA_STEP.match(line)
            if match:
                what = match.group(3).decode("utf-8", "replace")
                say(f"[{int(match.group(1))}/{int(match.group(2))}] {what}")
            if time.monotonic() > deadline:
                raise RuntimeBuildError(f"{step}: took over {BUILD_TIMEOUT} s")
        returncode = process.wait()
    except BaseException:  # a time-out, a stop signal, Ctrl+C: the whole build goes
        # TERM first: ninja puts each compiler in a process group of its own and kills
        # those groups when it is told to stop; then KILL whatever is left of ours
        kill_group(process.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=2)
        kill_group(process.pid)
        process.wait()
        raise
    finally:
        process.stdout.close()
    if returncode != 0:
        raise RuntimeBuildError(f"{step} failed (status {returncode}): {_first_error(tail)}")


def _first_error(lines: list[str]) -> str:
    for keyword in ("undefined reference", "multiple definition", "overflowed", "error:",
                    "Error", "FAILED"):  # fmt: skip
        for line in lines:
            if keyword in line:
                return line.strip()[:400]
    return (lines[-1].strip() if lines else "no output")[:400]
