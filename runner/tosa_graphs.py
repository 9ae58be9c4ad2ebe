"""Each Ethos-U delegate of a program matched to the TOSA graph Vela was given, with proof.

Arm's conformance promise makes the TOSA reference model the bit-exact oracle of an Ethos-U
delegate, but only on the graph that delegate was compiled from. Delegates are matched to
graphs without guessing (the file names do not say: in a program with two delegates, ExecuTorch
named delegate 0's graph ``output_tag1_…`` and delegate 1's ``output_tag0_…``):

1. **the compile record**: etu's compile (:mod:`etu.runner.aot`) writes, in
   ``vela/etu_compile.json``, each delegate's payload SHA-256 beside the SHA-256 and file
   name of the TOSA graph Vela compiled it from, caught at the call;
2. **Vela again**: for a graph without a record (an older compile, ``--tosa PATH``), Vela
   (the installed one) compiles each candidate graph with the delegate's own compile flags;
   the graph whose command stream and weights are byte for byte the delegate's is its graph;
3. **given**: ``--tosa FILE`` for a program with one delegate, when Vela does not reproduce
   it (another Vela version): used as given, and the record says it was not verified.

A program with no candidate graph at all is one line (:class:`TosaMatchError`), never a
comparison against nothing. The graphs are read with the ``tosa`` package (regions → blocks
→ inputs, outputs, tensors).
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from etu.parsers.errors import ParseError
from etu.parsers.ethosu import decode_ethosu_payload, is_ethosu_delegate
from etu.parsers.files import GiB, MiB, read_json, read_regular
from etu.parsers.pte import BackendDelegate, DelegateCall, ExecutionPlan, Program

COMPILE_RECORD = "etu_compile.json"  # runner.aot.COMPILE_RECORD_NAME (aot imports torch)
VELA_FOLDER = "vela"  # beside a compiled program: Vela's files, the TOSA graphs, the record
TOSA_CAP = 2 * GiB  # Vela takes TOSA flatbuffers up to 2 GiB
RECORD_CAP = 16 * MiB

# TOSA DType → (name, numpy dtype of its bytes in an Ethos-U I/O buffer)
TOSA_DTYPES = {
    1: ("BOOL", "bool"), 2: ("INT4", "int8"), 3: ("INT8", "int8"), 4: ("INT16", "int16"),
    5: ("INT32", "int32"), 6: ("INT48", "int64"), 7: ("FP32", "float32"),
    8: ("FP16", "float16"), 17: ("INT64", "int64"),
}  # fmt: skip


class TosaMatchError(RuntimeError):
    """One line: which delegate has no graph, and what to do."""


@dataclass(frozen=True, slots=True)
class TosaIO:
    name: str
    shape: tuple[int, ...]
    dtype: str  # TOSA's name: INT8, INT16, INT32, FP32, BOOL...
    numpy_dtype: str

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    def to_json(self) -> dict:
        return {"name": self.name, "shape": list(self.shape), "dtype": self.dtype}


@dataclass(frozen=True, slots=True)
class TosaGraph:
    path: Path
    data: bytes
    sha256: str
    inputs: tuple[TosaIO, ...]
    outputs: tuple[TosaIO, ...]


@dataclass(frozen=True, slots=True)
class DelegateGraph:
    delegate_index: int
    graph: TosaGraph
    matched_by: str  # "compile record" | "vela" | "given"
    note: str | None = None


def read_tosa_graph(path: Path) -> TosaGraph:
    """A TOSA flatbuffer file: its bytes, hash and first block's inputs and outputs (the
    order the reference model takes and gives them in)."""
    data = read_regular(path, "a TOSA graph", TOSA_CAP)
    try:
        from tosa.TosaGraph import TosaGraph as Graph

        graph = Graph.GetRootAs(data, 0)
        if graph.RegionsLength() < 1 or graph.Regions(0).BlocksLength() < 1:
            raise ValueError("no region with a block")
        block = graph.Regions(0).Blocks(0)
        tensors = {}
        for i in range(block.TensorsLength()):
            tensor = block.Tensors(i)
            tensors[tensor.Name().decode("utf-8", "replace")] = tensor

        def io(name: bytes) -> TosaIO:
            text = name.decode("utf-8", "replace")
            if text not in tensors:
                raise ValueError(f"block input/output {text!r} is not among its tensors")
            tensor = tensors[text]
            shape = tuple(int(s) for s in tensor.ShapeAsNumpy()) if tensor.ShapeLength() else ()
            kind, numpy_dtype = TOSA_DTYPES.get(tensor.Type(), (f"DType({tensor.Type()})", ""))
            return TosaIO(text, shape, kind, numpy_dtype)

        inputs = tuple(io(block.Inputs(i)) for i in range(block.InputsLength()))
        outputs = tuple(io(block.Outputs(i)) for i in range(block.OutputsLength()))
    except ImportError:
        raise TosaMatchError("reading a TOSA graph needs the tosa package (tosa-tools, "
                             "installed with executorch[ethos-u])") from None  # fmt: skip
    except Exception as error:  # a FlatBuffer that is not a TOSA graph fails anywhere
        raise ParseError(f"not a TOSA graph ({type(error).__name__}: {error})",
                         source=str(path)) from None  # fmt: skip
    return TosaGraph(Path(path), data, hashlib.sha256(data).hexdigest(), inputs, outputs)


def called_delegates(plan: ExecutionPlan) -> list[int]:
    """The delegate indices the plan's delegate calls use, in call order, once each."""
    calls = [i.delegate_index for i in plan.instructions if isinstance(i, DelegateCall)]
    return list(dict.fromkeys(calls))


