"""ExecuTorch status codes (``runtime/core/error.h``), as the runtime prints them.

The runner prints a failed ``Error`` as ``0x%x`` ("Loading of method forward failed with
status 0x21"); a user needs the name to look it up. The table is the union over
ExecuTorch 0.4 to 1.5: codes were only ever added (0x04, 0x15, 0x16, 0x24, 0x25 are newer),
never renumbered, so one table reads every version.
"""

from __future__ import annotations

STATUS_NAMES: dict[int, str] = {
    0x00: "Ok",
    0x01: "Internal",
    0x02: "InvalidState",
    0x03: "EndOfMethod",
    0x04: "AlreadyLoaded",
    0x10: "NotSupported",
    0x11: "NotImplemented",
    0x12: "InvalidArgument",
    0x13: "InvalidType",
    0x14: "OperatorMissing",
    0x15: "RegistrationExceedingMaxKernels",
    0x16: "RegistrationAlreadyRegistered",
    0x20: "NotFound",
    0x21: "MemoryAllocationFailed",
    0x22: "AccessFailed",
    0x23: "InvalidProgram",
    0x24: "InvalidExternalData",
    0x25: "OutOfResources",
    0x30: "DelegateInvalidCompatibility",
    0x31: "DelegateMemoryAllocationFailed",
    0x32: "DelegateInvalidHandle",
}

# One line each, for a console tooltip: what the code usually means on a Cortex-M target.
STATUS_HINTS: dict[int, str] = {
    0x01: "internal runtime error",
    0x02: "the method or executor is in the wrong state for this call",
    0x10: "operation not supported in this context",
    0x12: "an argument (often an input tensor size or dtype) is wrong",
    0x13: "a value has the wrong type",
    0x14: "an operator has no kernel registered in this runner build",
    0x20: "something was not found (method name, file, external data key)",
    0x21: "a memory pool is too small (method, temp or planned buffer)",
    0x22: "a resource could not be accessed",
    0x23: "the program data is not a valid .pte (wrong address, file or version)",
    0x24: "external data (.ptd) is missing or invalid",
    0x25: "the target ran out of a resource",
    0x30: "the delegate payload was built for another backend version or NPU",
    0x31: "the delegate could not allocate memory (scratch or temp pool too small)",
    0x32: "the delegate handle is invalid at execute",
}


def status_name(code: int | None) -> str | None:
    """The enum name of a status code, or None for None or a code error.h does not define."""
    if code is None:
        return None
    return STATUS_NAMES.get(code)


def status_code(name: str) -> int | None:
    """The code of an enum name (``"MemoryAllocationFailed"`` → 0x21), or None."""
    for code, known in STATUS_NAMES.items():
        if known == name:
            return code
    return None
