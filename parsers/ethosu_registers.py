"""The Ethos-U55/U65 command set: opcodes and register field encodings, declared once.

Checked against Vela's own enums (``ethosu/vela/ethos_u55_regs``) by
``tests/process/test_ethosu_commands``; this package never imports Vela. The stream
decoder (:mod:`etu.parsers.ethosu_commands`) and the NPU model read them.
"""

from __future__ import annotations

CMD0: dict[int, str] = {  # commands without a payload word: operations and 16-bit registers
    0x000: "NPU_OP_STOP", 0x001: "NPU_OP_IRQ", 0x002: "NPU_OP_CONV",
    0x003: "NPU_OP_DEPTHWISE", 0x005: "NPU_OP_POOL", 0x006: "NPU_OP_ELEMENTWISE",
    0x010: "NPU_OP_DMA_START", 0x011: "NPU_OP_DMA_WAIT", 0x012: "NPU_OP_KERNEL_WAIT",
    0x013: "NPU_OP_PMU_MASK",
    0x100: "NPU_SET_IFM_PAD_TOP", 0x101: "NPU_SET_IFM_PAD_LEFT",
    0x102: "NPU_SET_IFM_PAD_RIGHT", 0x103: "NPU_SET_IFM_PAD_BOTTOM",
    0x104: "NPU_SET_IFM_DEPTH_M1", 0x105: "NPU_SET_IFM_PRECISION",
    0x107: "NPU_SET_IFM_UPSCALE", 0x109: "NPU_SET_IFM_ZERO_POINT",
    0x10A: "NPU_SET_IFM_WIDTH0_M1", 0x10B: "NPU_SET_IFM_HEIGHT0_M1",
    0x10C: "NPU_SET_IFM_HEIGHT1_M1", 0x10D: "NPU_SET_IFM_IB_END", 0x10F: "NPU_SET_IFM_REGION",
    0x111: "NPU_SET_OFM_WIDTH_M1", 0x112: "NPU_SET_OFM_HEIGHT_M1",
    0x113: "NPU_SET_OFM_DEPTH_M1", 0x114: "NPU_SET_OFM_PRECISION",
    0x115: "NPU_SET_OFM_BLK_WIDTH_M1", 0x116: "NPU_SET_OFM_BLK_HEIGHT_M1",
    0x117: "NPU_SET_OFM_BLK_DEPTH_M1", 0x118: "NPU_SET_OFM_ZERO_POINT",
    0x11A: "NPU_SET_OFM_WIDTH0_M1", 0x11B: "NPU_SET_OFM_HEIGHT0_M1",
    0x11C: "NPU_SET_OFM_HEIGHT1_M1", 0x11F: "NPU_SET_OFM_REGION",
    0x120: "NPU_SET_KERNEL_WIDTH_M1", 0x121: "NPU_SET_KERNEL_HEIGHT_M1",
    0x122: "NPU_SET_KERNEL_STRIDE", 0x123: "NPU_SET_PARALLEL_MODE",
    0x124: "NPU_SET_ACC_FORMAT", 0x125: "NPU_SET_ACTIVATION",
    0x126: "NPU_SET_ACTIVATION_MIN", 0x127: "NPU_SET_ACTIVATION_MAX",
    0x128: "NPU_SET_WEIGHT_REGION", 0x129: "NPU_SET_SCALE_REGION",
    0x12D: "NPU_SET_AB_START", 0x12F: "NPU_SET_BLOCKDEP",
    0x130: "NPU_SET_DMA0_SRC_REGION", 0x131: "NPU_SET_DMA0_DST_REGION",
    0x132: "NPU_SET_DMA0_SIZE0", 0x133: "NPU_SET_DMA0_SIZE1",
    0x180: "NPU_SET_IFM2_BROADCAST", 0x181: "NPU_SET_IFM2_SCALAR",
    0x185: "NPU_SET_IFM2_PRECISION", 0x189: "NPU_SET_IFM2_ZERO_POINT",
    0x18A: "NPU_SET_IFM2_WIDTH0_M1", 0x18B: "NPU_SET_IFM2_HEIGHT0_M1",
    0x18C: "NPU_SET_IFM2_HEIGHT1_M1", 0x18D: "NPU_SET_IFM2_IB_START",
    0x18F: "NPU_SET_IFM2_REGION",
}  # fmt: skip
CMD1: dict[int, str] = {  # commands followed by one 32-bit payload word
    0x000: "NPU_SET_IFM_BASE0", 0x001: "NPU_SET_IFM_BASE1", 0x002: "NPU_SET_IFM_BASE2",
    0x003: "NPU_SET_IFM_BASE3", 0x004: "NPU_SET_IFM_STRIDE_X", 0x005: "NPU_SET_IFM_STRIDE_Y",
    0x006: "NPU_SET_IFM_STRIDE_C",
    0x010: "NPU_SET_OFM_BASE0", 0x011: "NPU_SET_OFM_BASE1", 0x012: "NPU_SET_OFM_BASE2",
    0x013: "NPU_SET_OFM_BASE3", 0x014: "NPU_SET_OFM_STRIDE_X", 0x015: "NPU_SET_OFM_STRIDE_Y",
    0x016: "NPU_SET_OFM_STRIDE_C",
    0x020: "NPU_SET_WEIGHT_BASE", 0x021: "NPU_SET_WEIGHT_LENGTH", 0x022: "NPU_SET_SCALE_BASE",
    0x023: "NPU_SET_SCALE_LENGTH", 0x024: "NPU_SET_OFM_SCALE", 0x025: "NPU_SET_OPA_SCALE",
    0x026: "NPU_SET_OPB_SCALE",
    0x030: "NPU_SET_DMA0_SRC", 0x031: "NPU_SET_DMA0_DST", 0x032: "NPU_SET_DMA0_LEN",
    0x033: "NPU_SET_DMA0_SKIP0", 0x034: "NPU_SET_DMA0_SKIP1",
    0x080: "NPU_SET_IFM2_BASE0", 0x081: "NPU_SET_IFM2_BASE1", 0x082: "NPU_SET_IFM2_BASE2",
    0x083: "NPU_SET_IFM2_BASE3", 0x084: "NPU_SET_IFM2_STRIDE_X",
    0x085: "NPU_SET_IFM2_STRIDE_Y", 0x086: "NPU_SET_IFM2_STRIDE_C",
    0x090: "NPU_SET_WEIGHT1_BASE", 0x091: "NPU_SET_WEIGHT1_LENGTH",
    0x092: "NPU_SET_SCALE1_BASE", 0x093: "NPU_SET_SCALE1_LENGTH",
}  # fmt: skip