def candidate_files(pte: Path, tosa: Path | None) -> tuple[list[Path], Path | None]:
    """(the .tosa files to consider, the folder whose compile record applies) for a
    program: ``--tosa`` (a file or a folder) if given, else ``vela/`` beside the program."""
    if tosa is not None:
        tosa = Path(tosa)
        if tosa.is_dir():
            return _ordered(tosa.glob("*.tosa")), tosa
        if not tosa.exists():
            raise TosaMatchError(f"{tosa}: no such file or folder")
        return [tosa], tosa.parent
    folder = Path(pte).parent / VELA_FOLDER
    return (_ordered(folder.glob("*.tosa")), folder) if folder.is_dir() else ([], None)


def _ordered(paths) -> list[Path]:
    """By name, Vela's own copy of the last graph it compiled (``out.tosa``) last: the same
    bytes as the graph ExecuTorch saved under its own name."""
    return sorted(paths, key=lambda p: (p.name == "out.tosa", p.name))


def compile_record(folder: Path | None) -> dict | None:
    """The compile record (``etu_compile.json``) in ``folder``; None when there is none or
    it cannot be read."""
    if folder is None or not (Path(folder) / COMPILE_RECORD).is_file():
        return None
    try:
        record = read_json(Path(folder) / COMPILE_RECORD, "a compile record", RECORD_CAP)
    except ParseError:
        return None
    return record if isinstance(record, dict) else None


def record_is_for(pte: Path, record: dict) -> bool:
    """The record is this program's: the program's bytes are the ones the compile wrote
    (``program_sha256``), or its Ethos-U delegates are the record's (by payload digest; a
    CPU-only program has none, so only the first rule can claim it)."""
    from etu.parsers.files import sha256_regular
    from etu.parsers.pte import open_program

    if record.get("program_sha256") == sha256_regular(pte, "an ExecuTorch program", 4 * GiB):
        return True
    delegates = record.get("delegates")
    digests = {d.get("payload_sha256") for d in delegates if isinstance(d, dict)} if (
        isinstance(delegates, list)) else set()  # fmt: skip
    with open_program(pte) as program:
        plan = next((p for p in program.plans if p.name == "forward"), None)
        plan = plan or (program.plans[0] if program.plans else None)
        ours = {hashlib.sha256(bytes(program.delegate_payload(d))).hexdigest()
                for d in (plan.delegates if plan is not None else ())}  # fmt: skip
    return bool(ours) and ours <= digests


def compile_record_delegates(folder: Path | None) -> list[dict]:
    """The ``delegates`` of a compile record (empty when there is none, or it is older)."""
    if folder is None or not (Path(folder) / COMPILE_RECORD).is_file():
        return []
    record = read_json(Path(folder) / COMPILE_RECORD, "a compile record", RECORD_CAP)
    delegates = record.get("delegates") if isinstance(record, dict) else None
    if not isinstance(delegates, list):
        return []
    return [d for d in delegates if isinstance(d, dict) and isinstance(d.get("tosa"), str)]


