"""A stand-in for the Arm Corstone FVPs, which cannot be downloaded on these machines.

It has the real FVP's command-line shape (``-C name=value``, ``-a ELF``, ``--data``,
``--timelimit``, ``--version``), rejects parameters the model does not have, reads the ELF
it is given and the program baked into it with etu's own parsers, and prints what the
ExecuTorch 1.5 ``arm_executor_runner`` prints, with numbers derived from those inputs:
program size, planned buffers, pool sizes, allocator use, missing kernels, scratch; NPU
cycles from the workspace's Vela estimate when there is one for the program's NPU (``vela/``
beside the ELF or its folder, or ``ETU_STANDIN_VELA``), else a rough figure.
Every number is SIMULATED, and the banner says so. ``ethosu.extra_args=--pmu-trace FILE``
gets the plugin's PMU trace, written from the program's command stream (fvp/standin_trace.py)
and marked simulated.

Faults for tests and demos (environment): ``ETU_STANDIN_FAULT`` = ``missing-operator`` |
``alloc-failure`` | ``hard-fault`` | ``hang`` | ``crash``; ``ETU_STANDIN_INFERENCES=N``;
``ETU_STANDIN_LINE_DELAY`` (seconds between lines, to watch a run stream);
``ETU_STANDIN_ETDUMP=1`` (print an ETDump base64 block, as ETDump builds do);
``ETU_STANDIN_DRIFT=N`` (run-to-run drift, to test comparisons: adds N to the second PMU
counter, ``ethosu_pmu_cntr1``, and N/1000 to element N of output 0).

Outputs: made up from the program's bytes, unless the firmware ships the host reference's
outputs for the program baked in (``etu_reference.json`` beside the ELF, as the demo's
firmware does, written once by its build): then those, so the demo's ``etu compare`` agrees
with itself. Either way they are printed by the stand-in and remain SIMULATED.

``install_standin(folder)`` writes executables under the real FVP names into ``folder``, so
discovery and launch are exercised exactly as with real FVPs. ``demo_standin()`` is the one
rule for the shipped demo workspace: with no Arm FVP on the machine, its Run tab uses the
stand-in, the same under ``make run``, ``etu`` and ``etu serve``.
"""

from __future__ import annotations

import hashlib
import os
import signal
import stat
import sys
import time
from pathlib import Path

from etu.fvp.targets import FVP_EXECUTABLES, NPU_MACS, SSE320

STANDIN_VERSION = "11.27.42"
STANDIN_MARKER = "etu stand-in FVP (simulated; not an Arm model)"
STANDIN_REVISION = "e7u0s1m0"
FAULTS = ("missing-operator", "alloc-failure", "hard-fault", "hang", "crash")
RUNNER = "arm_executor_runner.cpp"
# the host reference's outputs for the program baked in, beside the firmware ELF
STANDIN_REFERENCE = "etu_reference.json"
REFERENCE_CAP = 16 * 1024 * 1024
U55_EVENTS = (
    "ETHOSU_PMU_AXI0_RD_DATA_BEAT_RECEIVED, ETHOSU_PMU_AXI1_RD_DATA_BEAT_RECEIVED, "
    "ETHOSU_PMU_AXI0_WR_DATA_BEAT_WRITTEN, ETHOSU_PMU_NPU_IDLE"
)
U85_EVENTS = (
    "ETHOSU_PMU_SRAM_RD_DATA_BEAT_RECEIVED, ETHOSU_PMU_SRAM_WR_DATA_BEAT_WRITTEN, "
    "ETHOSU_PMU_EXT_RD_DATA_BEAT_RECEIVED, ETHOSU_PMU_EXT_WR_DATA_BEAT_WRITTEN, "
    "ETHOSU_PMU_NPU_IDLE, ETHOSU_PMU_MAC_ACTIVE, ETHOSU_PMU_WD_ACTIVE"
)


class UsageError(Exception):
    """What the FVP would refuse: printed as ``ERROR: ...`` with exit status 1."""


