"""etu's Ethos-U model (runner/npu_model.py) against the oracle: for each test program, the
delegate's outputs computed by executing its command stream equal, byte for byte, those the
TOSA reference model computes on the delegate's saved TOSA graph, for deterministic random
inputs (and random bytes everywhere else in the scratch region)."""

from __future__ import annotations

import hashlib
import struct
from pathlib import Path

import pytest

from etu.parsers.log_summary import LogSummary
from etu.parsers.runner_events import NpuInvoke, RunError
from etu.parsers.runner_log import parse_log_bytes
from etu.runner.aot import LoweringSpec
from etu.runner.npu_bridge import (
    ANSWER_MAGIC,
    DDR_START,
    REQUEST_MAGIC,
    Base,
    BoardMemory,
    BridgeError,
    InvokeRequest,
    TosaReferenceExecutor,
    executor_for,
)
from tests import npu_programs
from tests.real_programs import CACHE_ROOT, ROOT, cache_lock, keyed_dir

np = pytest.importorskip("numpy")
pytest.importorskip("tosa_reference_model")
pytest.importorskip("ethosu.mlw_codec")

from etu.runner import npu_model  # noqa: E402  (after the skips: it needs numpy)
from etu.runner.npu_model import (  # noqa: E402
    MODEL_NAME,
    CommandStreamExecutor,
    apply_scale,
    brick_permutation,
    decode_cmd_data,
)

DEMO = ROOT / "etu_tui" / "demo" / "demo_cnn.pte"
COMMANDS, WEIGHTS, SCRATCH, FAST = DDR_START, DDR_START + 0x100_0000, DDR_START + 0x200_0000, \
    DDR_START + 0x300_0000  # fmt: skip
MEMORY_SIZE = 0x400_0000
FAST_SIZE = 0x4_0000  # the runner build chooses it; Vela places the fast scratch from 0
SEEDS = range(4)

# Programs lowered only here: the networks of tests/npu_programs.py for more MAC configurations,
# and the operators neither lowers (OpsMore below)
# name → (model: "npu_mix", "ops_more" or an EXAMPLES name, target)
EXTRA_PROGRAMS = {
    "mix_u55_64": ("npu_mix", "ethos-u55-64"),
    "mix_u55_256": ("npu_mix", "ethos-u55-256"),
    "cnn_u55_64": ("cnn", "ethos-u55-64"),
    "cnn_u55_256": ("cnn", "ethos-u55-256"),
    "more_u55": ("ops_more", "ethos-u55-128"),
    "more_u65": ("ops_more", "ethos-u65-256"),
    "cnn_u55_32": ("cnn", "ethos-u55-32"),
    "cnn_u65_512": ("cnn", "ethos-u65-512"),
    "mix_u65_512": ("npu_mix", "ethos-u65-512"),
    "reversed_u55": ("ops_reversed", "ethos-u55-128"),
    "tables_u55": ("ops_tables", "ethos-u55-128"),
    "tables_u65": ("ops_tables", "ethos-u65-256"),
    "tables_u55_64": ("ops_tables", "ethos-u55-64"),
    "tables_u55_256": ("ops_tables", "ethos-u55-256"),
}
OPS_MORE_SHAPES = [(1, 8, 12, 12)]
OPS_MORE_SOURCE = """
import torch
from torch import nn


class OpsMore(nn.Module):
    \"\"\"Operators the CNN and npu_mix do not lower: sub, minimum, maximum, a product of
    two maps, a per-channel broadcast product, relu6's clamp, a channel sum, an average
    pool with padding, a wide 5x5 convolution.\"\"\"

    def __init__(self) -> None:
        super().__init__()
        self.left = nn.Conv2d(8, 24, 3, padding=1)
        self.right = nn.Conv2d(8, 24, 1)
        self.wide = nn.Conv2d(24, 20, 5, padding=2, stride=2)

    def forward(self, x: torch.Tensor):
        a = nn.functional.relu6(self.left(x))
        b = self.right(x)
        low, high = torch.minimum(a, b), torch.maximum(a, b)
        diff = (a - b) * high
        gate = low * torch.mean(high, dim=(2, 3), keepdim=True)
        summed = torch.sum(diff, dim=1, keepdim=True)
        pooled = nn.functional.avg_pool2d(gate, 3, stride=1, padding=1)
        return self.wide(pooled + diff), summed
"""
OPS_REVERSED_SOURCE = """
import torch
from torch import nn


class OpsReversed(nn.Module):
    \"\"\"Binary operations whose first operand is a scalar (Vela reverses the operands
    when the first one is the broadcast one).\"\"\"

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(8, 16, 3, padding=1)

    def forward(self, x: torch.Tensor):
        a = self.conv(x)
        flipped = 0.75 - a
        return torch.maximum(flipped, a), 0.5 - flipped
"""
OPS_TABLES_SOURCE = """
import torch
from torch import nn


class OpsTables(nn.Module):
    \"\"\"What the other networks do not lower: tanh and sigmoid (table lookups on the NPU),
    a softmax over the features, a concatenation and a fully connected layer. Vela's
    softmax moves int32 sums through int8 transposes (STRIDE_C set on an NHWC map).\"\"\"

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(8, 12, 3, padding=1)
        self.fc = nn.Linear(24, 10)

    def forward(self, x: torch.Tensor):
        a = self.conv(x)
        joined = torch.cat((torch.tanh(a), torch.sigmoid(a)), dim=1)
        pooled = torch.mean(joined, dim=(2, 3))
        return torch.softmax(self.fc(pooled), dim=1)
"""
SOURCES = {"ops_more": ("OpsMore", OPS_MORE_SOURCE),
           "ops_reversed": ("OpsReversed", OPS_REVERSED_SOURCE),
           "ops_tables": ("OpsTables", OPS_TABLES_SOURCE)}  # fmt: skip