def match_delegates(
    program: Program, plan: ExecutionPlan, pte: Path, tosa: Path | None = None
) -> dict[int, DelegateGraph]:
    """``{delegate index: its graph}`` for every delegate the plan calls. Raises
    TosaMatchError (one line) for a delegate without a proven graph."""
    wanted = called_delegates(plan)
    if not wanted:
        return {}
    for index in wanted:
        if not 0 <= index < len(plan.delegates):
            raise TosaMatchError(f"a delegate call names delegate {index}; the plan has "
                                 f"{len(plan.delegates)}")  # fmt: skip
        backend = plan.delegates[index].id
        if not is_ethosu_delegate(backend):
            raise TosaMatchError(f"delegate {index} is for {backend!r}: etu has a host "
                                 "reference for Ethos-U delegates only")  # fmt: skip
    files, folder = candidate_files(pte, tosa)
    count = f"{len(wanted)} Ethos-U delegate{'s' if len(wanted) > 1 else ''}"
    if not files:
        where = f"{tosa}" if tosa is not None else f"no {VELA_FOLDER}/ with .tosa files beside it"
        raise TosaMatchError(
            f"no TOSA graph for its {count} ({where}: compiled elsewhere, or without keeping "
            "Vela's files?); pass --tosa PATH (a .tosa file or a folder of them)"
        )
    record = {d.get("payload_sha256"): d for d in compile_record_delegates(folder)}
    graphs: dict[Path, TosaGraph] = {}

    def graph(path: Path) -> TosaGraph:
        if path not in graphs:
            graphs[path] = read_tosa_graph(path)
        return graphs[path]

    matched: dict[int, DelegateGraph] = {}
    for index in wanted:
        delegate = plan.delegates[index]
        payload = bytes(program.delegate_payload(delegate))
        digest = hashlib.sha256(payload).hexdigest()
        entry = record.get(digest)
        if entry is not None:
            path = Path(folder) / Path(entry["tosa"]).name
            if not path.is_file():
                raise TosaMatchError(f"delegate {index}: its graph {path.name} (named by "
                                     f"{folder / COMPILE_RECORD}) is missing")  # fmt: skip
            found = graph(path)
            if found.sha256 != entry.get("tosa_sha256"):
                raise TosaMatchError(f"delegate {index}: {path} changed since it was "
                                     "compiled (its SHA-256 is not the recorded one)")  # fmt: skip
            matched[index] = DelegateGraph(index, found, "compile record")
            continue
        fits = [p for p in files if _fits(graph(p), payload)]
        proven = _first_reproduced([graph(p) for p in fits], delegate, payload)
        if proven is not None:
            matched[index] = DelegateGraph(index, proven, "vela")
            continue
        if tosa is not None and Path(tosa).is_file() and len(wanted) == 1 and fits:
            matched[index] = DelegateGraph(
                index, graph(fits[0]), "given",
                f"not verified: Vela {_vela_version()} does not compile {Path(tosa).name} to "
                "this delegate's command stream (another Vela version?)",
            )  # fmt: skip
            continue
        tried = f"{len(files)} TOSA graph{'s' if len(files) > 1 else ''} in {folder}"
        raise TosaMatchError(
            f"delegate {index}: none of the {tried} is the graph it was compiled from (no "
            "compile record names it, and Vela does not compile any of them to its command "
            "stream); pass --tosa with the graph Vela was given"
        )
    return matched


def _fits(graph: TosaGraph, payload: bytes) -> bool:
    """Whether the graph's inputs and outputs have the delegate's element counts (the
    payload's Vela I/O list); a cheap filter before running Vela."""
    try:
        decoded = decode_ethosu_payload(payload)
    except ParseError:
        return False

    def numel(shape) -> int:
        n = 1
        for size in shape:
            n *= max(int(size), 1)
        return n

    ours = [numel(io.shape) for io in decoded.inputs], [numel(io.shape) for io in decoded.outputs]
    theirs = [io.numel for io in graph.inputs], [io.numel for io in graph.outputs]
    return ours == theirs


def _block(payload: bytes, name: str) -> bytes | None:
    decoded = decode_ethosu_payload(payload)
    for block in decoded.blocks:
        if block.name == name and not block.external:
            return payload[block.payload_offset : block.payload_offset + block.size]
    return None


def _vela_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ethos-u-vela")
    except PackageNotFoundError:
        return "(not installed)"


