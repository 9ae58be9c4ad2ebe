"""External Vela blocks: an Ethos-U payload's ``cmd_data``/``weight_data`` kept in a ``.ptd``.

An external-block lowering (``EthosUCompileSpec(external_block_placements=...)``, ExecuTorch
PR 21893) writes a 64-character key in place of the block's payload, ``external=1`` in its
header, and the payload as named data in ``TAG.ptd`` under that key, where
``key = sha256(TAG + b"\\0" + payload).hexdigest()`` and the tags are in the delegate's
``external_block_placements`` compile spec. This module finds each key in the data files,
checks the hash, and says what is wrong in one line when something is.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

from etu.parsers.errors import ParseError
from etu.parsers.ethosu import EthosUPayload
from etu.parsers.ptd import DATA_FILE_SUFFIX, DataEntry, DataFile, open_data_file
from etu.parsers.pte import BackendDelegate, Program

PLACEMENTS_SPEC = "external_block_placements"
KEY_PATTERN = re.compile(r"[0-9a-f]{64}")

OK = "ok"
MISSING = "missing"  # no data file has the key
HASH_MISMATCH = "hash_mismatch"  # found, but the bytes do not hash to the key
BAD_KEY = "bad_key"  # the block does not hold a 64-character hex key
NO_DATA = "no_data_file"  # no .ptd was given or found


@dataclass(frozen=True, slots=True)
class ExternalBlock:
    """One external block of one delegate, resolved (or not) against the data files."""

    block: str  # cmd_data, weight_data, ...
    key: str
    status: str  # ok | missing | hash_mismatch | bad_key | no_data_file
    message: str
    data_file: str | None = None  # the .ptd that holds the key
    size: int | None = None  # bytes of the blob in it
    tag: str | None = None  # the placement tag the hash matched (or was checked with)
    entry: DataEntry | None = None

    @property
    def ok(self) -> bool:
        return self.status == OK

    def to_json(self) -> dict:
        return {
            "block": self.block,
            "key": self.key,
            "status": self.status,
            "message": self.message,
            "data_file": self.data_file,
            "size": self.size,
            "tag": self.tag,
        }


def placements(delegate: BackendDelegate) -> dict[str, str]:
    """The delegate's ``external_block_placements`` compile spec: block name → tag."""
    text = delegate.spec(PLACEMENTS_SPEC)
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    if not isinstance(value, dict):
        return {}
    return {str(k): str(v) for k, v in value.items() if isinstance(v, str)}


def block_key(tag: str, payload: bytes) -> str:
    """The key ExecuTorch's Arm backend gives a block placed under ``tag``."""
    return hashlib.sha256(tag.encode("ascii", "replace") + b"\0" + payload).hexdigest()


def find_data_files(program: str | Path) -> list[Path]:
    """The ``*.ptd`` files beside a program, sorted by name."""
    folder = Path(program).parent
    try:
        return sorted(p for p in folder.glob(f"*{DATA_FILE_SUFFIX}") if p.is_file())
    except OSError:
        return []


def open_data_files(paths: list[Path]) -> tuple[list[DataFile], list[str]]:
    """The decoded data files and, for each that could not be read, its one-line error."""
    files, errors = [], []
    for path in paths:
        try:
            files.append(open_data_file(path))
        except ParseError as error:
            errors.append(str(error.with_source(str(path))))
    return files, errors


def has_external_blocks(program: Program) -> bool:
    """Whether any Ethos-U delegate of ``program`` keeps a block in a ``.ptd``."""
    from etu.parsers.program_facts import delegates

    return any(info.payload and info.payload.external_blocks for info in delegates(program))


def data_files_beside(program: Program) -> list[DataFile]:
    """The readable ``*.ptd`` files beside a program that has external blocks (else none);
    one that cannot be read is left out (resolution then says its key is missing)."""
    if program.bundled or not has_external_blocks(program):
        return []
    files, _errors = open_data_files(find_data_files(program.source))
    return files


def resolve(
    payload: EthosUPayload, delegate: BackendDelegate, data_files: list[DataFile]
) -> list[ExternalBlock]:
    """Each external block of ``payload`` looked up in ``data_files`` (in that order) and
    checked against its hash."""
    tags = placements(delegate)
    found = []
    for block, key in payload.external_blocks.items():
        found.append(_resolve_one(block, key, tags.get(block), data_files))
    return found


def _resolve_one(block: str, key: str, tag: str | None, files: list[DataFile]) -> ExternalBlock:
    shown = key[:80]
    if not KEY_PATTERN.fullmatch(key):
        return ExternalBlock(block, key, BAD_KEY,
                             f"{block} is external but holds {shown!r}, not a 64-character "
                             "sha256 key", tag=tag)  # fmt: skip
    if not files:
        message = (f"{block} is in a .ptd file (key {key[:12]}…); no readable one was given "
                   "or found beside the program (give --data FILE.ptd)")  # fmt: skip
        return ExternalBlock(block, key, NO_DATA, message, tag=tag)
    for data in files:
        entry = data.entry(key)
        if entry is None:
            continue
        try:
            blob = data.read(entry)
        except ParseError as error:
            return ExternalBlock(block, key, MISSING, str(error.with_source(data.source)),
                                 data.source, entry.size, tag, entry)  # fmt: skip
        candidates = [t for t in dict.fromkeys((tag, data.tag)) if t]
        for candidate in candidates:
            if block_key(candidate, blob) == key:
                return ExternalBlock(block, key, OK,
                                     f"{block}: {entry.size:,} bytes in {data.name}",
                                     data.source, entry.size, candidate, entry)  # fmt: skip
        tried = ", ".join(repr(t) for t in candidates) or "no tag"
        return ExternalBlock(block, key, HASH_MISMATCH,
                             f"{block}: the {entry.size:,} bytes under key {key[:12]}… in "
                             f"{data.name} do not hash to the key (sha256(tag + NUL + data) "
                             f"with {tried}): the file was changed or belongs to another "
                             "compile", data.source, entry.size, tag, entry)  # fmt: skip
    names = ", ".join(d.name for d in files)
    return ExternalBlock(block, key, MISSING,
                         f"{block}: key {key[:12]}… is in none of the data files ({names})",
                         tag=tag)  # fmt: skip


def external_payloads(blocks: list[ExternalBlock], files: list[DataFile]) -> dict[str, bytes]:
    """The bytes of each block that was found (a hash mismatch included: the runtime looks
    keys up without checking them, so those are the bytes the device would run)."""
    by_source = {data.source: data for data in files}
    out = {}
    for block in blocks:
        if block.entry is None or block.data_file not in by_source:
            continue
        try:
            out[block.block] = by_source[block.data_file].read(block.entry)
        except ParseError:
            continue
    return out


def resolve_program(
    infos: list, files: list[DataFile]
) -> dict[tuple[str, int], tuple[list[ExternalBlock], dict[str, bytes]]]:
    """For each Ethos-U delegate with external blocks (``infos``: the program's
    ``DelegateInfo``s), keyed by (plan name, delegate index): its resolved blocks and the
    bytes of those found (for :func:`etu.parsers.ethosu_commands.program_operations`)."""
    found = {}
    for info in infos:
        if info.payload is None or not info.payload.external_blocks:
            continue
        blocks = resolve(info.payload, info.delegate, files)
        found[(info.plan.name, info.index)] = (blocks, external_payloads(blocks, files))
    return found


__all__ = [
    "ExternalBlock",
    "block_key",
    "data_files_beside",
    "external_payloads",
    "find_data_files",
    "open_data_files",
    "placements",
    "resolve",
    "resolve_program",
]
