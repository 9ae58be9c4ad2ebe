"""etu's functional Ethos-U55/U65 model: executes a delegate's register command stream on the
board's memory with the NPU's integer arithmetic (numpy).

The stream at the request's address is the delegate's ``cmd_data`` block (COP1 header and
driver actions); :mod:`etu.parsers.ethosu_commands` decodes it into operations and this
module runs them in order on copies of the regions the request's base addresses name
(0: weights, 1: scratch, 2: fast scratch), then writes back the regions it changed.

- Weights are ``mlw_codec.decode``-d and put back from the hardware's brick order into OHWI.
  The brick permutation is Vela's own: ``reorder_encode`` of index planes (each element's
  index, one byte per plane), decoded, gives where every weight lands in the stream.
- Scale streams hold 10 bytes per output channel: 40-bit bias, 32-bit scale, 6-bit shift.
- Rescaling follows TOSA's ``apply_scale_32`` (Vela's TFL rounding is TOSA's double round,
  NATURAL its single round), so the results equal the TOSA reference model's.

Anything the model does not implement stops the run with a :class:`BridgeError` naming the
operation, its command and the field (never a silently wrong tensor). U85 streams are
refused with one line.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from etu.parsers.errors import ParseError
from etu.parsers.ethosu import NpuConfig, _read_command_stream
from etu.parsers.ethosu_commands import (
    NpuCommandStream,
    NpuOperation,
    decode_command_stream,
    read_words,
)
from etu.runner.npu_bridge import (
    MAX_TEXT,
    BoardMemory,
    BridgeError,
    InvokeAnswer,
    InvokeRequest,
)
from etu.runner.npu_memory import DTYPES, Regions, read_feature_map, write_feature_map

MODEL_NAME = "etu's Ethos-U model"
DTYPE_RANGE = {name: (int(np.iinfo(t).min), int(np.iinfo(t).max)) for name, t in DTYPES.items()}
SCALE_RECORD = 10  # bytes per output channel in a scale stream
LUT_SLOT = 256  # bytes per LUT slot in SHRAM; the 8 slots are its last 2 KiB
LUT_BYTES = 2048
SUBKERNEL_MAX = 8
CONVOLUTIONS = {"conv", "vector_product", "depthwise"}
WAITS = {"dma_wait", "kernel_wait", "irq", "pmu_mask"}
EXECUTED_KINDS = CONVOLUTIONS | WAITS | {"pool", "elementwise", "dma"}
POOL_MODES = {"max", "avg", "sum"}
ELEMENTWISE_MODES = {"add", "sub", "mul", "min", "max"}
# What the oracle has checked (the TOSA flow makes int8 maps, int32 in between; TFL and
# NATURAL rounding); the rest is refused rather than guessed
ROUNDINGS = {"tfl", "natural"}
MAP_DTYPES = {"int8", "int32"}
# the 16-bit ACTIVATION_MIN/MAX registers' extremes: what Vela writes for an int32 OFM, whose
# values the clamp does not limit
INT16_LIMITS = (-32768, 32767)
# add/sub: which operand the 32-bit OPA scale rescales; the other is shifted left
OPERAND_SCALED = {"opa 32-bit": 0, "opb 32-bit": 1}
UNSCALED_OPERAND_SHIFT = 19  # 8-bit operands: Vela's input shift 20, halved
UBLOCKS = {  # (IFM, OFM) micro-block depths by MACs per cycle (Vela's accelerator configs)
    32: (8, 4), 64: (8, 8), 128: (8, 8), 256: (8, 8), 512: (8, 8),
}  # fmt: skip


class Unsupported(Exception):
    """An operation's field value the model does not execute (becomes a BridgeError)."""

    def __init__(self, op: NpuOperation, what: str) -> None:
        super().__init__(f"operation {op.index} ({op.command}): {what} is not supported by "
                         f"{MODEL_NAME}")  # fmt: skip


