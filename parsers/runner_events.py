"""Typed events read from an ``arm_executor_runner`` console log (UART, FVP stdout, serial).

Every physical line becomes a :class:`LogLine` (the exact bytes, so a session recorder and
the console can always show what the device sent); lines the parser recognises are also
followed by one derived event. Events are immutable and carry the 1-based line number where
they start, so a pane can jump from an event to its text. ``to_json()`` gives a plain dict
with a ``type`` field (the class name) that ``json.dumps`` accepts as is.
"""

from __future__ import annotations

import base64
from dataclasses import MISSING, dataclass, fields, is_dataclass
from typing import Any


def _jsonable(value: Any) -> Any:
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, tuple | list):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if is_dataclass(value):
        return {f.name: _jsonable(getattr(value, f.name)) for f in fields(value)}
    return value


def _parameters(cls: type, namespace: dict[str, Any]) -> list[str]:
    """``name`` or ``name=_defaultN`` per field, in order (defaults put in ``namespace``)."""
    params = []
    for i, f in enumerate(fields(cls)):
        if f.default is not MISSING:
            namespace[f"_default{i}"] = f.default
            params.append(f"{f.name}=_default{i}")
        else:
            params.append(f.name)
    return params


def _slot_init(cls: type) -> Any:
    """An ``__init__`` that sets every field's slot directly, defaults included.

    A frozen dataclass's ``__init__`` goes through ``object.__setattr__`` once per field.
    Setting the slot descriptors directly builds the same immutable, equal, hashable object
    in about half the time.
    """
    namespace: dict[str, Any] = {}
    params = _parameters(cls, namespace)
    body = []
    for i, f in enumerate(fields(cls)):
        descriptor = next(c.__dict__[f.name] for c in cls.__mro__ if f.name in c.__dict__)
        namespace[f"_set{i}"] = descriptor.__set__
        body.append(f"    _set{i}(obj, {f.name})")
    source = f"def __init__(obj, {', '.join(params)}):\n" + "\n".join(body) + "\n"
    exec(source, namespace)
    return namespace["__init__"]


def _factory(cls: type, name: str, blank: type | None = None) -> Any:
    """A function building ``cls`` objects about three times faster than ``cls(...)``.

    The object is made as a ``blank``: a class with the same slots and plain attribute
    stores (which the interpreter specialises: a frozen class's stores are calls), then
    handed its real class. The result is the same immutable, equal, hashable ``cls`` object.
    ``blank`` defaults to a twin class; LogLine's blank is its own base class (see
    :class:`LogLineSlots`), which makes the class change cheaper still.
    """
    if blank is None:
        # object's own __init__: calling the twin is then a plain C allocation, cheaper than
        # object.__new__(twin) (which goes through a Python-level wrapper).
        blank = type(
            f"_{cls.__name__}Twin",
            cls.__bases__,
            {"__slots__": cls.__slots__, "__setattr__": object.__setattr__,
             "__delattr__": object.__delattr__, "__init__": object.__init__},
        )  # fmt: skip
    namespace: dict[str, Any] = {"_blank": blank, "_cls": cls}
    params = _parameters(cls, namespace)
    stores = "\n".join(f"    obj.{f.name} = {f.name}" for f in fields(cls))
    source = (
        f"def {name}({', '.join(params)}):\n    obj = _blank()\n{stores}\n"
        "    obj.__class__ = _cls\n    return obj\n"
    )
    exec(source, namespace)
    return namespace[name]


def _event(cls: type) -> type:
    """``@dataclass(frozen=True, slots=True)`` with the faster ``__init__`` above."""
    cls = dataclass(frozen=True, slots=True)(cls)
    if any(f.default_factory is not MISSING for f in fields(cls)):
        return cls
    init = _slot_init(cls)
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    cls.__init__ = init
    return cls


@dataclass(frozen=True, slots=True)
class Event:
    """Base of every event: the line (1-based) where the event's text starts."""

    line_no: int

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": type(self).__name__}
        for f in fields(self):
            out[f.name] = _jsonable(getattr(self, f.name))
        return out


# --------------------------------------------------------------------------- lines


class LogLineSlots(Event):
    """A LogLine's fields as plain slots, for the runner-log parser's hot loop: it fills a
    blank one with attribute stores (which the interpreter specialises; a frozen class's are
    calls) and then relabels it ``obj.__class__ = LogLine``. LogLine adds no slot of its own,
    so the relabelling needs no comparison of slot layouts. Never seen outside the parser."""

    __slots__ = (
        "end", "file", "function", "level", "line", "lines", "message", "origin", "partial",
        "raw", "stream", "text",
    )  # fmt: skip
    __setattr__ = object.__setattr__
    __delattr__ = object.__delattr__
    __init__ = object.__init__  # a blank one is a plain C allocation