# program → its target (the bit-exact test count per configuration is reported from these)
PROGRAMS = {
    "demo": "ethos-u55-128",
    "u55": "ethos-u55-128",
    "u55_segment": "ethos-u55-128",
    "u65": "ethos-u65-256",
    "two_inputs": "ethos-u55-64",
    "mix_u55": "ethos-u55-128",
    "mix_u65": "ethos-u65-256",
    **{name: target for name, (_model, target) in EXTRA_PROGRAMS.items()},
}


def _extra_cache_dir() -> Path:
    return keyed_dir("npu_model-", npu_programs.MIX_MODEL)


def build_extra(name: str) -> Path:
    """``program.pte`` of an EXTRA_PROGRAMS entry with its ``vela/`` folder, lowered once."""
    model, target = EXTRA_PROGRAMS[name]
    folder = _extra_cache_dir() / f"{name}-{model}-{target}"
    if model in SOURCES:  # its source is here: key on it too
        source_key = hashlib.sha256(SOURCES[model][1].encode()).hexdigest()[:8]
        folder = folder.with_name(f"{folder.name}-{source_key}")
    with cache_lock(f"npu_model-{name}"):
        if not (folder / "program.pte").is_file():
            _lower_extra(name, folder)
    return folder / "program.pte"


def _lower_extra(name: str, folder: Path) -> None:
    from etu.runner.example_models import EXAMPLES

    model_name, target = EXTRA_PROGRAMS[name]
    if model_name == "npu_mix":
        factory, shapes = npu_programs.mix_model(), npu_programs.MIX_SHAPES
    elif model_name in SOURCES:
        namespace: dict = {}
        class_name, source = SOURCES[model_name]
        exec(compile(source, model_name, "exec"), namespace)
        factory, shapes = namespace[class_name], OPS_MORE_SHAPES
    else:
        factory, shapes = EXAMPLES[model_name]
    npu_programs.lower_into(folder, factory, shapes, LoweringSpec(target=target))


