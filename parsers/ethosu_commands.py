"""The Ethos-U55/U65 register command stream of a delegate, decoded into NPU operations.

The stream (the ``COMMAND_STREAM`` action of ``cmd_data``) is a list of 32-bit words: the
opcode in bits 0-9, bit 14 set when one 32-bit payload word follows (a ``cmd1`` register:
addresses, strides, lengths, scales), a 16-bit parameter in bits 16-31. ``NPU_SET_*``
commands write registers that keep their values; each ``NPU_OP_*`` runs one operation on
the registers as they are then. This module replays the stream and snapshots the registers
at every operation: kind, feature maps, kernel, weight and scale streams, activation,
rounding and block config. Every address and length is checked against the region it
names when that region's size is known (0: the weights, 1: the scratch).

The opcode and field tables are in :mod:`etu.parsers.ethosu_registers`. U85 programs use
another command set: they decode to no operations and a note saying so.
"""

from __future__ import annotations

import operator
import struct
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from etu.parsers.errors import FormatError, ParseError, TruncatedError
from etu.parsers.ethosu import EthosUPayload, NpuConfig, read_command_stream
from etu.parsers.ethosu_registers import (
    ACC_FORMAT,
    ACTIVATION,
    CLIP_RANGE,
    CMD0,
    CMD1,
    DATA_FORMAT,
    ELEMENT_SIZE,
    ELEMENTWISE_MODE,
    IFM_PRECISION,
    IFM_SCALE_MODE,
    LUT_END,
    LUT_START,
    OFM_PRECISION,
    OPCODE_MASK,
    OPERATION_COMMANDS,
    PAYLOAD_SHIFT,
    POOLING_MODE,
    RESAMPLING,
    RESERVED_MASK,
    ROUNDING,
    STRIDE_MODE,
    UNARY_ELEMENTWISE,
)
from etu.parsers.program_facts import DelegateInfo
from etu.parsers.pte import Program

U85_NOTE = "U85 command streams are not decoded yet"
MAX_WORDS = 1 << 24  # the COP1 header's length field


# -- what a stream decodes to ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RegisterCommand:
    """One command of the stream, as written."""

    word: int  # index of its first word in the stream
    code: int  # bits 0-9
    name: str
    param: int  # bits 16-31
    data: int | None  # the payload word of a cmd1 register

    @property
    def byte_offset(self) -> int:
        return self.word * 4


@dataclass(frozen=True, slots=True)
class FeatureMap:
    """An IFM, IFM2 or OFM. ``height``/``width``: the OFM's full size; for an IFM the
    registers give only tile 0's (the hardware derives the rest from the OFM)."""

    region: int
    bases: tuple[int, int, int, int]  # tile base addresses, offsets in the region
    height: int
    width: int
    depth: int
    tile_height0: int
    tile_height1: int
    tile_width0: int
    stride_x: int
    stride_y: int
    stride_c: int
    layout: str  # NHWC / NHCWB16
    dtype: str
    zero_point: int

    @property
    def shape_text(self) -> str:
        return f"{self.height}×{self.width}×{self.depth}"

    @property
    def element_size(self) -> int:
        return ELEMENT_SIZE.get(self.dtype, 1)


@dataclass(frozen=True, slots=True)
class Kernel:
    height: int
    width: int
    stride_x: int
    stride_y: int
    dilation_x: int
    dilation_y: int
    pad_top: int
    pad_left: int
    pad_bottom: int
    pad_right: int
    weight_order: str  # depth first / part kernel first


@dataclass(frozen=True, slots=True)
class ByteRange:
    """A weight or scale stream (or a DMA side): ``length`` bytes at ``offset`` in ``region``."""

    region: int
    offset: int
    length: int


@dataclass(frozen=True, slots=True)
class Activation:
    function: str  # none (clamp only), tanh, sigmoid, lut
    lut_index: int | None
    clip_range: str
    minimum: int
    maximum: int


