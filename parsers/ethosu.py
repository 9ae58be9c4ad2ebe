"""The Ethos-U delegate payload: Vela's ``vela_bin_stream`` blob inside a ``.pte``.

A sequence of blocks, each a 32-byte header (16-byte name, uint32 size, external flag,
reserved) and a payload padded to 16 bytes, from ``vela_bin_stream`` to
``vela_end_stream``. Written by ``backends/arm/arm_vela.py``; read on the device by
``VelaBinStream.cpp``. One decoder covers ExecuTorch 0.4 to 1.5 (see ``layout``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum

from construct import Array, Bytes, Int8ul, Int16ul, Int32sl, Int32ul, Struct

from etu.parsers.errors import FormatError, TruncatedError, as_parse_errors

ETHOSU_BACKEND_IDS = ("EthosUBackend", "ArmBackend")  # ArmBackend in ExecuTorch 0.4/0.5
STREAM_HEADER = "vela_bin_stream"
STREAM_FOOTER = "vela_end_stream"
KNOWN_BLOCKS = {
    STREAM_HEADER, "cmd_data", "weight_data", "scratch_size", "scratch_data",
    "inputs", "outputs", STREAM_FOOTER,
}  # fmt: skip

BLOCK_HEADER = Struct(
    "name" / Bytes(16),
    "size" / Int32ul,
    "external" / Int8ul,
    "reserved" / Bytes(11),
)
BLOCK_HEADER_SIZE = BLOCK_HEADER.sizeof()

# Since ExecuTorch 1.0 (Vela 4.4) shapes are 6-D; 0.4–0.7 wrote 4-D shapes.
VELA_IO = {
    dims: Struct(
        "shape" / Array(dims, Int32sl),
        "elem_size" / Int32sl,
        "offset" / Int32sl,
        "region" / Int32sl,
    )
    for dims in (6, 4)
}
VELA_IOS = Struct("count" / Int32sl)

# The driver's "custom operator payload": FourCC, then 32-bit driver actions.
COP_ACTION = Struct("action" / Int8ul, "reserved" / Int8ul, "data" / Int16ul)
OPTIMIZER_CONFIG = Struct("cfg" / Int32ul, "id" / Int32ul)


class CopAction(IntEnum):
    """The driver actions of a custom operator payload (ethosu_driver.c)."""

    OPTIMIZER_CONFIG = 1
    COMMAND_STREAM = 2
    NOP = 5


ACTION_OPTIMIZER_CONFIG = CopAction.OPTIMIZER_CONFIG
ACTION_COMMAND_STREAM = CopAction.COMMAND_STREAM
ACTION_NOP = CopAction.NOP
COMMAND_STREAM_FORMATS = ("COP1", "COP2")
# Product field (bits 28-31) of the OPTIMIZER_CONFIG word. Checked on real programs from
# ethos-u-vela 5.1.0: U55 0x1807, U65 0x10003008, U85 0x20000118 (all with FourCC COP1).


class NpuProduct(IntEnum):
    ETHOS_U55 = 0
    ETHOS_U65 = 1
    ETHOS_U85 = 2


NPU_PRODUCTS = {product: product.name.lower().replace("_", "-") for product in NpuProduct}


@dataclass(frozen=True, slots=True)
class NpuConfig:
    """The hardware a command stream was compiled for; the driver checks it at run time."""

    word: int

    @property
    def macs_per_cycle(self) -> int:
        return 1 << (self.word & 0xF)

    @property
    def command_stream_version(self) -> int:
        return (self.word >> 4) & 0xF

    @property
    def shram_size(self) -> int:
        return (self.word >> 8) & 0xFF

    @property
    def product(self) -> str | None:
        return NPU_PRODUCTS.get(self.word >> 28)

    @property
    def target(self) -> str | None:
        """The ExecuTorch target name, e.g. ``ethos-u55-128``."""
        return f"{self.product}-{self.macs_per_cycle}" if self.product else None


@dataclass(frozen=True, slots=True)
class VelaBlock:
    name: str
    offset: int  # of the block header, inside the blob
    size: int  # payload bytes, unpadded
    external: bool

    @property
    def payload_offset(self) -> int:
        return self.offset + BLOCK_HEADER_SIZE


@dataclass(frozen=True, slots=True)
class VelaIO:
    shape: tuple[int, ...]
    elem_size: int
    offset: int
    region: int

    @property
    def nbytes(self) -> int:
        n = self.elem_size
        for s in self.shape:
            n *= max(s, 0)
        return n


@dataclass(slots=True)
class EthosUPayload:
    size: int
    blocks: list[VelaBlock]
    command_stream_format: str | None  # 'COP1' / 'COP2'; None when the block is external
    command_stream_size: int  # bytes of the cmd_data block
    command_stream_words: int | None  # register command stream length in 32-bit words
    npu_config: int | None  # OPTIMIZER_CONFIG cfg word, checked against the NPU at run time
    npu_id: int | None
    weights_size: int
    scratch_size: int
    fast_scratch_size: int | None  # not packed into the blob: a property of the runner build
    inputs: list[VelaIO]
    outputs: list[VelaIO]
    layout: str  # which ExecuTorch generation wrote it
    external_blocks: dict[str, str] = field(default_factory=dict)  # block → named-data key
    warnings: list[str] = field(default_factory=list)
    command_stream_offset: int | None = None  # of the first register command, in the blob

    @property
    def npu(self) -> NpuConfig | None:
        return NpuConfig(self.npu_config) if self.npu_config is not None else None

    @property
    def target(self) -> str | None:
        """Target the command stream was built for, from its OPTIMIZER_CONFIG word."""
        return self.npu.target if self.npu else None


def is_ethosu_delegate(backend_id: str) -> bool:
    return backend_id in ETHOSU_BACKEND_IDS


def decode_ethosu_payload(blob: bytes | memoryview, base_offset: int = 0) -> EthosUPayload:
    """Decode a ``vela_bin_stream`` blob. ``base_offset`` is its position in the file,
    so errors name file offsets."""
    with as_parse_errors():
        return _decode(memoryview(blob), base_offset)


def _decode(view: memoryview, base_offset: int) -> EthosUPayload:
    blocks = _read_blocks(view, base_offset)
    by_name = {block.name: block for block in blocks}
    warnings: list[str] = []
    unknown = [b.name for b in blocks if b.name not in KNOWN_BLOCKS]
    if unknown:
        warnings.append(f"unknown blocks {unknown}: the runtime rejects them (InvalidProgram)")

    def payload(block: VelaBlock) -> memoryview:
        return view[block.payload_offset : block.payload_offset + block.size]

    external = {b.name: bytes(payload(b)).decode("ascii", "replace") for b in blocks if b.external}

    cmd = by_name.get("cmd_data")
    fmt = words = cfg = npu_id = stream_at = None
    if cmd is None:
        raise FormatError("no cmd_data block", field="vela_bin_stream", offset=base_offset)
    if not cmd.external:
        fmt, words, cfg, npu_id, stream_at = read_command_stream(
            payload(cmd), base_offset + cmd.payload_offset
        )
        stream_at = None if stream_at is None else cmd.payload_offset + stream_at

    scratch_size = 0
    layout = "ExecuTorch ≥0.7 (runtime-allocated scratch)"
    if "scratch_size" in by_name:
        block = by_name["scratch_size"]
        if block.size != 4:
            raise FormatError(
                f"scratch_size block holds {block.size} bytes, expected 4",
                field="scratch_size",
                offset=base_offset + block.offset,
            )
        scratch_size = Int32ul.parse(payload(block))
    elif "scratch_data" in by_name:
        scratch_size = by_name["scratch_data"].size
        layout = "ExecuTorch ≤0.6 (scratch_data block inside the program)"

    inputs, dims_in = _read_ios(by_name.get("inputs"), view, base_offset)
    outputs, dims_out = _read_ios(by_name.get("outputs"), view, base_offset)
    if 4 in (dims_in, dims_out):
        layout = layout if "≤0.6" in layout else "ExecuTorch 0.7 (4-D I/O shapes)"
    weights = by_name.get("weight_data")
    return EthosUPayload(
        size=len(view),
        blocks=blocks,
        command_stream_format=fmt,
        command_stream_size=cmd.size,
        command_stream_words=words,
        npu_config=cfg,
        npu_id=npu_id,
        weights_size=weights.size if weights else 0,
        scratch_size=scratch_size,
        fast_scratch_size=None,
        inputs=inputs,
        outputs=outputs,
        layout=layout,
        external_blocks=external,
        warnings=warnings,
        command_stream_offset=stream_at,
    )


def _read_blocks(view: memoryview, base_offset: int) -> list[VelaBlock]:
    blocks: list[VelaBlock] = []
    position = 0
    end = len(view)
    while position < end:
        if position + BLOCK_HEADER_SIZE > end:
            raise TruncatedError(
                f"block header needs {BLOCK_HEADER_SIZE} bytes, {end - position} left",
                field="vela_bin_stream block",
                offset=base_offset + position,
            )
        header = BLOCK_HEADER.parse(view[position : position + BLOCK_HEADER_SIZE])
        name = header.name.split(b"\0", 1)[0].decode("ascii", "replace")
        payload_end = position + BLOCK_HEADER_SIZE + header.size
        if payload_end > end:
            raise TruncatedError(
                f"block {name!r} holds {header.size} bytes, past the end of the blob",
                field=f"vela block {name!r}",
                offset=base_offset + position,
            )
        if not blocks and name != STREAM_HEADER:
            raise FormatError(
                f"first block is {name!r}, expected {STREAM_HEADER!r} (not a Vela blob)",
                field="vela_bin_stream header",
                offset=base_offset,
            )
        blocks.append(VelaBlock(name, position, header.size, bool(header.external)))
        position = payload_end + (-header.size % 16)
        if name == STREAM_FOOTER:
            break
    if not blocks or blocks[-1].name != STREAM_FOOTER:
        raise TruncatedError(
            f"no {STREAM_FOOTER!r} block: the blob is cut short",
            field="vela_bin_stream footer",
            offset=base_offset + position,
        )
    if position != end:
        raise FormatError(
            f"{end - position} bytes follow {STREAM_FOOTER!r}; the runtime needs it last",
            field="vela_bin_stream footer",
            offset=base_offset + position,
        )
    return blocks


def read_command_stream(
    cmd: memoryview, offset: int
) -> tuple[str, int | None, int | None, int | None, int | None]:
    """(FourCC, stream words, config word, NPU id, where the stream starts in ``cmd``) of a
    ``cmd_data`` payload; ``offset``: its position in the file, for errors."""
    if len(cmd) < 4:
        raise TruncatedError("cmd_data is shorter than its FourCC", field="cmd_data", offset=offset)
    fourcc = bytes(cmd[:4]).decode("ascii", "replace")
    if fourcc not in COMMAND_STREAM_FORMATS:
        raise FormatError(
            f"cmd_data starts with {fourcc!r}, expected 'COP1' or 'COP2'",
            field="cmd_data",
            offset=offset,
        )
    words = cfg = npu_id = start = None
    position = 4
    while position + 4 <= len(cmd):
        action = COP_ACTION.parse(cmd[position : position + 4])
        position += 4
        if action.action == ACTION_OPTIMIZER_CONFIG and position + 8 <= len(cmd):
            config = OPTIMIZER_CONFIG.parse(cmd[position : position + 8])
            cfg, npu_id = config.cfg, config.id
            position += 8
        elif action.action == ACTION_COMMAND_STREAM:
            # Vela puts bits 16-23 of the length in the "reserved" byte (driver_actions.py)
            words, start = action.data | (action.reserved << 16), position
            if position + 4 * words > len(cmd):
                raise TruncatedError(
                    f"command stream of {words} words runs past cmd_data",
                    field="cmd_data command stream",
                    offset=offset + position - 4,
                )
            position += 4 * words
        elif action.action != ACTION_NOP:
            break  # an action we do not know: stop rather than guess its length
    return fourcc, words, cfg, npu_id, start


_read_command_stream = read_command_stream  # the name runner/npu_model.py imports


def _read_ios(
    block: VelaBlock | None, view: memoryview, base_offset: int
) -> tuple[list[VelaIO], int | None]:
    if block is None:
        return [], None
    what = f"vela block {block.name!r}"
    data = view[block.payload_offset : block.payload_offset + block.size]
    if block.size < 4:
        raise TruncatedError("I/O block is shorter than its count", field=what,
                             offset=base_offset + block.offset)  # fmt: skip
    count = VELA_IOS.parse(data).count
    if count == 0:
        return [], None
    entry = (block.size - 4) // count if count > 0 else 0
    dims = {36: 6, 28: 4}.get(entry)
    if count < 0 or dims is None or 4 + count * entry != block.size:
        raise FormatError(
            f"{count} entries do not fit {block.size} bytes as 28- or 36-byte VelaIO records",
            field=what,
            offset=base_offset + block.payload_offset,
        )
    records = Array(count, VELA_IO[dims]).parse(data[4:])
    ios = [VelaIO(tuple(r.shape), r.elem_size, r.offset, r.region) for r in records]
    return ios, dims


__all__ = [
    "EthosUPayload",
    "NpuConfig",
    "VelaBlock",
    "VelaIO",
    "decode_ethosu_payload",
    "is_ethosu_delegate",
    "read_command_stream",
]