def program_path(name: str) -> Path:
    if name == "demo":
        return DEMO
    if name in EXTRA_PROGRAMS:
        return build_extra(name)
    return npu_programs.build(name) / "program.pte"


# -- the bridge's view of a delegate ----------------------------------------------------------


def delegate_blocks(pte: Path) -> dict[int, tuple[bytes, int]]:
    """delegate index → (weight_data block, scratch size)."""
    from etu.parsers.ethosu import decode_ethosu_payload
    from etu.parsers.pte import open_program

    found = {}
    with open_program(pte) as program:
        plan = program.plans[0]
        for index, delegate in enumerate(plan.delegates):
            blob = bytes(program.delegate_payload(delegate))
            payload = decode_ethosu_payload(blob)
            block = next((b for b in payload.blocks if b.name == "weight_data"), None)
            weights = (
                blob[block.payload_offset : block.payload_offset + block.size] if block else b""
            )
            found[index] = (weights, payload.scratch_size)
    return found


def prepared_request(memory: BoardMemory, delegate, weights: bytes, scratch_size: int,
                     seed: int) -> tuple[InvokeRequest, list[bytes]]:  # fmt: skip
    """The invoke as the board makes it: command stream, weights, a scratch region of random
    bytes with the delegate's inputs (random too) at Vela's offsets."""
    rng = np.random.default_rng(seed)
    memory.write(COMMANDS, delegate.command_stream, "test")
    memory.write(WEIGHTS, weights, "test")
    memory.write(SCRATCH, rng.integers(0, 256, scratch_size, dtype=np.uint8).tobytes(), "test")
    memory.write(FAST, rng.integers(0, 256, FAST_SIZE, dtype=np.uint8).tobytes(), "test")
    inputs = []
    for io in delegate.inputs:
        data = rng.integers(0, 256, io.nbytes, dtype=np.uint8).tobytes()
        memory.write(SCRATCH + io.offset, data, "test")
        inputs.append(data)
    bases = (Base(WEIGHTS, len(weights), WEIGHTS), Base(SCRATCH, scratch_size, SCRATCH),
             Base(FAST, FAST_SIZE, FAST))  # fmt: skip
    return InvokeRequest(seed, COMMANDS, len(delegate.command_stream), bases), inputs


def outputs(memory: BoardMemory, delegate) -> list[bytes]:
    return [memory.read(SCRATCH + io.offset, io.nbytes, "test") for io in delegate.outputs]


@pytest.fixture(scope="module")
def memory():
    board = BoardMemory(size=MEMORY_SIZE)
    yield board
    board.close()


# The rest of the configuration matrix runs with `make test-all` (`-m npu_matrix`): a fresh
# clone's `make test` lowers five extra programs, not ten.
MATRIX_ONLY = {"mix_u55_64", "mix_u55_256", "cnn_u55_64", "cnn_u55_32", "mix_u65_512",
               "tables_u65", "tables_u55_64", "tables_u55_256"}  # fmt: skip


@pytest.mark.aot
@pytest.mark.parametrize(
    "name",
    [pytest.param(n, marks=pytest.mark.npu_matrix) if n in MATRIX_ONLY else n
     for n in sorted(PROGRAMS)],
)  # fmt: skip
def test_every_delegate_output_equals_the_tosa_reference_byte_for_byte(name, memory):
    check_against_reference(program_path(name), PROGRAMS[name], memory, SEEDS)


MV2 = CACHE_ROOT / "bench-mv2-ethos-u55-128" / "mv2.pte"  # benchmarks/bench_npu_model.py's


MV2_ABSENT = "mv2 is lowered by `make bench` (10 minutes), not by the tests"


@pytest.mark.skipif(not (MV2.parent / "vela").is_dir(), reason=MV2_ABSENT)
def test_mobilenet_v2_equals_the_tosa_reference_byte_for_byte(memory):
    """MobileNetV2's layer shapes at 224×224: 441 operations, 300 M MACs."""
    check_against_reference(MV2, "ethos-u55-128", memory, range(1))


