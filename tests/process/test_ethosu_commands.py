"""The Ethos-U command stream decoder (issue 23 §1): its tables against Vela's enums, every
test program's streams against the listing Vela prints of the stream it generates
(``--verbose-register-command-stream``), operation by operation and field by field, and
one-line errors for truncated or corrupt streams."""

from __future__ import annotations

import hashlib
import json
import re
import struct
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from etu.parsers.errors import FormatError, ParseError, TruncatedError
from etu.parsers.ethosu import decode_ethosu_payload
from etu.parsers.ethosu_commands import (
    U85_NOTE,
    NpuCommandStream,
    NpuOperation,
    decode_command_stream,
    decode_payload_operations,
)
from etu.parsers.ethosu_registers import (
    ACTIVATION,
    CLIP_RANGE,
    CMD0,
    CMD1,
    ELEMENTWISE_MODE,
    IFM_PRECISION,
    OFM_PRECISION,
    POOLING_MODE,
    ROUNDING,
)
from etu.parsers.program_facts import delegates
from etu.parsers.pte import open_program

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "etu_tui" / "demo"


# -- the tables ------------------------------------------------------------------------


def test_tables_match_velas_enums() -> None:
    regs = pytest.importorskip("ethosu.vela.ethos_u55_regs.ethos_u55_regs")
    assert {e.value: e.name for e in regs.cmd0} == CMD0
    assert {e.value: e.name for e in regs.cmd1} == CMD1
    assert {v: k for k, v in POOLING_MODE.items()} == {
        {"MAX": "max", "AVERAGE": "avg", "REDUCE_SUM": "sum"}[e.name]: e.value
        for e in regs.pooling_mode
    }
    assert {e.value: e.name.lower() for e in regs.elementwise_mode} == ELEMENTWISE_MODE
    assert {e.value: _dtype(e.name) for e in regs.ifm_precision} == IFM_PRECISION
    assert {e.value: _dtype(e.name) for e in regs.ofm_precision} == OFM_PRECISION
    assert {e.value: e.name.lower() for e in regs.rounding} == ROUNDING
    assert {e.value: e.name.lower().replace("_", " ") for e in regs.clip_range} == CLIP_RANGE
    named = {e.value: e.name.lower() for e in regs.activation if "LUT" not in e.name}
    assert named == ACTIVATION
    assert (regs.activation.LUT_START.value, regs.activation.LUT_END.value) == (16, 23)


def _dtype(name: str) -> str:
    return {"U": "uint", "S": "int"}[name[0]] + name[1:]


# -- the demo --------------------------------------------------------------------------


def _program_streams(pte: Path) -> list[tuple[int, bytes, NpuCommandStream]]:
    """(delegate index, payload, decoded stream) of each Ethos-U delegate of ``pte``."""
    found = []
    with open_program(pte) as program:
        for info in delegates(program):
            if info.payload is None:
                continue
            blob = bytes(program.delegate_payload(info.delegate))
            span = program.delegate_span(info.delegate)
            stream = decode_payload_operations(
                blob, info.payload, what=f"delegate {info.index}", base_offset=span.offset
            )
            found.append((info.index, blob, stream))
    return found


def test_the_demo_delegate_is_48_operations() -> None:
    """ethosu_emulation.md: 5 NPU_OP_CONV, 36 NPU_OP_POOL, 3 DMA start/wait pairs and a
    kernel wait; the first conv reads 32×32×3 and writes 32×32×16."""
    ((_, _, stream),) = _program_streams(DEMO / "demo_cnn.pte")
    assert stream.counts() == {
        "NPU_OP_POOL": 36,
        "NPU_OP_DMA_START": 3,
        "NPU_OP_DMA_WAIT": 3,
        "NPU_OP_CONV": 5,
        "NPU_OP_KERNEL_WAIT": 1,
    }
    assert len(stream.operations) == 48
    conv = next(op for op in stream.operations if op.command == "NPU_OP_CONV")
    assert conv.summary == "conv 3×3/1 32×32×3 → 32×32×16, weights 608 B"
    assert conv.kernel is not None and conv.kernel.pad_top == 1
    assert conv.ifm is not None and conv.ifm.dtype == "int8" and conv.ifm.zero_point == -128
    assert conv.ofm is not None and conv.ofm.layout == "NHCWB16"
    assert stream.operations[-1].kind == "vector_product"
    assert [op.mode for op in stream.operations if op.kind == "pool"].count("max") == 2


# -- against Vela's own listing --------------------------------------------------------

COMMAND_LINE = re.compile(
    r"^0x(?P<offset>[0-9a-f]+): +(?:(?P<data>[0-9a-f]{8}) )?(?P<param>[0-9a-f]{4}) "
    r"(?P<code>[0-9a-f]{4}) - (?P<name>\w+) +(?P<value>\d+)(?:, (?P<fields>.*))?$"
)
COMMENT_KERNEL = re.compile(
    r"size=(\d+),(\d+) stride=(\d+),(\d+), dilation=(\d+),(\d+) "
    r"padding=\[t:(\d+),l:(\d+),b:(\d+),r:(\d+)"
)
COMMENT_DMA = re.compile(
    r"DMA src: .*?address: (0x[0-9a-f]+), dest: .*?address: (0x[0-9a-f]+),"
    r" .*length: (\d+)"
)


