"""Everything a report on one recorded run says, gathered as plain data (``etu report``).

The session says how the run went (meta.json, summary.json or its raw.log); the program is
found by the hash the session recorded (the workspace's ``.pte``, else the program baked
into the firmware ELF, which is what ran); fit verdicts need that ELF; the Vela estimate is
the workspace's ``vela/`` folder. Whatever cannot be found is said so in its section, never
guessed. Rendering (Markdown, HTML) is etu_tui/report_format.py.
"""

from __future__ import annotations

import hashlib
import platform
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from etu.runner.history import load_meta, load_summary, session_row, workspace_programs
from etu.runner.session import PROGRAM_CAP

SECTIONS = ("session", "program", "fit", "vela", "ending", "pmu", "allocators", "outputs", "tools")
OUTPUT_VALUES_SHOWN = 64


def _dist_version(name: str) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:
        return None


def _program_bytes(
    workspace: Path, meta: dict, programs: dict[str, str]
) -> tuple[bytes | None, str]:
    """The bytes of the program that ran and where they came from (``programs``: the
    workspace's, sha256 → name)."""
    from etu.parsers.errors import ParseError
    from etu.parsers.files import read_regular

    wanted = meta.get("program_sha256")
    if isinstance(wanted, str):
        name = programs.get(wanted)
        if name:
            try:
                data = read_regular(workspace / name, "an ExecuTorch program", PROGRAM_CAP)
            except ParseError as error:  # changed since it was hashed
                return None, str(error)
            return data, str(workspace / name)
    elf = meta.get("elf")
    if elf and Path(elf).is_file():
        from etu.parsers.elf_map import read_elf
        from etu.parsers.errors import ParseError
        from etu.parsers.memory_map import build_memory_map

        try:
            with read_elf(elf) as image:
                pool = build_memory_map(image).pools.get("model_pte")
                if pool is not None:
                    data = image.read_bytes(pool.address, pool.size)
                    if not isinstance(wanted, str) or hashlib.sha256(data).hexdigest() == wanted:
                        return data, f"{elf} (model_pte)"
        except (ParseError, OSError):
            pass
    return None, "not found: no workspace .pte and no firmware ELF with the recorded hash"


def _program_section(data: bytes | None, source: str) -> dict[str, Any]:
    if data is None:
        return {"available": False, "source": source}
    from etu.parsers.errors import ParseError
    from etu.parsers.program_facts import inspect_record
    from etu.parsers.pte import decode_program

    try:
        record = inspect_record(decode_program(data, source))
    except ParseError as error:
        return {"available": False, "source": source, "error": str(error)}
    plans = record["plans"]
    return {
        "available": True,
        "source": source,
        "file_size": record["file_size"],
        "plans": [p["name"] for p in plans],
        "delegate_calls": sum(p["delegate_calls"] for p in plans),
        "kernel_calls": sum(p["kernel_calls"] for p in plans),
        "cpu_operators": record["cpu_operators"],
        "select_ops_list": record["select_ops_list"],
        "delegates": [
            {
                "id": d["id"],
                "payload_size": d["payload_size"],
                "npu_target": (d.get("ethosu") or {}).get("npu_target"),
                "scratch_size": (d.get("ethosu") or {}).get("scratch_size"),
            }
            for p in plans
            for d in p["delegates"]
        ],
        "planned_memory": {p["name"]: p["planned_memory"] for p in plans},
        "constant_data_size": record["constant_data_size"],
    }


def _fit_section(data: bytes | None, source: str, meta: dict, vela) -> dict[str, Any]:
    """The fit verdicts of the program that ran (``data``, read from ``source``) against
    the session's firmware ELF; external Vela blocks are looked up in the ``.ptd`` files
    beside the workspace program (or the ELF, for a program read out of it)."""
    elf = meta.get("elf")
    if data is None or not elf or not Path(elf).is_file():
        return {"available": False, "why": "needs the program and the firmware ELF"}
    from etu.parsers.errors import ParseError
    from etu.parsers.external_blocks import find_data_files, has_external_blocks, open_data_files
    from etu.parsers.fit import check_fit, fit_record
    from etu.parsers.memory_map import load_memory_map
    from etu.parsers.pte import decode_program

    elf = Path(elf)
    map_file = elf.with_suffix(".map")
    try:
        if map_file.is_file():
            memory_map, regions = load_memory_map(elf, map_path=map_file), map_file.name
        else:
            preset = "corstone-320" if meta.get("platform") == "corstone-320" else "corstone-300"
            memory_map, regions = load_memory_map(elf, preset=preset), f"preset {preset}"
        program = decode_program(data, "program")
        data_files = []
        if has_external_blocks(program):
            beside = Path(source) if Path(source).is_file() else elf
            data_files, _unreadable = open_data_files(find_data_files(beside))
        verdicts = check_fit(
            program, memory_map, vela, target=meta.get("target") or None, data_files=data_files
        )
    except ParseError as error:
        return {"available": False, "why": str(error)}
    return {"available": True, "elf": str(elf), "regions_from": regions, **fit_record(verdicts)}


