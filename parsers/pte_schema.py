"""The ``.pte`` format as ExecuTorch declares it: identifiers, the extended header, scalar
types, and each FlatBuffer table's field slots and union tags.

Everything here is read from ``schema/program.fbs``, ``schema/scalar_type.fbs`` and
``bundled_program_schema.fbs`` (ExecuTorch 0.4 to 1.5; every change was append-only, so one
slot list reads every version). It is declared once: :mod:`etu.parsers.pte` decodes with it
and :mod:`etu.runner.segment_program` writes programs with it. No decoding here.
"""

from __future__ import annotations

from enum import IntEnum

from construct import Const, If, Int32ul, Int64ul, Struct, this

PROGRAM_IDENTIFIER = "ET12"
BUNDLED_IDENTIFIER_PREFIX = "BP"

# Identifiers of neighbouring ExecuTorch/Arm files, so a wrong file is named, not guessed at.
OTHER_IDENTIFIERS = {
    "FT01": "an ExecuTorch external data file (.ptd)",
    "ED00": "an ETDump profile",
    "TOSA": "a TOSA flatbuffer",
}

EXTENDED_HEADER = Struct(
    "magic" / Const(b"eh00"),
    "length" / Int32ul,
    "program_size" / Int64ul,
    "segment_base_offset" / Int64ul,
    "segment_data_size" / If(this.length >= 32, Int64ul),
)
EXTENDED_HEADER_OFFSET = 8
EXTENDED_HEADER_MIN_LENGTH = 24

# ScalarType code → (c10 name, element size in bytes); schema/scalar_type.fbs.
SCALAR_TYPES: dict[int, tuple[str, int]] = {
    0: ("Byte", 1), 1: ("Char", 1), 2: ("Short", 2), 3: ("Int", 4), 4: ("Long", 8),
    5: ("Half", 2), 6: ("Float", 4), 7: ("Double", 8), 8: ("ComplexHalf", 4),
    9: ("ComplexFloat", 8), 10: ("ComplexDouble", 16), 11: ("Bool", 1), 12: ("QInt8", 1),
    13: ("QUInt8", 1), 14: ("QInt32", 4), 15: ("BFloat16", 2), 16: ("QUInt4x2", 1),
    17: ("QUInt2x4", 1), 18: ("Bits1x8", 1), 19: ("Bits2x4", 1), 20: ("Bits4x2", 1),
    21: ("Bits8", 1), 22: ("Bits16", 2), 23: ("Float8_e5m2", 1), 24: ("Float8_e4m3fn", 1),
    25: ("Float8_e5m2fnuz", 1), 26: ("Float8_e4m3fnuz", 1), 27: ("UInt16", 2),
    28: ("UInt32", 4), 29: ("UInt64", 8),
}  # fmt: skip

# --------------------------------------------------------------------------- the schema
# One class per FlatBuffer table of schema/program.fbs (and bundled_program.fbs): each
# member is the field's slot (its declaration order). A union takes two slots, its type tag
# then its table; the union's members are the IntEnums below. A schema change is a line here.


class ProgramSlot(IntEnum):
    VERSION = 0
    EXECUTION_PLAN = 1
    CONSTANT_BUFFER = 2
    BACKEND_DELEGATE_DATA = 3
    SEGMENTS = 4
    CONSTANT_SEGMENT = 5
    MUTABLE_DATA_SEGMENTS = 6
    NAMED_DATA = 7


class BundledProgramSlot(IntEnum):
    VERSION = 0
    METHOD_TEST_SUITES = 1
    PROGRAM = 2


class BufferSlot(IntEnum):
    STORAGE = 0


class BackendDelegateInlineDataSlot(IntEnum):
    DATA = 0


class DataSegmentSlot(IntEnum):
    OFFSET = 0
    SIZE = 1


class SubsegmentOffsetsSlot(IntEnum):
    SEGMENT_INDEX = 0
    OFFSETS = 1


class NamedDataSlot(IntEnum):
    KEY = 0
    SEGMENT_INDEX = 1


class ExecutionPlanSlot(IntEnum):
    NAME = 0
    CONTAINER_META_TYPE = 1
    VALUES = 2
    INPUTS = 3
    OUTPUTS = 4
    CHAINS = 5
    OPERATORS = 6
    DELEGATES = 7
    NON_CONST_BUFFER_SIZES = 8
    NON_CONST_BUFFER_DEVICE = 9  # ExecuTorch 2026-05 (PR 19500)


class NonConstBufferDeviceSlot(IntEnum):
    BUFFER_IDX = 0
    DEVICE_TYPE = 1
    DEVICE_INDEX = 2


class OperatorSlot(IntEnum):
    NAME = 0
    OVERLOAD = 1


class ChainSlot(IntEnum):
    INPUTS = 0
    OUTPUTS = 1
    INSTRUCTIONS = 2
    STACKTRACE = 3


class InstructionSlot(IntEnum):
    INSTR_ARGS = 0  # union: tag, then slot 1 the table