@dataclass
class ListedCommand:
    offset: int
    code: int  # with the payload bit, as Vela prints it
    param: int
    data: int | None
    name: str
    fields: dict[str, str]
    comment: str | None  # Vela's note about the operation (on its NPU_OP command)


@dataclass
class Listing:
    words: int
    commands: list[ListedCommand] = field(default_factory=list)


def parse_listing(text: str) -> Listing:
    """Vela's ``--verbose-register-command-stream`` print (one stream)."""
    head = re.search(r"Register command stream: (\d+) words", text)
    assert head, "Vela printed no register command stream"
    listing, comment = Listing(int(head.group(1))), None
    for line in text[head.end() :].splitlines():
        if line.startswith("// "):
            comment = line[3:]
            continue
        match = COMMAND_LINE.match(line)
        if not match:
            continue
        fields = {}
        for part in (match["fields"] or "").split(", "):
            if " = " in part:
                key, value = part.split(" = ", 1)
                fields[key] = value
        data = int(match["data"], 16) if match["data"] else None
        # Vela's note comes before the registers of its operation: it belongs to the next
        # NPU_OP that is not a wait
        starts = match["name"].startswith("NPU_OP_") and "WAIT" not in match["name"]
        listing.commands.append(
            ListedCommand(
                int(match["offset"], 16),
                int(match["code"], 16),
                int(match["param"], 16),
                data,
                match["name"],
                fields,
                comment if starts else None,
            )
        )
        comment = None if starts else comment
    return listing


def vela_listing(tosa: Path, flags: list[str], scratch: Path) -> Listing:
    flags = [f for f in flags if f and not f.startswith("--output-dir")]
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "ethosu.vela",
            *flags,
            "--verbose-register-command-stream",
            f"--output-dir={scratch}",
            str(tosa),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    return parse_listing(result.stdout)


class Mismatches:
    def __init__(self, where: str) -> None:
        self.where = where
        self.found: list[str] = []

    def check(self, label: str, ours: object, vela: object) -> None:
        if ours != vela:
            self.found.append(f"{self.where} {label}: etu {ours!r}, Vela {vela!r}")


def _number(text: str) -> int:
    return int(text, 0)


def compare_with_listing(stream: NpuCommandStream, listing: Listing, where: str) -> list[str]:
    """Every command, then every operation's fields against the registers as Vela lists
    them; the list of differences (empty when etu reads the stream as Vela wrote it)."""
    out = Mismatches(where)
    out.check("command count", len(stream.commands), len(listing.commands))
    for ours, vela in zip(stream.commands, listing.commands, strict=False):
        code = ours.code | (0x4000 if ours.data is not None else 0)
        out.check(
            f"command at {vela.offset:#x}",
            (ours.byte_offset, code, ours.param, ours.data, ours.name),
            (vela.offset, vela.code, vela.param, vela.data, vela.name),
        )
    state: dict[str, ListedCommand] = {}
    operations = iter(stream.operations)
    for vela in listing.commands:
        if not vela.name.startswith("NPU_OP_"):
            state[vela.name] = vela
            continue
        if vela.name == "NPU_OP_STOP":
            continue
        op = next(operations, None)
        if op is None:
            out.check(f"operation at {vela.offset:#x}", None, vela.name)
            break
        out.where = f"{where} op {op.index} ({vela.name} at {vela.offset:#x})"
        out.check("word", op.word * 4, vela.offset)
        _compare_operation(op, vela, state, out)
    return out.found


def _field(state: dict[str, ListedCommand], name: str, key: str, default: str = "0") -> str:
    command = state.get(name)
    return command.fields.get(key, default) if command else default