def check_against_reference(pte: Path, target: str, memory: BoardMemory, seeds) -> None:
    reference = TosaReferenceExecutor(pte)
    blocks = delegate_blocks(pte)
    model = CommandStreamExecutor([(d.index, d.command_stream) for d in reference.delegates])
    assert reference.delegates
    for delegate in reference.delegates:
        weights, scratch_size = blocks[delegate.index]
        decoded = decode_cmd_data(delegate.command_stream)
        assert decoded.config is not None and decoded.config.target == target
        assert npu_model.unsupported_reason(decoded) is None
        for seed in seeds:
            request, inputs = prepared_request(memory, delegate, weights, scratch_size, seed)
            reference.execute(request, memory)
            expected = outputs(memory, delegate)
            for io in delegate.outputs:  # no stale answer to find
                memory.write(SCRATCH + io.offset, bytes(io.nbytes), "test")
            for io, data in zip(delegate.inputs, inputs, strict=True):  # the same inputs again
                memory.write(SCRATCH + io.offset, data, "test")
            answer = model.execute(request, memory)
            assert answer.status == 0 and answer.text.endswith(f"executed by {MODEL_NAME}")
            assert answer.text.startswith(f"delegate {delegate.index}: ")
            assert len(answer.text) <= 200
            event = answered(answer)  # the log parser reads every figure back
            assert event.ok and event.delegate == delegate.index and event.executor == "model"
            assert event.operations and event.macs is not None and event.bytes_written
            assert outputs(memory, delegate) == expected, f"{pte} seed {seed}"


# -- refusals ---------------------------------------------------------------------------------


def demo_delegate():
    reference = TosaReferenceExecutor(DEMO)
    (delegate,) = reference.delegates
    return delegate


def patched_first(cmd_data: bytes, name: str, param: int) -> bytes:
    """``cmd_data`` with the first ``name`` command's 16-bit parameter replaced."""
    from etu.parsers.ethosu import _read_command_stream

    _fourcc, _words, _cfg, _id, start = _read_command_stream(memoryview(cmd_data), 0)
    assert start is not None
    command = next(c for c in decode_cmd_data(cmd_data).stream.commands if c.name == name)
    at = start + 4 * command.word
    (word,) = struct.unpack_from("<I", cmd_data, at)
    patched = bytearray(cmd_data)
    struct.pack_into("<I", patched, at, (word & 0xFFFF) | (param << 16))
    return bytes(patched)


def test_an_unsupported_field_stops_the_run_with_the_operation_and_field_named(memory):
    delegate = demo_delegate()
    weights, scratch_size = delegate_blocks(DEMO)[0]
    request, _ = prepared_request(memory, delegate, weights, scratch_size, seed=1)
    before = outputs(memory, delegate)
    tanh = patched_first(delegate.command_stream, "NPU_SET_ACTIVATION", 3)  # function 3: tanh
    memory.write(COMMANDS, tanh, "test")
    with pytest.raises(BridgeError) as raised:
        CommandStreamExecutor([(0, tanh)]).execute(request, memory)
    message = str(raised.value)
    assert message == ("delegate 0: operation 0 (NPU_OP_POOL): activation tanh is not supported "
                       f"by {MODEL_NAME}")  # fmt: skip
    assert outputs(memory, delegate) == before  # nothing half-written
    assert npu_model.unsupported_reason(decode_cmd_data(tanh)) == message.split(": ", 1)[1]


def answered(answer) -> NpuInvoke:
    """The event the runner-log parser makes of the line the board prints for ``answer``."""
    level = "I" if answer.status == 0 else "E"
    line = f"{level} [executorch:etu_npu_bridge.c:176 ethosu_invoke_v3()] etu-npu: {answer.text}"
    (event,) = [e for e in parse_log_bytes(line.encode()) if isinstance(e, NpuInvoke)]
    return event