def known_parameters(executable: str) -> dict[str, tuple[str, ...] | None]:
    """Parameter name → accepted values (None: any) for one of the three FVPs."""
    if executable == SSE320:
        board, cpu, npu = "mps4_board", "mps4_board.subsystem.cpu0", "mps4_board.subsystem.ethosu"
        macs = NPU_MACS["ethos-u85"]
    else:
        board, cpu, npu = "mps3_board", "cpu0", "ethosu"
        macs = NPU_MACS["ethos-u65" if executable.endswith("U65") else "ethos-u55"]
    flags = ("0", "1")
    params: dict[str, tuple[str, ...] | None] = {
        f"{npu}.num_macs": tuple(str(m) for m in macs),
        f"{npu}.extra_args": None,
        f"{board}.visualisation.disable-visualisation": flags,
        f"{board}.telnetterminal0.start_telnet": flags,
        f"{board}.uart0.out_file": None,
        f"{board}.uart0.shutdown_on_eot": flags,
        f"{board}.uart0.unbuffered_output": flags,
        f"{cpu}.semihosting-enable": flags,
        f"{cpu}.semihosting-stack_base": None,
        f"{cpu}.semihosting-heap_limit": None,
        f"{cpu}.semihosting-cwd": None,
        f"{cpu}.semihosting-cmd_line": None,
        f"{cpu}.CFGITCMSZ": None,
    }
    if executable == SSE320:
        params["vis_hdlcd.disable_visualisation"] = flags
    return params


def parse_args(executable: str, argv: list[str]) -> dict:
    """The FVP's options; UsageError for anything the real model would reject."""
    known = known_parameters(executable)
    options: dict = {"params": {}, "elf": None, "timelimit": None, "data": [], "version": False}
    args = list(argv)
    while args:
        arg = args.pop(0)
        if arg in ("--version", "-v"):
            options["version"] = True
        elif arg in ("-C", "--parameter") or arg.startswith("-C"):
            text = (
                arg[2:] if arg.startswith("-C") and arg != "-C" else (args.pop(0) if args else "")
            )
            name, sep, value = text.partition("=")
            if not sep:
                raise UsageError(f'Parameter "{text}" has no value (expected NAME=VALUE)')
            if name not in known:
                raise UsageError(f'Could not find parameter "{name}" in the model')
            accepted = known[name]
            value = value.strip("'\"")
            if accepted is not None and value not in accepted:
                raise UsageError(
                    f'Invalid value "{value}" for parameter "{name}" '
                    f"(allowed: {', '.join(accepted)})"
                )
            options["params"][name] = value
        elif arg in ("-a", "--application"):
            if not args:
                raise UsageError("option -a needs an application file")
            options["elf"] = args.pop(0)
        elif arg == "--timelimit":
            try:
                options["timelimit"] = float(args.pop(0))
            except (IndexError, ValueError):
                raise UsageError("--timelimit needs a number of seconds") from None
        elif arg == "--data":
            if not args:
                raise UsageError("--data needs FILE@ADDRESS")
            options["data"].append(args.pop(0))
        else:
            raise UsageError(f"Unrecognised option '{arg}'")
    return options


class Transcript:
    """Prints runner lines the way the target's UART reaches the FVP's stdout."""

    def __init__(self, delay: float) -> None:
        self.delay = delay

    def raw(self, text: str) -> None:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
        if self.delay:
            time.sleep(self.delay)

    def log(self, level: str, line: int, function: str, message: str, file: str = RUNNER) -> None:
        self.raw(f"{level} [executorch:{file}:{line} {function}()] {message}")


def _vela_folders(elf: Path) -> list[Path]:
    """``ETU_STANDIN_VELA``, else the workspace's ``vela/`` beside the ELF or its folder."""
    if os.environ.get("ETU_STANDIN_VELA"):
        return [Path(os.environ["ETU_STANDIN_VELA"])]
    elf = elf.resolve()
    return [folder / "vela" for folder in (elf.parent, elf.parent.parent)]


def _npu_cycles(payload_words: int, elf: Path, target: str | None) -> int:
    """Vela's estimate for this program's NPU when the workspace has one, else rough."""
    from etu.parsers.errors import ParseError
    from etu.parsers.vela import load_vela_report

    for folder in _vela_folders(elf):
        if not folder.is_dir():
            continue
        try:
            report = load_vela_report(folder)
        except ParseError:
            continue
        made_for = (report.accelerator or "").lower().replace("_", "-")
        if report.cycles and target and made_for == target:
            return int(report.cycles)
    return 120 * max(payload_words, 1)