def _compare_operation(
    op: NpuOperation, vela: ListedCommand, state: dict[str, ListedCommand], out: Mismatches
) -> None:
    def value(name: str, key: str) -> int:
        return _number(_field(state, name, key))

    out.check("command", op.command, vela.name)
    if op.kind == "dma":
        assert op.dma is not None
        src, dst = op.dma.source, op.dma.destination
        out.check(
            "dma source",
            (src.region, src.offset),
            (value("NPU_SET_DMA0_SRC_REGION", "region"), value("NPU_SET_DMA0_SRC", "addr")),
        )
        out.check(
            "dma destination",
            (dst.region, dst.offset),
            (value("NPU_SET_DMA0_DST_REGION", "region"), value("NPU_SET_DMA0_DST", "addr")),
        )
        out.check("dma length", src.length, value("NPU_SET_DMA0_LEN", "addr"))
        internal = _field(state, "NPU_SET_DMA0_DST_REGION", "region_mode").endswith("INTERNAL")
        out.check("dma destination internal", op.dma.destination_internal, internal)
        mode = _field(state, "NPU_SET_DMA0_SRC_REGION", "stride_mode", "DMA_STRIDE_MODE_D1")
        out.check("dma stride mode", op.dma.source_stride_mode, mode[-2:].lower()[::-1])
        if vela.comment:
            match = COMMENT_DMA.search(vela.comment)
            assert match, vela.comment
            out.check(
                "dma (Vela's note)",
                (src.offset, dst.offset, src.length),
                (_number(match[1]), _number(match[2]), int(match[3])),
            )
        return
    if op.wait is not None:
        out.check("wait", op.wait, vela.param)
        return
    for which, fm in (("IFM", op.ifm), ("OFM", op.ofm), ("IFM2", op.ifm2)):
        if fm is None:
            continue
        prefix = f"NPU_SET_{which}_"
        out.check(f"{which} region", fm.region, value(prefix + "REGION", "region"))
        out.check(
            f"{which} bases", fm.bases, tuple(value(f"{prefix}BASE{i}", "addr") for i in range(4))
        )
        out.check(
            f"{which} tiles",
            (fm.tile_height0, fm.tile_height1, fm.tile_width0),
            (
                value(prefix + "HEIGHT0_M1", "height_m1") + 1,
                value(prefix + "HEIGHT1_M1", "height_m1") + 1,
                value(prefix + "WIDTH0_M1", "width_m1") + 1,
            ),
        )
        out.check(
            f"{which} strides",
            (fm.stride_x, fm.stride_y, fm.stride_c),
            (
                value(prefix + "STRIDE_X", "addr"),
                value(prefix + "STRIDE_Y", "addr"),
                value(prefix + "STRIDE_C", "addr"),
            ),
        )
        precision = state.get(prefix + "PRECISION")
        assert precision is not None
        signed = precision.fields["activation_type"].endswith("_SIGNED")
        bits = precision.fields["activation_precision"].removeprefix("ACTIVATION_PRECISION_B")
        out.check(f"{which} dtype", fm.dtype, ("int" if signed else "uint") + bits)
        out.check(
            f"{which} layout",
            fm.layout,
            precision.fields["activation_format"].removeprefix("ACTIVATION_FORMAT_"),
        )
        out.check(
            f"{which} zero point",
            fm.zero_point & 0xFFFF,
            value(prefix + "ZERO_POINT", "zero_point"),
        )
        if which == "OFM":
            out.check(
                "OFM shape",
                (fm.height, fm.width, fm.depth),
                (
                    value(prefix + "HEIGHT_M1", "height_m1") + 1,
                    value(prefix + "WIDTH_M1", "width_m1") + 1,
                    value(prefix + "DEPTH_M1", "depth_m1") + 1,
                ),
            )
        elif which == "IFM":
            out.check("IFM depth", fm.depth, value(prefix + "DEPTH_M1", "depth_m1") + 1)
    ofm_precision = state["NPU_SET_OFM_PRECISION"].fields
    rounding = ofm_precision["round_mode"].removeprefix("ROUND_MODE_").lower()
    out.check("rounding", op.rounding, {"dbl": "tfl"}.get(rounding, rounding))
    activation = state["NPU_SET_ACTIVATION"].fields
    assert op.activation is not None
    function = activation["activation_function"].removeprefix("ACTIVATION_FUNCTION_")
    ours = (
        f"table_{op.activation.lut_index}"
        if op.activation.function == "lut"
        else (op.activation.function)
    )
    out.check("activation", ours, {"RELU": "none"}.get(function, function.lower()))
    clip = activation["activation_clip_range"].removeprefix("ACTIVATION_CLIP_RANGE_")
    out.check("clip range", op.activation.clip_range, clip.lower().replace("_", " "))
    out.check(
        "clamp",
        (op.activation.minimum & 0xFFFF, op.activation.maximum & 0xFFFF),
        (
            value("NPU_SET_ACTIVATION_MIN", "clip_boundary"),
            value("NPU_SET_ACTIVATION_MAX", "clip_boundary"),
        ),
    )
    if ofm_precision["scale_mode"].endswith("GLOBAL"):
        assert op.ofm_scale is not None
        out.check(
            "OFM scale",
            (op.ofm_scale.scale, op.ofm_scale.shift),
            (value("NPU_SET_OFM_SCALE", "scale"), value("NPU_SET_OFM_SCALE", "shift")),
        )
    else:
        out.check("OFM scale (per channel)", op.ofm_scale, None)
    assert op.block is not None
    out.check(
        "block",
        (op.block.height, op.block.width, op.block.depth),
        (
            value("NPU_SET_OFM_BLK_HEIGHT_M1", "height_m1") + 1,
            value("NPU_SET_OFM_BLK_WIDTH_M1", "width_m1") + 1,
            value("NPU_SET_OFM_BLK_DEPTH_M1", "depth_m1") + 1,
        ),
    )
    out.check(
        "shared buffer",
        (op.block.ib_end, op.block.ab_start, op.block.blockdep),
        (
            value("NPU_SET_IFM_IB_END", "ib_end"),
            value("NPU_SET_AB_START", "ab_start"),
            value("NPU_SET_BLOCKDEP", "blockdep"),
        ),
    )
    acc = _field(state, "NPU_SET_ACC_FORMAT", "acc_format", "ACC_FORMAT_I32")
    out.check(
        "accumulator",
        op.block.acc_format,
        {"I32": "int32", "I40": "int40"}.get(acc.removeprefix("ACC_FORMAT_"), acc),
    )
    if op.kind == "elementwise":
        out.check(
            "mode",
            op.mode,
            vela.fields["elementwise_mode"].removeprefix("ELEMENTWISE_MODE_").lower(),
        )
        if op.broadcast is not None:
            broadcast = state["NPU_SET_IFM2_BROADCAST"].fields
            enabled = {k: v.endswith("_ENABLE") for k, v in broadcast.items()}
            out.check(
                "broadcast",
                (op.broadcast.height, op.broadcast.width, op.broadcast.depth, op.broadcast.scalar),
                (
                    enabled["broadcast_h"],
                    enabled["broadcast_w"],
                    enabled["broadcast_c"],
                    enabled["broadcast_constant"],
                ),
            )
            out.check(
                "operand order",
                op.broadcast.reversed_operands,
                broadcast["operand_order"].endswith("ORDER_A"),
            )
            out.check(
                "opa scale",
                (op.opa_scale.scale, op.opa_scale.shift) if op.opa_scale else None,
                (value("NPU_SET_OPA_SCALE", "scale"), value("NPU_SET_OPA_SCALE", "shift")),
            )
        if op.ifm2_scalar is not None:
            out.check("scalar", op.ifm2_scalar & 0xFFFF, value("NPU_SET_IFM2_SCALAR", "scalar"))
        _compare_comment(op, vela, out)
        return
    assert op.kernel is not None
    kernel = state["NPU_SET_KERNEL_STRIDE"].fields
    dilation_x = 2 if kernel["dilation_x"].endswith("X2") else 1
    dilation_y = 2 if kernel["dilation_y"].endswith("X2") else 1
    k = op.kernel
    out.check(
        "kernel",
        (k.width, k.height, k.stride_x, k.stride_y, k.dilation_x, k.dilation_y),
        (
            value("NPU_SET_KERNEL_WIDTH_M1", "width_m1") // dilation_x + 1,
            value("NPU_SET_KERNEL_HEIGHT_M1", "height_m1") // dilation_y + 1,
            1 + _number(kernel["stride_x_lsb"]) + 2 * _number(kernel["stride_x_msb"]),
            1 + _number(kernel["stride_y_lsb"]) + 2 * _number(kernel["stride_y_msb"]),
            dilation_x,
            dilation_y,
        ),
    )
    out.check(
        "weight order",
        k.weight_order,
        kernel["weight_order"].removeprefix("WEIGHT_ORDER_").lower().replace("_", " "),
    )
    out.check(
        "padding",
        (k.pad_top, k.pad_left, k.pad_bottom, k.pad_right),
        tuple(
            value(f"NPU_SET_IFM_PAD_{side}", "pad") for side in ("TOP", "LEFT", "BOTTOM", "RIGHT")
        ),
    )
    if op.kind == "pool":
        mode = vela.fields["pooling_mode"].removeprefix("POOLING_MODE_")
        out.check("mode", op.mode, {"AVERAGE": "avg", "MAX": "max", "SUM": "sum"}[mode])
    else:
        for which, streams in (("WEIGHT", op.weights), ("SCALE", op.scales)):
            first = streams[0]
            out.check(
                f"{which} stream",
                (first.region, first.offset, first.length),
                (
                    value(f"NPU_SET_{which}_REGION", "region"),
                    value(f"NPU_SET_{which}_BASE", "addr"),
                    value(f"NPU_SET_{which}_LENGTH", "length"),
                ),
            )
            if f"NPU_SET_{which}1_BASE" in state:
                length = value(f"NPU_SET_{which}1_LENGTH", "length")
                second = (streams[1].offset, streams[1].length) if len(streams) > 1 else None
                out.check(
                    f"{which}1 stream",
                    second,
                    (value(f"NPU_SET_{which}1_BASE", "addr"), length) if length else None,
                )
    _compare_comment(op, vela, out)