def test_the_models_answer_counts_operations_macs_and_the_bytes_it_moved(memory):
    """The demo's delegate: its MACs equal Vela's count for the network; it reads at least
    its input and the weights it decodes, and writes at least its output."""
    from etu.parsers.vela import load_vela_report

    delegate = demo_delegate()
    weights, scratch_size = delegate_blocks(DEMO)[0]
    request, _ = prepared_request(memory, delegate, weights, scratch_size, seed=0)
    answer = CommandStreamExecutor([(0, delegate.command_stream)]).execute(request, memory)
    event = answered(answer)
    decoded = decode_cmd_data(delegate.command_stream)
    assert event.operations == len(decoded.stream.operations)
    assert sum(event.kinds.values()) <= event.operations and event.kinds["conv"] >= 1
    assert event.macs == load_vela_report(DEMO.parent / "vela").nn_macs
    inputs = sum(io.nbytes for io in delegate.inputs)
    outputs_size = sum(io.nbytes for io in delegate.outputs)
    assert event.bytes_read >= inputs + len(weights) // 2
    assert event.bytes_written >= outputs_size


def test_an_unsupported_operation_insisted_on_fails_the_invoke_and_the_run_names_it(memory):
    """ETU_NPU_EXECUTOR=model on a stream with an operation the model lacks: the bridge
    answers the invoke with a failure naming the operation; the line the board prints for
    it is the run's error (a runner_error ending whose proof names the operation)."""
    from etu.runner.npu_bridge import NpuBridge
    from etu.runner.run import classify

    delegate = demo_delegate()
    tanh = patched_first(delegate.command_stream, "NPU_SET_ACTIVATION", 3)  # 3: tanh
    bridge = NpuBridge(CommandStreamExecutor([(0, tanh)]))
    weights, scratch_size = delegate_blocks(DEMO)[0]
    request, _ = prepared_request(bridge.memory, delegate, weights, scratch_size, seed=4)
    bridge.memory.write(COMMANDS, tanh, "test")
    status, text = served(bridge, request)
    assert status == -1 and "\n" not in text
    line = f"E [executorch:etu_npu_bridge.c:176 ethosu_invoke_v3()] etu-npu: {text}"
    events = parse_log_bytes(f"{line}\n".encode())
    (event,) = [e for e in events if isinstance(e, NpuInvoke)]
    assert not event.ok and (event.delegate, event.operation, event.command) == (
        0, 0, "NPU_OP_POOL")  # fmt: skip
    (error,) = [e for e in events if isinstance(e, RunError)]
    outcome = classify(LogSummary.from_events(events).to_json(), [(error, line)], 0, False)
    assert outcome.reason == "runner_error" and "operation 0 (NPU_OP_POOL)" in outcome.proof
    assert "activation tanh is not supported" in outcome.proof


def served(bridge, request: InvokeRequest) -> tuple[int, str]:
    """The status and line the bridge's serving loop answers ``request`` with, on the wire
    the board reads (an executor error becomes a failed invoke with its one line)."""
    board = bridge._board  # the end QEMU holds in a run
    words = [request.sequence, request.command_address, request.command_size,
             len(request.bases)]  # fmt: skip
    for base in request.bases:
        words += [base.address, base.size, base.board_address]
    try:
        bridge.start()
        board.sendall(REQUEST_MAGIC + struct.pack(f"<{len(words)}I", *words))
        data = b""
        while len(data) < 20 or len(data) < 20 + struct.unpack_from("<I", data, 16)[0]:
            chunk = board.recv(4096)
            assert chunk, "the bridge closed without answering"
            data += chunk
    finally:
        bridge.close()
    assert data.startswith(ANSWER_MAGIC)
    sequence, status, length = struct.unpack_from("<IiI", data, 8)
    assert sequence == request.sequence
    return status, data[20 : 20 + length].decode()