def simulate(executable: str, options: dict, out: Transcript) -> int:
    """Print the run; the return value is the simulator's exit status."""
    from etu.parsers.elf_map import read_elf
    from etu.parsers.errors import ParseError
    from etu.parsers.memory_map import build_memory_map
    from etu.parsers.program_facts import cpu_operators, delegates
    from etu.parsers.program_needs import method_pool_need
    from etu.parsers.pte import decode_program

    fault = os.environ.get("ETU_STANDIN_FAULT", "")
    if fault and fault not in FAULTS:  # a typo must not give a clean run
        raise UsageError(f"ETU_STANDIN_FAULT={fault!r} is not one of {', '.join(FAULTS)}")
    inferences = int(os.environ.get("ETU_STANDIN_INFERENCES", "1") or 1)
    elf_path = options["elf"]
    if not elf_path or not Path(elf_path).is_file():
        raise UsageError(f"Could not load application '{elf_path}': file not found")
    try:
        image = read_elf(elf_path)
        memory = build_memory_map(image)
    except ParseError as error:
        raise UsageError(f"Could not load application '{elf_path}': {error.detail}") from None
    pools = memory.pools
    pte_pool = pools.get("model_pte")
    for port in (5000, 5001, 5002, 5003):
        out.raw(f"telnetterminal{port - 5000}: Listening for serial connection on port {port}")
    out.raw(f"    Ethos-U rev {STANDIN_REVISION} --- {STANDIN_MARKER}")
    if pte_pool is None:
        out.log("F", 1021, "runner_init", "Model data is not initialized")
        return _abort(out)
    data = image.read_bytes(pte_pool.address, pte_pool.size)
    address = f"0x{pte_pool.address:x}"
    out.log("I", 912, "runner_init", f"PTE @ {address} [----{data[4:8].decode('latin-1')}]")
    try:
        program = decode_program(data, "model_pte")
    except ParseError:
        out.log(
            "F", 938, "runner_init",
            f"In function runner_init(), assert failed (program_result.ok()): "
            f"Program loading failed @ {address}: 0x23",
        )  # fmt: skip
        return _abort(out)
    out.log("I", 917, "runner_init", f"PTE Model data loaded. Size: {program.file_size} bytes.")
    plan = program.plans[0]
    out.log("I", 943, "runner_init", f"Model buffer loaded, has {len(program.plans)} methods")
    out.log("I", 950, "runner_init", f"Running method {plan.name}")
    method_pool = pools.get("method_allocator")
    pool_size = method_pool.size if method_pool else 0
    out.log("I", 968, "runner_init", f"Setup Method allocator pool. Size: {pool_size} bytes.")
    used = 0
    for mem_id, size in enumerate(plan.non_const_buffer_sizes):
        if not mem_id:
            continue
        out.log(
            "I", 995, "runner_init", f"Setting up planned buffer with mem_id={mem_id}, size {size}."
        )
        if fault == "alloc-failure" or used + size > pool_size:
            available = max(pool_size - used, 0)
            out.log("E", 61, "allocate",
                    f"Memory allocation failed: {size}B requested (adjusted for alignment), "
                    f"{available}B available", file="arm_memory_allocator.cpp")  # fmt: skip
            out.log("F", 1004, "runner_init",
                    f"In function runner_init(), assert failed (planned_buffer != nullptr): "
                    f"Could not allocate memory for planned buffer with mem_id={mem_id}, "
                    f"size {size} in SLOW_MEMORY_REGION")  # fmt: skip
            return _abort(out)
        used += size
    infos = delegates(program)
    for info in infos:
        span = program.delegate_span(info.delegate)
        out.log(
            "I", 215, "init", f"data:0x{pte_pool.address + span.offset:x}", file="EthosUBackend.cpp"
        )
    needed = [op.name for op in cpu_operators(program) if not op.is_prim]
    present = memory.kernel_names
    missing = [name for name in needed if present and name not in present]
    if fault == "missing-operator" and needed and not missing:
        missing = needed[-1:]
    if missing:
        for name in missing:
            out.log("E", 742, "resolve_operator", f"kernel '{name}' not found.", file="method.cpp")
            index = next(i for i, op in enumerate(plan.operators) if op.qualified_name == name)
            out.log("E", 763, "init", f"Missing operator: [{index}] {name}", file="method.cpp")
        out.log("E", 802, "init",
                f"There are {len(missing)} instructions don't have corresponding operator "
                "registered. See logs for details", file="method.cpp")  # fmt: skip
        out.log("I", 1016, "runner_init", f"Loading of method {plan.name} failed with status 0x14")
        out.log("I", 1023, "runner_init", f"Method '{plan.name}' loaded.")
        out.log(
            "F", 58, "CheckOk", "In function CheckOk(), assert failed: hasValue_", file="result.h"
        )
        return _abort(out)
    out.log("I", 1023, "runner_init", f"Method '{plan.name}' loaded.")
    out.log("I", 1030, "runner_init", "Preparing inputs...")
    inputs = sum(plan.values[i].nbytes for i in plan.inputs if plan.values[i].kind == "Tensor")
    out.log("I", 1062, "runner_init", "Input prepared.")
    out.log("I", 1140, "run_model", f"Starting running {inferences} inferences...")
    if fault == "hang":
        while True:  # the runner never returns; the FVP's --timelimit ends the simulation
            time.sleep(0.2)
    if fault == "crash":
        sys.stdout.flush()
        os.kill(os.getpid(), signal.SIGSEGV)
    if fault == "hard-fault":
        out.raw("Hard fault. irq=-13, pc=0x10001a2c, lr=0x10001a05, xpsr=0x61000000, sp=0x3007fe90")
        out.raw("            cfsr=0x00008200 bfar=0xfffffff0 mmfar=0xfffffff0")
        out.raw("exit(1)")
        return _abort(out)
    temp = pools.get("temp_allocator")
    scratch = max((i.payload.scratch_size for i in infos if i.payload), default=0)
    if temp is not None and scratch > temp.size:
        out.log("E", 372, "execute",
                f"Failed to allocate scratch buffer of {scratch} bytes from temp_allocator",
                file="EthosUBackend.cpp")  # fmt: skip
        out.log("E", 1531, "execute",
                "CALL_DELEGATE execute failed at instruction 1: 0x21",
                file="method.cpp")  # fmt: skip
        out.log("F", 1163, "run_model",
                "In function run_model(), assert failed (status == Error::Ok): Execution of "
                f"method {plan.name} failed with status 0x21")  # fmt: skip
        return _abort(out)
    refused = _npu_config_refused(infos, executable, options)
    if refused:  # the driver's check of the command stream's config (ethosu_driver.c)
        for line in refused:
            out.raw(line)
        out.log("E", 116, "platform_execute", "Ethos-U invocation failed error (-1)",
                file="EthosUBackend_Cortex_M.cpp")  # fmt: skip
        out.log("E", 1531, "execute", "CALL_DELEGATE execute failed at instruction 1: 0x23",
                file="method.cpp")  # fmt: skip
        out.log("F", 1163, "run_model",
                "In function run_model(), assert failed (status == Error::Ok): Execution of "
                f"method {plan.name} failed with status 0x23")  # fmt: skip
        return _abort(out)
    words = sum(i.payload.command_stream_words or 0 for i in infos if i.payload)
    built_for = next((i.payload.target for i in infos if i.payload), None)
    npu_cycles = _npu_cycles(words, Path(elf_path), built_for) * inferences if infos else 0
    delegations = len(infos) * inferences
    cpu_cycles = npu_cycles + 40_000 * inferences
    wait = npu_cycles + 2_000 * delegations
    per = max(inferences, 1)
    out.log(
        "I", 165, "StopMeasurements", f"NPU Inferences : {inferences}", file="arm_perf_monitor.cpp"
    )
    perf = [
        f"NPU delegations: {delegations} ({delegations / per:.2f} per inference)",
        "Profiler report, CPU cycles per operator:",
        f"ethos-u : cycle_cnt : {wait} cycles ({wait / per:.2f} per inference)",
        f"Operator(s) total: {wait} CPU cycles ({wait / per:.2f} per inference)",
        f"Inference runtime: {cpu_cycles} CPU cycles total ({cpu_cycles / per:.2f} per inference)",
        "NOTE: CPU cycle values and ratio calculations require FPGA and identical CPU/NPU "
        "frequency",
        f"Inference CPU ratio: {100 * (cpu_cycles - wait) / cpu_cycles:.2f} %",
        f"Inference NPU ratio: {100 * wait / cpu_cycles:.2f} %",
        f"cpu_wait_for_npu_cntr : {wait} CPU cycles ({wait / per:.2f} per inference)",
        "Ethos-U PMU report:",
        f"ethosu_pmu_cycle_cntr : {npu_cycles} ({npu_cycles / per:.2f} per inference)",
    ]
    events = U85_EVENTS if executable == SSE320 else U55_EVENTS
    drift = int(os.environ.get("ETU_STANDIN_DRIFT", "0") or 0)
    for index, _name in enumerate(events.split(", ")):
        value = (npu_cycles * (index + 3)) // 7 + (drift if index == 1 else 0)
        perf.append(f"ethosu_pmu_cntr{index} : {value} ({value / per:.2f} per inference)")
    perf.append(f"Ethos-U PMU Events:[{events}]")
    for line in perf:
        out.log("I", 166, "StopMeasurements", line, file="arm_perf_monitor.cpp")
    trace_path = _pmu_trace_path(executable, options)
    if trace_path is not None:
        _write_pmu_trace(trace_path, program, infos, npu_cycles, inferences, executable, options)
    out.log("I", 1172, "run_model", f"{inferences} inferences finished")
    outputs = [plan.values[i] for i in plan.outputs]
    out.log("I", 1270, "print_outputs", f"{len(outputs)} outputs: ")
    seed = int(hashlib.sha256(data[:4096]).hexdigest()[:8], 16)
    shipped = shipped_reference(Path(elf_path), data[: program.file_size], outputs)
    for o_index, tensor in enumerate(outputs):
        if tensor.kind != "Tensor":
            out.raw(f"Output[{o_index}]: Not Tensor")
            continue
        for e_index in range(min(tensor.numel, 1000)):
            value = ((seed >> (e_index % 24)) % 2000 - 1000) / 1000.0
            if shipped is not None:
                value = shipped[o_index][e_index]
            if drift and o_index == 0 and e_index == drift % max(tensor.numel, 1):
                value += drift / 1000.0
            out.raw(f"Output[{o_index}][{e_index}]: (float) {value:.6f}")
    out.log("I", 1194, "run_model", "Model run: 1")
    out.log("I", 1352, "main", "Model run: 1")
    program_size = program.file_size
    loaded = 96 * len(plan.values) + 64 * len(plan.instructions) + 256
    planned = method_pool_need(program)[0]
    total = planned + loaded + inputs
    percent = 100 * total // pool_size if pool_size else 0
    memory_lines = [
        f"model_pte_program_size:     {program_size} bytes.",
        f"model_pte_loaded_size:      {pte_pool.size} bytes.",
        f"method_allocator_used:     {total} / {pool_size}  free: {pool_size - total} "
        f"( used: {percent} % ) ",
        f"method_allocator_planned:  {planned} bytes",
        f"method_allocator_loaded:   {loaded} bytes",
        f"method_allocator_input:    {inputs} bytes",
        "method_allocator_executor: 0 bytes",
        f"temp_allocator:            {temp.size if temp else 0}",
    ]
    for line in memory_lines:
        out.log("I", 1210, "log_mem_status", line)
    if os.environ.get("ETU_STANDIN_ETDUMP"):
        _print_etdump(out, seed)
    out.log("I", 1381, "main", "Program complete, exiting.")
    out.log("I", 1383, "main", "\x04")
    out.raw("Info: /OSCI/SystemC: Simulation stopped by user.")
    return 0


