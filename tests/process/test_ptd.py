"""External Vela blocks in ``.ptd`` files (issue 25 §1) on real pairs lowered by ExecuTorch
1.5.1 with ``external_block_placements``, and program.fbs' device fields (§2) on a program
ExecuTorch's own serializer wrote with them."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from etu.parsers.errors import ParseError
from etu.parsers.ethosu import decode_ethosu_payload
from etu.parsers.fit import check_fit
from etu.parsers.memory_map import load_memory_map
from etu.parsers.program_facts import delegates, inspect_record
from etu.parsers.ptd import decode_data_file, open_data_file
from etu.parsers.pte import open_program
from tests import npu_programs, ptd_programs
from tests.helpers import DEMO, etu

pytestmark = pytest.mark.aot
DEMO_ELF = DEMO / "firmware" / "arm_executor_runner.elf"


@pytest.fixture(scope="module")
def pair() -> Path:
    """program.pte + program.ptd: command stream and weights both in the .ptd."""
    return ptd_programs.build("ext_u55") / "program.pte"


def inspect_json(*args: object) -> dict:
    result = etu("inspect", "--json", *args)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.splitlines()[0])


def external(record: dict) -> dict[str, dict]:
    (delegate,) = record["plans"][0]["delegates"]
    return {entry["block"]: entry for entry in delegate["external_data"]}


def test_the_ptd_holds_the_blocks_under_their_hash_keys(pair: Path) -> None:
    """Checked on the artifact with hashlib and slicing, not with etu's resolver: the key is
    sha256(tag + NUL + payload), the tag is the placement in the compile spec."""
    data = pair.with_suffix(".ptd").read_bytes()
    assert data[4:8] == b"FT01" and data[8:12] == b"FH01"
    with open_program(pair) as program:
        (info,) = delegates(program)
        placements = json.loads(info.delegate.spec("external_block_placements"))
        keys = info.payload.external_blocks
    assert placements == {"cmd_data": "program", "weight_data": "program"}
    assert set(keys) == {"cmd_data", "weight_data"}
    ptd = open_data_file(pair.with_suffix(".ptd"))
    for key in keys.values():
        entry = ptd.entry(key)
        assert entry is not None
        blob = data[entry.offset : entry.offset + entry.size]
        assert hashlib.sha256(b"program\0" + blob).hexdigest() == key
    cmd = ptd.read(ptd.entry(keys["cmd_data"]))
    assert cmd[:4] == b"COP1"


def test_inspect_resolves_the_pair_and_decodes_the_stream_as_inline(pair: Path) -> None:
    """The same model, seed and target lowered inline: the external command stream bytes
    and every decoded operation are the inline program's."""
    inline = npu_programs.build("u55") / "program.pte"
    record = inspect_json(pair)
    blocks = external(record)
    assert {b: e["status"] for b, e in blocks.items()} == {"cmd_data": "ok", "weight_data": "ok"}
    assert blocks["cmd_data"]["data_file"] == str(pair.with_suffix(".ptd"))
    assert blocks["cmd_data"]["tag"] == "program"
    ptd = pair.with_suffix(".ptd")
    assert record["data_files"] == [{"file": str(ptd), "file_size": ptd.stat().st_size, "keys": 2}]
    assert not record["warnings"]
    (ext_delegate,) = record["plans"][0]["delegates"]
    (in_delegate,) = inspect_json(inline)["plans"][0]["delegates"]
    assert ext_delegate["npu_operations"] and ext_delegate["npu_operations_note"] is None
    assert ext_delegate["npu_operations"] == in_delegate["npu_operations"]
    assert blocks["cmd_data"]["size"] == in_delegate["ethosu"]["command_stream_size"]
    assert blocks["weight_data"]["size"] == in_delegate["ethosu"]["weights_size"]
    with open_program(inline) as program:
        (info,) = delegates(program)
        blob = bytes(program.delegate_payload(info.delegate))
    cmd = next(b for b in info.payload.blocks if b.name == "cmd_data")
    decoded = open_data_file(ptd)
    resolved = decoded.read(decoded.entry(blocks["cmd_data"]["key"]))
    assert resolved == blob[cmd.payload_offset : cmd.payload_offset + cmd.size]

    text = etu("inspect", pair)
    assert text.returncode == 0 and "command stream 1," in text.stdout
    assert "in program.ptd" in text.stdout and "NPU operations:" in text.stdout
    # each block named once: "external cmd_data: 1,788 bytes in program.ptd"
    size = blocks["cmd_data"]["size"]
    assert f"external cmd_data: {size:,} bytes in program.ptd\n" in text.stdout
    assert "cmd_data: cmd_data" not in text.stdout


