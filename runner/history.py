"""Every recorded session of a workspace, as rows to list, filter and compare.

A session folder (runner/session.py) has ``meta.json``; since format 2 the run's end also
writes ``summary.json`` (the ``etu log --json`` summary plus each output's values) and a few
figures into ``meta.json`` (``summary``), so listing reads one small file per session.
Sessions from an older etu (format 1: no summary) are summarised by re-parsing ``raw.log``
once; the result is cached in ``.etu/sessions/.summaries.json`` keyed on the log's size
and modification time, so they list fast too.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from etu.parsers.errors import ParseError, describe_error
from etu.parsers.files import read_blocks, read_json, sha256_regular
from etu.runner.session import (
    LOG_CAP,
    META,
    META_CAP,
    PROGRAM_CAP,
    RAW,
    SUMMARY_CAP,
    list_sessions,
)
from etu.runner.session_fields import check_figures, check_meta, check_summary

SESSION_FORMAT = 2
SUMMARY = "summary.json"
CACHE = ".summaries.json"
MAX_OUTPUT_VALUES = 4096  # values kept per output in summary.json (the parser's own cap rules)
ENDINGS = (
    "success",
    "no_model",
    "runner_error",
    "hard_fault",
    "time_limit",
    "crash",
    "killed",
    "incomplete",
)


# --------------------------------------------------------------------------- summaries


def run_summary(log: dict[str, Any], outputs: Iterable[Any]) -> dict[str, Any]:
    """``summary.json``: the parser's summary (``LogSummary.to_json()``) and the outputs'
    values (``OutputTensor`` events or their JSON), so a diff needs no re-parse."""
    values: dict[str, dict] = {}
    for output in outputs:
        item = output.to_json() if hasattr(output, "to_json") else dict(output)
        values[str(item["index"])] = {
            "dtype": item.get("dtype"),
            "numel": item.get("numel"),
            "values": list(item.get("values") or [])[:MAX_OUTPUT_VALUES],
        }
    return {"format": SESSION_FORMAT, **log, "output_values": values}


def figures(log: dict[str, Any]) -> dict[str, Any]:
    """The few numbers a listing shows (kept in meta.json as ``summary``)."""
    pmu = (log.get("pmu") or [{}])[-1]
    allocators = log.get("allocators") or {}
    method = allocators.get("method_allocator") or {}
    temp = allocators.get("temp_allocator") or {}
    return {
        "lines": log.get("lines"),
        "verdict": log.get("verdict"),
        "npu_cycles": pmu.get("npu_cycles"),
        "cpu_cycles": pmu.get("cpu_cycles"),
        "method_allocator_used": method.get("used"),
        "method_allocator_size": method.get("size"),
        "temp_allocator": temp.get("size"),
        "outputs": len(log.get("outputs") or {}),
        "errors": len(log.get("errors") or []),
        **inference_figures(log),
    }


def inference_figures(log: dict[str, Any]) -> dict[str, Any]:
    """How many inferences ran and, with several per-inference PMU rows, the spread of each
    cycles figure per inference (``spread``: figure → min/median/max; issue 25 §6)."""
    from etu.parsers.log_summary import spread

    rows = [row for row in log.get("inferences") or [] if isinstance(row, dict)]
    spreads = {name: spread(row.get(name) for row in rows) for name in ("npu_cycles", "cpu_cycles")}
    count = log.get("inference_count")
    return {
        "inferences": count if isinstance(count, int) and not isinstance(count, bool) else None,
        "spread": {name: found for name, found in spreads.items() if found} or None,
    }


def summarize_raw(folder: Path, npu: str | None) -> dict[str, Any]:
    """A session's summary from its ``raw.log`` (older sessions), read in chunks."""
    from etu.parsers.log_summary import LogSummary
    from etu.parsers.runner_events import OutputTensor
    from etu.parsers.runner_log import RunnerLogParser

    parser = RunnerLogParser(npu=npu)
    summary = LogSummary()
    outputs = []

    def take(events) -> None:
        for event in events:
            summary.add(event)
            if type(event) is OutputTensor:
                outputs.append(event)

    path = folder / RAW
    if os.path.lexists(path):  # a FIFO, a device or a link is refused, not skipped
        for block in read_blocks(path, "a session log", LOG_CAP, follow=False):
            take(parser.feed(block))
    take(parser.close())
    return run_summary(summary.to_json(), outputs)