def shipped_reference(elf: Path, program: bytes, outputs: list) -> list[list[float]] | None:
    """The host reference's outputs (all-ones inputs) the firmware ships for ``program``
    (``etu_reference.json`` beside ``elf``), one list per output; None when there is none,
    it is another program's (its SHA-256 differs) or it does not fit the outputs."""
    from etu.parsers.errors import ParseError
    from etu.parsers.files import read_json

    path = elf.parent / STANDIN_REFERENCE
    if not path.is_file():
        return None
    try:
        record = read_json(path, "the stand-in's reference outputs", REFERENCE_CAP)
    except (ParseError, OSError):
        return None
    if not isinstance(record, dict):
        return None
    if record.get("program_sha256") != hashlib.sha256(program).hexdigest():
        return None
    values = record.get("outputs")
    if not isinstance(values, list) or len(values) != len(outputs):
        return None
    for tensor, each in zip(outputs, values, strict=True):
        numel = tensor.numel if tensor.kind == "Tensor" else 0
        if not isinstance(each, list) or len(each) != numel:
            return None
        if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in each):
            return None
    return [[float(v) for v in each] for each in values]


def _npu_config_refused(infos, executable: str, options: dict) -> list[str]:
    """The driver's lines when a command stream's MACs differ from the FVP's NPU
    (``-C ethosu.num_macs``): the real driver refuses the stream before running it."""
    npu = "mps4_board.subsystem.ethosu" if executable == SSE320 else "ethosu"
    given = options["params"].get(f"{npu}.num_macs")
    config = next((i.payload.npu for i in infos if i.payload and i.payload.npu), None)
    if not given or config is None or not given.isdigit() or int(given) < 1:
        return []
    npu_log2 = int(given).bit_length() - 1
    stream_log2 = config.macs_per_cycle.bit_length() - 1
    if npu_log2 == stream_log2:
        return []
    return [
        f"E: NPU config mismatch. npu.macs_per_cc={npu_log2}, optimizer.macs_per_cc="
        f"{stream_log2} (ethosu_device_u55_u65.c:337)",
        "E: Failed to invoke inference. (ethosu_driver.c:734)",
    ]


