"""What the loading workers read for the UI, re-exported from :mod:`runner.workspace`.

The loading code is headless and shared with the CLI (``etu elf``, ``etu fit``); it lives in
``runner/workspace.py``. This module keeps the names the console's panels import.
"""

from __future__ import annotations

from runner.workspace import (
    DEFAULT_PRESET,
    FIRMWARE_FOLDER,
    REGIONS_FROM,
    TOP_SYMBOLS,
    VELA_FOLDER,
    FirmwareResult,
    ProgramFacts,
    VelaResult,
    decode_facts,
    error_line,
    file_label,
    find_firmware,
    find_vela_output,
    load_firmware,
    load_vela,
    output_shapes,
    program_target,
    read_memory_map,
    resolve_target,
    sidecar,
    vela_error_line,
    vela_label,
    workspace_vela,
)

__all__ = [
    "DEFAULT_PRESET",
    "FIRMWARE_FOLDER",
    "REGIONS_FROM",
    "TOP_SYMBOLS",
    "VELA_FOLDER",
    "FirmwareResult",
    "ProgramFacts",
    "VelaResult",
    "decode_facts",
    "error_line",
    "file_label",
    "find_firmware",
    "find_vela_output",
    "load_firmware",
    "load_vela",
    "output_shapes",
    "program_target",
    "read_memory_map",
    "resolve_target",
    "sidecar",
    "vela_error_line",
    "vela_label",
    "workspace_vela",
]
