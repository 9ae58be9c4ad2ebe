"""Recorded runs: every byte a run printed, when it arrived, and what it meant.

A session is a folder: ``raw.log`` (the bytes exactly as received), ``raw.index`` (one
``<byte offset> <host time>`` line per received line), ``events.jsonl`` (the parser's
events) and ``meta.json`` (command, target, hashes, start/end, exit reason). Format 2
(issue 12) adds ``format`` and, at the end, ``summary`` (a few figures) to ``meta.json`` and
writes ``summary.json`` (runner/history.py); format 1 sessions have neither and still read.
Data is written as it arrives with unbuffered writes, so killing the console loses at most
what the OS had not yet been handed: nothing that reached ``write_output``.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from etu.parsers.errors import ParseError
from etu.parsers.files import (
    GiB,
    MiB,
    loads_json,
    read_json,
    read_lines,
    read_regular,
    sha256_regular,
)

RAW, INDEX, EVENTS, META = "raw.log", "raw.index", "events.jsonl", "meta.json"
# What etu reads of a session (its files are refused when they are not regular files, or
# links: etu writes them itself, never as links). A log is streamed up to LOG_CAP; where it
# is held whole (a replay's lines, ``read_session(with_log=True)``) up to LOG_IN_MEMORY_CAP.
META_CAP = 16 * MiB
SUMMARY_CAP = 256 * MiB
LOG_CAP = 4 * GiB
LOG_IN_MEMORY_CAP = 1 * GiB
INDEX_CAP = 1 * GiB
INDEX_LINE = 256  # bytes of one raw.index line ("<offset> <time>", a few dozen)
EVENTS_CAP = 1 * GiB
EVENT_LINE = 256 * MiB  # bytes of one events.jsonl line (an output of a million values)
PROGRAM_CAP = 4 * GiB  # a program or firmware hashed to name it (parsers.pte's cap)
# stderr of a simulator is kept apart from its UART (stdout), so neither splits the other's lines
STREAM_FILES = {"stdout": (RAW, INDEX), "stderr": ("stderr.log", "stderr.index")}


def file_sha256(path: Path | None) -> str | None:
    """The SHA-256 of a program or firmware file, streamed; None when there is no regular
    file of at most PROGRAM_CAP bytes to hash (its reader says why)."""
    if path is None:
        return None
    try:
        return sha256_regular(path, "a file to hash", PROGRAM_CAP)
    except ParseError:
        return None


def program_name(elf: Path, program_sha: str | None) -> str | None:
    """The workspace's ``.pte`` (beside the firmware or one folder up) whose bytes are the
    program baked into the firmware; None when none matches."""
    if program_sha is None:
        return None
    for folder in (Path(elf).parent, Path(elf).parent.parent):
        try:
            candidates = sorted(folder.glob("*.pte"))
        except OSError:
            continue
        for path in candidates:
            with contextlib.suppress(OSError):
                if path.stat().st_size < (256 << 20) and file_sha256(path) == program_sha:
                    return path.name
    return None


def firmware_meta(elf: Path) -> dict:
    """What every session that ran a firmware records about it: the ELF and its hash, and
    the program baked into it, found the way ``etu inspect FW.elf`` finds it (the
    ``model_pte`` array, else a scan for a program image), with its hash, its name in the
    workspace when a ``.pte`` there has the same bytes, and the target its Ethos-U delegate
    was compiled for (None for a CPU-only program)."""
    import hashlib

    from etu.parsers.firmware_program import find_embedded_program

    fields: dict = {"elf": str(elf), "elf_sha256": file_sha256(elf), "program_sha256": None,
                    "program": None, "program_target": None}  # fmt: skip
    try:
        found = find_embedded_program(elf)
    except (ParseError, OSError):
        found = None
    if found is None:
        return fields
    fields["program_sha256"] = hashlib.sha256(found.data).hexdigest()
    fields["program"] = program_name(elf, fields["program_sha256"])
    fields["program_target"] = _delegate_target(found.data)
    return fields


def program_file_meta(pte: Path) -> dict:
    """The same program fields for a ``.pte`` flashed as a file of its own (a WiseEye2's
    model placed at its flash address)."""
    fields = {"program_sha256": file_sha256(pte), "program": Path(pte).name}
    try:
        data = read_regular(pte, "a program", PROGRAM_CAP)
    except ParseError:
        return {**fields, "program_target": None}
    return {**fields, "program_target": _delegate_target(data)}


def _delegate_target(data: bytes) -> str | None:
    """The ``target`` compile spec of the program's first Ethos-U delegate."""
    from etu.parsers.program_facts import delegates
    from etu.parsers.pte import decode_program

    try:
        program = decode_program(data, "program")
        try:
            for info in delegates(program):
                for spec in info.delegate.compile_specs:
                    if spec.key == "target" and spec.text:
                        return spec.text.strip()
        finally:
            program.close()
    except ParseError:
        return None
    return None