def _pmu_trace_path(executable: str, options: dict) -> Path | None:
    """The file of the plugin's ``--pmu-trace FILE`` (in ``extra_args``), if asked for."""
    npu = "mps4_board.subsystem.ethosu" if executable == SSE320 else "ethosu"
    words = options["params"].get(f"{npu}.extra_args", "").split()
    for index, word in enumerate(words):
        if word.startswith("--pmu-trace="):
            words[index : index + 1] = ["--pmu-trace", word.partition("=")[2]]
    for index, word in enumerate(words):
        if word == "--pmu-trace" and index + 1 < len(words):
            after = words[index + 2 : index + 3]
            if after and not after[0].startswith("-"):  # a path with a space, split apart
                sys.stderr.write(
                    f"Warning: --pmu-trace {words[index + 1]} {after[0]}...: the "
                    "plugin's arguments are split at spaces; no trace written\n"
                )
                return None
            return Path(words[index + 1])
    return None


def _write_pmu_trace(
    path: Path, program, infos, npu_cycles: int, inferences: int, executable: str, options: dict
) -> None:
    """The run's PMU trace from the program's own command streams (SIMULATED timing)."""
    from etu.fvp.standin_trace import standin_trace, write_standin_trace
    from etu.parsers.ethosu_commands import program_operations

    streams = [d.stream for d in program_operations(program, infos) if d.stream is not None]
    npu = "mps4_board.subsystem.ethosu" if executable == SSE320 else "ethosu"
    macs = int(options["params"].get(f"{npu}.num_macs", "128") or 128)
    document = standin_trace(streams, npu_cycles, inferences, macs)
    try:
        write_standin_trace(path, document)
    except OSError as error:  # the real plugin would fail to open the file: say so, go on
        sys.stderr.write(f"Warning: cannot write the PMU trace {path}: {error.strerror}\n")