COMMENT_KINDS = {
    "Conv2D": {"conv", "vector_product"},
    "FullyConnected": {"vector_product", "conv"},
    "DepthwiseConv2D": {"depthwise"},
    "MaxPool": {"pool"},
    "AvgPool": {"pool"},
    "ReduceSum": {"pool"},
    "Add": {"elementwise"},
    "Mul": {"elementwise"},
    "Sub": {"elementwise"},
    "Minimum": {"elementwise"},
    "Maximum": {"elementwise"},
}


def _compare_comment(op: NpuOperation, vela: ListedCommand, out: Mismatches) -> None:
    """Vela's note above the operation: its kind, kernel, stride, dilation and padding."""
    if not vela.comment:
        return
    kind = vela.comment.split(" ", 1)[0]
    out.check("kind (Vela's note)", op.kind in COMMENT_KINDS.get(kind, {kind}), True)
    match = COMMENT_KERNEL.search(vela.comment)
    if match is None or op.kernel is None or op.kind == "elementwise":
        return
    k = op.kernel
    numbers = tuple(int(n) for n in match.groups())
    out.check(
        "kernel (Vela's note)",
        (
            k.width,
            k.height,
            k.stride_x,
            k.stride_y,
            k.dilation_x,
            k.dilation_y,
            k.pad_top,
            k.pad_left,
            k.pad_bottom,
            k.pad_right,
        ),
        numbers,
    )