def test_a_ptd_given_to_inspect_is_shown_not_refused(pair: Path) -> None:
    ptd = pair.with_suffix(".ptd")
    record = inspect_json(ptd)
    assert record["file_identifier"] == "FT01" and record["kind"] == "data"
    with open_program(pair) as program:
        (info,) = delegates(program)
        keys = set(info.payload.external_blocks.values())
    assert {entry["key"] for entry in record["named_data"]} == keys
    assert all(e["offset"] % 16 == 0 for e in record["named_data"])
    text = etu("inspect", ptd)
    assert text.returncode == 0 and "FT01" in text.stdout and "ExecuTorch data file" in text.stdout
    assert "another kind" not in text.stdout + text.stderr


def corruptions(data: bytes) -> dict[str, bytes]:
    """Each a .ptd broken in one way, with what the error must say."""
    fh = bytearray(data)
    fh[8:12] = b"XX01"
    segment_size = bytearray(data)
    segment_size[40:48] = (len(data) * 4).to_bytes(8, "little")  # segment_data_size
    flat_offset = bytearray(data)
    flat_offset[16:24] = (len(data) + 8).to_bytes(8, "little")  # flatbuffer_offset
    root = bytearray(data)
    root[0:4] = (0x7FFFFFF0).to_bytes(4, "little")
    return {
        "empty": b"",
        "cut in the identifier": data[:6],
        "cut in the header": data[:30],
        "cut in the flatbuffer": data[:100],
        "cut in the segments": data[: len(data) - 40],
        "header magic": bytes(fh),
        "segment data size": bytes(segment_size),
        "flatbuffer offset": bytes(flat_offset),
        "root offset": bytes(root),
    }


@pytest.mark.parametrize("name", list(corruptions(b"\0" * 600)))
def test_a_corrupt_ptd_is_one_line_naming_the_file(pair: Path, tmp_path: Path, name: str) -> None:
    bad = tmp_path / "bad.ptd"
    bad.write_bytes(corruptions(pair.with_suffix(".ptd").read_bytes())[name])
    with pytest.raises(ParseError) as caught:
        open_data_file(bad)
    assert str(caught.value).startswith(str(bad)) and "\n" not in str(caught.value)
    result = etu("inspect", bad)
    assert result.returncode == 1 and result.stdout == ""
    (line,) = result.stderr.strip().splitlines()
    assert str(bad) in line and "Traceback" not in result.stderr
    as_json = etu("inspect", "--json", bad)
    assert as_json.returncode == 1 and json.loads(as_json.stdout)["error"].startswith(str(bad))
    # beside a program: the program still decodes; the data file's error is a warning line
    record = inspect_json(pair, "--data", bad)
    assert record["data_file_errors"] and record["data_file_errors"][0].startswith(str(bad))
    assert {e["status"] for e in external(record).values()} == {"no_data_file"}


def test_every_truncation_and_byte_flip_of_a_ptd_is_a_parse_error_or_decodes(pair: Path) -> None:
    data = pair.with_suffix(".ptd").read_bytes()
    for size in range(0, 400):
        try:
            decode_data_file(data[:size], "cut.ptd")
        except ParseError as error:
            assert str(error).startswith("cut.ptd") and "\n" not in str(error)
    for position in range(0, 256):
        mutated = bytearray(data)
        mutated[position] ^= 0xFF
        try:
            decoded = decode_data_file(bytes(mutated), "flip.ptd")
        except ParseError:
            continue
        for entry in decoded.entries:  # whatever decodes must stay inside the file
            assert entry.offset + entry.size <= len(data)