def _print_etdump(out: Transcript, seed: int) -> None:
    """An ETDump-build block (§4.5); its bytes are a stand-in, labelled by an ED00 header."""
    import base64

    payload = b"\x10\x00\x00\x00ED00" + seed.to_bytes(4, "little") + bytes(range(52))
    encoded = base64.b64encode(payload).decode()
    out.log("I", 1290, "write_etdump", f"[base64] buffer size: {len(payload)}")
    for line in ("#[RUN THIS]", "# Writing etdump.bin [base64]",
                 f'echo "{encoded}" | base64 -d >etdump.bin',
                 "# Generate cpu cycle table with:",
                 "python3 -m devtools.inspector.inspector_cli --etdump_path etdump.bin "
                 "--source_time_scale cycles --target_time_scale cycles", "#[END]"):  # fmt: skip
        out.raw(line)


def _abort(out: Transcript) -> int:
    """The runner aborted: what it printed is on the UART (flushed, so nothing is lost
    behind the exit), and the stand-in ends the simulation at once with status 1. On a real
    FVP a trapped non-semihosting runner may instead spin until ``--timelimit``
    (unverified), which the parser reports as a runner error all the same."""
    sys.stdout.flush()
    if out.delay:  # the watcher of a slowed-down run sees the last line before the end
        time.sleep(out.delay)
    return 1


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    invoked_as = Path(argv.pop(0)).name if argv and not argv[0].startswith("-") else "FVP"
    executable = invoked_as if invoked_as in FVP_EXECUTABLES else FVP_EXECUTABLES[0]
    out = Transcript(float(os.environ.get("ETU_STANDIN_LINE_DELAY", "0") or 0))
    try:
        options = parse_args(executable, argv)
        if options["version"]:
            out.raw(f"Fast Models [{STANDIN_VERSION} (Nov 21 2026)]")
            out.raw(STANDIN_MARKER)
            return 0
        limit = options["timelimit"]
        if limit is not None:
            signal.signal(signal.SIGALRM, _time_limit_reached)
            signal.setitimer(signal.ITIMER_REAL, limit)
        return simulate(executable, options, out)
    except UsageError as error:
        sys.stderr.write(f"ERROR: {error}\n")
        return 1
    except BrokenPipeError:
        return 1


