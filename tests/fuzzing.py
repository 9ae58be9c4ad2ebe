"""Fuzz harnesses, one per format etu reads, with corpora seeded from real artifacts.

Each harness takes bytes and may only return or raise :class:`ParseError`: anything else
(a traceback, a hang, a blow-up) is a finding. Findings are kept as regression inputs
under ``tests/data/fuzz/<format>/`` and replayed by ``tests/unit/test_fuzz.py`` on every
``make test``; a bounded hypothesis run there mutates the seeds for a few seconds per
format, and ``make fuzz`` runs ``python -m tests.fuzzing FORMAT SECONDS`` under atheris
(libFuzzer, coverage guided) for a long run.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from etu.parsers.errors import ParseError

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
FINDINGS = DATA / "fuzz"
DEMO = ROOT / "etu_tui" / "demo"
ARTIFACTS = ROOT / "tests" / ".artifacts"
MAX_SEED = 4 << 20  # seeds above this size are left out (mutating them is slow)


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def fuzz_program(data: bytes) -> None:
    from etu.parsers.program_facts import inspect_record
    from etu.parsers.pte import decode_program

    program = decode_program(data, "fuzz.pte")
    json.dumps(inspect_record(program))


def fuzz_data_file(data: bytes) -> None:
    """An ExecuTorch data file (.ptd): decoded, its record built, every entry read."""
    from etu.parsers.ptd import decode_data_file

    decoded = decode_data_file(data, "fuzz.ptd")
    json.dumps(decoded.to_json())
    for entry in decoded.entries:
        assert len(decoded.read(entry)) == entry.size


def fuzz_payload(data: bytes) -> None:
    from etu.parsers.ethosu import decode_ethosu_payload
    from etu.parsers.program_facts import payload_summary

    json.dumps(payload_summary(decode_ethosu_payload(data)))


def fuzz_npu_commands(data: bytes) -> None:
    """A delegate payload whose command stream is decoded into NPU operations."""
    from etu.parsers.ethosu import decode_ethosu_payload
    from etu.parsers.ethosu_commands import decode_payload_operations

    stream = decode_payload_operations(data, decode_ethosu_payload(data))
    json.dumps([op.to_json() for op in stream.operations])
    for op in stream.operations:
        op.summary  # noqa: B018 (the one line the NPU tab shows must not fail)


def fuzz_vela_summary(data: bytes) -> None:
    from etu.parsers.vela_csv import parse_summary_csv

    parse_summary_csv(data, "fuzz_summary.csv")


def fuzz_vela_per_layer(data: bytes) -> None:
    from etu.parsers.vela_csv import parse_per_layer_csv

    parse_per_layer_csv(data, "fuzz_per-layer.csv")


def fuzz_vela_debug(data: bytes) -> None:
    from etu.parsers.vela_debug_db import parse_debug_db

    parse_debug_db(data, "fuzz_debug.xml")


def fuzz_pmu_trace(data: bytes) -> None:
    """An FVP PMU trace, read and joined to the demo program's command stream."""
    from etu.parsers.pmu_trace import npu_layers, parse_pmu_trace, stream_units, time_units

    trace = parse_pmu_trace(data, "fuzz_pmu_trace.json")
    layers = npu_layers(time_units(trace, [stream_units(0, _demo_stream())[0]]), 2)
    assert all(layer.measured_cycles >= 0 for layer in layers)


def _demo_stream():
    from etu.parsers.ethosu_commands import program_operations
    from etu.parsers.program_facts import delegates
    from etu.parsers.pte import decode_program

    global _DEMO_STREAM
    if _DEMO_STREAM is None:
        pte = DEMO / "demo_cnn.pte"
        program = decode_program(pte.read_bytes(), str(pte))
        (_DEMO_STREAM,) = [d.stream for d in program_operations(program, delegates(program))]
    return _DEMO_STREAM


_DEMO_STREAM = None


def fuzz_vela_stdout(data: bytes) -> None:
    from etu.parsers.vela_stdout import parse_vela_stdout

    parse_vela_stdout(data, "fuzz_stdout.txt")