# -- the stream and its hardware -----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DecodedStream:
    """A ``cmd_data`` block: its NPU configuration and operations."""

    config: NpuConfig | None
    stream: NpuCommandStream

    def register(self, op: NpuOperation, name: str) -> int:
        """A 16-bit register's value (signed) when ``op`` runs: for the fields the decoded
        operation leaves out (the IFM2 zero point of a scalar operand)."""
        value = 0
        for command in self.stream.commands:
            if command.word >= op.word:
                break
            if command.name == name:
                value = command.param
        return value - 0x10000 if value & 0x8000 else value

    @property
    def shram_bytes(self) -> int:
        """One core's SHRAM (the config word counts every core's: U65-512 has two cores)."""
        if self.config is None:
            return 0
        cores = 2 if self.config.target == "ethos-u65-512" else 1
        return self.config.shram_size * 1024 // cores


def decode_cmd_data(cmd_data: bytes, what: str = "command stream") -> DecodedStream:
    """Decode a ``cmd_data`` block (COP1 header, actions, register commands)."""
    try:
        _fourcc, words, cfg, _npu_id, start = _read_command_stream(memoryview(cmd_data), 0)
    except ParseError as error:
        raise BridgeError(f"{what}: {error}") from None
    config = NpuConfig(cfg) if cfg is not None else None
    if config is not None and config.product == "ethos-u85":
        raise BridgeError(f"{what}: Ethos-U85 command streams are decoded for display only; "
                          f"{MODEL_NAME} executes U55 and U65 streams")  # fmt: skip
    if words is None or start is None:
        raise BridgeError(f"{what}: cmd_data holds no COMMAND_STREAM action")
    try:
        stream = decode_command_stream(read_words(cmd_data[start : start + 4 * words]), what=what)
    except ParseError as error:
        raise BridgeError(f"{what}: {error}") from None
    return DecodedStream(config, stream)


def unsupported_reason(decoded: DecodedStream) -> str | None:
    """Why the model cannot execute this stream (the first operation it lacks), else None."""
    for op in decoded.stream.operations:
        try:
            check_supported(op, decoded)
        except Unsupported as error:
            return str(error)
    return None


def check_supported(op: NpuOperation, decoded: DecodedStream) -> None:
    """Raise :class:`Unsupported` for a field value the model lacks (before running)."""
    if op.kind not in EXECUTED_KINDS:
        raise Unsupported(op, f"kind {op.kind}")
    if op.kind == "dma":
        dma = op.dma
        assert dma is not None
        if dma.source_stride_mode != "1d" or dma.destination_stride_mode != "1d":
            raise Unsupported(op, f"DMA stride mode {dma.source_stride_mode}/"
                                  f"{dma.destination_stride_mode}")  # fmt: skip
        if dma.source_internal:
            raise Unsupported(op, "DMA from internal memory")
        return
    if op.ofm is None:
        return
    assert op.ifm is not None and op.activation is not None
    if op.upscale not in (None, "none"):
        raise Unsupported(op, f"IFM upscale {op.upscale}")
    if op.rounding not in ROUNDINGS:
        raise Unsupported(op, f"OFM rounding {op.rounding}")
    for which, fm in (("IFM", op.ifm), ("IFM2", op.ifm2), ("OFM", op.ofm)):
        if fm is not None and fm.dtype not in MAP_DTYPES:
            raise Unsupported(op, f"{which} precision {fm.dtype}")
    if op.block is not None and op.block.acc_format == "fp s5.10":
        raise Unsupported(op, "accumulator format fp s5.10")
    activation = op.activation
    if activation.function in ("tanh", "sigmoid"):
        raise Unsupported(op, f"activation {activation.function}")
    if activation.clip_range != "ofm precision":
        raise Unsupported(op, f"activation clip range {activation.clip_range}")
    if op.ofm.dtype == "int32" and (activation.minimum, activation.maximum) != INT16_LIMITS:
        raise Unsupported(op, f"an int32 OFM clamped to {activation.minimum}..{activation.maximum}")
    if activation.function == "lut" and op.ofm.dtype != "int8":
        raise Unsupported(op, f"LUT activation with OFM {op.ofm.dtype}")
    if op.kind == "pool":
        if op.mode not in POOL_MODES:
            raise Unsupported(op, f"pooling mode {op.mode}")
        if op.mode != "max" and op.ofm_scale is None:
            raise Unsupported(op, f"{op.mode} pooling without a global OFM scale")
        reduces_depth = op.mode == "sum" and op.ofm.depth == 1  # REDUCE_SUM: over C too
        if op.ifm.depth != op.ofm.depth and not reduces_depth:
            raise Unsupported(op, f"pooling IFM depth {op.ifm.depth} ≠ OFM {op.ofm.depth}")
    if op.kind == "elementwise":
        if op.mode not in ELEMENTWISE_MODES:
            raise Unsupported(op, f"elementwise mode {op.mode}")
        if op.mode in ("add", "sub"):
            check_operand_scaling(op)
    if op.kind in CONVOLUTIONS:
        if op.ifm.dtype != "int8":
            raise Unsupported(op, f"IFM precision {op.ifm.dtype}")
        if len(op.weights) != len(op.scales) or not op.weights:
            raise Unsupported(op, f"{len(op.weights)} weight and {len(op.scales)} scale streams")
        macs = decoded.config.macs_per_cycle if decoded.config else None
        if macs not in UBLOCKS:
            raise Unsupported(op, f"weights for {macs} MACs per cycle")
        if op.kind == "depthwise" and op.ifm.depth != op.ofm.depth:
            raise Unsupported(op, f"depthwise IFM depth {op.ifm.depth} ≠ OFM {op.ofm.depth}")