@_event
class LogLine(LogLineSlots):
    """One physical line, always emitted before anything derived from it.

    ``raw`` holds the exact bytes without the terminator and ``end`` the terminator
    (``b"\\n"``, ``b"\\r\\n"``, ``b"\\r"`` or ``b""`` for a piece or the unterminated last line):
    joining ``raw + end`` over all lines gives back the input byte for byte. ``text`` is the
    UTF-8 decoding with replacement characters, EOT (0x04) and ANSI colour codes removed.
    ``level``/``file``/``line``/``function``/``message`` are set for ExecuTorch log lines
    (``function`` is None before 0.7, ``line`` is None when the C library printed ``%zu``
    literally); ``level`` is also set for Ethos-U driver lines (``E: …``). ``origin`` says who
    printed the line when the form gives it away: ``runtime`` (ET_LOG), ``output`` (tensor
    dump), ``driver``, ``platform``, ``fvp``, ``etdump``, ``script`` or None. ``partial`` marks
    the pieces of a line longer than the parser's limit (never parsed further).
    ``stream`` is what the caller said the bytes came from (e.g. ``"uart0"``, ``"stderr"``).
    ``lines`` is 1, except for a long run of empty lines (a CR/LF flood), which is one event
    for all of them: ``raw`` empty, ``end`` every terminator, numbers ``line_no`` to
    ``line_no + lines - 1``. So a flood costs one object, not one per byte.
    """

    raw: bytes
    end: bytes
    text: str
    level: str | None = None
    file: str | None = None
    line: int | None = None
    function: str | None = None
    message: str | None = None
    origin: str | None = None
    partial: bool = False
    stream: str | None = None
    lines: int = 1

    @property
    def last_line_no(self) -> int:
        """The number of the last physical line this event stands for."""
        return self.line_no + self.lines - 1

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": "LogLine",
            "line_no": self.line_no,
            "text": self.text,
            "end": self.end.decode("latin-1"),
            "level": self.level,
            "file": self.file,
            "line": self.line,
            "function": self.function,
            "message": self.message,
            "origin": self.origin,
            "partial": self.partial,
            "stream": self.stream,
        }
        if self.lines != 1:
            out["lines"] = self.lines
        # Lossless without bloating every line: the bytes only when the text is not them.
        if self.raw != self.text.encode("utf-8", "surrogatepass"):
            out["raw_hex"] = self.raw.hex()
        return out


new_log_line = _factory(LogLine, "new_log_line", LogLineSlots)
"""``new_log_line(line_no, raw, end, text, level, file, line, function, message, origin,
partial, stream[, lines])``: a LogLine without the type call (arguments in field order)."""


# --------------------------------------------------------------------------- model loading


@_event
class PteLoaded(Event):
    """The runner found the program: where it lives, its identifier and its size.

    ``identifier`` is ``ET12`` (program) or ``BP08`` (bundled program) in ExecuTorch ≥1.0;
    older runners printed one (often unprintable) byte instead, so it is None there.
    """

    address: int | None
    identifier: str | None
    size: int | None


@_event
class ProgramLoaded(Event):
    """``Model buffer loaded, has N methods``: the Program parsed."""

    methods: int | None


@_event
class MethodSelected(Event):
    """``Running method forward``: which method the runner is about to load."""

    name: str


@_event
class MethodAllocatorSetUp(Event):
    """A memory pool the runner set up: ``method`` pool, or ``planned_fast`` (main only)."""

    size: int | None
    pool: str = "method"


@_event
class PlannedBuffers(Event):
    """The memory-planned buffers, one entry per ``Setting up planned buffer`` line.

    ``mem_ids`` are 1-based (``AllocationDetails.memory_id``); runners before 1.5 printed a
    0-based index, converted here. Sizes are None where the C library printed ``zu``.
    """

    count: int
    sizes: tuple[int | None, ...]
    mem_ids: tuple[int | None, ...]

    @property
    def total(self) -> int:
        return sum(s for s in self.sizes if s)


@_event
class MethodLoaded(Event):
    """``Method 'forward' loaded.`` — which the runner prints even when loading failed.

    ``ok`` is False (and ``status`` set) when a ``Loading of method … failed with status``
    line came first; the next use of the method then aborts.
    """

    name: str | None
    ok: bool = True
    status: int | None = None