def test_a_changed_entry_is_flagged_as_a_hash_mismatch(pair: Path, tmp_path: Path) -> None:
    program = ptd_programs.copy_pair("ext_u55", tmp_path / "pair")
    ptd = program.with_suffix(".ptd")
    data = bytearray(ptd.read_bytes())
    decoded = open_data_file(ptd)
    with open_program(program) as opened:
        (info,) = delegates(opened)
        keys = info.payload.external_blocks
    weights = decoded.entry(keys["weight_data"])
    data[weights.offset + 5] ^= 0x01  # one weight bit: the stream itself still decodes
    ptd.write_bytes(bytes(data))
    record = inspect_json(program)
    blocks = external(record)
    assert blocks["cmd_data"]["status"] == "ok"
    assert blocks["weight_data"]["status"] == "hash_mismatch"
    assert "do not hash to the key" in blocks["weight_data"]["message"]
    assert any("weight_data" in w and "do not hash" in w for w in record["warnings"])
    text = etu("inspect", program)
    assert text.returncode == 0 and "external weight_data: HASH_MISMATCH: the " in text.stdout


def test_a_key_with_no_entry_is_flagged_missing(pair: Path, tmp_path: Path) -> None:
    program = ptd_programs.copy_pair("ext_u55", tmp_path / "pair")
    ptd = program.with_suffix(".ptd")
    with open_program(program) as opened:
        (info,) = delegates(opened)
        key = info.payload.external_blocks["cmd_data"]
    data = ptd.read_bytes()
    assert data.count(key.encode()) == 1
    other = ("0" if key[0] != "0" else "1") + key[1:]
    ptd.write_bytes(data.replace(key.encode(), other.encode()))
    record = inspect_json(program)
    blocks = external(record)
    assert blocks["cmd_data"]["status"] == "missing" and blocks["weight_data"]["status"] == "ok"
    assert "in none of the data files (program.ptd)" in blocks["cmd_data"]["message"]
    (delegate,) = record["plans"][0]["delegates"]
    assert delegate["npu_operations"] == []
    assert "external .ptd" in delegate["npu_operations_note"]
    # and with no data file at all
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(program, alone / "program.pte")
    blocks = external(inspect_json(alone / "program.pte"))
    assert {e["status"] for e in blocks.values()} == {"no_data_file"}
    text = etu("inspect", alone / "program.pte").stdout
    assert "external NO_DATA_FILE: cmd_data is in a .ptd file" in text
    assert "cmd_data: NO_DATA_FILE: cmd_data" not in text


def test_fit_counts_the_ptd_and_warns_the_runner_does_not_load_it(pair: Path, tmp_path) -> None:
    result = etu("fit", "--pte", pair, "--elf", DEMO_ELF, "--json")
    assert result.returncode == 0, result.stderr
    verdicts = {v["check"]: v for v in json.loads(result.stdout)["verdicts"]}
    ext = verdicts["external_data"]
    assert ext["status"] == "warn" and ext["need"] == pair.with_suffix(".ptd").stat().st_size
    assert "does not load .ptd" in ext["message"] and "program.ptd" in ext["message"]
    memory_map = load_memory_map(DEMO_ELF)
    region = memory_map.pools["model_pte"].region
    assert ext["have"] == next(r.free for r in memory_map.regions if r.name == region)
    # without the .ptd: the blocks are unresolved, a failure
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(pair, alone / "program.pte")
    failed = etu("fit", "--pte", alone / "program.pte", "--elf", DEMO_ELF, "--json")
    assert failed.returncode == 1
    verdicts = {v["check"]: v for v in json.loads(failed.stdout)["verdicts"]}
    assert verdicts["external_data"]["status"] == "fail"
    assert "--data" in verdicts["external_data"]["fix"]
    given = etu("fit", "--pte", alone / "program.pte", "--elf", DEMO_ELF, "--data",
                    pair.with_suffix(".ptd"), "--json")  # fmt: skip
    assert given.returncode == 0, given.stdout
    # an inline program has no external_data verdict at all
    inline = npu_programs.build("u55") / "program.pte"
    with open_program(inline) as program:
        assert "external_data" not in {v.check for v in check_fit(program, memory_map)}