def test_an_out_of_region_feature_map_is_a_named_error(memory):
    delegate = demo_delegate()
    weights, scratch_size = delegate_blocks(DEMO)[0]
    request, _ = prepared_request(memory, delegate, weights, scratch_size, seed=2)
    bases = (request.bases[0], Base(SCRATCH, 1024, SCRATCH), request.bases[2])
    small = InvokeRequest(2, COMMANDS, request.command_size, bases)
    with pytest.raises(BridgeError, match=r"^delegate 0: operation 0 IFM: .* outside region 1"):
        CommandStreamExecutor([(0, delegate.command_stream)]).execute(small, memory)


@pytest.mark.aot
def test_u85_streams_are_refused_with_one_line(real_program):
    from etu.parsers.pte import open_program

    with open_program(real_program("u85")) as program:
        (delegate,) = program.plans[0].delegates
        blob = bytes(program.delegate_payload(delegate))
    from etu.parsers.ethosu import decode_ethosu_payload

    block = next(b for b in decode_ethosu_payload(blob).blocks if b.name == "cmd_data")
    cmd_data = blob[block.payload_offset : block.payload_offset + block.size]
    with pytest.raises(BridgeError) as raised:
        decode_cmd_data(cmd_data, "delegate 0 command stream")
    assert "\n" not in str(raised.value)
    assert "Ethos-U85 command streams are decoded for display only" in str(raised.value)


# -- the pieces -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shape", "ublocks", "block_depth", "depthwise", "part_kernel", "decomposition"),
    [
        ((16, 3, 3, 3), (8, 8), 16, False, True, (8, 8)),
        ((32, 3, 3, 16), (8, 8), 16, False, False, (8, 8)),
        ((10, 1, 1, 32), (8, 8), 16, False, False, (8, 8)),
        ((24, 3, 3, 1), (8, 8), 24, True, False, (4, 4)),  # dilation 2
        ((20, 9, 9, 5), (8, 4), 8, False, True, (8, 8)),  # kernel split in sub-kernels
    ],
)
def test_the_brick_permutation_undoes_velas_reorder(
    shape, ublocks, block_depth, depthwise, part_kernel, decomposition
):
    from ethosu import mlw_codec

    weights = np.random.default_rng(0).integers(-127, 128, shape).astype(np.int16)
    encoded, _ = mlw_codec.reorder_encode(ublocks[0], ublocks[1], weights, block_depth,
                                          depthwise, part_kernel, 8, *decomposition)  # fmt: skip
    stream = np.asarray(mlw_codec.decode(encoded), dtype=np.int64)
    order = brick_permutation(shape, ublocks, block_depth, depthwise, part_kernel, 8,
                              decomposition)  # fmt: skip
    volume = np.zeros(weights.size, np.int64)
    used = order >= 0
    volume[order[used]] = stream[: order.size][used]
    assert volume.reshape(shape).tolist() == weights.tolist()
    assert sorted(order[used].tolist()) == list(range(weights.size))  # each weight once


def tosa_apply_scale_32(value: int, multiplier: int, shift: int, double_round: bool) -> int:
    """The TOSA specification's apply_scale_32, in Python integers."""
    rounding = 1 << (shift - 1)
    if double_round and shift > 31:
        rounding += (1 << 30) if value >= 0 else -(1 << 30)
    return (value * multiplier + rounding) >> shift


def test_rescaling_matches_tosas_apply_scale_32_at_ties_and_signs():
    values = [-(1 << 20) - 1, -65, -64, -63, -3, -2, -1, 0, 1, 2, 3, 63, 64, 65, (1 << 20) + 1]
    for multiplier, shift in ((1 << 30, 31), (1 << 30, 32), (1431655765, 33), (0x80000001, 37),
                              (1104437083, 50), (3, 2)):  # fmt: skip
        for rounding, double in (("tfl", True), ("natural", False)):
            got = apply_scale(np.asarray(values), multiplier, shift, rounding).tolist()
            assert got == [tosa_apply_scale_32(v, multiplier, shift, double) for v in values]