@dataclass(frozen=True, slots=True)
class Scale:
    scale: int
    shift: int


@dataclass(frozen=True, slots=True)
class BlockConfig:
    height: int
    width: int
    depth: int
    ib_end: int
    ab_start: int
    ifm2_ib_start: int
    acc_format: str
    blockdep: int
    parallel_mode: int


@dataclass(frozen=True, slots=True)
class Dma:
    source: ByteRange
    destination: ByteRange
    source_internal: bool
    destination_internal: bool
    source_stride_mode: str
    destination_stride_mode: str
    size0: int
    size1: int
    skip0: int
    skip1: int
    channel_mode: int


@dataclass(frozen=True, slots=True)
class Broadcast:
    height: bool
    width: bool
    depth: bool
    reversed_operands: bool
    scalar: bool


@dataclass(frozen=True, slots=True)
class NpuOperation:
    """One ``NPU_OP_*`` with the registers it runs on (fields that do not apply are None)."""

    index: int
    word: int  # of its NPU_OP command in the stream
    command: str  # NPU_OP_CONV, ...
    kind: str  # conv, depthwise, vector_product, pool, elementwise, dma, dma_wait, ...
    mode: str | None = None  # pooling (max/avg/sum) or elementwise (add, mul, ...)
    ifm: FeatureMap | None = None
    ifm2: FeatureMap | None = None
    ofm: FeatureMap | None = None
    kernel: Kernel | None = None
    weights: tuple[ByteRange, ...] = ()  # one per core (U65 dual core: two)
    scales: tuple[ByteRange, ...] = ()
    activation: Activation | None = None
    rounding: str | None = None  # the OFM's
    ifm_rounding: str | None = None
    ifm_scale_mode: str | None = None
    ofm_scale: Scale | None = None
    opa_scale: Scale | None = None
    opb_scale: Scale | None = None
    broadcast: Broadcast | None = None
    ifm2_scalar: int | None = None
    upscale: str | None = None
    block: BlockConfig | None = None
    dma: Dma | None = None
    wait: int | None = None  # DMA_WAIT / KERNEL_WAIT: outstanding count; IRQ/PMU: param

    @property
    def weight_bytes(self) -> int:
        return sum(w.length for w in self.weights)

    @property
    def summary(self) -> str:
        """One line, e.g. ``conv 3×3/1 32×32×3 → 32×32×16, weights 608 B``."""
        if self.dma is not None:
            src, dst = self.dma.source, self.dma.destination
            return (f"dma {src.length:,} B region {src.region}+{src.offset:#x} → "
                    f"region {dst.region}+{dst.offset:#x}")  # fmt: skip
        if self.ofm is None:
            return self.kind.replace("_", " ") + ("" if self.wait is None else f" {self.wait}")
        name = self.kind.replace("_", " ") + (f" {self.mode}" if self.mode else "")
        if self.kernel is not None and self.kind != "elementwise":
            k = self.kernel
            stride = f"{k.stride_x}" if k.stride_x == k.stride_y else f"{k.stride_y},{k.stride_x}"
            dilation = f" d{k.dilation_x}" if max(k.dilation_x, k.dilation_y) > 1 else ""
            name += f" {k.height}×{k.width}/{stride}{dilation}"
        inputs = self.ifm.shape_text if self.ifm else "?"
        if self.ifm2 is not None:
            inputs += f" {self.mode or ''} {self.ifm2.shape_text}"
        elif self.ifm2_scalar is not None:
            inputs += f" {self.mode or ''} scalar {self.ifm2_scalar}"
        text = f"{name} {inputs} → {self.ofm.shape_text}"
        if self.weights:
            text += f", weights {self.weight_bytes:,} B"
        if self.activation is not None and self.activation.function != "none":
            text += f", {self.activation.function}"
        return text

    def to_json(self) -> dict:
        record = _plain(self)
        record["summary"] = self.summary
        return {k: v for k, v in record.items() if v is not None and v != ()}


