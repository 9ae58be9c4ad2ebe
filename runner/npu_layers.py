"""Measured NPU cycles per layer for a recorded FVP session: its PMU trace (the Ethos-U
plugin's ``--pmu-trace``, kept in the session folder) joined to the command streams of
the program baked into the firmware that ran, and to Vela's debug database beside that
firmware when there is one (its estimate per source operator). Blocking file reads."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from etu.fvp.command import PMU_TRACE_FILE
from etu.parsers.errors import ParseError

MAX_DEBUG_DB_BYTES = 256 << 20
FVP_SOURCE = "fvp pmu trace"
STANDIN_SOURCE = "stand-in (simulated)"


@dataclass(slots=True)
class SessionLayers:
    """What ``etu log --json`` adds: ``npu_layers`` and where the figures came from."""

    layers: list[dict] = field(default_factory=list)
    measured_source: str | None = None  # FVP_SOURCE or STANDIN_SOURCE
    debug_db: str | None = None  # the Vela debug database that named the layers
    passes: int = 0
    total_cycles: int | None = None
    warnings: list[str] = field(default_factory=list)
    error: str | None = None  # the trace could not be read (one line)

    def to_json(self) -> dict:
        return {
            "npu_layers": self.layers,
            "npu_layers_source": self.measured_source,
            "npu_layers_debug_db": self.debug_db,
            "npu_layers_passes": self.passes,
            "npu_layers_total_cycles": self.total_cycles,
            "npu_layers_warnings": self.warnings,
            "npu_layers_error": self.error,
        }


def trace_path(folder: Path, meta: dict) -> Path | None:
    """The session's PMU trace file, if it has one (a name the session recorded, never a
    path that leaves the folder)."""
    name = meta.get("pmu_trace")
    if not isinstance(name, str) or "/" in name or "\\" in name or name in ("", ".", ".."):
        name = PMU_TRACE_FILE
    path = Path(folder) / name
    return path if path.is_file() else None


def debug_db_beside(elf: Path) -> Path | None:
    """``vela/*_debug.xml`` beside the firmware or its folder (a workspace's layout)."""
    for vela in (elf.parent / "vela", elf.parent.parent / "vela"):
        found = sorted(vela.glob("*_debug.xml")) if vela.is_dir() else []
        if found:
            return found[0]
    return None


def session_layers(folder: Path, meta: dict) -> SessionLayers | None:
    """Per-layer NPU cycles of a session (None when it kept no PMU trace)."""
    from etu.parsers.files import read_regular
    from etu.parsers.pmu_trace import MAX_TRACE_BYTES, parse_pmu_trace

    path = trace_path(folder, meta)
    if path is None:
        if meta.get("pmu_trace") and meta.get("exit_reason") == "success":
            return SessionLayers(error=f"{folder}: the simulator wrote no PMU trace")
        return None  # none asked for, or the run ended before the NPU's trace was written
    result = SessionLayers()
    try:
        trace = parse_pmu_trace(read_regular(path, "a PMU trace", MAX_TRACE_BYTES), str(path))
    except ParseError as error:
        result.error = str(error)
        return result
    result.measured_source = STANDIN_SOURCE if trace.simulated else FVP_SOURCE
    result.warnings += trace.warnings
    elf = session_elf(folder, meta)
    if elf is None:
        result.error = f"{path}: the firmware that ran is gone, so the trace cannot be joined"
        return result
    join_trace(result, trace, elf)
    return result


def session_elf(folder: Path, meta: dict) -> Path | None:
    """The firmware a session ran: its recorded path, which ``etu run`` keeps as typed, so a
    relative one is tried from the workspace too (``WORKSPACE/.etu/sessions/FOLDER``)."""
    elf = meta.get("elf")
    if not isinstance(elf, str) or not elf:
        return None
    path = Path(elf)
    candidates = [path] if path.is_absolute() else [Path(folder).parent.parent.parent / path, path]
    return next((c for c in candidates if c.is_file()), None)


def join_trace(result: SessionLayers, trace, elf: Path) -> None:
    """Fill ``result`` from ``trace`` and the program inside ``elf``."""
    from etu.parsers.ethosu_commands import program_operations
    from etu.parsers.files import read_regular
    from etu.parsers.firmware_program import find_embedded_program
    from etu.parsers.pmu_trace import npu_layers, stream_units, time_units
    from etu.parsers.program_facts import delegates
    from etu.parsers.pte import decode_program
    from etu.parsers.vela_debug_db import parse_debug_db

    try:
        found = find_embedded_program(elf)
        if found is None:
            result.error = f"{elf}: no program found in the firmware"
            return
        program = decode_program(found.data, str(elf))
        decoded = program_operations(program, delegates(program))
    except (ParseError, OSError) as error:
        result.error = f"{elf}: {getattr(error, 'strerror', None) or error}"
        return
    db = None
    db_path = debug_db_beside(elf)
    if db_path is not None:
        try:
            db = parse_debug_db(read_regular(db_path, "a Vela debug XML", MAX_DEBUG_DB_BYTES),
                                str(db_path))  # fmt: skip
        except ParseError as error:
            result.warnings.append(str(error))
    streams, reasons = [], []
    for item in decoded:
        if item.stream is None or not item.stream.operations:
            continue
        units, why = stream_units(item.index, item.stream, db)
        streams.append(units)
        if why:
            reasons.append(why)
    if db is not None and not any(s.from_debug_db for s in streams) and reasons:
        result.warnings.append(f"{db_path}: {reasons[0]}")
    elif any(s.from_debug_db for s in streams):
        result.debug_db = str(db_path)
    timing = time_units(trace, streams)
    result.warnings += timing.warnings
    result.passes = timing.passes
    result.total_cycles = timing.total
    inferences = max(timing.passes // max(len(streams), 1), 1)
    source = result.measured_source
    result.layers = [
        {**layer.to_json(), "measured_source": source} for layer in npu_layers(timing, inferences)
    ]


def latest_measured(program: Path) -> tuple[Path, SessionLayers] | None:
    """The newest session of ``program``'s workspace that ran this program (same bytes)
    and kept a PMU trace, with its layers; None when there is none. Blocking."""
    from etu.runner.history import read_meta
    from etu.runner.session import file_sha256, list_sessions, sessions_root
    from etu.runner.workspace import workspace_of

    wanted = file_sha256(Path(program))
    if wanted is None:
        return None
    for folder in list_sessions(sessions_root(workspace_of(Path(program)))):
        if not (folder / PMU_TRACE_FILE).is_file():  # one stat: most sessions have none
            continue
        meta = read_meta(folder)
        if meta.get("program_sha256") != wanted or trace_path(folder, meta) is None:
            continue
        found = session_layers(folder, meta)
        if found is not None:
            return folder, found
    return None