def _first_reproduced(
    graphs: list[TosaGraph], delegate: BackendDelegate, payload: bytes
) -> TosaGraph | None:
    """The first graph Vela compiles, with the delegate's compile flags, to its exact
    command stream and weights (a graph's copies under other names are tried once)."""
    cmd, weights = _block(payload, "cmd_data"), _block(payload, "weight_data")
    if cmd is None:
        return None  # an external command stream (.ptd): nothing to compare with
    flags = [f for f in (delegate.spec("compile_flags") or "").split(" ") if f]
    flags = [f for f in flags if not f.startswith("--output-dir")]
    payload_sha256 = hashlib.sha256(payload).hexdigest()
    remembered = _remembered_matches()
    keys = {g.sha256: _match_key(payload_sha256, g.sha256, flags) for g in graphs}
    for graph in graphs:
        if keys[graph.sha256] in remembered:
            return graph
    tried: set[str] = set()
    for graph in graphs:
        if graph.sha256 in tried:
            continue
        tried.add(graph.sha256)
        if vela_blocks(graph.data, flags) == (cmd, weights or b""):
            _remember_match(keys[graph.sha256])
            return graph
    return None


MATCHES_FILE = "tosa-matches.json"  # in etu's user cache: Vela's proofs, by content hash


def _match_key(payload_sha256: str, tosa_sha256: str, flags: list[str]) -> str:
    """What a proof holds for: this payload from this graph, these flags, this Vela."""
    text = "\0".join([payload_sha256, tosa_sha256, _vela_version(), *flags])
    return hashlib.sha256(text.encode()).hexdigest()


def _matches_path() -> Path:
    from etu.runner.runtime_source import cache_root

    return cache_root() / MATCHES_FILE


def _remembered_matches() -> set[str]:
    """Keys of the matches Vela proved before (a cache: a file that cannot be read is empty)."""
    path = _matches_path()
    try:
        keys = read_json(path, "the TOSA match cache", RECORD_CAP) if path.is_file() else []
    except (ParseError, OSError):
        return set()
    return {k for k in keys if isinstance(k, str)} if isinstance(keys, list) else set()


def _remember_match(key: str) -> None:
    import json

    path = _matches_path()
    keys = sorted(_remembered_matches() | {key})
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
        partial.write_text(json.dumps(keys[-10000:]))
        partial.replace(path)
    except OSError:  # a cache that cannot be written only costs the next run a Vela call
        pass


def vela_blocks(tosa: bytes, flags: list[str]) -> tuple[bytes, bytes] | None:
    """(command stream, weights) Vela makes of a TOSA graph with ``flags``, as ExecuTorch's
    ``vela_compile`` calls it; None when Vela refuses the graph."""
    import tempfile

    import numpy

    try:
        from ethosu.vela import vela
    except ImportError:
        return None
    with tempfile.TemporaryDirectory(prefix="etu-vela-") as scratch:
        source = Path(scratch) / "out.tosa"
        source.write_bytes(tosa)
        output = Path(scratch) / "output"
        try:  # Vela prints its report (and its complaints): not for the caller's terminal
            with quiet_stdout(silent=True):
                status = vela.main([*flags, f"--output-dir={output}", str(source)])
        except (SystemExit, Exception):  # Vela's own refusal of the graph or the flags
            return None
        arrays = output / "out_vela.npz"
        if status not in (0, None) or not arrays.is_file():
            return None
        with numpy.load(arrays, allow_pickle=False) as data:
            return data["cmd_data"].tobytes(), data["weight_data"].tobytes()


def _flush_c_stdio() -> None:
    """fflush(NULL): the C library's buffered stdout (the TOSA serializer's warnings, C++
    iostreams synced with it) is written now, while fd 1 still points at stderr."""
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).fflush(None)


@contextlib.contextmanager
def quiet_stdout(*, silent: bool = False):
    """Send whatever a tool prints to stdout (Python or C) to stderr instead, the caller's
    stdout carrying JSON; ``silent``: stdout and stderr both to /dev/null."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    sink = os.open(os.devnull, os.O_WRONLY) if silent else None
    try:
        os.dup2(2 if sink is None else sink, 1)
        if sink is not None:
            os.dup2(sink, 2)
        with open(os.devnull, "w") as devnull:
            target = devnull if silent else sys.stderr
            with (
                contextlib.redirect_stdout(target),
                contextlib.redirect_stderr(target if silent else sys.stderr),
            ):
                yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        _flush_c_stdio()  # C/C++ output still buffered goes where it was meant to, not to JSON
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, *([sink] if sink is not None else [])):
            os.close(fd)