_SCALARS = frozenset({int, float, str, bool, type(None)})
_FIELD_GETTERS: dict[type, tuple[tuple[str, ...], Callable]] = {}


def _plain(value):
    """``dataclasses.asdict`` for these records (numbers, strings, nested records, tuples)
    without its deep copies: ``etu inspect`` of a folder of programs spent most of its time
    in ``asdict``. Each record type's fields are read with one ``attrgetter``, and scalars
    are taken as they are, without a call each."""
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind is tuple:
        return tuple(item if type(item) in _SCALARS else _plain(item) for item in value)
    getter = _FIELD_GETTERS.get(kind)
    if getter is None:
        names = tuple(getattr(kind, "__dataclass_fields__", ()))
        if not names:
            return value
        one = operator.attrgetter(*names)
        read = one if len(names) > 1 else (lambda record: (one(record),))
        getter = _FIELD_GETTERS[kind] = (names, read)
    names, read = getter
    return {
        name: item if type(item) in _SCALARS else _plain(item)
        for name, item in zip(names, read(value), strict=True)
    }


@dataclass(slots=True)
class NpuCommandStream:
    commands: list[RegisterCommand] = field(default_factory=list)
    operations: list[NpuOperation] = field(default_factory=list)
    note: str | None = None  # why there are no operations (U85, external stream)

    def counts(self) -> dict[str, int]:
        """Operations per NPU_OP command, in first-seen order."""
        found: dict[str, int] = {}
        for op in self.operations:
            found[op.command] = found.get(op.command, 0) + 1
        return found


# -- decoding ----------------------------------------------------------------------------


def read_words(data: bytes | memoryview) -> list[int]:
    """Little-endian 32-bit words (the length must be a multiple of 4)."""
    count = len(data) // 4
    return list(struct.unpack_from(f"<{count}I", data)) if count else []


def decode_commands(
    words: Sequence[int], *, what: str = "command stream", base_offset: int | None = None
) -> list[RegisterCommand]:
    """Split ``words`` into commands; an unknown or malformed one raises a ParseError
    naming ``what`` and the word."""
    commands: list[RegisterCommand] = []
    at, end = 0, len(words)
    while at < end:
        word = words[at]
        code, param = word & OPCODE_MASK, word >> 16
        payload = (word >> PAYLOAD_SHIFT) & 3
        if word & RESERVED_MASK or payload > 1:
            raise _error(FormatError, f"{word:#010x} is not a command (reserved bits set)",
                         what, at, base_offset)  # fmt: skip
        table = CMD1 if payload else CMD0
        name = table.get(code)
        if name is None:
            kind = "register (with payload)" if payload else "command"
            raise _error(FormatError, f"unknown {kind} code {code:#05x}", what, at, base_offset)
        data = None
        if payload:
            if at + 1 >= end:
                raise _error(TruncatedError, f"{name} has no payload word: the stream is cut",
                             what, at, base_offset)  # fmt: skip
            data = words[at + 1]
        commands.append(RegisterCommand(at, code, name, param, data))
        at += 2 if payload else 1
    return commands


def decode_command_stream(
    words: Sequence[int],
    *,
    what: str = "command stream",
    regions: Mapping[int, int] | None = None,
    base_offset: int | None = None,
) -> NpuCommandStream:
    """Decode a U55/U65 register command stream. ``regions``: the byte size of each region
    whose size is known (0: weights, 1: scratch); addresses in them are checked.
    ``base_offset``: where word 0 is in the file, for error offsets."""
    if len(words) > MAX_WORDS:
        raise _error(FormatError, f"{len(words)} words: more than a stream can hold", what, 0,
                     base_offset)  # fmt: skip
    commands = decode_commands(words, what=what, base_offset=base_offset)
    if not commands or commands[-1].name != "NPU_OP_STOP":
        at = commands[-1].word if commands else 0
        raise _error(TruncatedError, "the stream does not end with NPU_OP_STOP (cut short?)",
                     what, at, base_offset)  # fmt: skip
    stops = [c for c in commands[:-1] if c.name == "NPU_OP_STOP"]
    if stops:
        raise _error(FormatError, "commands follow NPU_OP_STOP", what, stops[0].word,
                     base_offset)  # fmt: skip
    replay = _Replay(what, dict(regions or {}), base_offset)
    operations = [op for command in commands if (op := replay.step(command)) is not None]
    return NpuCommandStream(commands, operations)