def board_session_meta(
    *,
    board: str | None,
    label: str | None,
    port: str | None,
    baud: int | None,
    firmware: Path | None = None,
    flashed: list[dict] | None = None,
    programs: list[Path] = (),
    target: str | None = None,
) -> dict:
    """The ``meta.json`` fields of a session on a board (``etu monitor``, ``etu flash
    --monitor``, the Boards tab): the one place they are assembled, so each front end
    records the same keys. ``firmware`` is the ELF that was flashed (its program found in
    it), ``programs`` the ``.pte`` files flashed beside it; ``target`` is the board's own
    (its profile's: the stand-in's target, the emulated board's name), else the one the
    program's Ethos-U delegate was compiled for."""
    meta: dict = {"board": board, "label": label or "board", "port": port, "baud": baud,
                  "firmware": None if firmware is None else str(firmware),
                  "program": None, "program_sha256": None, "program_target": None,
                  "target": target}  # fmt: skip
    if flashed is not None:
        meta["flashed"] = flashed
    found: dict = {}
    if firmware is not None:
        from etu.parsers.firmware_program import is_elf

        meta["firmware_sha256"] = file_sha256(firmware)
        if is_elf(firmware):
            found = firmware_meta(firmware)
    for pte in programs:
        if not found.get("program_sha256"):
            found.update(program_file_meta(pte))
    meta.update(found)
    meta["target"] = target or found.get("program_target")
    return meta


def _write_json_atomically(path: Path, data: dict) -> None:
    partial = path.with_name(path.name + ".partial")
    try:
        partial.write_text(json.dumps(data, indent=2) + "\n")
        partial.replace(path)
    except OSError:
        with contextlib.suppress(OSError):  # no empty or torn .partial stays behind
            partial.unlink()
        raise


RESERVE = ".meta.reserve"  # room kept for the last meta.json when the disk fills up
RESERVE_BYTES = 16 * 1024