def load_summary(
    folder: Path, meta: dict | None = None, notes: list[str] | None = None
) -> dict[str, Any]:
    """``summary.json`` when the session has one, else re-parsed from ``raw.log``; its
    fields type-checked (a field dropped for its type is said in ``notes``). Raises
    ParseError when a file that is there cannot be read."""
    path = folder / SUMMARY
    if os.path.lexists(path):
        what = "a session's summary.json"  # NaN allowed: an output's value may be NaN
        found = read_json(path, what, SUMMARY_CAP, follow=False, allow_nan=True)
    else:
        meta = meta if meta is not None else read_meta(folder)
        found = summarize_raw(folder, _npu(meta))
    summary, problems = check_summary(found)
    if notes is not None:
        notes.extend(f"{path}: {problem}" for problem in problems)
    return summary


def _npu(meta: dict) -> str | None:
    return str(meta.get("target") or "").rpartition("-")[0] or None


def load_meta(folder: Path) -> tuple[dict, list[str]]:
    """A session's ``meta.json``, its fields type-checked, and a note per field dropped for
    its type. Raises ParseError (one line, naming the file) when it cannot be read: not
    there, not a regular file, too large, not JSON, nested too deeply, NaN or Infinity."""
    path = folder / META
    meta, notes = check_meta(read_json(path, "a session's meta.json", META_CAP, follow=False))
    return meta, [f"{path}: {note}" for note in notes]


def read_meta(folder: Path) -> dict:
    """:func:`load_meta`'s object, or {} when it cannot be read."""
    try:
        return load_meta(folder)[0]
    except ParseError:
        return {}


# --------------------------------------------------------------------------- rows


@dataclass(slots=True)
class SessionRow:
    """One line of ``etu sessions`` (``--json``: these fields)."""

    id: str
    folder: str
    started: float | None
    started_text: str
    kind: str
    target: str
    simulated: bool
    program: dict
    firmware: dict
    ending: dict
    npu_cycles: int | None
    cpu_cycles: int | None
    method_allocator_used: int | None
    method_allocator_size: int | None
    temp_allocator: int | None
    duration_s: float | None
    format: int
    warnings: list[str] = field(default_factory=list)
    problem: str | None = None  # why the session could not be read (one line), if it could not
    inferences: int | None = None  # ET_NUM_INFERENCES as the runner said it
    spread: dict | None = None  # figure → {n, min, median, max} per inference (several reports)
    place: str | None = None  # the labgrid place the board was held through, if one
    exporter: str | None = None  # the exporter host serving the place's port
    holder: str | None = None  # who held the place (USER@HOST)

    def to_json(self) -> dict:
        return asdict(self)


def _short(digest: object) -> str:
    return digest[:8] if isinstance(digest, str) else ""


def _number(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def session_row(
    folder: Path,
    meta: dict,
    figures_: dict,
    programs: dict[str, str] | None = None,
    problem: str | None = None,
) -> SessionRow:
    """A row from what the session recorded; ``programs`` maps a .pte's sha256 to its name
    (the workspace's programs) for sessions that did not record the name. ``problem``: why
    the session could not be read (the row says it, and shows what could be)."""
    started = meta.get("started") if isinstance(meta.get("started"), int | float) else None
    ended = meta.get("ended") if isinstance(meta.get("ended"), int | float) else None
    program_sha = meta.get("program_sha256")
    program_name = meta.get("program")
    if isinstance(program_name, str) and ("/" in program_name or "\\" in program_name):
        program_name = Path(program_name).name  # a path (board runs record the .pte given)
    if not program_name and isinstance(program_sha, str):
        program_name = (programs or {}).get(program_sha)
    elf = meta.get("elf") or meta.get("firmware")
    warnings = []
    if problem:
        warnings.append(problem)
    elif not meta:
        warnings.append("meta.json is unreadable")
    elif ended is None:
        warnings.append("no end recorded (the console or the run was killed)")
    reason = meta.get("exit_reason")
    if not isinstance(reason, str):
        reason = "unfinished" if ended is None else "incomplete"
    return SessionRow(
        id=folder.name,
        folder=str(folder),
        started=started,
        started_text=_time_text(started),
        kind=str(meta.get("kind") or "?"),
        target=str(meta.get("target") or ""),
        simulated=bool(meta.get("simulated")),
        program={
            "name": str(program_name or ("model_pte" if program_sha else "")),
            "sha256": program_sha if isinstance(program_sha, str) else None,
            "short": _short(program_sha),
        },
        firmware={
            "name": Path(str(elf)).name if elf else "",
            "sha256": meta.get("elf_sha256") if isinstance(meta.get("elf_sha256"), str) else None,
            "short": _short(meta.get("elf_sha256")),
        },
        ending={
            "reason": reason,
            "proof": str(meta.get("proof") or ""),
            "proof_line": _number(meta.get("proof_line")),
            "verdict": meta.get("verdict") or figures_.get("verdict"),
        },
        npu_cycles=_number(figures_.get("npu_cycles")),
        cpu_cycles=_number(figures_.get("cpu_cycles")),
        method_allocator_used=_number(figures_.get("method_allocator_used")),
        method_allocator_size=_number(figures_.get("method_allocator_size")),
        temp_allocator=_number(figures_.get("temp_allocator")),
        duration_s=round(ended - started, 3) if started and ended else None,
        format=int(meta.get("format") or 1) if isinstance(meta.get("format"), int) else 1,
        warnings=warnings,
        problem=problem,
        inferences=_number(figures_.get("inferences")),
        spread=figures_.get("spread") if isinstance(figures_.get("spread"), dict) else None,
        place=_text(meta.get("place")),
        exporter=_text(meta.get("exporter")),
        holder=_text(meta.get("holder")),
    )


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _time_text(when: float | None) -> str:
    if not when:
        return ""
    try:
        return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(when))
    except (OverflowError, OSError, ValueError):
        return ""


