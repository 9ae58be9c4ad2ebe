"""The emulated board's NPU: etu answers the Ethos-U invokes of a runner built with etu's
driver layer (``runtime_platform/platform/etu_npu_bridge.c``).

QEMU mps3-an547 has no Ethos-U. The runner's delegate (ExecuTorch's ``EthosUBackend``,
unmodified) calls the driver's ``ethosu_invoke_v3``; etu's driver layer sends the command
stream's address and the base addresses over the board's UART1 and waits. Here, the board's
DDR is a memory file that QEMU maps (``memory-backend-file`` on a ``memfd``: nothing on
disk, gone when both processes are), so each request is answered in place: find the
delegate whose command stream lies at that address, execute it on the regions, answer with
a status and one line for the run's log.

How a delegate is executed is an :class:`NpuExecutor`. :class:`TosaReferenceExecutor`
computes a delegate's outputs with the TOSA reference model on the graph Vela compiled
(Arm's conformance promise: what an Ethos-U computes for that graph); it reads the inputs
and writes the outputs where Vela's IO table says, in the scratch region, and does not
execute the command stream. Sessions say which executor answered.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import socket
import struct
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

DDR_START = 0x6000_0000  # QEMU mps3-an547's DDR window, 2 GiB
DDR_SIZE = 0x8000_0000
REQUEST_MAGIC = b"ETUNPUQ1"
ANSWER_MAGIC = b"ETUNPUA1"
MAX_BASES = 8
MAX_TEXT = 200  # the driver layer prints at most this much of an answer's line
SCRATCH_BASE = 1  # EthosUBackend's base addresses: 0 weights, 1 scratch (IO), 2 fast scratch


class BridgeError(RuntimeError):
    """One line: what the board asked for, and why etu cannot answer it."""


@dataclass(frozen=True, slots=True)
class Base:
    address: int  # where etu reads it (a DDR address; bounced by the board when needed)
    size: int
    board_address: int  # where the runner keeps it


@dataclass(frozen=True, slots=True)
class InvokeRequest:
    sequence: int
    command_address: int
    command_size: int
    bases: tuple[Base, ...]


@dataclass(frozen=True, slots=True)
class InvokeAnswer:
    status: int  # 0: done; anything else fails the invoke (the runner logs its error)
    text: str


class NpuExecutor(Protocol):
    name: str  # how sessions and panes say who computed the NPU's part

    def execute(self, request: InvokeRequest, memory: BoardMemory) -> InvokeAnswer: ...


class BoardMemory:
    """The board's DDR as a host mapping of the memory file QEMU runs on."""

    def __init__(self, size: int = DDR_SIZE) -> None:
        self.fd = os.memfd_create("etu-board-ddr", os.MFD_CLOEXEC)
        try:
            os.ftruncate(self.fd, size)
            self._map = mmap.mmap(self.fd, size)
        except OSError:
            os.close(self.fd)
            raise
        self.size = size

    def qemu_path(self) -> str:
        """The path QEMU opens in its own /proc (the fd is passed to it)."""
        return f"/proc/self/fd/{self.fd}"

    def _span(self, address: int, size: int, what: str) -> int:
        offset = address - DDR_START
        if size < 0 or offset < 0 or offset + size > self.size:
            raise BridgeError(f"{what}: {size} B at 0x{address:08x} is outside the board's DDR "
                              f"(0x{DDR_START:08x}, {self.size >> 20} MiB)")  # fmt: skip
        return offset

    def read(self, address: int, size: int, what: str) -> bytes:
        offset = self._span(address, size, what)
        return self._map[offset : offset + size]

    def write(self, address: int, data: bytes, what: str) -> None:
        offset = self._span(address, len(data), what)
        self._map[offset : offset + len(data)] = data

    def close(self) -> None:
        self._map.close()
        os.close(self.fd)


def read_request(stream: socket.socket) -> InvokeRequest | None:
    """The next request on the bridge UART (None at its end). Bytes before the magic are
    the board's own (none are expected) and are skipped."""
    window = b""
    while window != REQUEST_MAGIC:
        byte = stream.recv(1)
        if not byte:
            return None
        window = (window + byte)[-len(REQUEST_MAGIC) :]
    sequence, address, size, count = struct.unpack("<4I", _exactly(stream, 16))
    if count > MAX_BASES:
        raise BridgeError(f"invoke {sequence}: {count} base addresses (at most {MAX_BASES})")
    fields = struct.unpack(f"<{3 * count}I", _exactly(stream, 12 * count))
    bases = tuple(Base(*fields[i : i + 3]) for i in range(0, len(fields), 3))
    return InvokeRequest(sequence, address, size, bases)