@dataclass(frozen=True)
class Case:
    name: str
    pte: Path
    vela: Path  # the folder with the TOSA graphs


def _cases() -> list[Case]:
    from tests.npu_programs import NPU_PROGRAMS

    return [
        Case("demo", DEMO / "demo_cnn.pte", DEMO / "vela"),
        Case("two_delegates", Path("two_delegates"), Path()),
        *(Case(name, Path(name), Path()) for name in NPU_PROGRAMS),
    ]


def _resolve(case: Case) -> Case:
    """Build (or reuse) the cached program of ``case``."""
    if case.name == "two_delegates":
        from tests.two_delegates import build

        folder = build()
        return Case(case.name, folder / "TwoDelegates.pte", folder / "vela")
    if case.name != "demo":
        from tests.npu_programs import build

        folder = build(case.name)
        return Case(case.name, folder / "program.pte", folder / "vela")
    return case


def _graph_of(folder: Path, payload: bytes, count: int) -> Path:
    """The TOSA graph a delegate was compiled from: named by the compile record, else the
    only graph there is."""
    record_path = folder / "etu_compile.json"
    record = json.loads(record_path.read_text()) if record_path.is_file() else {}
    digest = hashlib.sha256(payload).hexdigest()
    for entry in record.get("delegates", []):
        if entry.get("payload_sha256") == digest:
            return folder / entry["tosa"]
    graphs = {hashlib.sha256(p.read_bytes()).hexdigest(): p for p in sorted(folder.glob("*.tosa"))}
    assert count == 1 and len(graphs) == 1, f"which graph is whose in {folder}?"
    return next(iter(graphs.values()))


@pytest.mark.parametrize("case", _cases(), ids=lambda c: c.name)
def test_streams_match_velas_listing(case: Case, tmp_path: Path) -> None:
    pytest.importorskip("ethosu.vela")
    case = _resolve(case)
    streams = _program_streams(case.pte)
    assert streams, f"{case.pte} has no Ethos-U delegate"
    with open_program(case.pte) as program:
        flags = {
            info.index: (info.delegate.spec("compile_flags") or "").split(" ")
            for info in delegates(program)
        }
    for index, blob, stream in streams:
        if "ethos-u85" in " ".join(flags[index]):
            assert stream.note == U85_NOTE and not stream.operations
            continue
        graph = _graph_of(case.vela, blob, len(streams))
        listing = vela_listing(graph, flags[index], tmp_path / f"vela{index}")
        assert listing.words == sum(2 if c.data is not None else 1 for c in stream.commands), (
            f"delegate {index}: Vela's stream of {graph.name} is not this delegate's"
        )
        started = [
            c
            for c in listing.commands
            if c.name.startswith("NPU_OP_") and "WAIT" not in c.name and c.name != "NPU_OP_STOP"
        ]
        assert all(c.comment for c in started), "an operation without Vela's note"
        mismatches = compare_with_listing(stream, listing, f"{case.name} delegate {index}")
        assert not mismatches, "\n".join(mismatches[:40])


def test_every_kind_of_operation_is_compared() -> None:
    """The compared programs hold each kind the test programs produce."""
    from tests.npu_programs import build

    kinds = set()
    for name in ("mix_u55", "two_inputs"):
        for _, _, stream in _program_streams(build(name) / "program.pte"):
            kinds |= {(op.kind, op.mode) for op in stream.operations}
    assert {
        ("conv", None),
        ("depthwise", None),
        ("vector_product", None),
        ("pool", "max"),
        ("pool", "avg"),
        ("elementwise", "add"),
        ("elementwise", "mul"),
        ("dma", None),
        ("dma_wait", None),
        ("kernel_wait", None),
    } <= kinds
    luts = [
        op
        for _, _, s in _program_streams(build("mix_u55") / "program.pte")
        for op in s.operations
        if op.activation and op.activation.function == "lut"
    ]
    assert luts and luts[0].activation is not None and luts[0].activation.lut_index == 0
    assert luts[0].summary == "depthwise 3×3/1 d2 8×8×16 → 8×8×16, weights 224 B, lut"


# -- truncated and corrupt streams -----------------------------------------------------

STOP = 0xFFFF_0000  # NPU_OP_STOP, mask 0xffff