def _vela(workspace: Path):
    from etu.parsers.errors import ParseError
    from etu.parsers.vela import load_vela_report

    folder = workspace / "vela"
    if not folder.is_dir():
        return None, f"no Vela output in {folder}"
    try:
        return load_vela_report(folder), str(folder)
    except ParseError as error:
        return None, str(error)


def build_report(folder: Path, workspace: Path | None = None) -> dict[str, Any]:
    """The report's data for the session in ``folder`` (``workspace``: where to look for
    the program and Vela's output; default: the folder holding ``.etu/sessions``). A
    session file that cannot be read is a ParseError (one line, naming it); a field of the
    wrong type, or a workspace ``.pte`` that cannot be hashed, is a warning."""
    from etu.parsers.errors import ParseError, describe_error

    folder = Path(folder)
    workspace = Path(workspace) if workspace is not None else folder.parent.parent.parent
    warnings: list[str] = []
    problem = None
    try:
        meta, notes = load_meta(folder)
        warnings.extend(notes)
    except ParseError as error:
        meta, problem = {}, describe_error(error)
    summary = load_summary(folder, meta, warnings)
    programs = workspace_programs(workspace, warnings)
    row = session_row(folder, meta, {}, programs, problem).to_json()
    data, source = _program_bytes(workspace, meta, programs)
    vela, vela_source = _vela(workspace)
    pmu = (summary.get("pmu") or [{}])[-1]
    headline = vela.headline() if vela is not None else None
    return {
        "session": {
            **{k: row[k] for k in ("id", "folder", "kind", "target", "simulated", "started_text")},
            "duration_s": row["duration_s"],
            "format": row["format"],
            "warnings": row["warnings"] + warnings,
        },
        "program": {"name": row["program"]["name"], **_program_section(data, source)},
        "fit": _fit_section(data, source, meta, vela),
        "vela": {
            "available": vela is not None,
            "source": vela_source,
            "estimate": True,
            "headline": headline,
            "npu_operators": vela.npu_operators if vela is not None else None,
            "cpu_operators": vela.cpu_operators if vela is not None else None,
        },
        "ending": {
            **row["ending"],
            "returncode": meta.get("returncode"),
            "errors": summary.get("errors") or [],
        },
        "pmu": {
            "npu_cycles": pmu.get("npu_cycles"),
            "cpu_cycles": pmu.get("cpu_cycles"),
            "cpu_cycles_note": pmu.get("cpu_cycles_note"),  # why a 0 is no measurement
            "npu_inferences": pmu.get("npu_inferences"),
            "counters": pmu.get("counters") or {},
        },
        "allocators": summary.get("allocators") or {},
        "outputs": [
            {
                "index": int(index),
                "dtype": item.get("dtype"),
                "numel": item.get("numel"),
                "values": (item.get("values") or [])[:OUTPUT_VALUES_SHOWN],
                "shown": min(len(item.get("values") or []), OUTPUT_VALUES_SHOWN),
            }
            for index, item in sorted(
                (summary.get("output_values") or {}).items(), key=lambda kv: int(kv[0])
            )
        ],
        "losses": _losses(folder),
        "tools": {
            "etu": _dist_version("etu"),
            "executorch": _dist_version("executorch"),
            "ethos-u-vela": _dist_version("ethos-u-vela"),
            "vela_in_report": vela.vela_version if vela is not None else None,
            "python": platform.python_version(),
            "simulator": meta.get("simulator") or _emulator(meta),
            "simulated": bool(meta.get("simulated")),
            "program_sha256": row["program"]["sha256"]
            or (hashlib.sha256(data).hexdigest() if data is not None else None),
            "firmware": meta.get("elf"),
            "firmware_sha256": row["firmware"]["sha256"],
            "command": meta.get("command") or [],
        },
    }


def _emulator(meta: dict) -> str | None:
    """What ran a QEMU session (its meta names no simulator): the command's program."""
    command = meta.get("command") or []
    if meta.get("kind") == "qemu" and command:
        return str(command[0])
    return None


def _losses(folder: Path) -> dict[str, Any] | None:
    """The session's saved host comparison (``etu compare``, the console) as its two losses
    per output: quantisation (float model → reference), deployment (reference → target)."""
    from etu.runner.compare import load_comparison
    from etu.runner.diff import loss_summary

    record = load_comparison(folder)
    if record is None:
        return None
    return {
        "reference": record.get("reference"),
        "quantization_note": record.get("quantization_note"),
        "simulated": bool(record.get("simulated")),
        "outputs": [{"index": row.get("index"), **loss_summary(row)}
                    for row in record["outputs"] if isinstance(row, dict)],
    }  # fmt: skip


__all__ = ["SECTIONS", "build_report"]