def workspace_programs(workspace: Path, skipped: list[str] | None = None) -> dict[str, str]:
    """sha256 → file name of the workspace's ``.pte`` programs (to name older sessions),
    each hashed in blocks. One that is not a regular file of at most PROGRAM_CAP bytes (a
    FIFO, a device, a folder, a link loop) is left out, and said in ``skipped``."""
    names: dict[str, str] = {}
    try:
        candidates = sorted(Path(workspace).glob("*.pte"))
    except OSError:
        return names
    for path in candidates:
        try:
            digest = sha256_regular(path, "an ExecuTorch program", PROGRAM_CAP)
        except ParseError as error:
            if skipped is not None:
                skipped.append(f"{error}; not used to name programs")
            continue
        names.setdefault(digest, path.name)
    return names


class _Cache:
    """Figures of format-1 sessions, keyed on their raw.log's size and mtime."""

    def __init__(self, root: Path) -> None:
        self.path = root / CACHE
        try:
            self.data = read_json(self.path, "etu's summary cache", SUMMARY_CAP, follow=False)
        except ParseError:  # a cache: rebuilt when it cannot be read
            self.data = {}
        if not isinstance(self.data, dict):
            self.data = {}
        self.changed = False

    def figures(self, folder: Path, meta: dict) -> dict:
        try:
            stat = (folder / RAW).stat()
            key = f"{stat.st_size}:{stat.st_mtime_ns}"
        except OSError:
            key = "missing"
        hit = self.data.get(folder.name)
        if isinstance(hit, dict) and hit.get("key") == key and isinstance(hit.get("figures"), dict):
            return check_figures(hit["figures"])[0]
        result = figures(load_summary(folder, meta))
        self.data[folder.name] = {"key": key, "figures": result}
        self.changed = True
        return result

    def save(self) -> None:
        if not self.changed:
            return
        partial = self.path.with_name(self.path.name + f".{os.getpid()}.partial")
        try:
            partial.write_text(json.dumps(self.data))
            partial.replace(self.path)
        except OSError:
            partial.unlink(missing_ok=True)