class SessionWriter:
    """Appends one run to its folder as the data arrives."""

    def __init__(self, root: Path, kind: str, meta: dict) -> None:
        root.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        for n in range(1000):
            folder = root / f"{stamp}-{kind}-{n:03d}"
            try:
                folder.mkdir()
                break
            except FileExistsError:
                continue
        else:
            raise OSError(f"{root}: no free session folder name for {stamp}")
        self.folder = folder
        self.meta = {"format": 2, "kind": kind, "started": time.time(), "ended": None, **meta}
        _write_json_atomically(folder / META, self.meta)
        with contextlib.suppress(OSError):  # best effort: a run is recorded without it too
            (folder / RESERVE).write_bytes(bytes(RESERVE_BYTES))
        self._streams = {name: _StreamFile(folder, *files) for name, files in STREAM_FILES.items()}
        self._events = open(folder / EVENTS, "a", buffering=1)  # noqa: SIM115 (held for the run)
        self.failure: str | None = None  # why recording stopped (disk full, folder gone)

    def write_output(self, chunk: bytes, when: float | None = None, stream: str = "stdout") -> None:
        """Store ``chunk`` as received, and the host time of each line that starts in it."""
        if self.failure is None:
            with self._guard():
                self._streams[stream].write(chunk, time.time() if when is None else when)

    def write_events(self, events: Iterable) -> None:
        lines = [json.dumps(_event_json(event)) + "\n" for event in events]
        if lines and self.failure is None:
            with self._guard():
                self._events.write("".join(lines))

    def write_file(self, name: str, data: bytes) -> None:
        """A file of the session (ETDump blocks), under a name etu chose."""
        if self.failure is None:
            with self._guard():
                (self.folder / name).write_bytes(data)

    @contextlib.contextmanager
    def _guard(self):
        """A write that fails (ENOSPC, EFBIG, EIO, the folder removed) stops recording; the
        caller sees ``failure`` and stops the run: nothing raises into a reader thread."""
        try:
            yield
        except OSError as error:
            where = error.filename or self.folder
            self.failure = f"{where}: {error.strerror or error}"

    def update_meta(self, **fields) -> None:
        self.meta.update(fields)
        _write_json_atomically(self.folder / META, self.meta)

    def write_summary(self, summary: dict) -> None:
        """``summary.json``: what the run amounted to (runner/history.py's run_summary)."""
        if self.failure is None:
            with self._guard():
                _write_json_atomically(self.folder / "summary.json", summary)

    def finish(self, **fields) -> None:
        """Record how the run ended and close the files. When recording failed, the session
        is marked incomplete (if meta.json can still be written; if not, its missing end
        says the same to :func:`read_session`)."""
        sizes = {name: stream.offset for name, stream in self._streams.items()}
        if self.failure is not None:
            fields = {**fields, "incomplete": True, "record_error": self.failure}
        try:
            self.update_meta(ended=time.time(), bytes=sizes, **fields)
        except OSError:
            # the disk is full: give back the room kept for this moment and write again
            with contextlib.suppress(OSError):
                (self.folder / RESERVE).unlink()
            try:
                self.update_meta(ended=time.time(), bytes=sizes, **fields)
            except OSError as error:
                self.failure = self.failure or f"{self.folder / META}: {error.strerror or error}"
        with contextlib.suppress(OSError):
            (self.folder / RESERVE).unlink()
        for closing in (*(s.close for s in self._streams.values()), self._events.close):
            with contextlib.suppress(OSError):
                closing()


class _StreamFile:
    """One stream's bytes (unbuffered) and its index of line start times."""

    def __init__(self, folder: Path, raw: str, index: str) -> None:
        self._raw = open(folder / raw, "ab", buffering=0)  # noqa: SIM115 (held for the run)
        self._index = open(folder / index, "a", buffering=1)  # noqa: SIM115
        self.offset = 0
        self._at_line_start = True

    def write(self, chunk: bytes, when: float) -> None:
        self._raw.write(chunk)
        starts = [self.offset] if self._at_line_start and chunk else []
        position = chunk.find(b"\n")
        while position != -1 and position + 1 < len(chunk):
            starts.append(self.offset + position + 1)
            position = chunk.find(b"\n", position + 1)
        if starts:
            self._index.write("".join(f"{offset} {when:.6f}\n" for offset in starts))
        self.offset += len(chunk)
        if chunk:
            self._at_line_start = chunk.endswith(b"\n")

    def close(self) -> None:
        self._raw.close()
        with contextlib.suppress(OSError):  # a full disk refuses the buffered tail
            self._index.close()


def _event_json(event) -> dict:
    return event.to_json() if hasattr(event, "to_json") else dict(event)


@dataclass(slots=True)
class RecordedSession:
    folder: Path
    meta: dict
    raw: bytes
    line_times: list[tuple[int, float]]  # (byte offset of a line, host time)
    events: list[dict]
    warnings: list[str]


