"""Session and workspace files that must not hang, exhaust or kill etu (issue 20, items 5, 8
and 9): every reader of a session or a workspace file, given a FIFO, /dev/zero (linked in),
a directory, a loop of links, /proc/self/mem (linked in), an 8 GB sparse file and a 50 MB
file without a newline, ends within seconds with one line naming the file and what is wrong
with it, or (a log without a newline) works in bounded memory; a session log cut short
under the console reads back shorter instead of killing it with SIGBUS; one corrupt session
is listed as such and hides none of the others.

Each check runs in a child process with a time limit and an address-space limit, so a reader
that hangs or grows fails its test instead of taking pytest (or the machine) with it."""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.history_workspace import add_v1_sessions, make_workspace

ROOT = Path(__file__).resolve().parent.parent.parent
DEMO_PTE = ROOT / "etu_tui" / "demo" / "demo_cnn.pte"
V1 = ROOT / "tests" / "data" / "sessions" / "v1"
GOOD, FAILED = "20261123-213021-fvp-000", "20261123-213022-fvp-000"  # the v1 sessions

KINDS = ("fifo", "dev_zero", "directory", "link_loop", "proc_self_mem", "sparse_8g",
         "no_newline_50m")  # fmt: skip
# What the one line says for each kind. A session's own files are never followed as links,
# so a link into /dev/zero or /proc/self/mem is refused as a link there.
SAYS = {
    "fifo": ("FIFO",),
    "dev_zero": ("character device", "symbolic link"),
    "directory": ("directory",),
    "link_loop": ("loop of symbolic links", "symbolic link"),
    "proc_self_mem": ("Input/output error", "symbolic link"),
    "sparse_8g": ("larger than",),
    "no_newline_50m": ("larger than",),  # where it is an error at all (a meta.json's cap)
}
SECONDS = 10  # a check that takes longer has hung, or read what it should have refused
CHILD_TIMEOUT = 60
ADDRESS_SPACE = 4 << 30  # a reader that grows past this has read what it should not
BOUNDED_RSS = 400 << 20  # bytes of memory a 50 MB file without a newline may cost


