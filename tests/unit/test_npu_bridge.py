"""etu's side of the emulated board's NPU bridge: the wire format, the board's memory file,
and the TOSA-reference executor on the demo's real delegate."""

from __future__ import annotations

import socket
import struct
from pathlib import Path

import pytest

from etu.runner.npu_bridge import (
    ANSWER_MAGIC,
    DDR_START,
    REQUEST_MAGIC,
    Base,
    BoardMemory,
    BridgeError,
    InvokeAnswer,
    InvokeRequest,
    NpuBridge,
    TosaReferenceExecutor,
    read_request,
)

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "etu_tui" / "demo" / "demo_cnn.pte"
COMMANDS = 0x7000_0000
SCRATCH = 0x7010_0000
WEIGHTS = 0x7020_0000


def request_bytes(sequence: int, address: int, size: int, bases) -> bytes:
    words = [sequence, address, size, len(bases)]
    for base in bases:
        words += list(base)
    return REQUEST_MAGIC + struct.pack(f"<{len(words)}I", *words)


class Recording:
    name = "recording"

    def __init__(self) -> None:
        self.requests: list[InvokeRequest] = []

    def execute(self, request: InvokeRequest, memory: BoardMemory) -> InvokeAnswer:
        self.requests.append(request)
        data = memory.read(request.command_address, request.command_size, "command stream")
        return InvokeAnswer(0, f"saw {data.hex()}")


def read_answer(board: socket.socket) -> tuple[int, int, str]:
    data = b""
    while len(data) < 20:
        data += board.recv(64)
    assert data.startswith(ANSWER_MAGIC)
    sequence, status, length = struct.unpack("<IiI", data[8:20])
    while len(data) < 20 + length:
        data += board.recv(64)
    return sequence, status, data[20 : 20 + length].decode()


def test_a_request_is_answered_from_the_boards_memory_and_noise_before_it_is_skipped():
    bridge = NpuBridge(Recording())
    board = bridge._board  # the end QEMU holds in a run
    try:
        bridge.memory.write(COMMANDS, b"\x01\x02\x03\x04", "test")
        bridge.start()
        board.sendall(b"boot noise" + request_bytes(7, COMMANDS, 4, [(SCRATCH, 64, 0x3100_0000)]))
        assert read_answer(board) == (7, 0, "saw 01020304")
        (request,) = bridge.executor.requests
        assert request.bases == (Base(SCRATCH, 64, 0x3100_0000),)
    finally:
        bridge.close()


def test_an_executor_error_fails_the_invoke_with_one_line_and_the_bridge_serves_on():
    bridge = NpuBridge(Recording())
    board = bridge._board
    try:
        bridge.start()
        outside = DDR_START - 0x1000
        board.sendall(request_bytes(1, outside, 16, []))
        sequence, status, text = read_answer(board)
        assert (sequence, status) == (1, -1)
        assert "command stream: 16 B at 0x5ffff000 is outside the board's DDR" in text
        assert "\n" not in text
        bridge.memory.write(COMMANDS, b"\xaa", "test")
        board.sendall(request_bytes(2, COMMANDS, 1, []))
        assert read_answer(board) == (2, 0, "saw aa")
    finally:
        bridge.close()


def test_a_request_with_too_many_bases_is_refused():
    ours, board = socket.socketpair()
    with ours, board:
        board.sendall(request_bytes(3, COMMANDS, 4, [(0, 0, 0)] * 9))
        with pytest.raises(BridgeError, match="invoke 3: 9 base addresses"):
            read_request(ours)
        board.close()
        assert read_request(ours) is None  # the end of the UART


def test_the_memory_file_is_nameless_and_private():
    memory = BoardMemory(size=1 << 20)
    try:
        target = Path(f"/proc/self/fd/{memory.fd}").readlink()
        assert str(target).startswith("/memfd:etu-board-ddr")  # nothing in /dev/shm
        with pytest.raises(BridgeError, match="outside the board's DDR"):
            memory.read(DDR_START + (1 << 20) - 4, 8, "x")
    finally:
        memory.close()


@pytest.fixture(scope="module")
def demo_executor():
    pytest.importorskip("tosa_reference_model")
    return TosaReferenceExecutor(DEMO)


def demo_request(executor: TosaReferenceExecutor, memory: BoardMemory, seed: int):
    import numpy

    (delegate,) = executor.delegates
    memory.write(COMMANDS, delegate.command_stream, "test")
    (io,) = delegate.inputs
    values = numpy.random.default_rng(seed).integers(-128, 128, io.nbytes, dtype=numpy.int8)
    memory.write(SCRATCH + io.offset, values.tobytes(), "test")
    bases = (Base(WEIGHTS, 16528, WEIGHTS), Base(SCRATCH, 23328, 0x3100_0000), Base(0, 0, 0))
    return InvokeRequest(1, COMMANDS, len(delegate.command_stream), bases), values


def test_the_demo_delegate_reads_and_writes_where_velas_io_table_says(demo_executor):
    import numpy
    import tosa_reference_model

    memory = BoardMemory()
    try:
        request, values = demo_request(demo_executor, memory, seed=5)
        answer = demo_executor.execute(request, memory)
        assert answer.status == 0 and "command stream not executed" in answer.text
        (delegate,) = demo_executor.delegates
        (out,) = delegate.outputs
        got = numpy.frombuffer(memory.read(SCRATCH + out.offset, out.nbytes, "t"), numpy.int8)
        graph = delegate.graph
        (expected,), _ = tosa_reference_model.run(
            graph.data, [values.reshape(graph.inputs[0].shape)]
        )
        assert got.tolist() == numpy.asarray(expected, numpy.int8).reshape(-1).tolist()
        # another input gives another output: the executor read the board's bytes
        request, _ = demo_request(demo_executor, memory, seed=6)
        demo_executor.execute(request, memory)
        again = numpy.frombuffer(memory.read(SCRATCH + out.offset, out.nbytes, "t"), numpy.int8)
        assert again.tolist() != got.tolist()
    finally:
        memory.close()


def test_a_command_stream_that_is_no_delegates_is_named(demo_executor):
    memory = BoardMemory()
    try:
        request, _ = demo_request(demo_executor, memory, seed=1)
        memory.write(COMMANDS + 100, b"\xff\xff", "test")
        with pytest.raises(BridgeError, match=r"command stream at 0x70000000 \(2096 B\) is none"):
            demo_executor.execute(request, memory)
        small = InvokeRequest(1, COMMANDS, request.command_size, request.bases[:1])
        with pytest.raises(BridgeError):
            demo_executor.execute(small, memory)
    finally:
        memory.close()


def test_a_served_bridge_closes_when_the_board_goes(demo_executor):
    bridge = NpuBridge(demo_executor)
    bridge.start()
    bridge._board.close()  # QEMU ended: its end of the UART is gone
    thread = bridge._thread
    assert thread is not None
    thread.join(timeout=5)
    assert not thread.is_alive()
    bridge.close()