def check_operand_scaling(op: NpuOperation) -> None:
    """add/sub: "16-bit" mode multiplies each operand by its OPA/OPB scale (no shift);
    the 32-bit modes rescale one 8-bit operand by OPA and shift the other."""
    assert op.ifm is not None and op.opa_scale is not None and op.opb_scale is not None
    if op.ifm_scale_mode == "16-bit":
        if op.opa_scale.shift or op.opb_scale.shift:
            raise Unsupported(op, f"{op.mode} with operand shifts {op.opa_scale.shift}/"
                                  f"{op.opb_scale.shift} in 16-bit scale mode")  # fmt: skip
    elif op.ifm_scale_mode not in OPERAND_SCALED:
        raise Unsupported(op, f"{op.mode} with IFM scale mode {op.ifm_scale_mode}")
    elif op.ifm.dtype != "int8":
        raise Unsupported(op, f"{op.mode} with 32-bit operand scaling of {op.ifm.dtype}")


# -- arithmetic --------------------------------------------------------------------------------


def apply_scale(
    values: np.ndarray, scale: np.ndarray | int, shift: np.ndarray | int, rounding: str
) -> np.ndarray:
    """``values * scale >> shift`` rounded as the rounding mode says: TOSA's
    ``apply_scale_32`` with double rounding (tfl) or single rounding (natural). ``scale``
    is the unsigned 32-bit register value."""
    values = np.asarray(values, dtype=np.int64)
    scale = np.asarray(scale, dtype=np.int64)
    shift = np.asarray(shift, dtype=np.int64)
    if values.size and int(np.abs(values).max()) * int(scale.max(initial=0)) >= 1 << 62:
        raise BridgeError("a rescale's product exceeds 62 bits (accumulator out of range)")
    product = values * scale
    half = np.where(shift > 0, np.left_shift(1, np.maximum(shift - 1, 0)), 0)
    if rounding == "tfl":
        extra = np.where(shift > 31, 1 << 30, 0)
        half = half + np.where(values >= 0, extra, -extra)
    return (product + half) >> shift