# -- which executor the emulated board uses -----------------------------------------------------


def test_the_demo_is_executed_by_the_model():
    executor = executor_for(DEMO)
    assert isinstance(executor, CommandStreamExecutor) and executor.name == MODEL_NAME
    assert [index for index, _ in executor.delegates] == [0]


def test_a_program_the_model_cannot_run_falls_back_to_the_reference_and_says_why(monkeypatch):
    reason = "operation 3 (NPU_OP_POOL): activation tanh is not supported by " + MODEL_NAME
    monkeypatch.setattr(npu_model, "unsupported_reason", lambda decoded: reason)
    executor = executor_for(DEMO)
    assert isinstance(executor, TosaReferenceExecutor)
    assert executor.name == "TOSA reference model"
    assert executor.fallback == f"delegate 0: {reason}"


def test_the_executor_can_be_chosen_and_a_refused_choice_says_why(monkeypatch):
    monkeypatch.setenv("ETU_NPU_EXECUTOR", "reference")
    assert isinstance(executor_for(DEMO), TosaReferenceExecutor)
    assert isinstance(executor_for(DEMO, choice="model"), CommandStreamExecutor)
    monkeypatch.setenv("ETU_NPU_EXECUTOR", "fast")
    with pytest.raises(BridgeError, match=r"ETU_NPU_EXECUTOR='fast': expected auto, model or"):
        executor_for(DEMO)
    reason = "operation 3 (NPU_OP_POOL): activation tanh is not supported by " + MODEL_NAME
    monkeypatch.setattr(npu_model, "unsupported_reason", lambda decoded: reason)
    # the model insisted on runs all the same: the invoke fails naming the operation (the
    # runner prints it, the run ends runner_error)
    insisted = executor_for(DEMO, choice="model")
    assert isinstance(insisted, CommandStreamExecutor)
    assert insisted.refusal == f"delegate 0: {reason}"


def test_regions_that_share_memory_share_one_copy(memory):
    """A runner may pass the same buffer as scratch and fast scratch: a write through one
    region is read through the other, and both reach the board."""
    from etu.runner.npu_memory import Regions

    memory.write(SCRATCH, bytes(range(64)), "test")
    bases = (Base(WEIGHTS, 16, WEIGHTS), Base(SCRATCH, 64, SCRATCH), Base(SCRATCH + 32, 64, 0))
    regions = Regions(memory, InvokeRequest(1, COMMANDS, 4, bases))
    regions.write(2, 0, np.full(8, 0xEE, np.uint8), "test")
    assert regions.read(1, 32, 8, "test").tolist() == [0xEE] * 8
    assert regions.read(1, 0, 2, "test").tolist() == [0, 1]
    regions.flush()
    assert memory.read(SCRATCH + 30, 12, "test") == bytes([30, 31]) + b"\xee" * 8 + bytes([40, 41])


def test_the_fallbacks_answer_says_why_in_one_short_line(monkeypatch, memory):
    reason = "operation 3 (NPU_OP_POOL): activation tanh is not supported by " + MODEL_NAME
    monkeypatch.setattr(npu_model, "unsupported_reason", lambda decoded: reason * 3)
    executor = executor_for(DEMO)
    delegate = demo_delegate()
    weights, scratch_size = delegate_blocks(DEMO)[0]
    request, _ = prepared_request(memory, delegate, weights, scratch_size, seed=3)
    answer = executor.execute(request, memory)
    assert answer.status == 0 and len(answer.text) <= 200 and "\n" not in answer.text
    assert "computed by the TOSA reference model (command stream not executed); etu's Ethos-U " \
           "model: delegate 0: operation 3 (NPU_OP_POOL)" in answer.text  # fmt: skip