def _cmd0(name: str, param: int = 0) -> list[int]:
    code = {v: k for k, v in CMD0.items()}[name]
    return [code | (param & 0xFFFF) << 16]


def _cmd1(name: str, data: int, param: int = 0) -> list[int]:
    code = {v: k for k, v in CMD1.items()}[name]
    return [code | 0x4000 | (param & 0xFFFF) << 16, data]


def _conv(weight_base: int = 0x40, weight_length: int = 0x100) -> list[int]:
    """A 1×1 convolution, 4×4×16 int8 in region 1 to 4×4×16 in region 1, weights in 0."""
    words: list[int] = []
    for which in ("IFM", "OFM"):
        words += _cmd0(f"NPU_SET_{which}_REGION", 1)
        words += _cmd0(f"NPU_SET_{which}_PRECISION", 1)
        words += _cmd0(f"NPU_SET_{which}_HEIGHT0_M1", 3) + _cmd0(f"NPU_SET_{which}_HEIGHT1_M1", 3)
        words += _cmd0(f"NPU_SET_{which}_WIDTH0_M1", 3)
        words += _cmd1(f"NPU_SET_{which}_STRIDE_X", 16) + _cmd1(f"NPU_SET_{which}_STRIDE_Y", 64)
        words += _cmd1(f"NPU_SET_{which}_STRIDE_C", 1)
    words += _cmd0("NPU_SET_IFM_DEPTH_M1", 15) + _cmd0("NPU_SET_OFM_DEPTH_M1", 15)
    words += _cmd0("NPU_SET_OFM_HEIGHT_M1", 3) + _cmd0("NPU_SET_OFM_WIDTH_M1", 3)
    words += _cmd1("NPU_SET_OFM_BASE0", 0x100)
    words += _cmd0("NPU_SET_WEIGHT_REGION", 0) + _cmd1("NPU_SET_WEIGHT_BASE", weight_base)
    words += _cmd1("NPU_SET_WEIGHT_LENGTH", weight_length)
    words += _cmd1("NPU_SET_SCALE_BASE", 0) + _cmd1("NPU_SET_SCALE_LENGTH", 0x40)
    return words + _cmd0("NPU_OP_CONV")


REGIONS = {0: 0x200, 1: 0x200}


def test_a_handmade_convolution_decodes() -> None:
    stream = decode_command_stream([*_conv(), STOP], regions=REGIONS)
    (op,) = stream.operations
    assert op.summary == "conv 1×1/1 4×4×16 → 4×4×16, weights 256 B"
    assert op.ofm is not None and op.ofm.bases[0] == 0x100


@pytest.mark.parametrize(
    ("words", "kind", "text"),
    [
        ([*_conv()[:-3], _cmd1("NPU_SET_SCALE_LENGTH", 1)[0]], TruncatedError, "no payload word"),
        (_conv(), TruncatedError, "does not end with NPU_OP_STOP"),
        ([0x3FE, STOP], FormatError, "unknown command code 0x3fe"),
        ([0x4400 | 0x20, 0, STOP], FormatError, "reserved bits"),
        ([STOP, *_cmd0("NPU_OP_CONV"), STOP], FormatError, "commands follow NPU_OP_STOP"),
        ([*_conv(weight_base=384), STOP], FormatError, "weight stream 0 0x180+256 B"),
        (
            _cmd1("NPU_SET_DMA0_LEN", 0x300) + _cmd0("NPU_OP_DMA_START") + [STOP],
            FormatError,
            "DMA source 0x0+768 B runs past region 0",
        ),
        (
            _conv()[:-1] + _cmd1("NPU_SET_OFM_BASE0", 0x1F0) + _cmd0("NPU_OP_POOL") + [STOP],
            FormatError,
            "OFM tile 0 ends at 0x2f0, past region 1",
        ),
        (_conv()[:-1] + _cmd0("NPU_OP_POOL", 7) + [STOP], FormatError, "pooling mode 7"),
    ],
    ids=[
        "payload-cut",
        "no-stop",
        "unknown",
        "reserved",
        "after-stop",
        "weights-past",
        "dma-past",
        "ofm-past",
        "bad-mode",
    ],
)
def test_bad_streams_give_one_line_naming_the_word(
    words: list[int], kind: type[ParseError], text: str
) -> None:
    with pytest.raises(kind) as caught:
        decode_command_stream(
            words, what="delegate 3 command stream", regions=REGIONS, base_offset=0x1000
        )
    message = str(caught.value)
    assert text in message
    assert re.search(r"^delegate 3 command stream word \d+ at offset 0x[0-9a-f]+: ", message)
    assert "\n" not in message


def test_a_truncated_payload_names_the_delegate() -> None:
    """A payload whose stream words run past the blob (cut after decoding the header)."""
    ((index, blob, _),) = _program_streams(DEMO / "demo_cnn.pte")
    payload = decode_ethosu_payload(blob)
    with pytest.raises(TruncatedError, match=r"delegate 0 command stream of 516 words"):
        decode_payload_operations(
            blob[: payload.command_stream_offset + 40], payload, what=f"delegate {index}"
        )