def list_rows(
    root: Path,
    *,
    workspace: Path | None = None,
    program: str | None = None,
    target: str | None = None,
    ending: str | None = None,
    kind: str | None = None,
    limit: int | None = None,
    place: str | None = None,
) -> list[SessionRow]:
    """Rows of the sessions under ``root``, newest first, filtered. ``program`` matches the
    program's name (substring) or a prefix of its hash; ``ending`` is a reason
    (``success``, ``runner_error``...) or ``failed`` for any other than success; ``place``
    is a labgrid place's name (exactly)."""
    root = Path(root)
    workspace = Path(workspace) if workspace is not None else root.parent.parent
    programs: dict[str, str] | None = None
    cache: _Cache | None = None
    rows: list[SessionRow] = []
    for folder in list_sessions(root):
        # One session that cannot be read is a row saying why; it never hides the others.
        problem = None
        try:
            meta, notes = load_meta(folder)
        except ParseError as error:
            meta, notes, problem = {}, [], describe_error(error)
        if target and meta.get("target") != target:
            continue
        if kind and meta.get("kind") != kind:
            continue
        if place and meta.get("place") != place:
            continue
        if not meta.get("program") and meta.get("program_sha256") and programs is None:
            programs = workspace_programs(workspace)
        found: dict = {}
        stored = meta.get("summary")
        if isinstance(stored, dict):
            found = stored
        elif problem is None:
            cache = cache or _Cache(root)
            try:
                found = cache.figures(folder, meta)
            except Exception as error:  # any unreadable session: a row saying why
                problem = describe_error(error)
        try:
            row = session_row(folder, meta, found, programs, problem)
        except Exception as error:  # belt and braces: the fields are checked
            row = session_row(folder, {}, {}, None, describe_error(error))
        row.warnings.extend(notes)
        if program and not _program_matches(row, program):
            continue
        if ending and not _ending_matches(row, ending):
            continue
        rows.append(row)
        if limit is not None and len(rows) >= limit:
            break
    if cache is not None:
        cache.save()
    return rows


@dataclass(slots=True)
class PlaceSummary:
    """How one place's sessions went: the History tab's per-place results."""

    place: str
    sessions: int = 0
    passed: int = 0
    failed: int = 0
    median_s: float | None = None  # the median duration of its sessions that recorded one
    last_ending: str = ""
    holders: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return asdict(self)


def place_summaries(rows: Iterable[SessionRow]) -> list[PlaceSummary]:
    """Per labgrid place (sessions recorded through one), by name: how many passed
    (``success``) and failed, their median time, the newest ending and who held it."""
    from statistics import median

    by_place: dict[str, list[SessionRow]] = {}
    for row in rows:
        if row.place:
            by_place.setdefault(row.place, []).append(row)
    summaries = []
    for place in sorted(by_place):
        mine = sorted(by_place[place], key=lambda r: r.started or 0)
        times = [r.duration_s for r in mine if r.duration_s is not None]
        passed = sum(r.ending["reason"] == "success" for r in mine)
        holders = sorted({r.holder for r in mine if r.holder})
        summaries.append(PlaceSummary(
            place, len(mine), passed, len(mine) - passed,
            round(median(times), 3) if times else None, mine[-1].ending["reason"], holders,
        ))  # fmt: skip
    return summaries


def _program_matches(row: SessionRow, wanted: str) -> bool:
    name = row.program["name"].lower()
    digest = row.program["sha256"] or ""
    return wanted.lower() in name or (len(wanted) >= 4 and digest.startswith(wanted.lower()))


def _ending_matches(row: SessionRow, wanted: str) -> bool:
    if wanted == "failed":
        return row.ending["reason"] != "success"
    return row.ending["reason"] == wanted


def resolve_session(name: str | Path, root: Path) -> Path | None:
    """A session folder from a path, a folder name under ``root``, or a unique prefix."""
    path = Path(name)
    if (path / META).is_file() or (path / RAW).is_file():
        return path
    candidate = Path(root) / str(name)
    if (candidate / META).is_file() or (candidate / RAW).is_file():
        return candidate
    matches = [f for f in list_sessions(Path(root)) if f.name.startswith(str(name))]
    return matches[0] if len(matches) == 1 else None


def session_problem(name: str | Path, root: Path) -> str:
    """Why ``name`` resolves to no session (``resolve_session`` gave None): one line that
    names it once."""
    path = Path(name)
    if str(name) and not path.is_absolute():
        matches = [f.name for f in list_sessions(Path(root)) if f.name.startswith(str(name))]
        if len(matches) > 1:
            shown = ", ".join(matches[:3]) + (" …" if len(matches) > 3 else "")
            return f"{name}: {len(matches)} sessions start with it ({shown}); give more of the name"
    if path.is_dir():
        return f"{name}: no such session (a folder without {META} or {RAW})"
    if path.exists():
        return f"{name}: no such session (a file, not a session folder)"
    return f"{name}: no such session (no folder, name or unique prefix under {root})"


__all__ = [
    "ENDINGS",
    "SESSION_FORMAT",
    "SUMMARY",
    "PlaceSummary",
    "SessionRow",
    "figures",
    "list_rows",
    "load_meta",
    "load_summary",
    "place_summaries",
    "read_meta",
    "resolve_session",
    "run_summary",
    "session_problem",
    "session_row",
    "summarize_raw",
    "workspace_programs",
]