def fuzz_elf(data: bytes) -> None:
    from etu.parsers.elf_map import decode_elf
    from etu.parsers.memory_map import build_memory_map, elf_record

    image = decode_elf(data, "fuzz.elf")
    json.dumps(elf_record(build_memory_map(image)))


def fuzz_ld_map(data: bytes) -> None:
    from etu.parsers.ld_map import parse_ld_map

    parse_ld_map(_text(data), "fuzz.map")


def fuzz_linker_script(data: bytes) -> None:
    from etu.parsers.linker_script import parse_linker_script

    parse_linker_script(_text(data), "fuzz.ld")


def fuzz_runner_log(data: bytes) -> None:
    """Fed in uneven chunks (cut anywhere, as a UART delivers), then summarised."""
    from etu.parsers.runner_log import LogSummary, RunnerLogParser

    parser, summary = RunnerLogParser(max_line=256), LogSummary()
    step = 1 + (data[0] % 97 if data else 0)
    for at in range(0, len(data), step):
        for event in parser.feed(data[at : at + step]):
            summary.add(event)
            json.dumps(event.to_json())
    for event in parser.close():
        summary.add(event)
    json.dumps(summary.to_json())


def fuzz_session(data: bytes) -> None:
    """A session folder whose files are cut from the input: meta.json, events.jsonl,
    raw.index and raw.log, read back as `etu log` and the history views do."""
    from etu.runner.session import read_session

    parts = data.split(b"\x00\x00", 3) + [b""] * 3
    folder = Path(tempfile.mkdtemp(prefix="etu-fuzz-session-"))
    try:
        for name, part in zip(("meta.json", "events.jsonl", "raw.index", "raw.log"), parts,
                              strict=False):  # fmt: skip
            (folder / name).write_bytes(part)
        session = read_session(folder)
        assert isinstance(session.meta, dict)
        fuzz_runner_log(session.raw)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


HARNESSES: dict[str, Callable[[bytes], None]] = {
    "program": fuzz_program,
    "data_file": fuzz_data_file,
    "payload": fuzz_payload,
    "npu_commands": fuzz_npu_commands,
    "vela_summary": fuzz_vela_summary,
    "vela_per_layer": fuzz_vela_per_layer,
    "vela_debug": fuzz_vela_debug,
    "vela_stdout": fuzz_vela_stdout,
    "pmu_trace": fuzz_pmu_trace,
    "elf": fuzz_elf,
    "ld_map": fuzz_ld_map,
    "linker_script": fuzz_linker_script,
    "runner_log": fuzz_runner_log,
    "session": fuzz_session,
}


def _payloads() -> list[bytes]:
    from etu.parsers.program_facts import delegates
    from etu.parsers.pte import open_program

    blobs = []
    for path in _programs():
        try:
            with open_program(path) as program:
                blobs += [bytes(program.delegate_payload(d.delegate)) for d in delegates(program)]
        except ParseError:
            continue
    return blobs


def _programs() -> list[Path]:
    return [DEMO / "demo_cnn.pte", *sorted(ARTIFACTS.glob("*/*.pte"))]


def _session_seed(folder: Path) -> bytes:
    names = ("meta.json", "events.jsonl", "raw.index", "raw.log")
    return b"\x00\x00".join((folder / n).read_bytes() if (folder / n).exists() else b""
                            for n in names)  # fmt: skip