def _blob(blocks: list[tuple[str, bytes]]) -> bytes:
    out = b""
    for name, data in blocks:
        out += struct.pack("<16sIB11s", name.encode(), len(data), 0, b"") + data
        out += b"\0" * (-len(data) % 16)
    return out


def test_command_stream_length_uses_the_high_byte() -> None:
    """Vela writes bits 16-23 of the stream's word count in the action's second byte
    (driver_actions.emit_cmd_stream_header); before, a stream of 65,536 words or more read
    as its length modulo 65,536."""
    words = 0x10002
    body = [0x100] * (words - 1) + [STOP]  # NPU_SET_IFM_PAD_TOP 0, then the stop
    cmd = b"COP1" + struct.pack("<BBH", 2, words >> 16, words & 0xFFFF)
    cmd += struct.pack(f"<{words}I", *body)
    blob = _blob([("vela_bin_stream", b""), ("cmd_data", cmd), ("vela_end_stream", b"")])
    payload = decode_ethosu_payload(blob)
    assert payload.command_stream_words == words
    assert payload.command_stream_offset == 32 + 32 + 8
    stream = decode_payload_operations(blob, payload)
    assert len(stream.commands) == words and stream.operations == []


def test_u85_streams_are_not_decoded_yet() -> None:
    config = struct.pack("<II", 0x20000118, 0)  # OPTIMIZER_CONFIG of a U85 program
    cmd = b"COP1" + struct.pack("<BBH", 1, 0, 0) + config + struct.pack("<BBHI", 2, 0, 1, STOP)
    blob = _blob([("vela_bin_stream", b""), ("cmd_data", cmd), ("vela_end_stream", b"")])
    stream = decode_payload_operations(blob, decode_ethosu_payload(blob))
    assert stream.note == "U85 command streams are not decoded yet" and not stream.operations


# -- etu inspect -----------------------------------------------------------------------


def _inspect(path: Path) -> tuple[int, dict, str]:
    import io

    from etu.tui.cli.inspect import inspect_command

    out, err = io.StringIO(), io.StringIO()
    code = inspect_command([path], as_json=True, out=out, err=err)
    text = io.StringIO()
    inspect_command([path], as_json=False, out=text, err=err)
    return code, json.loads(out.getvalue()), text.getvalue()


def test_inspect_json_lists_each_delegates_operations() -> None:
    code, record, text = _inspect(DEMO / "demo_cnn.pte")
    assert code == 0
    (delegate,) = record["plans"][0]["delegates"]
    ops = delegate["npu_operations"]
    assert len(ops) == 48 and delegate["npu_operations_error"] is None
    conv = ops[35]
    assert conv["kind"] == "conv" and conv["summary"].startswith("conv 3×3/1 32×32×3 → 32×32×16")
    assert conv["kernel"]["pad_left"] == 1 and conv["weights"][0]["length"] == 608
    assert conv["ifm"]["dtype"] == "int8" and conv["ofm"]["layout"] == "NHCWB16"
    assert "NPU operations: 48 (36 pool, 3 dma, 3 dma wait, 4 conv, 1 kernel wait," in text


def test_inspect_names_the_delegate_and_word_of_a_corrupt_stream(tmp_path: Path) -> None:
    data = bytearray((DEMO / "demo_cnn.pte").read_bytes())
    with open_program(DEMO / "demo_cnn.pte") as program:
        (info,) = delegates(program)
        assert info.payload is not None and info.payload.command_stream_offset is not None
        at = program.delegate_span(info.delegate).offset + info.payload.command_stream_offset
    word = 7
    data[at + 4 * word : at + 4 * word + 4] = struct.pack("<I", 0x3FE)
    bad = tmp_path / "bad.pte"
    bad.write_bytes(bytes(data))
    code, record, text = _inspect(bad)
    assert code == 0  # the rest of the program still inspects
    (delegate,) = record["plans"][0]["delegates"]
    error = delegate["npu_operations_error"]
    assert error == (f"{bad}: delegate 0 command stream word {word} at offset "
                     f"{at + 4 * word:#x}: unknown command code 0x3fe")  # fmt: skip
    assert delegate["npu_operations"] == []
    assert f"command stream error: {bad}: delegate 0 command stream word 7" in text