def _exactly(stream: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = stream.recv(size - len(data))
        if not chunk:
            raise BridgeError("the board's bridge UART closed in the middle of a request")
        data += chunk
    return data


def answer_bytes(sequence: int, answer: InvokeAnswer) -> bytes:
    text = answer.text.encode("ascii", "replace")[:MAX_TEXT]
    return ANSWER_MAGIC + struct.pack("<IiI", sequence, answer.status, len(text)) + text


class NpuBridge:
    """One run's bridge: the board's memory file, the UART1 socket, the serving thread."""

    def __init__(self, executor: NpuExecutor, *, on_invoke: Callable[[str], None] | None = None):
        self.executor = executor
        self.memory = BoardMemory()
        self._ours, self._board = socket.socketpair()
        self._on_invoke = on_invoke or (lambda _line: None)
        self._thread: threading.Thread | None = None
        self.invokes = 0
        self.error: str | None = None

    machine_options = "memory-backend=etu-ddr"  # appended to ``-M mps3-an547``

    def qemu_args(self) -> list[str]:
        """Options for ``qemu-system-arm``, after the ``-serial`` of UART0: DDR from the
        memory file, UART1 to etu."""
        return [
            "-object", f"memory-backend-file,id=etu-ddr,size={self.memory.size},"
            f"mem-path={self.memory.qemu_path()},share=on",
            "-chardev", f"socket,id=etu-npu,fd={self._board.fileno()}",
            "-serial", "chardev:etu-npu",
        ]  # fmt: skip

    @property
    def pass_fds(self) -> tuple[int, ...]:
        return (self.memory.fd, self._board.fileno())

    def start(self) -> NpuBridge:
        """Serve in a thread; the board's end of the socket is QEMU's once it has started."""
        self._thread = threading.Thread(target=self._serve, name="etu-npu-bridge", daemon=True)
        self._thread.start()
        return self

    def child_started(self) -> None:
        """QEMU holds its own copies of the passed descriptors now."""
        self._board.close()

    def _serve(self) -> None:
        while True:
            try:
                request = read_request(self._ours)
            except (BridgeError, OSError) as error:
                self.error = str(error)
                return
            if request is None:
                return
            try:
                answer = self.executor.execute(request, self.memory)
            except BridgeError as error:
                answer = InvokeAnswer(-1, str(error))
            except Exception as error:  # an executor bug ends the invoke, never the run
                answer = InvokeAnswer(-1, f"{self.executor.name}: {type(error).__name__}: "
                                          f"{error}")  # fmt: skip
            self.invokes += 1
            self._on_invoke(answer.text)
            try:
                self._ours.sendall(answer_bytes(request.sequence, answer))
            except OSError as error:
                self.error = f"the board's bridge UART: {error.strerror or error}"
                return

    def close(self) -> None:
        for end in (self._ours, self._board):
            with contextlib.suppress(OSError):
                end.close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self.memory.close()


@dataclass(frozen=True)
class BridgedDelegate:
    index: int
    command_stream: bytes  # the cmd_data block, as the runner passes it
    inputs: Sequence  # VelaIO
    outputs: Sequence  # VelaIO
    graph: object  # runner.tosa_graphs.TosaGraph


class TosaReferenceExecutor:
    """The NPU's part computed by the TOSA reference model on each delegate's graph."""

    name = "TOSA reference model"
    fallback: str | None = None  # why etu's Ethos-U model does not run this program

    def __init__(self, pte: Path, *, elf: Path | None = None, tosa: Path | None = None) -> None:
        """The delegates of the program baked into ``elf`` (else of ``pte``); their graphs
        are found beside ``pte`` (Vela's folder and compile record) or in ``tosa``."""
        from etu.parsers.errors import ParseError
        from etu.parsers.ethosu import decode_ethosu_payload
        from etu.parsers.firmware_program import open_embedded_program
        from etu.parsers.pte import open_program
        from etu.runner.tosa_graphs import TosaMatchError, match_delegates

        self.delegates: list[BridgedDelegate] = []
        source = elf if elf is not None else pte
        try:
            program = open_embedded_program(elf) if elf is not None else open_program(pte)
            with program:
                plan = program.plans[0]
                matched = match_delegates(program, plan, Path(pte), tosa)
                for index, found in sorted(matched.items()):
                    blob = bytes(program.delegate_payload(plan.delegates[index]))
                    payload = decode_ethosu_payload(blob)
                    cmd = next(b for b in payload.blocks if b.name == "cmd_data")
                    stream = blob[cmd.payload_offset : cmd.payload_offset + cmd.size]
                    self.delegates.append(BridgedDelegate(
                        index, stream, payload.inputs, payload.outputs, found.graph
                    ))  # fmt: skip
        except (ParseError, TosaMatchError) as error:
            raise BridgeError(f"{source}: {error}") from None
        except StopIteration:
            raise BridgeError(f"{source}: a delegate has no command stream block") from None

    def _delegate(self, request: InvokeRequest, memory: BoardMemory) -> BridgedDelegate:
        stream = memory.read(request.command_address, request.command_size, "command stream")
        for delegate in self.delegates:
            if delegate.command_stream == stream:
                return delegate
        raise BridgeError(f"invoke {request.sequence}: the command stream at "
                          f"0x{request.command_address:08x} ({request.command_size} B) is none "
                          "of the program's delegates")  # fmt: skip

    def execute(self, request: InvokeRequest, memory: BoardMemory) -> InvokeAnswer:
        import numpy
        import tosa_reference_model

        from etu.runner.tosa_graphs import quiet_stdout

        delegate = self._delegate(request, memory)
        if len(request.bases) <= SCRATCH_BASE:
            raise BridgeError(f"invoke {request.sequence}: no scratch base address")
        scratch = request.bases[SCRATCH_BASE]
        graph = delegate.graph
        where = f"delegate {delegate.index}"
        if len(graph.inputs) != len(delegate.inputs) or len(graph.outputs) != len(delegate.outputs):
            raise BridgeError(f"{where}: Vela's IO table and the TOSA graph disagree on the "
                              "number of inputs or outputs")  # fmt: skip
        arrays = []
        for k, (io, tensor) in enumerate(zip(delegate.inputs, graph.inputs, strict=True)):
            data = self._region(memory, scratch, io, f"{where} input {k}", tensor)
            arrays.append(numpy.frombuffer(data, tensor.numpy_dtype).reshape(tensor.shape))
        with quiet_stdout():
            results, status = tosa_reference_model.run(graph.data, arrays)
        if status != tosa_reference_model.GraphStatus.TOSA_VALID:
            raise BridgeError(f"{where}: the TOSA reference model ended with {status.name}")
        written = 0
        for k, (io, tensor, result) in enumerate(
            zip(delegate.outputs, graph.outputs, results, strict=True)
        ):
            data = numpy.ascontiguousarray(result, tensor.numpy_dtype).tobytes()
            self._region(memory, scratch, io, f"{where} output {k}", tensor, len(data))
            memory.write(scratch.address + io.offset, data, f"{where} output {k}")
            written += len(data)
        read = sum(len(a.tobytes()) for a in arrays)
        text = (f"delegate {delegate.index}: {len(arrays)} input(s) {read} B -> "
                f"{len(results)} output(s) {written} B, computed by the {self.name} "
                "(command stream not executed)")  # fmt: skip
        if self.fallback:
            text = f"{text}; etu's Ethos-U model: {self.fallback}"[:MAX_TEXT]
        return InvokeAnswer(0, text)

    @staticmethod
    def _region(memory, scratch: Base, io, what: str, tensor, size: int | None = None) -> bytes:
        nbytes = io.nbytes
        expected = tensor.numel * numpy_itemsize(tensor.numpy_dtype)
        if nbytes != expected or (size is not None and size != nbytes):
            raise BridgeError(f"{what}: Vela's IO table says {nbytes} B, the TOSA graph's "
                              f"{tensor.name} is {expected} B")  # fmt: skip
        if io.offset < 0 or io.offset + nbytes > scratch.size:
            raise BridgeError(f"{what}: {nbytes} B at offset {io.offset} is outside the "
                              f"scratch region ({scratch.size} B)")  # fmt: skip
        return memory.read(scratch.address + io.offset, nbytes, what)


def numpy_itemsize(dtype: str) -> int:
    import numpy

    return numpy.dtype(dtype).itemsize


def bridge_for(elf: Path, options: dict) -> NpuBridge | None:
    """The bridge a runner ELF needs (its recorded build ``options`` say so), else None."""
    if not options.get("npu_bridge"):
        return None
    program = options.get("program")
    if not program or not Path(program).is_file():
        raise BridgeError(f"{elf}: the runner runs its NPU part in etu, but the program it "
                          f"was built from ({program or 'not recorded'}) is gone")  # fmt: skip
    return NpuBridge(executor_for(Path(program), elf=Path(elf)))


EXECUTOR_CHOICE = "ETU_NPU_EXECUTOR"  # auto (the default), model or reference


def executor_for(pte: Path, *, elf: Path | None = None, choice: str | None = None) -> NpuExecutor:
    """etu's Ethos-U model (runner/npu_model.py) when it executes every operation of every
    delegate of the program (checked up front, by decoding); else the TOSA reference model,
    whose ``fallback`` names the first operation the model lacks (the run's log shows it).
    ``choice`` (else $ETU_NPU_EXECUTOR): ``model`` or ``reference`` insists on one; the
    model insisted on runs even what it lacks: that invoke fails naming the operation, the
    runner prints it and the run ends ``runner_error`` (``refusal`` says so up front)."""
    choice = choice or os.environ.get(EXECUTOR_CHOICE) or "auto"
    if choice not in ("auto", "model", "reference"):
        raise BridgeError(f"{EXECUTOR_CHOICE}={choice!r}: expected auto, model or reference")
    if choice == "reference":
        return TosaReferenceExecutor(pte, elf=elf)
    reason = model_refusal(pte, elf=elf)
    if reason is None or choice == "model":
        try:
            from etu.runner.npu_model import CommandStreamExecutor
        except ImportError:  # numpy is missing: model_refusal said so
            raise BridgeError(f"{elf if elf is not None else pte}: {reason}") from None
        model = CommandStreamExecutor(program_command_streams(pte, elf=elf))
        model.refusal = reason
        return model
    executor = TosaReferenceExecutor(pte, elf=elf)
    executor.fallback = reason
    return executor


def program_command_streams(pte: Path, *, elf: Path | None = None) -> list[tuple[int, bytes]]:
    """(delegate index, cmd_data block) of each Ethos-U delegate of the program baked into
    ``elf`` (else of ``pte``), as the runner passes them to the NPU."""
    from etu.parsers.errors import ParseError
    from etu.parsers.ethosu import decode_ethosu_payload, is_ethosu_delegate
    from etu.parsers.firmware_program import open_embedded_program
    from etu.parsers.pte import open_program

    source = elf if elf is not None else pte
    streams = []
    try:
        program = open_embedded_program(elf) if elf is not None else open_program(pte)
        with program:
            for index, delegate in enumerate(program.plans[0].delegates):
                if not is_ethosu_delegate(delegate.id):
                    continue
                blob = bytes(program.delegate_payload(delegate))
                payload = decode_ethosu_payload(blob)
                cmd = next(b for b in payload.blocks if b.name == "cmd_data")
                streams.append((index, blob[cmd.payload_offset : cmd.payload_offset + cmd.size]))
    except ParseError as error:
        raise BridgeError(f"{source}: {error}") from None
    except StopIteration:
        raise BridgeError(f"{source}: a delegate has no command stream block") from None
    return streams


def model_refusal(pte: Path, *, elf: Path | None = None) -> str | None:
    """Why etu's Ethos-U model cannot execute the program (one line), else None."""
    try:
        import numpy  # noqa: F401  (the model's one dependency beyond etu)

        from etu.runner import npu_model
    except ImportError as error:
        return f"needs {error.name}"
    try:
        streams = program_command_streams(pte, elf=elf)
    except BridgeError as error:
        return str(error)
    for index, cmd_data in streams:
        where = f"delegate {index}"
        try:
            decoded = npu_model.decode_cmd_data(cmd_data, f"{where} command stream")
        except BridgeError as error:
            return str(error)
        reason = npu_model.unsupported_reason(decoded)
        if reason is not None:
            return f"{where}: {reason}"
    return None