def decode_payload_operations(
    blob: bytes | memoryview,
    payload: EthosUPayload,
    *,
    what: str = "delegate",
    base_offset: int = 0,
    external: Mapping[str, bytes] | None = None,
) -> NpuCommandStream:
    """The operations of a decoded delegate payload (``blob`` is its bytes; ``base_offset``
    its position in the file). ``external``: the bytes of external blocks found in ``.ptd``
    files (block name → payload). U85 streams and unresolved external streams give a note."""
    external = external or {}
    npu = payload.npu
    weights_size = payload.weights_size
    if "weight_data" in payload.external_blocks:
        weights_size = len(external["weight_data"]) if "weight_data" in external else None
    if "cmd_data" in payload.external_blocks:
        cmd = external.get("cmd_data")
        if cmd is None:
            return NpuCommandStream(note="the command stream is in an external .ptd file")
        _fourcc, count, cfg, _npu_id, start = read_command_stream(memoryview(cmd), 0)
        if cfg is not None:
            npu = NpuConfig(cfg)
        view, base, what = memoryview(cmd), None, f"{what} external cmd_data"
    else:
        start, count = payload.command_stream_offset, payload.command_stream_words
        view, base = memoryview(blob), base_offset
    if npu is not None and npu.product == "ethos-u85":
        return NpuCommandStream(note=U85_NOTE)
    if start is None or count is None:
        return NpuCommandStream(note="cmd_data holds no COMMAND_STREAM action")
    if start < 0 or start + 4 * count > len(view):
        raise TruncatedError(
            f"{what} command stream of {count} words runs past the payload",
            field=f"{what} command stream",
            offset=None if base is None else base + start,
        )
    regions = {1: payload.scratch_size} if payload.scratch_size else {}
    if weights_size is not None:
        regions[0] = weights_size
    words = read_words(view[start : start + 4 * count])
    return decode_command_stream(
        words, what=f"{what} command stream", regions=regions,
        base_offset=None if base is None else base + start,
    )  # fmt: skip


@dataclass(slots=True)
class DelegateOperations:
    """A delegate's operations, or why there are none (``note``) or the one-line error."""

    plan: str
    index: int
    stream: NpuCommandStream | None
    error: str | None = None

    def to_json(self) -> dict:
        """The ``npu_operations`` fields of the delegate's ``etu inspect --json`` record."""
        stream = self.stream
        return {
            "npu_operations": [op.to_json() for op in stream.operations] if stream else [],
            "npu_operations_note": stream.note if stream else None,
            "npu_operations_error": self.error,
        }


def delegate_operations(
    program: Program, info: DelegateInfo, external: Mapping[str, bytes] | None = None
) -> DelegateOperations:
    """Decode one delegate's stream (its payload was decoded into ``info``; ``external``:
    its external blocks' bytes); never raises for a bad stream: the error is kept, one
    line, naming the file, delegate and word."""
    plan = info.plan.name
    if info.payload is None:
        return DelegateOperations(plan, info.index, None, None)
    span = program.delegate_span(info.delegate)
    try:
        stream = decode_payload_operations(
            bytes(program.read(span)), info.payload, what=f"delegate {info.index}",
            base_offset=span.offset, external=external,
        )  # fmt: skip
    except ParseError as error:
        return DelegateOperations(plan, info.index, None, str(error.with_source(program.source)))
    return DelegateOperations(plan, info.index, stream)


