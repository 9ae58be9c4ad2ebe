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
import hashlib
import json
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from parsers.errors import ParseError
from parsers.files import read_regular

RAW, INDEX, EVENTS, META = "raw.log", "raw.index", "events.jsonl", "meta.json"
# stderr of a simulator is kept apart from its UART (stdout), so neither splits the other's lines
STREAM_FILES = {"stdout": (RAW, INDEX), "stderr": ("stderr.log", "stderr.index")}


def file_sha256(path: Path | None) -> str | None:
    if path is None or not Path(path).is_file():
        return None
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _write_json_atomically(path: Path, data: dict) -> None:
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(data, indent=2) + "\n")
    partial.replace(path)


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
        except OSError as error:
            self.failure = self.failure or f"{self.folder / META}: {error.strerror or error}"
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
    line times): the console maps them instead of holding a long run in memory."""
    folder = Path(folder)
    warnings: list[str] = []
    try:
        meta = json.loads(read_regular(folder / META, "a session's meta.json", 16 << 20))
    except ParseError as error:
        meta = {}
        warnings.append(f"{error}; the run did not finish?")
    except (OSError, ValueError) as error:
        meta = {}
        warnings.append(f"{folder / META}: unreadable ({error}); the run did not finish?")
    if not isinstance(meta, dict):
        warnings.append(f"{folder / META}: not a JSON object ({type(meta).__name__}); ignored")
        meta = {}
    raw = (folder / RAW).read_bytes() if with_log and (folder / RAW).exists() else b""
    line_times = []
    if with_log and (folder / INDEX).exists():
        index_text = (folder / INDEX).read_bytes().decode("utf-8", "replace")  # torn or not
        for number, line in enumerate(index_text.splitlines(), 1):
            try:
                offset, when = line.split()
                line_times.append((int(offset), float(when)))
            except ValueError:
                warnings.append(f"{folder / INDEX}: line {number} is torn")
    events = []
    if (folder / EVENTS).exists():
        for number, line in enumerate((folder / EVENTS).read_bytes().splitlines(), 1):
            try:
                events.append(json.loads(line))
            except ValueError:
                warnings.append(f"{folder / EVENTS}: line {number} is torn")
    if meta and meta.get("ended") is None:
        warnings.append("the run has no end recorded (the console or the run was killed)")
    return RecordedSession(folder, meta, raw, line_times, events, warnings)


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
    "file_sha256",
    "list_sessions",
    "read_session",
    "sessions_root",
]