def test_mutated_streams_give_parse_errors_only() -> None:
    """Word-level mutations inside the demo's command stream (the byte-level fuzzer of
    tests/fuzzing.py mostly lands in the weights): decoded, or one ParseError."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    ((_, blob, _),) = _program_streams(DEMO / "demo_cnn.pte")
    payload = decode_ethosu_payload(blob)
    start, count = payload.command_stream_offset, payload.command_stream_words
    assert start is not None and count is not None
    words = list(struct.unpack_from(f"<{count}I", blob, start))
    interesting = st.sampled_from([0, 0xFFFFFFFF, 0x4000, 0x7FFF_4020, 0xFFFF_0122, 0x3FF])
    edit = st.tuples(st.integers(0, count - 1), st.one_of(st.integers(0, 2**32 - 1), interesting))

    @settings(
        max_examples=300, deadline=None, database=None, suppress_health_check=list(HealthCheck)
    )
    @given(st.lists(edit, min_size=1, max_size=6), st.integers(0, count))
    def one(edits: list[tuple[int, int]], keep: int) -> None:
        mutated = list(words)
        for at, value in edits:
            mutated[at] = value
        try:
            stream = decode_command_stream(mutated[:keep], regions={0: 16528, 1: 23328})
        except ParseError as error:
            assert "\n" not in str(error) and "word" in str(error)
            return
        json.dumps([op.to_json() for op in stream.operations])
        assert all(op.summary for op in stream.operations)

    one()


def test_a_depth_broadcast_ifm2_is_one_channel() -> None:
    """An IFM2 broadcast along C holds one channel: its shape (and the extent checked
    against its region) must not take the IFM's 16 channels, as it did before."""
    words = _conv()[:-1] + _cmd0("NPU_SET_IFM2_REGION", 1) + _cmd0("NPU_SET_IFM2_PRECISION", 1)
    words += _cmd0("NPU_SET_IFM2_HEIGHT0_M1", 3) + _cmd0("NPU_SET_IFM2_WIDTH0_M1", 3)
    words += _cmd1("NPU_SET_IFM2_STRIDE_X", 1) + _cmd1("NPU_SET_IFM2_STRIDE_Y", 4)
    words += _cmd1("NPU_SET_IFM2_BASE0", 0x1F0) + _cmd0("NPU_SET_IFM2_BROADCAST", 4)
    stream = decode_command_stream([*words, *_cmd0("NPU_OP_ELEMENTWISE", 1), STOP], regions=REGIONS)
    (op,) = stream.operations
    assert op.ifm2 is not None and op.ifm2.shape_text == "4×4×1"
    assert op.summary == "elementwise add 4×4×16 add 4×4×1 → 4×4×16"


# -- joined to Vela's debug database ---------------------------------------------------

VELA_KINDS = {  # what each operator Vela schedules may run as on the NPU
    "Conv2D": {"conv", "vector_product"}, "FullyConnected": {"conv", "vector_product"},
    "DepthwiseConv2D": {"depthwise"}, "MaxPool": {"pool"}, "AvgPool": {"pool"},
    "Transpose": {"pool"}, "Rescale": {"pool", "elementwise"}, "Add": {"elementwise"},
    "Mul": {"elementwise"}, "Sigmoid": {"depthwise", "pool", "elementwise"},
    "ReduceSum": {"pool"}, "Mean": {"pool", "depthwise"},
}  # fmt: skip


def test_operations_join_velas_debug_database() -> None:
    """The mix program is compiled with --enable-debug-db: every block operation gets the
    operator Vela scheduled, and that operator can run as the operation's kind."""
    from etu.parsers.npu_sources import join_debug_db
    from etu.parsers.vela_debug_db import parse_debug_db
    from tests.npu_programs import build

    folder = build("mix_u55")
    db = parse_debug_db((folder / "vela" / "out_debug.xml").read_bytes())
    ((_, _, stream),) = _program_streams(folder / "program.pte")
    joined = join_debug_db(stream, db)
    assert joined is not None
    blocks = [op for op in stream.operations if op.ofm is not None]
    assert sorted(joined) == [op.index for op in blocks]
    for op in blocks:
        assert op.kind in VELA_KINDS[joined[op.index].operator], (op.index, op.kind, joined)
    assert {"Conv2D", "DepthwiseConv2D", "MaxPool", "Add", "Mul"} <= {
        j.operator for j in joined.values()
    }


def test_another_streams_debug_database_is_not_joined() -> None:
    """With two delegates the database is the last Vela call's: the other delegate's
    operations are left without names rather than given wrong ones."""
    from etu.parsers.npu_sources import join_debug_db
    from etu.parsers.vela_debug_db import parse_debug_db
    from tests.two_delegates import build

    folder = build()
    db = parse_debug_db((folder / "vela" / "out_debug.xml").read_bytes())
    streams = _program_streams(folder / "TwoDelegates.pte")
    results = [join_debug_db(stream, db) for _, _, stream in streams]
    assert sum(r is not None for r in results) == 1


def test_inspect_json_names_the_operators_vela_scheduled() -> None:
    """``vela_operator`` from vela/out_debug.xml beside the program, for the delegate the
    database belongs to (the other delegate's operations carry none)."""
    from tests.two_delegates import build

    _, record, _ = _inspect(build() / "TwoDelegates.pte")
    named = [
        [op.get("vela_operator") for op in d["npu_operations"] if op.get("ofm")]
        for d in record["plans"][0]["delegates"]
    ]
    assert sorted(all(n) and n[0] is not None for n in named) == [False, True]
    assert any("Conv2D" in n for n in named)