def make_hostile(path: Path, kind: str) -> Path:
    """``path`` replaced by the hostile kind of file."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif os.path.lexists(path):
        path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev_zero":
        path.symlink_to("/dev/zero")
    elif kind == "directory":
        path.mkdir()
    elif kind == "link_loop":
        path.symlink_to(path.name)
    elif kind == "proc_self_mem":
        path.symlink_to("/proc/self/mem")
    elif kind == "sparse_8g":
        with open(path, "wb") as handle:
            handle.truncate(8 << 30)
    elif kind == "no_newline_50m":
        path.write_bytes(b"x" * (50 << 20))
    return path


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def child(argv: list[str], cwd: Path | None = None) -> tuple[subprocess.CompletedProcess, float]:
    """Run ``argv`` (a Python child) with the limits; fail, not hang, when it does."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    start = time.monotonic()
    try:
        result = subprocess.run(
            argv, capture_output=True, text=True, cwd=cwd, env=env, timeout=CHILD_TIMEOUT,
            preexec_fn=_limits, check=False,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        pytest.fail(f"{argv[-3:]}: still running after {CHILD_TIMEOUT} s (hung?)")
    elapsed = time.monotonic() - start
    assert result.returncode >= 0, f"killed by signal {-result.returncode}: {result.stderr}"
    return result, elapsed


PROBE = r"""
import json, resource, sys
from pathlib import Path
from etu.parsers.errors import ParseError, describe_error
out = {}
try:
    exec(sys.argv[1])
except ParseError as error:
    out["error"] = describe_error(error)
# the peak of this process's own memory (VmHWM): getrusage's ru_maxrss outlives exec, so
# it would count the test worker that started this child (hundreds of MB with torch)
peak = [line for line in Path("/proc/self/status").read_text().splitlines()
        if line.startswith("VmHWM:")]
out["rss"] = (int(peak[0].split()[1]) * 1024 if peak
              else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
print(json.dumps(out, default=str))
"""


def probe(code: str, *args: object) -> dict:
    """``code`` run in a child (``args`` as ``argv[2:]``, ``out`` a dict it fills): what it
    put in ``out``, with ``error`` (one line) for a ParseError and ``rss``."""
    result, elapsed = child([sys.executable, "-c", PROBE, code, *map(str, args)])
    assert result.returncode == 0, result.stderr[-2000:]
    assert elapsed < SECONDS, f"took {elapsed:.1f} s"
    return json.loads(result.stdout.splitlines()[-1])


def assert_says(line: str, path: Path, kind: str) -> None:
    line = line.removesuffix("\n")
    assert "\n" not in line and "Traceback" not in line and "unexpected" not in line, line
    assert str(path) in line or path.name in line, line
    assert any(word in line for word in SAYS[kind]), line


def session_copy(tmp_path: Path, name: str = GOOD) -> Path:
    folder = tmp_path / ".etu" / "sessions" / name
    shutil.copytree(V1 / name, folder)
    return folder


# --------------------------------------------------------------------------- item 5


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", ["raw.log", "raw.index", "events.jsonl", "meta.json"])
def test_read_session_refuses_hostile_files(tmp_path: Path, name: str, kind: str) -> None:
    folder = session_copy(tmp_path)
    path = make_hostile(folder / name, kind)
    found = probe(
        "from etu.runner.session import read_session\n"
        "s = read_session(Path(sys.argv[2]))\n"
        "out.update(warnings=s.warnings, raw=len(s.raw), events=len(s.events))",
        folder,
    )  # fmt: skip
    if kind == "no_newline_50m":
        assert found["rss"] < BOUNDED_RSS, found["rss"]
        if name == "raw.log":
            assert found["raw"] == 50 << 20 and "error" not in found
        elif name == "meta.json":  # past its 16 MiB cap: a warning, the rest is read
            assert_says(next(w for w in found["warnings"] if "meta.json" in w), path, kind)
        else:  # one torn line, said
            assert any(name in w and "line 1" in w for w in found["warnings"]), found
        return
    if name == "meta.json":  # not fatal: the run did not finish, said
        warning = next(w for w in found["warnings"] if "meta.json" in w)
        assert_says(warning, path, kind)
        assert found["events"] > 0
    else:
        assert_says(found["error"], path, kind)


@pytest.mark.parametrize("kind", KINDS)
def test_workspace_programs_and_loading_skip_hostile_programs(tmp_path: Path, kind) -> None:
    shutil.copyfile(DEMO_PTE, tmp_path / "good.pte")
    bad = make_hostile(tmp_path / "zero.pte", kind)
    found = probe(
        "from etu.runner.history import workspace_programs\n"
        "skipped = []\n"
        "out['names'] = sorted(workspace_programs(Path(sys.argv[2]), skipped).values())\n"
        "out['skipped'] = skipped\n",
        tmp_path,
    )  # fmt: skip
    if kind == "no_newline_50m":  # a file like any other: hashed in blocks
        assert found["names"] == ["good.pte", "zero.pte"] and not found["skipped"]
        assert found["rss"] < BOUNDED_RSS
    else:
        assert found["names"] == ["good.pte"]
        (line,) = found["skipped"]
        assert_says(line, bad, kind)
    # Loading a workspace whose only program is the hostile one: one line, at once.
    (tmp_path / "good.pte").unlink()
    found = probe(
        "from etu.parsers.program_facts import decode_facts\n"
        "from etu.runner.workspace import resolve_target\n"
        "decode_facts(resolve_target(Path(sys.argv[2])))\n",
        tmp_path,
    )  # fmt: skip
    assert "\n" not in found["error"] and "unexpected" not in found["error"], found


@pytest.mark.parametrize("kind", KINDS)
def test_first_divergence_refuses_or_streams(tmp_path: Path, kind: str) -> None:
    a = tmp_path / "a.log"
    a.write_bytes(b"boot\nrun\n")
    b = make_hostile(tmp_path / "b.log", kind)
    if kind == "no_newline_50m":  # a device that never sent a newline, recorded faithfully
        a.write_bytes(b"x" * (50 << 20) + b"y")
        b.write_bytes(b"x" * (50 << 20) + b"z")
    found = probe(
        "from etu.runner.diff import first_divergence\n"
        "found, differs = first_divergence(Path(sys.argv[2]), Path(sys.argv[3]))\n"
        "out.update(line=found and found['line'], differs=differs)\n",
        a, b,
    )  # fmt: skip
    if kind == "no_newline_50m":
        assert found["line"] == 1 and found["differs"] and found["rss"] < BOUNDED_RSS, found
    else:
        assert_says(found["error"], b, kind)


@pytest.fixture(scope="module")
def cli_ws(tmp_path_factory) -> Path:
    ws = make_workspace(tmp_path_factory.mktemp("inputs") / "ws")
    add_v1_sessions(ws)
    import numpy

    values = json.loads(
        next(line for line in (V1 / GOOD / "events.jsonl").read_text().splitlines()
             if "OutputTensor" in line)
    )["values"]  # fmt: skip
    numpy.save(ws / "ref.npy", numpy.array(values, dtype="float32"))
    return ws


def etu(ws: Path, *args: str) -> tuple[subprocess.CompletedProcess, float]:
    return child([sys.executable, "-m", "etu.tui.cli", *args], cwd=ws)


def one_line(result: subprocess.CompletedProcess, status: int) -> str:
    assert result.returncode == status, (result.returncode, result.stderr[-2000:])
    err = result.stderr
    assert err.count("\n") == 1 and err.startswith("etu: ") and "Traceback" not in err, err
    return err


@pytest.fixture
def ws(cli_ws: Path, tmp_path: Path) -> Path:
    """A fresh copy of the workspace's sessions (each test spoils one)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    shutil.copytree(cli_ws / ".etu", ws / ".etu")
    for name in ("demo_cnn.pte", "ref.npy"):
        shutil.copyfile(cli_ws / name, ws / name)
    shutil.copytree(cli_ws / "vela", ws / "vela")
    return ws


@pytest.mark.parametrize("kind", KINDS)
def test_diff_report_and_sessions_with_a_hostile_raw_log(ws: Path, kind: str) -> None:
    """The format-1 sessions have no summary.json: their figures are re-parsed from raw.log."""
    raw = make_hostile(ws / ".etu" / "sessions" / FAILED / "raw.log", kind)
    diff, seconds = etu(ws, "diff", GOOD, FAILED)
    assert seconds < SECONDS
    report, seconds = etu(ws, "report", FAILED)
    assert seconds < SECONDS
    listing, seconds = etu(ws, "sessions", "--json")
    assert seconds < SECONDS and listing.returncode == 0, listing.stderr
    rows = {row["id"]: row for row in map(json.loads, listing.stdout.splitlines())}
    assert set(rows) == {GOOD, FAILED} and rows[GOOD]["problem"] is None
    if kind == "no_newline_50m":  # one long line: compared and parsed in bounded memory
        assert diff.returncode == 1 and "Traceback" not in diff.stderr, diff.stderr
        assert report.returncode == 0 and "Traceback" not in report.stderr, report.stderr
        assert rows[FAILED]["problem"] is None
        return
    assert_says(one_line(diff, 2), raw, kind)
    assert_says(one_line(report, 2), raw, kind)
    assert_says(rows[FAILED]["problem"], raw, kind)
    table, _ = etu(ws, "sessions")
    assert table.returncode == 0 and "unreadable" in table.stdout and raw.name in table.stdout


@pytest.mark.parametrize("kind", KINDS)
def test_compare_with_hostile_session_files(ws: Path, kind: str) -> None:
    folder = ws / ".etu" / "sessions" / GOOD
    make_hostile(folder / "raw.log", kind)  # compare reads the events, never the log
    result, seconds = etu(ws, "compare", str(folder), "--reference", "ref.npy", "--json")
    assert seconds < SECONDS and result.returncode == 0, result.stdout + result.stderr
    events = make_hostile(folder / "events.jsonl", kind)
    result, seconds = etu(ws, "compare", str(folder), "--reference", "ref.npy")
    assert seconds < SECONDS
    err = one_line(result, 2)
    if kind == "no_newline_50m":
        assert "printed no Output" in err, err
    else:
        assert_says(err, events, kind)


@pytest.mark.parametrize("kind", KINDS)
def test_report_and_sessions_with_a_hostile_workspace_program(ws: Path, kind: str) -> None:
    bad = make_hostile(ws / "zero.pte", kind)
    report, seconds = etu(ws, "report", GOOD)
    assert seconds < SECONDS and report.returncode == 0, report.stderr
    if kind != "no_newline_50m":
        assert bad.name in report.stdout  # said among the session's warnings
    listing, seconds = etu(ws, "sessions")
    assert seconds < SECONDS and listing.returncode == 0, listing.stderr


@pytest.mark.parametrize("kind", KINDS)
def test_console_reads_and_replays_hostile_sessions(tmp_path: Path, kind: str) -> None:
    """The Run tab's past run (``v``) and replay (``r``), and the past-runs list."""
    folder = session_copy(tmp_path)
    raw = make_hostile(folder / "raw.log", kind)
    make_hostile(session_copy(tmp_path, FAILED) / "meta.json", kind)
    found = probe(
        "from etu.runner.run_model import list_past_runs, read_past_run\n"
        "from etu.runner.replay import replay_session\n"
        "folder = Path(sys.argv[2])\n"
        "out['runs'] = [r.folder.name for r in list_past_runs(folder.parent)]\n"
        "record = read_past_run(folder)\n"
        "out['failure'] = record.failure\n"
        "if getattr(record.store, 'file_backed', False):\n"
        "    out['lines'] = record.store.total\n"
        "    record.store.close()\n"
        "class Quiet:\n"
        "    def on_events(self, events): pass\n"
        "    def on_end(self, outcome): out['replayed'] = outcome.reason\n"
        "replay_session(folder, Quiet(), timed=False)\n",
        folder,
    )  # fmt: skip
    assert found["runs"] == [FAILED, GOOD]
    if kind == "no_newline_50m":
        assert found["failure"] is None and found["lines"] == 1 and found["replayed"]
        assert found["rss"] < BOUNDED_RSS
        return
    assert_says(found["failure"], raw, kind)
    assert_says(found["error"], raw, kind)  # the replay: refused before anything is fed


# --------------------------------------------------------------------------- item 8

SHRINK = r"""
import os, sys
from pathlib import Path
from etu.runner.session_file import LineFile, LineTimes

folder = Path(sys.argv[1])
raw, index = folder / "raw.log", folder / "raw.index"
lines = [b"I [executorch:f.cpp:%d main()] line %d\n" % (n, n) for n in range(200_000)]
raw.write_bytes(b"".join(lines))
at, entries = 0, []
for n, line in enumerate(lines):
    entries.append(b"%d %d.5\n" % (at, n))
    at += len(line)
index.write_bytes(b"".join(entries))
log, times = LineFile(raw), LineTimes(index)
assert log.lines == 200_000 and log.get(150_000) == lines[150_000]
assert times.time_of(log.span(150_000)[0]) == 150_000.5
for size in (1000, 0):  # cut short under the console, then emptied (a rotated log)
    os.truncate(raw, size)
    os.truncate(index, size)
    for n in (0, 10, 199_999, 150_000, 123_456):
        got = log.get(n, 1 << 16)
        assert isinstance(got, bytes) and len(got) <= len(lines[n]), (n, got)
        log.span(n)
        times.time_of(n * 40)
    log.lines, log.grow(), times.grow()
    hits = log.find_all("line 1", 0)
    levels = log.level_lines("I", 0)
raw.write_bytes(b"".join(lines[:10]))  # written again: read again, no crash
log.grow()
log.get(5)
log.close()
times.close()
print("clean")
"""


def test_a_session_log_cut_short_under_the_console_reads_back_shorter(tmp_path: Path) -> None:
    result, _ = child([sys.executable, "-c", SHRINK, str(tmp_path)])
    assert result.returncode == 0 and result.stdout.strip() == "clean", result.stderr[-2000:]


# --------------------------------------------------------------------------- item 9

OLD_JSON_FIELDS = {
    "id", "folder", "started", "started_text", "kind", "target", "simulated", "program",
    "firmware", "ending", "npu_cycles", "cpu_cycles", "method_allocator_used",
    "method_allocator_size", "temp_allocator", "duration_s", "format", "warnings",
}  # fmt: skip
WRONG_TYPES = {
    "started": "yesterday", "ended": [1], "target": {"a": 1}, "kind": 3, "command": "fvp",
    "program_sha256": 5, "elf": ["x"], "elf_sha256": 7, "proof_line": "12", "returncode": "0",
    "exit_reason": 4, "simulated": "yes", "summary": "lots", "format": "2", "proof": 1.5,
    "verdict": [], "platform": 3,
}  # fmt: skip
BAD_SUMMARY = {
    "format": 2, "pmu": {"npu_cycles": 5}, "allocators": [1, 2], "output_values": {"x": 5, "0": 3},
    "errors": "many", "lines": "ten", "verdict": 1,
}  # fmt: skip


def spoil(root: Path) -> dict[str, Path]:
    """Sessions next to the good ones, each bad in one way."""
    bad = {}
    for n, name in enumerate(("deep", "nan", "infinity", "types", "summary", "far_future")):
        folder = root / f"20200101-00000{n}-fvp-000"
        shutil.copytree(V1 / GOOD, folder)
        meta = json.loads((folder / "meta.json").read_text())
        if name == "deep":
            (folder / "meta.json").write_text("[" * 200_000 + "]" * 200_000)
        elif name == "nan":
            (folder / "meta.json").write_text(json.dumps(meta | {"started": float("nan")}))
        elif name == "infinity":
            (folder / "meta.json").write_text(json.dumps(meta).replace("}", ', "x": 1e999}'))
        elif name == "types":
            (folder / "meta.json").write_text(json.dumps(meta | WRONG_TYPES))
        elif name == "summary":
            (folder / "summary.json").write_text(json.dumps(BAD_SUMMARY))
        else:
            (folder / "meta.json").write_text(json.dumps(meta | {"started": 1e300}))
        bad[name] = folder
    return bad


def test_one_corrupt_session_hides_none_of_the_others(ws: Path) -> None:
    root = ws / ".etu" / "sessions"
    bad = spoil(root)
    listing, _ = etu(ws, "sessions", "--json")
    assert listing.returncode == 0 and "Traceback" not in listing.stderr, listing.stderr
    rows = {row["id"]: row for row in map(json.loads, listing.stdout.splitlines())}
    assert set(rows) == {GOOD, FAILED} | {folder.name for folder in bad.values()}
    assert all(set(row) >= OLD_JSON_FIELDS for row in rows.values())
    for name in ("deep", "nan", "infinity"):  # unreadable: listed, saying why (one line)
        problem = rows[bad[name].name]["problem"]
        assert "meta.json" in problem and "\n" not in problem, problem
    assert "nested too deeply" in rows[bad["deep"].name]["problem"]
    assert "NaN" in rows[bad["nan"].name]["problem"]
    assert "1e999" in rows[bad["infinity"].name]["problem"]
    typed = rows[bad["types"].name]  # read, its wrong fields dropped and said
    assert typed["problem"] is None and typed["started"] is None and typed["target"] == ""
    assert any("started is a string" in w for w in typed["warnings"]), typed["warnings"]
    assert rows[bad["far_future"].name]["started_text"] == ""
    assert rows[GOOD]["ending"]["reason"] == "success" and rows[GOOD]["problem"] is None
    table, _ = etu(ws, "sessions")
    assert table.returncode == 0 and table.stdout.count("unreadable") == 3, table.stdout


def test_wrong_field_types_in_report_diff_and_compare(ws: Path) -> None:
    bad = spoil(ws / ".etu" / "sessions")
    for name in ("types", "summary", "nan", "deep"):
        folder = bad[name].name
        report, _ = etu(ws, "report", folder)
        assert report.returncode == 0, (name, report.stderr)
        assert "unexpected" not in report.stderr + report.stdout and not report.stderr
        for a, b in ((folder, GOOD), (GOOD, folder)):
            diff, _ = etu(ws, "diff", a, b, "--json")
            assert diff.returncode in (0, 1), (name, diff.stdout, diff.stderr)
            assert "unexpected" not in diff.stdout + diff.stderr
    events = bad["types"] / "events.jsonl"
    lines = events.read_text().splitlines()
    for wrong in ({"index": "0"}, {"values": "1 2 3"}, {"values": [[1]]}, {"numel": "10"}):
        spoilt = [
            json.dumps(json.loads(line) | wrong) if "OutputTensor" in line else line
            for line in lines
        ]
        events.write_text("\n".join(spoilt) + "\n")
        result, _ = etu(ws, "compare", str(bad["types"]), "--reference", "ref.npy")
        err = one_line(result, 2)
        assert "events.jsonl" in err and "OutputTensor" in err, err


def test_json_reader_refuses_deep_nesting_and_non_finite_numbers() -> None:
    from etu.parsers.errors import ParseError
    from etu.parsers.files import loads_json

    for text, says in (("[" * 200_000 + "]" * 200_000, "nested too deeply"),
                       ('{"a": NaN}', "NaN"), ('{"a": -Infinity}', "Infinity"),
                       ("[1e999]", "1e999"), ("9" * 5000, "digits")):  # fmt: skip
        with pytest.raises(ParseError, match=says):
            loads_json(text, "meta.json")
    assert loads_json("[NaN]", allow_nan=True)[0] != 0  # an output's value may be NaN