OPCODE_MASK = 0x3FF
PAYLOAD_SHIFT = 14  # bits 14-15: payload words (0 or 1 in a Vela stream)
RESERVED_MASK = 0x3C00  # bits 10-13 must be zero

# IFM/IFM2 precision bits 0-3 (signedness + size) and OFM precision bits 0-2, as dtypes.
IFM_PRECISION = {0: "uint8", 1: "int8", 4: "uint16", 5: "int16", 9: "int32"}
OFM_PRECISION = {0: "uint8", 1: "int8", 2: "uint16", 3: "int16", 5: "int32"}
ELEMENT_SIZE = {"uint8": 1, "int8": 1, "uint16": 2, "int16": 2, "int32": 4}
DATA_FORMAT = {0: "NHWC", 1: "NHCWB16"}
ROUNDING = {0: "tfl", 1: "truncate", 2: "natural"}
IFM_SCALE_MODE = {0: "16-bit", 1: "opa 32-bit", 2: "opb 32-bit"}
POOLING_MODE = {0: "max", 1: "avg", 2: "sum"}
ELEMENTWISE_MODE = {
    0: "mul", 1: "add", 2: "sub", 3: "min", 4: "max", 5: "lrelu", 6: "abs", 7: "clz",
    8: "shr", 9: "shl",
}  # fmt: skip
UNARY_ELEMENTWISE = {"lrelu", "abs", "clz"}
ACTIVATION = {0: "none", 3: "tanh", 4: "sigmoid"}  # 16-23: table lookup (LUT 0-7)
LUT_START, LUT_END = 16, 23
CLIP_RANGE = {0: "ofm precision", 2: "force uint8", 3: "force int8", 5: "force int16"}
ACC_FORMAT = {0: "int32", 1: "int40", 2: "fp s5.10"}
RESAMPLING = {0: "none", 1: "nearest", 2: "transpose"}
STRIDE_MODE = {0: "1d", 1: "2d", 2: "3d"}

OPERATION_COMMANDS = {
    "NPU_OP_CONV", "NPU_OP_DEPTHWISE", "NPU_OP_POOL", "NPU_OP_ELEMENTWISE",
    "NPU_OP_DMA_START", "NPU_OP_DMA_WAIT", "NPU_OP_KERNEL_WAIT", "NPU_OP_IRQ",
    "NPU_OP_PMU_MASK",
}  # fmt: skip