def read_session(folder: Path, *, with_log: bool = True) -> RecordedSession:
    """Read a session back, including one cut short by a crash (a torn last line is
    reported, not fatal: the raw bytes are the record and are always complete).
    ``with_log=False`` leaves ``raw.log`` and ``raw.index`` on disk (``raw`` is empty, no
    line times): the console maps them instead of holding a long run in memory.

    A file that is there but cannot be read (not a regular file, a link, past its cap) is a
    ParseError naming it; an unreadable ``meta.json`` is a warning (the run did not finish),
    and its fields are type-checked (runner.session_fields: a wrong one is dropped, said)."""
    from etu.runner.session_fields import check_meta

    folder = Path(folder)
    warnings: list[str] = []
    try:
        found = read_json(folder / META, "a session's meta.json", META_CAP, follow=False)
        meta, notes = check_meta(found)
        warnings.extend(f"{folder / META}: {note}" for note in notes)
    except ParseError as error:
        meta = {}
        warnings.append(f"{error}; the run did not finish?")
    raw = b""
    if with_log and _present(folder / RAW):
        what = "a session log read whole"
        raw = read_regular(folder / RAW, what, LOG_IN_MEMORY_CAP, follow=False)
    line_times = []
    if with_log and _present(folder / INDEX):
        line_times = read_index(folder / INDEX, warnings)
    events = []
    if _present(folder / EVENTS):
        what = "a session's events"
        lines = read_lines(folder / EVENTS, what, EVENTS_CAP, EVENT_LINE, follow=False)
        for number, (line, whole) in enumerate(lines, 1):
            if not whole:
                longer = f"longer than {EVENT_LINE // MiB} MiB"
                warnings.append(f"{folder / EVENTS}: line {number} is {longer}; skipped")
                continue
            try:
                event = loads_json(line, allow_nan=True)  # an output may be NaN
            except ParseError:
                warnings.append(f"{folder / EVENTS}: line {number} is torn")
                continue
            if isinstance(event, dict) and isinstance(event.get("type"), str):
                events.append(event)
            else:
                warnings.append(f"{folder / EVENTS}: line {number} is not an event; skipped")
    if meta and meta.get("ended") is None:
        warnings.append("the run has no end recorded (the console or the run was killed)")
    return RecordedSession(folder, meta, raw, line_times, events, warnings)


def _present(path: Path) -> bool:
    """Whether there is anything at ``path`` (a link too, even a dangling one or a loop: its
    reader then says what is wrong with it)."""
    return os.path.lexists(path)


def read_index(path: Path, warnings: list[str] | None = None) -> list[tuple[int, float]]:
    """``raw.index`` as (byte offset, host time) pairs; a torn line is skipped (and said in
    ``warnings``). Raises ParseError when the file cannot be read."""
    line_times = []
    lines = read_lines(path, "a session's raw.index", INDEX_CAP, INDEX_LINE, follow=False)
    for number, (line, whole) in enumerate(lines, 1):
        try:
            if not whole:
                raise ValueError(line)
            offset, when = line.split()
            entry = (int(offset), float(when))
            if entry[0] < 0 or not math.isfinite(entry[1]):
                raise ValueError(line)
            line_times.append(entry)
        except ValueError:
            if warnings is not None:
                warnings.append(f"{path}: line {number} is torn")
    return line_times


def list_sessions(root: Path) -> list[Path]:
    """Session folders under ``root``, newest first."""
    if not root.is_dir():
        return []
    folders = [p for p in root.iterdir() if (p / RAW).exists() or (p / META).exists()]
    return sorted(folders, key=lambda p: p.name, reverse=True)


def sessions_root(workspace: Path) -> Path:
    return Path(workspace) / ".etu" / "sessions"


__all__ = [
    "EVENTS",
    "INDEX",
    "META",
    "RAW",
    "RecordedSession",
    "SessionWriter",
    "board_session_meta",
    "file_sha256",
    "firmware_meta",
    "list_sessions",
    "program_name",
    "read_index",
    "read_session",
    "sessions_root",
]