def test_the_run_preflight_names_external_blocks_the_runner_cannot_load(
    pair: Path, tmp_path: Path
) -> None:
    """The Run tab's (and a Boards flash's) pre-flight reads the .ptd beside the program:
    with it, the run is stopped because the runner loads no .ptd; without it, the missing
    entries are named."""
    from etu.runner.preflight import flash_preflight, preflight
    from etu.runner.workspace import load_firmware

    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(pair, alone / "program.pte")
    cases = {
        pair: ("program.ptd: 4", "does not load .ptd"),
        alone / "program.pte": ("cmd_data is in a .ptd file", "no readable one was given"),
    }
    for program_path, expected in cases.items():
        with open_program(program_path) as program:
            firmware = load_firmware(DEMO_ELF, program, None, workspace=None)
            problems = preflight("ethos-u55-128", "ethos-u55-128", program, firmware, DEMO_ELF)
            flashed = flash_preflight(program, "ethos-u55-128", DEMO_ELF, "corstone-300")
        (external,) = [p for p in problems if ".ptd" in p]
        assert all(words in external for words in expected), problems
        assert external in flashed


def test_a_report_on_a_run_of_the_pair_reads_its_ptd(
    pair: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """etu report's fit section looks the external blocks up in the .ptd beside the
    workspace program that ran: counted (a warning), not a missing entry (a failure)."""
    from etu.runner.report import build_report
    from tests.history_workspace import make_workspace, record_run

    ws = make_workspace(tmp_path / "ws")
    session = record_run(ws)
    for file in ("program.pte", "program.ptd"):
        shutil.copy(pair.parent / file, ws / file)
    meta = json.loads((session / "meta.json").read_text())
    meta["program_sha256"] = hashlib.sha256(pair.read_bytes()).hexdigest()
    (session / "meta.json").write_text(json.dumps(meta))
    monkeypatch.chdir(ws)  # the session names its ELF as `etu run` was given it: relative
    report = build_report(session, ws)
    assert report["program"]["source"] == str(ws / "program.pte"), report["program"]
    assert report["fit"]["available"], report["fit"]
    verdicts = {v["check"]: v for v in report["fit"]["verdicts"]}
    ext = verdicts["external_data"]
    assert ext["status"] == "warn", ext
    assert ext["need"] == pair.with_suffix(".ptd").stat().st_size
    assert "program.ptd" in ext["message"] and "does not load .ptd" in ext["message"]
    (ws / "program.ptd").unlink()  # without it the blocks are missing, as etu fit says
    verdicts = {v["check"]: v for v in build_report(session, ws)["fit"]["verdicts"]}
    assert verdicts["external_data"]["status"] == "fail"


def test_firmware_build_refuses_a_program_with_external_blocks(pair: Path, tmp_path) -> None:
    from tests.real_runner import runtime_environment

    env = {**runtime_environment(), "ETU_NO_DOWNLOAD": "1"}
    env.pop("ETU_EXECUTORCH_SRC", None)
    result = etu("firmware", "build", pair, "--board", "corstone-300", "--out",
                 tmp_path / "fw", env=env, drop=("ETU_EXECUTORCH_SRC",))  # fmt: skip
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert str(pair) in line and ".ptd" in line and "--external-blocks" in line
    assert not (tmp_path / "fw" / "arm_executor_runner.elf").exists()


def test_compile_external_weights_writes_the_pair(tmp_path: Path) -> None:
    refused = etu("compile", "cnn", "--external-blocks", "cmd,bias", "--out", tmp_path)
    assert refused.returncode == 2 and "unknown external block 'bias'" in refused.stderr
    result = etu("compile", "cnn", "--external-blocks", "weights", "--out", tmp_path,
                     "--json")  # fmt: skip
    assert result.returncode == 0, result.stderr
    record = json.loads(result.stdout)
    pte = Path(record["pte"])
    assert record["data_files"] == [str(pte.with_suffix(".ptd"))]
    assert record["request"]["external_blocks"] == ["weights"]
    with open_program(pte) as program:
        (info,) = delegates(program)
        assert list(info.payload.external_blocks) == ["weight_data"]
        assert info.payload.command_stream_format == "COP1"  # the stream stayed inline
        blob = bytes(program.delegate_payload(info.delegate))
    assert decode_ethosu_payload(blob).weights_size == 64  # the key, not the weights
    blocks = external(inspect_json(pte))
    assert blocks["weight_data"]["status"] == "ok" and blocks["weight_data"]["tag"] == pte.stem


def test_programs_without_the_new_fields_decode_as_before() -> None:
    """Programs written before the device fields (the demo's, an inline and a segment
    lowering) have none: everything is on the CPU, nothing to warn about."""
    demo = DEMO_ELF.parents[1]
    programs = [*sorted(demo.rglob("*.pte")), npu_programs.build("u55") / "program.pte"]
    assert len(programs) >= 3
    for path in programs:
        with open_program(path) as program:
            record = inspect_record(program)
            for plan in program.plans:
                assert plan.non_const_buffer_device == ()
                assert all(getattr(v, "device", "cpu") == "cpu" for v in plan.values)
        assert all(p["tensor_devices"] == {} for p in record["plans"])


def test_device_fields_are_decoded_and_fit_warns(tmp_path: Path) -> None:
    source = npu_programs.build("u55") / "program.pte"
    program_path = ptd_programs.device_program(source, tmp_path / "cuda.pte")
    with open_program(program_path) as program:
        (plan,) = program.plans
        devices = [(d.buffer_idx, d.device) for d in plan.non_const_buffer_device]
        assert devices == [(0, "cpu"), (1, "cuda:1")]
        planned = [v for v in plan.values if getattr(v, "memory_id", None) is not None]
        assert planned and all(v.device == "cuda:1" for v in planned)
        verdicts = {v.check: v for v in check_fit(program, load_memory_map(DEMO_ELF))}
    assert verdicts["buffer_devices"].status == "warn"
    assert "buffer 1 on cuda:1" in verdicts["buffer_devices"].message
    record = inspect_json(program_path)
    (plan_record,) = record["plans"]
    assert plan_record["non_const_buffer_device"][1] == {
        "buffer_idx": 1, "device_type": 1, "device_index": 1, "device": "cuda:1"
    }  # fmt: skip
    assert plan_record["tensor_devices"] == {"cuda:1": len(planned)}
    text = etu("inspect", program_path)
    assert "devices: buffer 1 on cuda:1" in text.stdout
    with open_program(source) as program:
        assert "buffer_devices" not in {
            v.check for v in check_fit(program, load_memory_map(DEMO_ELF))
        }


def test_bfloat16_tensors_are_named_and_sized(tmp_path: Path) -> None:
    """A bfloat16 model lowered for the CPU by ExecuTorch: BFLOAT16 (15, program.fbs since
    PR 16882) is shown by name, two bytes per element, its constants inside the file."""
    script = tmp_path / "bf16.py"
    script.write_text(
        "import sys, torch\n"
        "from executorch.exir import to_edge\n"
        "m = torch.nn.Linear(4, 3).to(torch.bfloat16).eval()\n"
        "x = (torch.ones(1, 4, dtype=torch.bfloat16),)\n"
        "p = to_edge(torch.export.export(m, x)).to_executorch()\n"
        "open(sys.argv[1], 'wb').write(p.buffer)\n"
    )
    out = tmp_path / "bf16.pte"
    made = subprocess.run([sys.executable, script, out], capture_output=True, text=True,
                          timeout=600, check=False)  # fmt: skip
    assert made.returncode == 0, made.stderr[-2000:]
    with open_program(out) as program:
        (plan,) = program.plans
        constants = [v for v in plan.values if getattr(v, "is_constant", False)]
        assert {v.dtype for v in constants} == {"BFloat16"}
        for tensor in constants:
            assert tensor.nbytes == 2 * tensor.numel
            assert len(program.constant_data(tensor)) == tensor.nbytes
    record = inspect_json(out)
    assert any("BFloat16" in op["dtypes"] for op in record["cpu_operators"])
    assert {q["dtype"] for q in record["io_quantization"]} == {"bfloat16"}


def test_a_large_ptd_keeps_its_segments_on_disk(pair: Path, tmp_path: Path, monkeypatch) -> None:
    """Above the read-whole size only the FlatBuffer part is read; blobs are read when asked
    for, and a file changed since is one line, not stale bytes."""
    from etu.parsers import ptd as ptd_module

    copy = tmp_path / "program.ptd"
    shutil.copy(pair.with_suffix(".ptd"), copy)
    whole = open_data_file(copy)
    monkeypatch.setattr(ptd_module, "READ_WHOLE_BELOW", 64)
    lazy = open_data_file(copy)
    assert whole.data is not None and lazy.data is None
    assert [lazy.read(e) for e in lazy.entries] == [whole.read(e) for e in whole.entries]
    with copy.open("ab") as handle:
        handle.write(b"\0" * 16)
    with pytest.raises(ParseError, match="file changed while read") as caught:
        lazy.read(lazy.entries[0])
    assert str(caught.value).startswith(str(copy))