def program_operations(
    program: Program,
    infos: list[DelegateInfo],
    external: Mapping[tuple[str, int], Mapping[str, bytes]] | None = None,
) -> list[DelegateOperations]:
    """Every Ethos-U delegate's operations, in the order of ``infos``; ``external``: per
    (plan name, delegate index), the bytes of its external blocks."""
    external = external or {}
    return [
        delegate_operations(program, info, external.get((info.plan.name, info.index)))
        for info in infos
        if info.payload is not None
    ]


def _error(
    kind: type[ParseError], message: str, what: str, word: int, base_offset: int | None
) -> ParseError:
    offset = None if base_offset is None else base_offset + 4 * word
    return kind(message, field=f"{what} word {word}", offset=offset)


def _signed16(value: int) -> int:
    return value - 0x10000 if value & 0x8000 else value


class _Replay:
    """The register file as the stream writes it; each NPU_OP reads a snapshot."""

    def __init__(self, what: str, regions: dict[int, int], base_offset: int | None) -> None:
        self.what = what
        self.regions = regions
        self.base_offset = base_offset
        self.cmd0: dict[str, int] = {}
        self.cmd1: dict[str, tuple[int, int]] = {}  # name → (param, data)
        self.word = 0
        self.count = 0  # operations so far

    # register access (unset registers read 0, as after reset)
    def p(self, name: str) -> int:
        return self.cmd0.get(name, 0)

    def d(self, name: str) -> int:
        return self.cmd1.get(name, (0, 0))[1]

    def address(self, name: str) -> int:
        """A cmd1 address: the payload word, bits 32-47 in the parameter (U65's 40 bits)."""
        param, data = self.cmd1.get(name, (0, 0))
        return data | (param << 32)

    def fail(self, message: str) -> ParseError:
        return _error(FormatError, message, self.what, self.word, self.base_offset)

    def step(self, command: RegisterCommand) -> NpuOperation | None:
        if command.data is not None:
            self.cmd1[command.name] = (command.param, command.data)
            return None
        if command.name not in OPERATION_COMMANDS:
            self.cmd0[command.name] = command.param
            return None
        self.word = command.word
        return self.operation(command)

    def operation(self, command: RegisterCommand) -> NpuOperation:
        name, param = command.name, command.param
        index, self.count = self.count, self.count + 1
        base = {"index": index, "word": command.word, "command": name}
        if name == "NPU_OP_DMA_START":
            return NpuOperation(**base, kind="dma", dma=self.dma(param))
        if name in ("NPU_OP_DMA_WAIT", "NPU_OP_KERNEL_WAIT", "NPU_OP_IRQ", "NPU_OP_PMU_MASK"):
            kind = name.removeprefix("NPU_OP_").lower()
            return NpuOperation(**base, kind=kind, wait=param)
        ofm = self.feature_map("OFM", OFM_PRECISION, 0x7)
        common = {
            "ofm": ofm,
            "activation": self.activation(),
            "rounding": ROUNDING.get(self.p("NPU_SET_OFM_PRECISION") >> 14, "reserved"),
            "block": self.block(),
        }
        ifm = self.feature_map("IFM", IFM_PRECISION, 0xF)
        ifm_precision = self.p("NPU_SET_IFM_PRECISION")
        common |= {
            "ifm": ifm,
            "ifm_rounding": ROUNDING.get(ifm_precision >> 14, "reserved"),
            "ifm_scale_mode": IFM_SCALE_MODE.get((ifm_precision >> 8) & 3, "reserved"),
            "upscale": RESAMPLING.get(self.p("NPU_SET_IFM_UPSCALE") & 3, "reserved"),
        }
        global_scale = bool(self.p("NPU_SET_OFM_PRECISION") & 0x100)
        if global_scale:
            common["ofm_scale"] = self.scale("NPU_SET_OFM_SCALE")
        if name == "NPU_OP_ELEMENTWISE":
            mode = ELEMENTWISE_MODE.get(param)
            if mode is None:
                raise self.fail(f"unknown elementwise mode {param}")
            return self.elementwise(base, common, mode)
        kernel = self.kernel()
        if name == "NPU_OP_POOL":
            mode = POOLING_MODE.get(param)
            if mode is None:
                raise self.fail(f"unknown pooling mode {param}")
            return NpuOperation(**base, kind="pool", mode=mode, kernel=kernel, **common)
        weights, scales = self.streams("WEIGHT"), self.streams("SCALE")
        kind = "depthwise" if name == "NPU_OP_DEPTHWISE" else "conv"
        if kind == "conv" and ofm.height == ofm.width == 1 and kernel.height == kernel.width == 1:
            kind = "vector_product"  # a fully connected layer: 1×1 kernel on a 1×1 map
        return NpuOperation(**base, kind=kind, kernel=kernel, weights=weights, scales=scales,
                            **common)  # fmt: skip

    def elementwise(self, base: dict, common: dict, mode: str) -> NpuOperation:
        broadcast = self.p("NPU_SET_IFM2_BROADCAST")
        flags = Broadcast(bool(broadcast & 1), bool(broadcast & 2), bool(broadcast & 4),
                          bool(broadcast & 0x40), bool(broadcast & 0x80))  # fmt: skip
        unary = mode in UNARY_ELEMENTWISE
        ifm2 = scalar = None
        if not unary and flags.scalar:
            scalar = _signed16(self.p("NPU_SET_IFM2_SCALAR"))
        elif not unary:
            ifm2 = self.feature_map("IFM2", IFM_PRECISION, 0xF, flags)
        scales = {}
        if not unary:
            scales = {"opa_scale": self.scale("NPU_SET_OPA_SCALE"),
                      "opb_scale": self.scale("NPU_SET_OPB_SCALE")}  # fmt: skip
        return NpuOperation(**base, kind="elementwise", mode=mode, ifm2=ifm2, ifm2_scalar=scalar,
                            broadcast=None if unary else flags, **scales, **common)  # fmt: skip

    def feature_map(
        self,
        which: str,
        precisions: dict[int, str],
        mask: int,
        broadcast: Broadcast | None = None,
    ) -> FeatureMap:
        """The map's registers; an IFM2 broadcast along an axis has size 1 along it."""
        precision = self.p(f"NPU_SET_{which}_PRECISION")
        dtype = precisions.get(precision & mask)
        if dtype is None:
            raise self.fail(f"{which} precision {precision & mask} is reserved")
        layout = DATA_FORMAT.get((precision >> 6) & 3)
        if layout is None:
            raise self.fail(f"{which} format {(precision >> 6) & 3} is reserved")
        tile_h0 = self.p(f"NPU_SET_{which}_HEIGHT0_M1") + 1
        tile_h1 = self.p(f"NPU_SET_{which}_HEIGHT1_M1") + 1
        tile_w0 = self.p(f"NPU_SET_{which}_WIDTH0_M1") + 1
        if which == "OFM":
            height = self.p("NPU_SET_OFM_HEIGHT_M1") + 1
            width = self.p("NPU_SET_OFM_WIDTH_M1") + 1
            depth = self.p("NPU_SET_OFM_DEPTH_M1") + 1
        else:
            height, width = tile_h0, tile_w0
            # IFM2 has no depth register: it has the IFM's depth, unless broadcast
            depth = self.p("NPU_SET_IFM_DEPTH_M1") + 1
        if broadcast is not None:
            height = 1 if broadcast.height else height
            width = 1 if broadcast.width else width
            depth = 1 if broadcast.depth else depth
        zero_point = self.p(f"NPU_SET_{which}_ZERO_POINT")
        fm = FeatureMap(
            region=self.p(f"NPU_SET_{which}_REGION") & 0x7,
            bases=tuple(self.address(f"NPU_SET_{which}_BASE{i}") for i in range(4)),  # type: ignore[arg-type]
            height=height, width=width, depth=depth,
            tile_height0=tile_h0, tile_height1=tile_h1, tile_width0=tile_w0,
            stride_x=self.address(f"NPU_SET_{which}_STRIDE_X"),
            stride_y=self.address(f"NPU_SET_{which}_STRIDE_Y"),
            stride_c=self.address(f"NPU_SET_{which}_STRIDE_C"),
            layout=layout, dtype=dtype,
            zero_point=_signed16(zero_point) if dtype.startswith("int") else zero_point,
        )  # fmt: skip
        self.check_feature_map(which, fm)
        return fm

    def check_feature_map(self, which: str, fm: FeatureMap) -> None:
        """Every tile the map uses must lie inside its region (when its size is known)."""
        size = self.regions.get(fm.region)
        if size is None:
            return
        element = fm.element_size
        if fm.layout == "NHCWB16":
            channels = ((fm.depth - 1) // 16) * fm.stride_c + 16 * element
        else:
            channels = (fm.depth - 1) * fm.stride_c + element
        rows = [(0, min(fm.height, fm.tile_height0))]
        if fm.height > fm.tile_height0:
            rows.append((2, fm.height - fm.tile_height0))
        for tile, height in rows:
            widths = [(tile, min(fm.width, fm.tile_width0))]
            if fm.width > fm.tile_width0:
                widths.append((tile + 1, fm.width - fm.tile_width0))
            for number, width in widths:
                base = fm.bases[number]
                end = base + (height - 1) * fm.stride_y + (width - 1) * fm.stride_x + channels
                if end > size:
                    raise self.fail(f"{which} tile {number} ends at {end:#x}, past region "
                                    f"{fm.region} ({size:,} B)")  # fmt: skip

    def check_range(self, what: str, span: ByteRange) -> None:
        size = self.regions.get(span.region)
        if size is not None and span.offset + span.length > size:
            raise self.fail(f"{what} {span.offset:#x}+{span.length:,} B runs past region "
                            f"{span.region} ({size:,} B)")  # fmt: skip

    def kernel(self) -> Kernel:
        stride = self.p("NPU_SET_KERNEL_STRIDE")
        dilation_x, dilation_y = 1 + ((stride >> 3) & 1), 1 + ((stride >> 4) & 1)
        return Kernel(
            height=self.p("NPU_SET_KERNEL_HEIGHT_M1") // dilation_y + 1,
            width=self.p("NPU_SET_KERNEL_WIDTH_M1") // dilation_x + 1,
            stride_x=1 + ((stride & 1) | (((stride >> 6) & 1) << 1)),
            stride_y=1 + (((stride >> 1) & 1) | (((stride >> 9) & 1) << 1)),
            dilation_x=dilation_x,
            dilation_y=dilation_y,
            pad_top=self.p("NPU_SET_IFM_PAD_TOP"),
            pad_left=self.p("NPU_SET_IFM_PAD_LEFT"),
            pad_bottom=self.p("NPU_SET_IFM_PAD_BOTTOM"),
            pad_right=self.p("NPU_SET_IFM_PAD_RIGHT"),
            weight_order="part kernel first" if stride & 4 else "depth first",
        )

    def streams(self, which: str) -> tuple[ByteRange, ...]:
        """The weight (or scale) stream of each core: core 1's only when it has a length."""
        region = self.p(f"NPU_SET_{which}_REGION") & 0x7
        found = [ByteRange(region, self.address(f"NPU_SET_{which}_BASE"),
                           self.d(f"NPU_SET_{which}_LENGTH"))]  # fmt: skip
        if f"NPU_SET_{which}1_BASE" in self.cmd1 and self.d(f"NPU_SET_{which}1_LENGTH"):
            found.append(ByteRange(region, self.address(f"NPU_SET_{which}1_BASE"),
                                   self.d(f"NPU_SET_{which}1_LENGTH")))  # fmt: skip
        for number, span in enumerate(found):
            self.check_range(f"{which.lower()} stream {number}", span)
        return tuple(found)

    def activation(self) -> Activation:
        value = self.p("NPU_SET_ACTIVATION")
        function, clip = value & 0xFFF, value >> 12
        lut = function - LUT_START if LUT_START <= function <= LUT_END else None
        name = "lut" if lut is not None else ACTIVATION.get(function)
        if name is None:
            raise self.fail(f"unknown activation function {function}")
        return Activation(
            function=name,
            lut_index=lut,
            clip_range=CLIP_RANGE.get(clip, "reserved"),
            minimum=_signed16(self.p("NPU_SET_ACTIVATION_MIN")),
            maximum=_signed16(self.p("NPU_SET_ACTIVATION_MAX")),
        )

    def scale(self, name: str) -> Scale:
        param, data = self.cmd1.get(name, (0, 0))
        return Scale(scale=data, shift=param)

    def block(self) -> BlockConfig:
        return BlockConfig(
            height=self.p("NPU_SET_OFM_BLK_HEIGHT_M1") + 1,
            width=self.p("NPU_SET_OFM_BLK_WIDTH_M1") + 1,
            depth=self.p("NPU_SET_OFM_BLK_DEPTH_M1") + 1,
            ib_end=self.p("NPU_SET_IFM_IB_END"),
            ab_start=self.p("NPU_SET_AB_START"),
            ifm2_ib_start=self.p("NPU_SET_IFM2_IB_START"),
            acc_format=ACC_FORMAT.get(self.p("NPU_SET_ACC_FORMAT") & 3, "reserved"),
            blockdep=self.p("NPU_SET_BLOCKDEP"),
            parallel_mode=self.p("NPU_SET_PARALLEL_MODE"),
        )

    def dma(self, channel_mode: int) -> Dma:
        src_region = self.p("NPU_SET_DMA0_SRC_REGION")
        dst_region = self.p("NPU_SET_DMA0_DST_REGION")
        length = self.address("NPU_SET_DMA0_LEN")
        source = ByteRange(src_region & 0xFF, self.address("NPU_SET_DMA0_SRC"), length)
        destination = ByteRange(dst_region & 0xFF, self.address("NPU_SET_DMA0_DST"), length)
        src_mode = STRIDE_MODE.get((src_region >> 9) & 3, "reserved")
        dst_mode = STRIDE_MODE.get((dst_region >> 9) & 3, "reserved")
        src_internal, dst_internal = bool(src_region & 0x100), bool(dst_region & 0x100)
        if src_mode == "1d" and not src_internal:
            self.check_range("DMA source", source)
        if dst_mode == "1d" and not dst_internal:
            self.check_range("DMA destination", destination)
        return Dma(
            source=source,
            destination=destination,
            source_internal=src_internal,
            destination_internal=dst_internal,
            source_stride_mode=src_mode,
            destination_stride_mode=dst_mode,
            size0=self.p("NPU_SET_DMA0_SIZE0"),
            size1=self.p("NPU_SET_DMA0_SIZE1"),
            skip0=self.address("NPU_SET_DMA0_SKIP0"),
            skip1=self.address("NPU_SET_DMA0_SKIP1"),
            channel_mode=channel_mode,
        )


__all__ = [
    "DelegateOperations",
    "NpuCommandStream",
    "NpuOperation",
    "RegisterCommand",
    "decode_command_stream",
    "decode_commands",
    "decode_payload_operations",
    "delegate_operations",
    "program_operations",
    "read_words",
]