class KernelCallSlot(IntEnum):
    OP_INDEX = 0
    ARGS = 1


class DelegateCallSlot(IntEnum):
    DELEGATE_INDEX = 0
    ARGS = 1


class MoveCallSlot(IntEnum):
    MOVE_FROM = 0
    MOVE_TO = 1


class JumpFalseCallSlot(IntEnum):
    COND_VALUE_INDEX = 0
    DESTINATION_INSTRUCTION = 1


class FreeCallSlot(IntEnum):
    VALUE_INDEX = 0


class BackendDelegateSlot(IntEnum):
    ID = 0
    PROCESSED = 1
    COMPILE_SPECS = 2


class BackendDelegateDataReferenceSlot(IntEnum):
    LOCATION = 0
    INDEX = 1


class CompileSpecSlot(IntEnum):
    KEY = 0
    VALUE = 1


class EValueSlot(IntEnum):
    VAL = 0  # union: tag, then slot 1 the table


class ScalarBoxSlot(IntEnum):
    """Int.int_val, Bool.bool_val, Double.double_val, String.string_val."""

    VALUE = 0


class ListSlot(IntEnum):
    """IntList, DoubleList, BoolList, TensorList, OptionalTensorList: ``items``."""

    ITEMS = 0


class TensorSlot(IntEnum):
    SCALAR_TYPE = 0
    STORAGE_OFFSET = 1
    SIZES = 2
    DIM_ORDER = 3
    REQUIRES_GRAD = 4
    DATA_BUFFER_IDX = 5
    ALLOCATION_INFO = 6
    LAYOUT = 7
    SHAPE_DYNAMISM = 8
    EXTRA_TENSOR_INFO = 9


class AllocationDetailsSlot(IntEnum):
    MEMORY_ID = 0
    MEMORY_OFFSET_LOW = 1
    MEMORY_OFFSET_HIGH = 2


class ExtraTensorInfoSlot(IntEnum):
    MUTABLE_DATA_SEGMENTS_IDX = 0
    FULLY_QUALIFIED_NAME = 1
    LOCATION = 2
    DEVICE_TYPE = 3  # ExecuTorch 2026-03 (PR 18391)
    DEVICE_INDEX = 4


class InstructionArguments(IntEnum):
    """The ``InstructionArguments`` union's tags."""

    NONE = 0
    KERNEL_CALL = 1
    DELEGATE_CALL = 2
    MOVE_CALL = 3
    JUMP_FALSE_CALL = 4
    FREE_CALL = 5


class KernelTypes(IntEnum):
    """The ``KernelTypes`` union's tags (an EValue's kind)."""

    NONE = 0
    NULL = 1
    INT = 2
    BOOL = 3
    DOUBLE = 4
    TENSOR = 5
    STRING = 6
    INT_LIST = 7
    DOUBLE_LIST = 8
    BOOL_LIST = 9
    TENSOR_LIST = 10
    OPTIONAL_TENSOR_LIST = 11


class DataLocation(IntEnum):
    """``DataLocation``: where a delegate's payload is."""

    INLINE = 0
    SEGMENT = 1


class TensorDataLocation(IntEnum):
    """``TensorDataLocation``: a tensor's data in the program or in a .ptd."""

    INTERNAL = 0
    EXTERNAL = 1


class DeviceType(IntEnum):
    """``DeviceType``: where a tensor or planned buffer lives (default CPU)."""

    CPU = 0
    CUDA = 1


DEVICE_TYPES = {DeviceType.CPU: "cpu", DeviceType.CUDA: "cuda"}


def device_name(device_type: int, device_index: int = 0) -> str:
    """``cpu``, ``cuda:1``, or ``device(7)`` for a type this schema does not name."""
    name = DEVICE_TYPES.get(device_type, f"device({device_type})")
    return f"{name}:{device_index}" if device_index else name


SHAPE_DYNAMISM = {0: "static", 1: "dynamic_bound", 2: "dynamic_unbound"}
VALUE_KINDS = {
    KernelTypes.NONE: "None", KernelTypes.NULL: "Null", KernelTypes.INT: "Int",
    KernelTypes.BOOL: "Bool", KernelTypes.DOUBLE: "Double", KernelTypes.TENSOR: "Tensor",
    KernelTypes.STRING: "String", KernelTypes.INT_LIST: "IntList",
    KernelTypes.DOUBLE_LIST: "DoubleList", KernelTypes.BOOL_LIST: "BoolList",
    KernelTypes.TENSOR_LIST: "TensorList",
    KernelTypes.OPTIONAL_TENSOR_LIST: "OptionalTensorList",
}  # fmt: skip
INLINE, SEGMENT = DataLocation.INLINE, DataLocation.SEGMENT
DATA_LOCATIONS = {INLINE: "inline", SEGMENT: "segment"}

# An EValue kind's name → its union tag (for writers; "None" has no table to write).
VALUE_KIND_TAGS = {name: tag for tag, name in VALUE_KINDS.items() if tag != KernelTypes.NONE}