def seed_files(name: str) -> list[Path]:
    """The real artifacts a format's corpus starts from."""
    vela, demo_vela = DATA / "vela", DEMO / "vela"
    return {
        "program": _programs(),
        # a real pair's .ptd (tests/ptd_programs.py), and any the test cache holds
        "data_file": [*sorted((DATA / "ptd").glob("*.ptd")),
                      *sorted(ARTIFACTS.glob("ptd_programs-*/*/*.ptd"))],
        "payload": [],
        "npu_commands": [],
        "vela_summary": [*sorted(vela.rglob("*_summary_*.csv")),
                         *demo_vela.glob("*_summary_*.csv")],
        "vela_per_layer": [*sorted(vela.rglob("*_per-layer.csv")),
                           demo_vela / "out_per-layer.csv"],
        "vela_debug": sorted(vela.rglob("*_debug.xml")),
        "vela_stdout": [*sorted(vela.rglob("stdout.txt")), demo_vela / "vela_stdout.txt"],
        "pmu_trace": sorted((DATA / "pmu_trace").glob("*.json")),
        "elf": [DEMO / "firmware" / "arm_executor_runner.elf"],
        "ld_map": [DEMO / "firmware" / "arm_executor_runner.map"],
        "linker_script": [DEMO / "firmware" / "arm_executor_runner.ld",
                          *sorted((ROOT / "runner" / "firmware_src").glob("*.ld"))],
        "runner_log": sorted((DATA / "transcripts").rglob("*.log")),
        "session": [],
    }[name]  # fmt: skip


def seeds(name: str) -> list[bytes]:
    """Seed inputs (real artifacts), then every kept finding for the format."""
    found = [p.read_bytes() for p in seed_files(name) if p.is_file()]
    if name in ("payload", "npu_commands"):
        found = _payloads()
    if name == "session":
        found = [_session_seed(f) for f in sorted((DATA / "sessions").glob("*/*")) if f.is_dir()]
    return [s for s in found if len(s) <= MAX_SEED] + [p.read_bytes() for p in findings(name)]


def findings(name: str) -> list[Path]:
    folder = FINDINGS / name
    return sorted(p for p in folder.iterdir() if p.is_file()) if folder.is_dir() else []


def run_one(name: str, data: bytes) -> None:
    """The harness, with ParseError (the one allowed failure) swallowed."""
    try:
        HARNESSES[name](data)
    except ParseError as error:
        str(error)  # the message itself must not fail


def keep_finding(name: str, data: bytes) -> Path:
    import hashlib

    folder = FINDINGS / name
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"finding-{hashlib.sha256(data).hexdigest()[:16]}"
    path.write_bytes(data)
    return path


def main(argv: list[str]) -> int:
    """``python -m tests.fuzzing FORMAT SECONDS``: atheris (libFuzzer) on one harness,
    corpus seeded from the real artifacts; a crash is written to tests/data/fuzz/FORMAT/."""
    name, seconds = argv[0], int(argv[1]) if len(argv) > 1 else 60
    try:
        import atheris
    except ImportError:
        return hypothesis_run(name, seconds)
    corpus = Path(tempfile.mkdtemp(prefix=f"etu-fuzz-{name}-"))
    for i, seed in enumerate(seeds(name)):
        (corpus / f"seed-{i}").write_bytes(seed)

    run_one(name, b"")  # imports the harness's parsers, then coverage for them
    atheris.instrument_all()

    def one_input(data: bytes) -> None:
        try:
            run_one(name, data)
        except Exception:
            print(f"finding kept: {keep_finding(name, data)}", file=sys.stderr)
            raise

    atheris.Setup(
        [sys.argv[0], str(corpus), f"-max_total_time={seconds}", "-rss_limit_mb=2048",
         "-timeout=10", f"-artifact_prefix={corpus}/", "-max_len=1048576"],
        one_input,
    )  # fmt: skip
    (FINDINGS / name).mkdir(parents=True, exist_ok=True)
    atheris.Fuzz()
    return 0


def hypothesis_run(name: str, seconds: int) -> int:
    """Without atheris: the bounded test's mutator, for ``seconds``, findings kept."""
    import time

    from hypothesis import HealthCheck, given, settings

    from tests.fuzz_mutator import mutated

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:

        @settings(max_examples=2000, deadline=None, database=None,
                  suppress_health_check=list(HealthCheck))  # fmt: skip
        @given(mutated(name))
        def one(data: bytes) -> None:
            try:
                run_one(name, data)
            except Exception:
                print(f"finding kept: {keep_finding(name, data)}", file=sys.stderr)
                raise

        one()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