def clamp_output(op: NpuOperation, values: np.ndarray) -> np.ndarray:
    """The activation's min/max (not for an int32 OFM), then the OFM precision's range."""
    assert op.activation is not None and op.ofm is not None
    low, high = DTYPE_RANGE[op.ofm.dtype]
    if op.ofm.dtype != "int32":
        low, high = max(low, op.activation.minimum), min(high, op.activation.maximum)
    return np.clip(values, low, high)


def apply_lut(regions: Regions, op: NpuOperation, values: np.ndarray) -> np.ndarray:
    """An int8 table lookup: 256 entries of one byte, from the LUT slot in SHRAM."""
    assert op.activation is not None and op.ofm is not None
    slot = op.activation.lut_index or 0
    start = regions.shram.size - LUT_BYTES + slot * LUT_SLOT
    if start < 0:
        raise BridgeError(f"operation {op.index}: LUT {slot} is not in SHRAM "
                          f"({regions.shram.size} B)")  # fmt: skip
    table = regions.shram[start : start + LUT_SLOT].view(DTYPES[op.ofm.dtype]).astype(np.int64)
    low, _ = DTYPE_RANGE[op.ofm.dtype]
    return table[values - low]


def finish(regions: Regions, op: NpuOperation, acc: np.ndarray, scale, shift) -> np.ndarray:
    """Accumulator to OFM values: rescale, zero point, table lookup, clamp."""
    assert op.ofm is not None and op.activation is not None and op.rounding is not None
    values = apply_scale(acc, scale, shift, op.rounding) + op.ofm.zero_point
    if op.activation.function == "lut":
        low, high = DTYPE_RANGE[op.ofm.dtype]
        values = apply_lut(regions, op, np.clip(values, low, high))
    return clamp_output(op, values)


# -- weights and scales ---------------------------------------------------------------------