@_event
class InputsPrepared(Event):
    """``Input prepared.``"""


@_event
class InferenceStarted(Event):
    """``Starting running N inferences...`` (≥1.0, ``count``), ``Starting the model
    execution...`` (≤0.7) or the Debug ``Running inference number N`` (``index``)."""

    count: int | None = None
    index: int | None = None


@_event
class InferenceFinished(Event):
    """``N inferences finished`` (≥1.0), ``Model executed successfully.`` (≤0.7), or the
    Zephyr sample's ``Inference completed in N ms``."""

    count: int | None = None
    success: bool = True
    duration_ms: int | None = None


# --------------------------------------------------------------------------- reports


@_event
class PmuReport(Event):
    """The ``arm_perf_monitor`` report after a run (Ethos-U builds).

    ``npu_cycles`` is ``ethosu_pmu_cycle_cntr`` (NPU active cycles, meaningful on the FVP);
    ``cpu_cycles`` is ``Inference runtime`` (Cortex-M cycles, 0 or meaningless on an FVP);
    ``operator_cycles`` maps each profiled operator (``ethos-u``) to its CPU cycles.
    ``counters`` names each ``ethosu_pmu_cntrN`` by the printed event list or, when that
    line is missing, by the NPU generation's defaults (``names_from`` says which:
    ``log``, ``default`` or ``index``). Ratios are percents, None when printed as ``?.??``.
    """

    npu_inferences: int | None = None
    delegations: int | None = None
    npu_cycles: int | None = None
    counters: dict[str, int | None] | None = None
    counter_values: tuple[int | None, ...] = ()
    event_names: tuple[str, ...] = ()
    names_from: str = "index"
    cpu_cycles: int | None = None
    operator_cycles: dict[str, int | None] | None = None
    operators_total: int | None = None
    cpu_wait_for_npu_cycles: int | None = None
    cpu_ratio: float | None = None
    npu_ratio: float | None = None


@_event
class PoolUsage:
    """One ``used / size free: … ( used: … % )`` line of the memory summary."""

    used: int | None
    size: int | None
    free: int | None = None
    percent: int | None = None


@_event
class MemoryReport(Event):
    """The runner's memory summary (``log_mem_status``; 0.5 and later).

    ``pools`` maps ``method_allocator``, ``temp_allocator`` (0.5 ``temp_allocator_used``,
    0.7 ``peak_temp_allocator``), ``input_file_allocator``, ``planned_fast_allocator``,
    ``etdump_outputs_buffer`` to their usage. ``planned``/``loaded``/``input``/``executor``
    are the bytes of the method pool taken by each phase. ``temp_allocator_size`` is the
    ≥1.0 ``temp_allocator:`` line (a size, not a usage).
    """

    pools: dict[str, PoolUsage]
    program_size: int | None = None
    loaded_size: int | None = None
    planned: int | None = None
    loaded: int | None = None
    input: int | None = None
    executor: int | None = None
    temp_allocator_size: int | None = None
    planned_fast_used: int | None = None


@_event
class OutputTensor(Event):
    """One output as dumped element by element (``Output[i][j]: (float) 0.5``).

    ``numel`` is the highest element index seen + 1 (or the count the Zephyr sample prints),
    so a transcript with elided lines still gives the tensor's size; ``values`` holds the
    elements printed (parsed to int/float/bool), at most the parser's limit. ``dtype`` is the
    printed tag (``int``, ``float``, ``char``, ``bool``, a ScalarType name) or None for the
    untyped ≤0.5 format. The runner prints no shape; ``shape`` is None unless it did.
    """

    index: int
    dtype: str | None
    shape: tuple[int, ...] | None
    values: tuple[int | float | bool | None, ...]
    numel: int
    printed: int
    is_tensor: bool = True


@_event
class BundleIOResult(Event):
    """A bundled-program test set compared with its reference outputs."""

    index: int | None
    passed: bool
    mean_absolute_error: float | None = None
    max_absolute_error: float | None = None
    mean_relative_error: float | None = None
    max_relative_error: float | None = None
    rtol: float | None = None
    atol: float | None = None


@_event
class EtdumpBlock(Event):
    """A base64 file printed between ``#[RUN THIS]`` and ``#[END]`` (ETDump builds).

    The shell lines are never run: the base64 is decoded here. ``file_name`` is the target
    of the printed command (``etdump.bin``, ``debug_buffer.bin``), made safe for a path and
    numbered when a log holds several blocks. ``identifier`` is ``ED00`` for an ETDump.
    """

    file_name: str
    data: bytes
    index: int = 0
    identifier: str | None = None

    @property
    def size(self) -> int:
        return len(self.data)