def _time_limit_reached(signum, frame) -> None:
    sys.stdout.write("Info: Simulation is stopping. Reason: CPU time has been exceeded.\n")
    sys.stdout.write("Info: /OSCI/SystemC: Simulation stopped by user.\n")
    sys.stdout.flush()
    os._exit(0)


def install_standin(folder: Path, python: str | None = None) -> list[Path]:
    """Write executables named like the real FVPs that start this stand-in. A script that
    is already as it should be is left alone, and a new one replaces the old in one rename,
    so consoles starting side by side never run a half-written script."""
    folder.mkdir(parents=True, exist_ok=True)
    import shlex

    from etu.runner.isolated import isolated_python_code

    python = python or sys.executable
    project = Path(__file__).resolve().parent.parent
    # -I: neither the working folder nor PYTHONPATH can put another fvp/ or parsers/ first
    code = isolated_python_code("etu.fvp.standin", project)
    script = (
        "#!/bin/sh\n"
        f"# {STANDIN_MARKER}\n"
        f'exec {shlex.quote(python)} -I -c {shlex.quote(code)} "$0" "$@"\n'
    )
    written = []
    for name in FVP_EXECUTABLES:
        path = folder / name
        try:
            current = path.read_text() if os.access(path, os.X_OK) else None
        except OSError:
            current = None
        if current != script:
            partial = folder / f".{name}.{os.getpid()}"
            partial.write_text(script)
            partial.chmod(partial.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
            partial.replace(path)
        written.append(path)
    return written


DEMO_STANDIN_NOTICE = (
    "no Arm FVP found: the demo workspace's Run tab uses the etu stand-in FVP (SIMULATED "
    "numbers); set ETU_FVP_DIR or put an FVP on PATH to run a real one"
)


def demo_standin(environ=None, folder: Path | None = None) -> str | None:
    """The demo workspace's FVP: on a machine with no Arm FVP, the stand-in. Installs it
    (into the build cache, one folder per Python and etu checkout) and points
    ``ETU_FVP_DIR`` of ``environ`` (default: this process's, which the console and every
    child inherit) at it; returns the notice to print, or None when ``ETU_FVP_DIR`` is set
    or a real FVP is found (then nothing changes). Called only when the demo workspace
    opens (``etu``, ``make run``, ``etu serve`` with no path), never for a user's own
    workspace, which finds a real FVP or says it found none. The console and ``etu run``
    label the stand-in as such wherever it runs."""
    from etu.fvp.discovery import find_fvps

    environ = os.environ if environ is None else environ
    if environ.get("ETU_FVP_DIR"):
        return None
    if find_fvps(dict(environ)):
        return None
    if folder is None:
        from etu.runner.runtime_source import cache_root

        key = hashlib.sha256(f"{sys.executable}\0{Path(__file__).resolve()}".encode())
        folder = cache_root() / "standin-fvp" / key.hexdigest()[:12]
    install_standin(Path(folder))
    environ["ETU_FVP_DIR"] = str(folder)
    return DEMO_STANDIN_NOTICE


def is_standin(path: Path) -> bool:
    """True for an executable written by ``install_standin`` (the console labels it)."""
    try:
        with open(path, "rb") as handle:
            return STANDIN_MARKER.encode() in handle.read(512)
    except OSError:
        return False


if __name__ == "__main__":
    raise SystemExit(main())