@lru_cache(maxsize=256)
def brick_permutation(
    shape: tuple[int, int, int, int],
    ublocks: tuple[int, int],
    ofm_block_depth: int,
    depthwise: bool,
    part_kernel: bool,
    ifm_bits: int,
    decomposition: tuple[int, int],
) -> np.ndarray:
    """For each weight of the decoded stream, its index in the OHWI volume (-1: padding).
    Vela's ``reorder_encode`` of the volume's indices (+1, one byte per plane) tells."""
    from ethosu import mlw_codec

    count = int(np.prod(shape))
    indices = np.arange(1, count + 1, dtype=np.int64)
    planes = max(1, (count.bit_length() + 7) // 8)
    position: np.ndarray | None = None
    for plane in range(planes):
        digits = ((indices >> (8 * plane)) & 0xFF).astype(np.int16).reshape(shape)
        encoded, _ = mlw_codec.reorder_encode(
            ublocks[0], ublocks[1], digits, ofm_block_depth, depthwise, part_kernel, ifm_bits,
            decomposition[0], decomposition[1],
        )  # fmt: skip
        decoded = np.asarray(mlw_codec.decode(bytearray(encoded)), dtype=np.int64)
        contribution = (decoded & 0xFF) << (8 * plane)
        position = contribution if position is None else position + contribution
    assert position is not None
    return position - 1


@dataclass(frozen=True, slots=True)
class ChannelParams:
    weights: np.ndarray  # O×H×W×I int64 (I = 1 for depthwise)
    bias: np.ndarray  # per output channel
    scale: np.ndarray
    shift: np.ndarray


def load_weights(regions: Regions, op: NpuOperation, decoded: DecodedStream) -> ChannelParams:
    """The op's weights (OHWI) and per-channel bias/scale/shift, over every core's stream:
    core k holds output channels k, k + cores, ..."""
    from ethosu import mlw_codec

    assert op.ofm is not None and op.ifm is not None and op.kernel is not None
    assert op.block is not None and decoded.config is not None
    depth, kernel = op.ofm.depth, op.kernel
    cores = len(op.weights)
    ublocks = UBLOCKS[decoded.config.macs_per_cycle]
    depthwise = op.kind == "depthwise"
    in_depth = 1 if depthwise else op.ifm.depth
    weights = np.zeros((depth, kernel.height, kernel.width, in_depth), np.int64)
    bias = np.zeros(depth, np.int64)
    scale = np.zeros(depth, np.int64)
    shift = np.zeros(depth, np.int64)
    ifm_bits = 8 * op.ifm.element_size
    decomposition = (SUBKERNEL_MAX // kernel.dilation_y, SUBKERNEL_MAX // kernel.dilation_x)
    part_kernel = kernel.weight_order == "part kernel first"
    for core, (weight_range, scale_range) in enumerate(zip(op.weights, op.scales, strict=True)):
        channels = np.arange(core, depth, cores)
        what = f"operation {op.index} ({op.command}) core {core}"
        needed = SCALE_RECORD * channels.size
        if scale_range.length < needed:
            raise BridgeError(f"{what}: the scale stream holds {scale_range.length} B, "
                              f"{channels.size} channels need {needed}")  # fmt: skip
        records = regions.read(scale_range.region, scale_range.offset, needed, f"{what} scales")
        rec = records.reshape(channels.size, SCALE_RECORD).astype(np.int64)
        raw_bias = sum(rec[:, i] << (8 * i) for i in range(5))
        bias[channels] = np.where(raw_bias >= 1 << 39, raw_bias - (1 << 40), raw_bias)
        scale[channels] = sum(rec[:, 5 + i] << (8 * i) for i in range(4))
        shift[channels] = rec[:, 9] & 0x3F
        stream = regions.read(weight_range.region, weight_range.offset, weight_range.length,
                              f"{what} weights")  # fmt: skip
        core_block = (op.block.depth + cores - 1 - core) // cores
        shape = (channels.size, kernel.height, kernel.width, in_depth)
        layout = (shape, ublocks, core_block, depthwise, part_kernel, ifm_bits, decomposition)
        key = (stream.tobytes(), layout)
        with _DECODED_LOCK:
            volume = _DECODED_WEIGHTS.get(key)
        if volume is None:
            order = brick_permutation(*layout)
            values = np.asarray(mlw_codec.decode(bytearray(key[0])), dtype=np.int64)
            if values.size < order.size:
                raise BridgeError(f"{what}: the weight stream decodes to {values.size} weights, "
                                  f"the brick order needs {order.size}")  # fmt: skip
            volume = np.zeros(int(np.prod(shape)), np.int64)
            used = order >= 0
            volume[order[used]] = values[: order.size][used]
            with _DECODED_LOCK:  # bridges of parallel runs serve from their own threads
                if len(_DECODED_WEIGHTS) >= DECODED_WEIGHTS_KEPT:
                    _DECODED_WEIGHTS.pop(next(iter(_DECODED_WEIGHTS)))
                _DECODED_WEIGHTS[key] = volume
        weights[channels] = volume.reshape(shape)
    return ChannelParams(weights, bias, scale, shift)


DECODED_WEIGHTS_KEPT = 512  # weight streams: the same bytes decode the same at every invoke
_DECODED_WEIGHTS: dict[tuple, np.ndarray] = {}
_DECODED_LOCK = threading.Lock()


# -- operations -------------------------------------------------------------------------------


def input_extent(op: NpuOperation) -> tuple[int, int]:
    """The IFM's height and width: the hardware derives them from the OFM, the kernel and
    the padding."""
    assert op.ofm is not None and op.kernel is not None
    k = op.kernel
    height = (op.ofm.height - 1) * k.stride_y + (k.height - 1) * k.dilation_y + 1
    width = (op.ofm.width - 1) * k.stride_x + (k.width - 1) * k.dilation_x + 1
    return height - k.pad_top - k.pad_bottom, width - k.pad_left - k.pad_right


def windows(op: NpuOperation, padded: np.ndarray) -> np.ndarray:
    """OFM_H × OFM_W × KH × KW × C views of the padded IFM."""
    assert op.ofm is not None and op.kernel is not None
    k = op.kernel
    oh, ow = op.ofm.height, op.ofm.width
    if k.height == k.width == k.stride_x == k.stride_y == 1:
        return padded[:oh, :ow, None, None, :]
    ys = (np.arange(oh) * k.stride_y)[:, None] + (np.arange(k.height) * k.dilation_y)[None, :]
    xs = (np.arange(ow) * k.stride_x)[:, None] + (np.arange(k.width) * k.dilation_x)[None, :]
    return padded[ys[:, None, :, None], xs[None, :, None, :]]


def padded_ifm(regions: Regions, op: NpuOperation, fill: int) -> np.ndarray:
    """The IFM minus its zero point, padded with ``fill``."""
    assert op.ifm is not None and op.kernel is not None
    height, width = input_extent(op)
    if height <= 0 or width <= 0:
        raise BridgeError(f"operation {op.index} ({op.command}): the padding leaves no IFM")
    ifm = read_feature_map(regions, op.ifm, (height, width, op.ifm.depth),
                           f"operation {op.index} IFM") - op.ifm.zero_point  # fmt: skip
    k = op.kernel
    if not (k.pad_top or k.pad_bottom or k.pad_left or k.pad_right):
        return ifm
    pads = ((k.pad_top, k.pad_bottom), (k.pad_left, k.pad_right), (0, 0))
    return np.pad(ifm, pads, constant_values=fill)


def run_convolution(regions: Regions, op: NpuOperation, decoded: DecodedStream) -> int:
    """Convolution, depthwise convolution, vector product; returns its MACs."""
    assert op.ifm is not None and op.ofm is not None and op.kernel is not None
    ifm = padded_ifm(regions, op, 0)
    params = load_weights(regions, op, decoded)
    patches = windows(op, ifm)  # OH×OW×KH×KW×C
    # float64 sums are exact here (below 2**53: 17-bit inputs, 9-bit weights, 2**20 terms at
    # most per output); einsum's own loops, not BLAS: its threads stall a busy machine
    if patches.shape[2] * patches.shape[3] * patches.shape[4] > 1 << 20:
        raise Unsupported(op, "a kernel of more than 2**20 weights per output")
    if op.kind == "depthwise":
        kernel = np.transpose(params.weights[..., 0], (1, 2, 0)).astype(np.float64)  # KH×KW×C
        acc = np.zeros((op.ofm.height, op.ofm.width, op.ofm.depth), np.float64)
        for ky in range(kernel.shape[0]):
            for kx in range(kernel.shape[1]):
                acc += patches[:, :, ky, kx, :] * kernel[ky, kx]
        macs = acc.size * kernel.shape[0] * kernel.shape[1]
    else:
        flat = patches.reshape(op.ofm.height * op.ofm.width, -1).astype(np.float64)
        kernel = params.weights.reshape(op.ofm.depth, -1).astype(np.float64)
        acc = np.einsum("mk,ok->mo", flat, kernel).reshape(op.ofm.height, op.ofm.width, -1)
        macs = flat.shape[0] * flat.shape[1] * op.ofm.depth
    acc = acc.astype(np.int64)
    values = finish(regions, op, acc + params.bias, params.scale, params.shift)
    write_feature_map(regions, op.ofm, values, f"operation {op.index} OFM")
    return macs


def run_pool(regions: Regions, op: NpuOperation) -> int:
    """Max pooling (padding never wins), average and sum pooling with the global OFM scale
    (Vela sets it whenever there is no padding; padded averages are refused up front); a
    sum into one channel (Vela's REDUCE_SUM) adds the channels up too. Returns its MACs as
    Vela counts them: the kernel's elements per output (per input channel for a sum into
    one channel); a 1×1 pool is a move (Vela's transposes, copies, concatenations): 0."""
    assert op.ifm is not None and op.ofm is not None and op.kernel is not None
    low = np.iinfo(np.int64).min // 4
    patches = windows(op, padded_ifm(regions, op, low if op.mode == "max" else 0))
    acc = patches.max(axis=(2, 3)) if op.mode == "max" else patches.sum(axis=(2, 3))
    if op.ofm.depth != op.ifm.depth:  # a sum over the channels as well (checked up front)
        acc = acc.sum(axis=2, keepdims=True)
    scale, shift = (op.ofm_scale.scale, op.ofm_scale.shift) if op.ofm_scale else (1, 0)
    values = finish(regions, op, acc, scale, shift)
    write_feature_map(regions, op.ofm, values, f"operation {op.index} OFM")
    moved = op.kernel.height * op.kernel.width == 1 and op.ofm.depth == op.ifm.depth
    return 0 if moved else int(patches.size)


def run_elementwise(regions: Regions, op: NpuOperation, decoded: DecodedStream) -> None:
    """Binary add/sub (one operand rescaled by the 32-bit OPA scale, the other shifted),
    mul, min, max; IFM2 broadcast along any axis, or a scalar."""
    assert op.ifm is not None and op.ofm is not None and op.broadcast is not None
    shape = (op.ofm.height, op.ofm.width, op.ofm.depth)
    a = read_feature_map(regions, op.ifm, shape, f"operation {op.index} IFM") - op.ifm.zero_point
    if op.ifm2 is not None:
        ifm2 = op.ifm2
        b = read_feature_map(regions, ifm2, (ifm2.height, ifm2.width, ifm2.depth),
                             f"operation {op.index} IFM2") - ifm2.zero_point  # fmt: skip
        b = np.broadcast_to(b, shape)
    elif op.ifm2_scalar is not None:
        zero_point = decoded.register(op, "NPU_SET_IFM2_ZERO_POINT")
        b = np.full(shape, op.ifm2_scalar - zero_point, np.int64)
    else:
        raise Unsupported(op, "a binary elementwise operation without IFM2")
    if op.broadcast.reversed_operands:
        a, b = b, a
    if op.mode in ("add", "sub"):
        assert op.opa_scale is not None and op.opb_scale is not None
        if op.ifm_scale_mode == "16-bit":
            operands = [a * op.opa_scale.scale, b * op.opb_scale.scale]
        else:
            assert op.ifm_scale_mode is not None
            scaled = OPERAND_SCALED[op.ifm_scale_mode]
            operands = [a << UNSCALED_OPERAND_SHIFT, b << UNSCALED_OPERAND_SHIFT]
            rounding = op.ifm_rounding or "tfl"
            operands[scaled] = apply_scale((a, b)[scaled], op.opa_scale.scale,
                                           op.opa_scale.shift, rounding)  # fmt: skip
        acc = operands[0] + operands[1] if op.mode == "add" else operands[0] - operands[1]
    elif op.mode == "mul":
        acc = a * b
    elif op.mode == "min":
        acc = np.minimum(a, b)
    else:
        acc = np.maximum(a, b)
    scale, shift = (op.ofm_scale.scale, op.ofm_scale.shift) if op.ofm_scale else (1, 0)
    values = finish(regions, op, acc, scale, shift)
    write_feature_map(regions, op.ofm, values, f"operation {op.index} OFM")


def run_dma(regions: Regions, op: NpuOperation) -> None:
    """A 1-D copy between regions, or into SHRAM (a LUT)."""
    assert op.dma is not None
    source, destination = op.dma.source, op.dma.destination
    what = f"operation {op.index} (DMA)"
    data = regions.read(source.region, source.offset, source.length, f"{what} source").copy()
    if op.dma.destination_internal:
        end = destination.offset + data.size
        if end > regions.shram.size:
            raise BridgeError(f"{what}: {data.size} B at SHRAM {destination.offset:#x} runs past "
                              f"its {regions.shram.size} B")  # fmt: skip
        regions.shram[destination.offset : end] = data
        return
    regions.write(destination.region, destination.offset, data, f"{what} destination")


def execute_operation(regions: Regions, op: NpuOperation, decoded: DecodedStream) -> int:
    """Run one operation; its MACs as Vela counts them (convolutions and pooling; 0 for the
    rest), so a run's figure stands beside Vela's ``nn_macs``."""
    check_supported(op, decoded)
    if op.kind in CONVOLUTIONS:
        return run_convolution(regions, op, decoded)
    if op.kind == "pool":
        return run_pool(regions, op)
    if op.kind == "elementwise":
        run_elementwise(regions, op, decoded)
    elif op.kind == "dma":
        run_dma(regions, op)
    return 0  # waits, IRQ, PMU: the model runs every operation to its end, in order


# -- the executor -----------------------------------------------------------------------------


@dataclass(slots=True)
class RunSummary:
    operations: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    macs: int = 0
    bytes_read: int = 0
    bytes_written: int = 0

    def text(self, where: str) -> str:
        """The answer's line (at most MAX_TEXT characters: the kinds go first):
        ``delegate 0: 48 operations (4 conv, 36 pool), 2234567 MACs, 9000 B read,
        3000 B written, executed by etu's Ethos-U model``. The log parser reads it
        (``parsers.runner_log``: NpuInvoke); both change together."""
        kinds = ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in self.counts.items())
        figures = (f"{self.macs} MACs, {self.bytes_read} B read, {self.bytes_written} B "
                   f"written, executed by {MODEL_NAME}")  # fmt: skip
        text = f"{where}: {self.operations} operations ({kinds}), {figures}"
        if len(text) > MAX_TEXT:
            text = f"{where}: {self.operations} operations, {figures}"
        return text


def run_stream(decoded: DecodedStream, memory: BoardMemory, request: InvokeRequest) -> RunSummary:
    """Execute every operation of ``decoded`` on the request's regions; the board's memory
    changes only when all of them ran."""
    regions = Regions(memory, request, shram=np.zeros(decoded.shram_bytes, np.uint8))
    summary = RunSummary()
    for op in decoded.stream.operations:
        try:
            summary.macs += execute_operation(regions, op, decoded)
        except Unsupported as error:
            raise BridgeError(str(error)) from None
        except BridgeError as error:  # every line names its operation
            text = str(error)
            if not text.startswith(f"operation {op.index}"):
                text = f"operation {op.index} ({op.command}): {text}"
            raise BridgeError(text) from None
        summary.operations += 1
        if op.kind not in WAITS:
            summary.counts[op.kind] = summary.counts.get(op.kind, 0) + 1
    regions.flush()
    summary.bytes_read, summary.bytes_written = regions.bytes_read, regions.bytes_written
    return summary


class CommandStreamExecutor:
    """The NPU's part computed by executing each delegate's command stream."""

    name = MODEL_NAME
    refusal: str | None = None  # what the model lacks, when it was insisted on all the same

    def __init__(self, delegates: Sequence[tuple[int, bytes]] = ()) -> None:
        """``delegates``: (index, cmd_data) of the program's delegates, to name them."""
        self.delegates = list(delegates)
        self._decoded: dict[bytes, DecodedStream] = {}

    def decoded(self, cmd_data: bytes, what: str) -> DecodedStream:
        found = self._decoded.get(cmd_data)
        if found is None:
            found = self._decoded[cmd_data] = decode_cmd_data(cmd_data, what)
        return found

    def execute(self, request: InvokeRequest, memory: BoardMemory) -> InvokeAnswer:
        cmd_data = memory.read(request.command_address, request.command_size, "command stream")
        index = next((i for i, data in self.delegates if data == cmd_data), None)
        where = f"delegate {index}" if index is not None else f"invoke {request.sequence}"
        decoded = self.decoded(cmd_data, f"{where} command stream")
        try:
            summary = run_stream(decoded, memory, request)
        except BridgeError as error:
            raise BridgeError(f"{where}: {error}") from None
        return InvokeAnswer(0, summary.text(where))


__all__ = [
    "MODEL_NAME",
    "CommandStreamExecutor",
    "DecodedStream",
    "apply_scale",
    "brick_permutation",
    "decode_cmd_data",
    "run_stream",
    "unsupported_reason",
]