@_event
class EtdumpError(Event):
    """An ETDump block that cannot be decoded: cut, corrupt or too large."""

    reason: str
    file_name: str | None = None


@_event
class NpuInvoke(Event):
    """One Ethos-U invoke etu answered on the emulated board: the line etu's driver layer
    prints for each (``etu-npu: delegate 0: …``; runner/npu_bridge.py writes its text).

    ``executor`` is ``model`` (etu's Ethos-U model executed the command stream: ``operations``
    with their ``kinds``, ``macs``, ``bytes_read``/``bytes_written`` of the regions) or
    ``reference`` (the TOSA reference model computed the delegate's outputs: the bytes are
    its inputs and outputs; ``fallback`` says why the model did not run). A failed invoke
    (``ok`` False, an ``E`` line) carries the answer's ``error`` and, when it names one, the
    ``operation`` (its index in the stream) and its ``command`` (``NPU_OP_POOL``).
    ``delegate`` is the program's delegate index, None when the answer did not name it
    (``invoke`` then numbers the request). Figures are the functional model's: no timing.
    Sessions recorded by earlier etu printed MACs rounded (``2.2 M MACs``) and no bytes.
    """

    delegate: int | None
    ok: bool
    executor: str | None = None
    operations: int | None = None
    kinds: dict[str, int] | None = None
    macs: int | None = None
    bytes_read: int | None = None
    bytes_written: int | None = None
    error: str | None = None
    operation: int | None = None
    command: str | None = None
    fallback: str | None = None
    invoke: int | None = None
    text: str = ""


# --------------------------------------------------------------------------- failures


@_event
class RunError(Event):
    """An error the target reported: an ``E``/``F`` line, an Ethos-U driver ``E:`` line, or a
    line giving a failed status (``… failed with status 0x21``, also printed at Info).

    ``status`` is the printed ``runtime/core/error.h`` code (None when the line has none).
    """

    status: int | None
    status_name: str | None
    text: str
    origin: str | None = None


@_event
class MissingKernel(Event):
    """An operator the runner build has no kernel for (status 0x14 at load)."""

    operator: str
    op_index: int | None = None


@_event
class AssertFailed(Event):
    """``In function f(), assert failed (cond): message`` — the runtime aborts after it."""

    function: str | None
    condition: str | None
    message: str | None
    status: int | None = None
    status_name: str | None = None
    text: str = ""


@_event
class HardFault(Event):
    """A Cortex-M fault reported by the platform (``Hard fault. irq=…, pc=0x…``) or Zephyr."""

    registers: dict[str, int]
    text: str


# --------------------------------------------------------------------------- FVP and end


@_event
class FvpBanner(Event):
    """A simulator start-up banner (the Ethos-U plugin's ``Ethos-U rev …``, ``Fast Models``,
    or the FVP named by ``run.sh``)."""

    model: str
    version: str | None = None
    date: str | None = None


@_event
class FvpStopped(Event):
    """The simulation (or the program) stopped, and why.

    ``kind``: ``time_limit`` (``--timelimit``/``--simlimit`` hit: "CPU time has been
    exceeded", "Simulated time has been exceeded"), ``eot`` (the runner wrote 0x04, which stops
    an FVP run with ``uart0.shutdown_on_eot=1``), ``exit`` (the platform's ``Application exit
    code: N.``), ``shutdown_tag`` (``EXITTHESIM``), ``stopping`` (another stop reason),
    ``stopped`` (SystemC "Simulation stopped by user"), ``terminated``, ``script``
    (``run_fvp.sh``'s "Simulation complete, N", whose N is always 0: not evidence),
    ``launch_failed`` (the FVP binary could not be run).
    """

    kind: str
    reason: str
    sim_time: str | None = None
    exit_code: int | None = None


@_event
class RunSucceeded(Event):
    """The runner's own success line (``Program complete, exiting.``)."""

    text: str


EVENT_TYPES: tuple[type[Event], ...] = (
    LogLine, PteLoaded, ProgramLoaded, MethodSelected, MethodAllocatorSetUp, PlannedBuffers,
    MethodLoaded, InputsPrepared, InferenceStarted, InferenceFinished, PmuReport, MemoryReport,
    OutputTensor, BundleIOResult, EtdumpBlock, EtdumpError, NpuInvoke, RunError, MissingKernel,
    AssertFailed, HardFault, FvpBanner, FvpStopped, RunSucceeded,
)  # fmt: skip
