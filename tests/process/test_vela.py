"""Vela's outputs read back: real Vela 5.1 files (tests/data/vela, copied from the reference
samples; each folder's command is in its README/COMMANDS.tsv), the demo workspace's
ExecuTorch-produced folder, synthetic older/odd layouts, and hostile input."""

from __future__ import annotations

import argparse
import io
import json
import math
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from etu.parsers.errors import ParseError, TruncatedError, WrongKindError
from etu.parsers.vela import (
    SUMMARY_COLUMNS,
    SUMMARY_UNITS,
    LayerRow,
    VelaReport,
    load_vela_report,
    parse_debug_db,
    parse_per_layer_csv,
    parse_summary_csv,
    parse_vela_stdout,
    vela_record,
)

ROOT = Path(__file__).resolve().parent.parent.parent
DATA = Path(__file__).resolve().parent.parent / "data" / "vela"
DEMO = ROOT / "etu_tui" / "demo" / "vela"

U55 = "Ethos_U55_High_End_Embedded"
U55_128, U55_256, U65_256 = "Ethos_U55_128", "Ethos_U55_256", "Ethos_U65_256"
U65_512, U85_128, U85_256 = "Ethos_U65_512", "Ethos_U85_128", "Ethos_U85_256"
DRAM_MID = "Ethos_U85_SYS_DRAM_Mid"

# folder number: (accelerator, system config, memory mode, cycles_total, SRAM used KiB,
#                 per-layer rows, NPU operators, CPU operators), read off the files by hand.
SAMPLES: dict[str, tuple] = {
    "00": (U55_128, U55, "Shared_Sram", 44625, 29.5625, 0, None, None),
    "01": (U55_128, U55, "Shared_Sram", 44625, 29.5625, 0, 20, 0),
    "02": (U55_128, U55, "Shared_Sram", 44625, 29.5625, 22, 20, 0),
    "03": (U55_128, U55, "Shared_Sram", 44625, 29.5625, 0, 20, 0),
    "04": (U55_128, U55, "Shared_Sram", 44625, 29.5625, 0, 20, 0),
    "05": (U55_128, U55, "Shared_Sram", 44625, 29.5625, 0, 20, 0),
    "06": (U55_128, U55, "Shared_Sram", 44625, 29.5625, 0, 20, 0),
    "07": (U55_128, U55, "Shared_Sram", 75953, 16.0, 0, 20, 0),
    "08": (U55_128, U55, "Shared_Sram", 44625, 29.5625, 0, 22, 0),
    "09": (U55_128, U55, "Shared_Sram", 44625, 29.5625, 0, 20, 0),
    "10": (U55_128, U55, "Shared_Sram", 44625, 29.75, 0, 20, 0),
    "12": (U55_256, "Ethos_U55_Deep_Embedded", "Sram_Only", 41518, 24.0, 0, 20, 0),
    "13": (U55_128, U55, "Shared_Sram", 44625, 29.5625, 0, 20, 0),
    "15": (U55_128, U55, "Shared_Sram", 44625, 29.5625, 0, 20, 0),
    "16": (U55_128, U55, "Shared_Sram", 44625, 29.5625, 22, 20, 0),
    "20": (U65_256, "Ethos_U65_High_End", "Dedicated_Sram_384KB", 39669, 29.5625, 22, 20, 0),
    "21": (U65_256, "Ethos_U65_Mid_End", "Shared_Sram", 37909, 29.5625, 22, 20, 0),
    "23": (U65_512, "Ethos_U65_Client_Server", "Dedicated_Sram_512KB", 22251, 29.578125, 22, 20, 0),
    "30": (U85_256, DRAM_MID, "Sram_Only", 38310, 32.0, 17, 14, 0),
    "32": (U85_256, "Ethos_U85_SYS_Flash_High", "Shared_Sram", 38610, 38.15625, 17, 14, 0),
    "33": (U85_256, DRAM_MID, "Sram_Only", 38310, 32.0, 0, 14, 0),
    "35": (U85_128, "Ethos_U85_SYS_Flash_Low", "Shared_Sram", 55738, 38.15625, 0, 14, 0),
    "36": (U85_256, DRAM_MID, "Sram_Only", 43560, 27.0, 0, 14, 0),
    "40": (U55_128, U55, "Shared_Sram", 19072, 6.0, 5, 3, 1),
    "42": (U55_128, U55, "Shared_Sram", 18928.0, 7.46875, 3, 3, 1),
    "43": (U55_128, U55, "Shared_Sram", 18928.0, 7.46875, 0, 3, 1),
    "45": (U85_256, DRAM_MID, "Sram_Only", 4678, 6.0, 5, 4, 1),
    "48": (U55_128, U55, "Shared_Sram", 19072, 6.0, 4, 3, 0),
    "49": (U85_256, DRAM_MID, "Sram_Only", 4678, 6.0, 4, 3, 0),
    "50": (U55_128, U55, "Shared_Sram", 44625, 29.5625, 22, None, None),
}


def sample(number: str) -> Path:
    """tests/data/vela/<number>_<description>."""
    (folder,) = DATA.glob(f"{number}_*")
    return folder


# folder: the error Vela printed before it stopped (no CSV written).
FAILED = {
    "11_u55_128_dedicated_sram_invalid": "ConfigOptionError: 'Error: Invalid configuration of"
    " arena_mem_area=OffChipFlash (must be Sram or Dram)'",
    "14_u55_128_force_legacy_on_tosa": "vela: error: Forcing the use of the deprecated legacy"
    " Python compilation core is not possible",
    "41_tflite_u55_128_regor_raw": "RuntimeError: Compilation failed: Output error: RawWriter"
    " expects a graph without passthrough/CPU operations (found DEQUANTIZE)",
    "46_tflite_u85_256_force_legacy_err": "The legacy core only supports Ethos-U55 and Ethos-U65"
    " systems and TFLite input networks.",
}


def test_every_sample_folder_is_covered() -> None:
    folders = {p.name for p in DATA.iterdir() if p.is_dir() and p.name[:2].isdigit()}
    assert {name[:2] for name in folders} == set(SAMPLES) | {name[:2] for name in FAILED}
    assert len(folders) == len(SAMPLES) + len(FAILED)


# --------------------------------------------------------------------------- whole folders


@pytest.mark.parametrize("number", sorted(SAMPLES))
def test_sample_folder(number: str) -> None:
    accel, system, mode, cycles, sram, rows, npu, cpu = SAMPLES[number]
    report = load_vela_report(sample(number))
    assert report.accelerator == accel
    assert report.system_config == system
    assert report.memory_mode == mode
    assert report.cycles == cycles and type(report.cycles) is type(cycles)
    assert report.sram_used_kib == sram
    assert report.sram_used_bytes == round(sram * 1024)
    assert len(report.per_layer) == rows
    assert report.npu_operators == npu
    assert report.cpu_operators == cpu
    assert report.is_estimate is True
    assert report.errors == [] and not report.failed
    assert report.warnings == []  # every real folder is consistent and complete
    assert len(report.summaries) == 1
    assert set(report.summaries[0]) == set(SUMMARY_COLUMNS)
    assert report.vela_version is None  # Vela's stdout never says; no etu_compile.json here
    assert report.inference_time_s == pytest.approx(cycles / report.core_clock_hz)
    if rows:
        assert sum(row.cycles for row in report.per_layer) == cycles
        assert report.per_layer_from == "csv"
    record = vela_record(report)
    json.dumps(record, allow_nan=False)
    assert record["summaries"][0]["cycles_total"] == cycles
    assert record["estimate"] is True
    assert len(record["per_layer"]) == rows


def test_u55_all_files_folder() -> None:
    report = load_vela_report(DATA / "16_u55_128_all_files")
    summary = report.summary
    assert summary["core_clock"] == 500000000.0
    assert summary["arena_cache_size"] == 4194304.0
    assert summary["sram_bandwidth"] == pytest.approx(3.725290298461914)
    assert summary["weights_storage_area"] == "Off-chip Flash"
    assert summary["feature_map_storage_area"] == "SRAM"
    assert summary["inference_time"] == 8.925e-05
    assert summary["total_original_weights"] == 5376
    assert summary["total_npu_encoded_weights"] == 6432
    assert summary["sram_total_bytes"] == 178396
    assert summary["off_chip_flash_weight_read_bytes"] == 6912
    assert summary["nn_macs"] == 1631060
    assert summary["cycles_npu"] == 42290
    assert summary["cycles_off_chip_flash_access"] == 3458
    assert isinstance(summary["cycles_total"], int)  # Regor writes integers
    assert report.off_chip_flash_used_kib == 7.453125
    assert report.flash_used_kib == 7.453125
    assert report.sram_needed_kib == 29.5625
    assert report.inferences_per_second == pytest.approx(11204.481792717086)
    assert report.compiler_core == "regor"
    assert report.per_layer_layout == "regor"
    assert report.debug_db is not None and len(report.debug_db) == 11
    assert report.stdout["cycles_total"] == 44625
    assert report.stdout["original_weights_kib"] == 5.25
    assert report.stdout["npu_encoded_weights_kib"] == 6.28
    assert len(report.sources) == 4
    busiest = max(report.per_layer, key=lambda row: row.cycles)
    assert (busiest.name, busiest.cycles, busiest.operator) == (
        "tosa_rescale_default_1",
        18560,
        "Conv2D",
    )
    first = report.per_layer[0]
    assert first == {
        "Original Operator": "Transpose",
        "NNG Operator": "Transpose",
        "Target": "NPU",
        "Staging Usage": 6144,
        "Peak% (Staging)": 20.29598308668076,
        "Op Cycles": 1152,
        "Network% (cycles)": 2.581512605042017,
        "NPU": 800,
        "SRAM AC": 1152,
        "DRAM AC": 0,
        "OnFlash AC": 0,
        "OffFlash AC": 0,
        "MAC Count": 0,
        "Network% (MAC)": 0.0,
        "Util% (MAC)": 0.0,
        "Name": "#356",
    }
    lut = report.per_layer[18]
    assert (lut.nng_operator, lut.cycles, lut["Util% (MAC)"]) == ("LUT", 0, 100)
    record = vela_record(report)
    assert record["debug_db"]["tables"]["perf"] == 22
    assert record["headline"]["cycles"] == 44625
    assert record["stdout_summary"]["npu_operators"] == 20


def test_dedicated_sram_reports_dram() -> None:
    report = load_vela_report(DATA / "20_u65_256_et_default_perf")
    assert report.dram_used_kib == 10.453125
    assert report.summary["arena_cache_size"] == 384.0
    assert report.feature_map_storage_area == "DRAM"
    assert report.core_clock_hz == 1000000000.0
    assert report.stdout["dram_bandwidth"] == 3.49


def test_sram_only_counts_remapped_constants_as_sram() -> None:
    report = load_vela_report(DATA / "12_u55_256_deep_embedded_sram_only")
    assert report.sram_used_kib == 24.0
    assert report.on_chip_flash_used_kib == 7.453125
    assert report.weights_storage_area == "On-chip Flash"
    assert report.sram_needed_kib == 24.0 + 7.453125
    assert any("Changing const_mem_area" in line for line in report.vela_info)


def test_executorch_intermediates_layout_is_followed() -> None:
    report = load_vela_report(DATA / "50_executorch_vela_compile")
    assert report.sources[0].endswith("output/out_summary_Ethos_U55_High_End_Embedded.csv")
    assert report.stdout is None and report.npu_operators is None


def test_show_cpu_operations_lists_names() -> None:
    report = load_vela_report(DATA / "45_tflite_u85_256_regor_all")
    assert report.cpu_operator_names == ["Passthrough = output_float (outputs [1, 1, 1, 10])"]
    assert report.npu_operator_names is not None and len(report.npu_operator_names) == 4
    assert report.per_layer[-1].target == "CPU"
    assert report.per_layer[-1].nng_operator == "Passthrough"
    assert report.vela_warnings == [
        "Warning (supported operators) operator: DEQUANTIZE, ofm: 'output_float'"
        " Reason: Unsupported opType"
    ]


# --------------------------------------------------------------------------- summary CSV


def test_summary_units_cover_every_column() -> None:
    assert len(SUMMARY_COLUMNS) == 52
    assert set(SUMMARY_COLUMNS) <= set(SUMMARY_UNITS)
    assert SUMMARY_UNITS["sram_memory_used"] == "KiB"
    assert SUMMARY_UNITS["core_clock"] == "Hz"


def test_legacy_summary_keeps_float_formatting() -> None:
    path = DATA / "42_tflite_u55_128_legacy_all" / "tiny_summary_Ethos_U55_High_End_Embedded.csv"
    parsed = parse_summary_csv(path.read_bytes(), str(path))
    row = parsed.rows[0]
    assert parsed.number_style == "float"
    assert row["sram_feature_map_read_bytes"] == 8704.0
    assert row["cycles_sram_access"] == 2818.5
    assert row["cycles_total"] == 18928.0 and isinstance(row["cycles_total"], float)
    assert row["nn_macs"] == 309248 and isinstance(row["nn_macs"], int)
    assert row["passes_before_fusing"] == 7 and row["passes_after_fusing"] == 3
    assert parsed.warnings == [] and parsed.missing_columns == []


def test_summary_with_lf_and_several_rows() -> None:
    text = (DATA / "01_u55_128_et_default_raw" / f"out_summary_{U55}.csv").read_text()
    header, row = text.splitlines()[:2]
    second = row.replace(",44625", ",50000").replace("default,out", "second,out")
    parsed = parse_summary_csv(f"{header}\n{row}\n{second}\n", "two.csv")
    assert [r["cycles_total"] for r in parsed.rows] == [44625, 50000]
    assert parsed.rows[1]["experiment"] == "second"


def test_older_summary_with_fewer_columns_is_read_with_warnings() -> None:
    text = (DATA / "01_u55_128_et_default_raw" / f"out_summary_{U55}.csv").read_text()
    header, row = (line.split(",") for line in text.splitlines()[:2])
    keep = [i for i, name in enumerate(header) if not name.startswith(("on_chip", "cycles_"))]
    old = ",".join(header[i] for i in keep) + "\n" + ",".join(row[i] for i in keep) + "\n"
    parsed = parse_summary_csv(old.encode(), "old_summary.csv")
    assert "cycles_total" in parsed.missing_columns
    assert "on_chip_flash_memory_used" in parsed.missing_columns
    assert any("missing" in w and "on_chip_flash_bandwidth" in w for w in parsed.warnings)
    assert parsed.rows[0]["sram_memory_used"] == 29.5625
    assert "cycles_total" not in parsed.rows[0]


def test_unknown_future_column_is_kept() -> None:
    text = (DATA / "01_u55_128_et_default_raw" / f"out_summary_{U55}.csv").read_text()
    header, row = text.splitlines()[:2]
    parsed = parse_summary_csv(f"{header},new_metric,new_label\n{row},12.5,abc\n")
    assert parsed.rows[0]["new_metric"] == 12.5
    assert parsed.rows[0]["new_label"] == "abc"
    assert parsed.unknown_columns == ["new_metric", "new_label"]
    assert parsed.warnings == []


def test_nan_inference_rate_becomes_null_in_the_record(tmp_path: Path) -> None:
    text = (DATA / "01_u55_128_et_default_raw" / f"out_summary_{U55}.csv").read_text()
    header, row = text.splitlines()[:2]
    row = row.replace("11204.481792717086", "nan")
    (tmp_path / f"out_summary_{U55}.csv").write_text(f"{header}\n{row}\n")
    report = load_vela_report(tmp_path)
    assert math.isnan(report.summary["inferences_per_second"])
    assert report.inferences_per_second == 11204.481792717086  # 1 / inference_time
    record = vela_record(report)
    assert record["summaries"][0]["inferences_per_second"] is None
    assert any("inferences_per_second" in w for w in record["warnings"])
    json.dumps(record, allow_nan=False)


# --------------------------------------------------------------------------- per-layer CSV


def test_legacy_per_layer_layout() -> None:
    path = DATA / "42_tflite_u55_128_legacy_all" / "tiny_per-layer.csv"
    parsed = parse_per_layer_csv(path.read_bytes(), str(path))
    assert parsed.layout == "legacy"
    assert parsed.columns[5] == "Network% (cycles)" and parsed.columns[12] == "Network% (MAC)"
    conv = parsed.rows[0]
    assert conv["TFLite_operator"] == "CONV_2D"
    assert conv["Op Cycles"] == 5664.0 and isinstance(conv.cycles, float)
    assert conv["Network% (cycles)"] == pytest.approx(29.92392223161454)
    assert conv["Network% (MAC)"] == pytest.approx(95.36423841059603)
    assert conv.util_percent == pytest.approx(40.67796610169492)
    assert conv.staging_bytes == 7648
    assert (conv.operator, conv.nng_operator, conv.target) == ("CONV_2D", "Conv2DBias", "NPU")
    fc = parsed.rows[2]
    assert fc["SRAM AC"] == 130.5 and fc.name == "fc/output"
    assert sum(r.cycles for r in parsed.rows) == 18928.0
    assert parsed.warnings == []


def test_regor_per_layer_layout_with_cpu_row() -> None:
    path = DATA / "40_tflite_u55_128_regor_all" / "tiny_per-layer.csv"
    parsed = parse_per_layer_csv(path.read_bytes(), str(path))
    assert parsed.layout == "regor"
    assert [r.target for r in parsed.rows] == ["NPU", "NPU", "NPU", "NPU", "CPU"]
    assert [r.cycles for r in parsed.rows] == [4576, 0, 2128, 12368, 0]
    assert parsed.rows[0].staging_bytes == 6144
    assert parsed.rows[3].macs == 10240


def test_legacy_per_layer_with_two_subgraphs_skips_repeated_header() -> None:
    text = (DATA / "42_tflite_u55_128_legacy_all" / "tiny_per-layer.csv").read_text()
    header, *rows = text.splitlines()
    doubled = "\r\n".join([header, *rows, header, rows[0]]) + "\r\n"
    parsed = parse_per_layer_csv(doubled)
    assert parsed.subgraphs == 2 and len(parsed.rows) == 4


def test_tosa_operator_and_vela_4_0_na_operators() -> None:
    legacy = (
        "TOSA_operator,NNG Operator,SRAM Usage,Op Cycles,Network%,Network%,Name\n"
        "CONV2D,Conv2D,10,5.0,50.0,60.0,a b\n"
    )
    row = parse_per_layer_csv(legacy).rows[0]
    assert (row.operator, row["Network% (MAC)"], row.name, row.target) == (
        "CONV2D",
        60.0,
        "a b",
        "NPU",
    )
    regor40 = "Original Operator,NNG Operator,Target,Op Cycles,Name\nN/A,Conv2D,N/A,7,x\n"
    row = parse_per_layer_csv(regor40).rows[0]
    assert (row.operator, row.cycles, row.target) == ("Conv2D", 7, "N/A")
    text = (DATA / "40_tflite_u55_128_regor_all" / "stdout.txt").read_text()
    fixed = parse_vela_stdout(text.replace("NPU Grap ", "NPU Graph "))  # if Vela fixes the typo
    assert len(fixed.per_layer) == 5 and fixed.per_layer_graph.endswith("/tiny")


def test_regor_name_with_commas_and_quotes_is_rejoined() -> None:
    text = (
        DATA / "48_tflite_npu_only_u55_128_regor_raw" / "tiny_npu_only_per-layer.csv"
    ).read_text()
    text = text.replace("maxpool\n", 'max,pool "x"\n')
    parsed = parse_per_layer_csv(text, "comma.csv")
    assert parsed.rows[2].name == 'max,pool "x"'
    assert any("commas" in w for w in parsed.warnings)


def test_per_layer_single_file_gives_cycles_by_sum(tmp_path: Path) -> None:
    path = tmp_path / "layers.csv"
    shutil.copy(DATA / "30_u85_256_et_default_perf" / "out_per-layer.csv", path)
    report = load_vela_report(path)
    assert report.summaries == [] and report.cycles == 38310
    assert len(report.per_layer) == 17 and report.sources == [str(path)]
    assert report.warnings == ["no summary CSV was read"]


# --------------------------------------------------------------------------- debug database


def test_regor_debug_db_tables() -> None:
    path = DATA / "16_u55_128_all_files" / "out_debug.xml"
    db = parse_debug_db(path.read_bytes(), str(path))
    assert db.layout == "regor"
    assert list(db.tables) == [
        "perf_debug",
        "perf",
        "perf_debug_main",
        "perf_debug_conn",
        "tensors",
        "cmdstream",
        "queue",
        "group",
        "perf_debug_wd",
        "optimised",
        "source",
    ]
    assert db.row_counts()["perf"] == 22 and db.row_counts()["queue"] == 20
    assert db.row_counts()["tensors"] == 23 and db.row_counts()["source"] == 111
    assert len(db.columns["perf_debug"]) == 150
    assert db.attributes["source"].endswith("16_u55_128_all_files/out")
    assert sum(row["op_cycles"] for row in db.tables["perf"]) == 44625
    assert db.columns["perf"][-3:] == ["shram_ac", "Sram_ac", "OffChipFlash_ac"]
    assert db.warnings == []


def test_regor_debug_db_cells() -> None:
    db = parse_debug_db((DATA / "40_tflite_u55_128_regor_all" / "tiny_debug.xml").read_bytes())
    perf = db.tables["perf"][0]
    assert perf == {
        "id": 19,
        "source_id": 1,
        "optimised_id": 12,
        "operator": "Conv2D",
        "name": "conv/relu",
        "staging_usage": 6144,
        "op_cycles": 4576,
        "npu_cycles": 4576,
        "mac_count": 294912,
        "shram_ac": 0,
        "Sram_ac": 832,
        "OffChipFlash_ac": 3040,
    }
    tensor = db.tables["tensors"][0]
    assert (tensor["start_address"], tensor["end_address"], tensor["size"]) == (4096, 6144, 2048)
    assert (tensor["data_type"], tensor["name"]) == ("Int8", "input")
    assert db.tables["perf_debug_conn"][0]["input_op_id"] == -1  # quoted "-1" in the file
    assert db.tables["perf_debug_wd"][0]["wd_cycles"] is None  # "" in the file
    assert db.tables["queue"][0] == {
        "offset": 288,
        "cmdstream_id": 1,
        "optimised_id": 12,
        "scheduled_id": 19,
    }


def test_u85_debug_db_has_fewer_perf_debug_columns() -> None:
    db = parse_debug_db((DATA / "33_u85_256_debug_db_tflite_out" / "out_debug.xml").read_text())
    assert len(db.columns["perf_debug"]) == 136
    assert "lutram_ac" in db.columns["perf"]
    assert len(db.columns["perf_debug_main"]) == 17  # + ofm_ublock_* on U85
    assert sum(row["op_cycles"] for row in db.tables["perf"]) == 38310


def test_legacy_debug_db() -> None:
    path = DATA / "42_tflite_u55_128_legacy_all" / "tiny_debug.xml"
    db = parse_debug_db(path.read_bytes(), str(path))
    assert db.layout == "legacy"
    assert list(db.tables) == ["source", "optimised", "queue", "cmdstream"]
    assert [row["offset"] for row in db.tables["queue"]] == [328, 468, 644]
    assert db.tables["cmdstream"] == [{"id": 0, "file_offset": 14464}]
    assert db.attributes["source"] == "tiny.tflite"
    assert db.attributes["optimised"].endswith("tiny_vela.tflite")
    report = load_vela_report(DATA / "42_tflite_u55_128_legacy_all")
    assert report.debug_db_layout == "legacy" and report.compiler_core == "legacy"


def test_truncated_debug_db_keeps_complete_tables() -> None:
    text = (DATA / "40_tflite_u55_128_regor_all" / "tiny_debug.xml").read_text()
    cut = text[: text.index('<table name="queue">') + 30]
    db = parse_debug_db(cut, "cut.xml")
    assert list(db.tables)[-1] == "cmdstream" and "queue" not in db.tables
    assert db.attributes["source"].endswith("/tiny")
    assert any("truncated" in w for w in db.warnings)
    with pytest.raises(TruncatedError, match=r"^head\.xml: "):
        parse_debug_db(text[:200], "head.xml")


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ('<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "b">]><debug/>', ParseError),
        ("<other><table name='x'/></other>", WrongKindError),
        ("hello, not xml", WrongKindError),
        ("", TruncatedError),
    ],
)
def test_bad_debug_db(text: str, kind: type) -> None:
    with pytest.raises(kind) as caught:
        parse_debug_db(text, "bad.xml")
    assert str(caught.value).startswith("bad.xml: ") and "\n" not in str(caught.value)


# --------------------------------------------------------------------------- stdout


def test_stdout_summary_block() -> None:
    out = parse_vela_stdout((DATA / "16_u55_128_all_files" / "stdout.txt").read_bytes())
    s = out.summary
    assert s is not None
    assert (s["network"], s["accelerator_configuration"], s["memory_mode"]) == (
        "out",
        "Ethos_U55_128",
        "Shared_Sram",
    )
    assert s["system_config"] == U55
    assert (s["core_clock_mhz"], s["core_clock"]) == (500, 500_000_000)
    assert (s["sram_bandwidth"], s["off_chip_flash_bandwidth"]) == (3.73, 0.47)
    assert (s["sram_memory_used"], s["off_chip_flash_memory_used"]) == (29.56, 7.45)
    assert (s["npu_operators"], s["cpu_operators"], s["npu_operators_percent"]) == (20, 0, 100.0)
    assert (s["sram_average_bandwidth"], s["sram_input_mb"], s["sram_total_mb"]) == (
        1.91,
        0.08,
        0.17,
    )
    assert s["off_chip_flash_weight_mb"] == 0.01
    assert s["nn_macs"] == 1631060 and s["nn_tops"] == 0.04
    assert (s["cycles_npu"], s["cycles_sram_access"], s["cycles_total"]) == (42290, 21170, 44625)
    assert (s["inference_time_ms"], s["inferences_per_second"], s["batch_size"]) == (
        0.09,
        11204.48,
        1,
    )
    assert out.per_layer_layout == "regor" and len(out.per_layer) == 22
    assert out.per_layer_graph == "/home/dev/vela_samples/16_u55_128_all_files/out"
    long_name = out.per_layer[5]
    assert (long_name.name, long_name.cycles, long_name["Peak% (Staging)"]) == (
        "tosa_reduce_sum_default_reducesum",
        4180,
        33.83,
    )
    assert out.errors == [] and out.warnings == [] and not out.failed


def test_stdout_legacy_table_and_warnings() -> None:
    out = parse_vela_stdout((DATA / "42_tflite_u55_128_legacy_all" / "stdout.txt").read_text())
    assert out.per_layer_layout == "legacy" and out.per_layer_graph == "main_split_1"
    assert [row.name for row in out.per_layer] == ["conv/relu", "maxpool", "fc/output"]
    assert out.per_layer[0]["Network% (MAC)"] == 95.36 and out.per_layer[0]["Util%"] == 40.68
    assert out.vela_warnings[0].startswith("Warning: Option --debug-force-legacy-core")
    assert "Op has tensors with missing quantization parameters" in out.vela_warnings[1]
    assert out.summary["cycles_sram_access"] == 2818  # printed as int; the CSV has 2818.5


def test_stdout_only_folder(tmp_path: Path) -> None:
    shutil.copy(DATA / "16_u55_128_all_files" / "stdout.txt", tmp_path / "stdout.txt")
    report = load_vela_report(tmp_path)
    assert report.summaries == []
    assert report.cycles == 44625 and report.npu_cycles == 42290
    assert report.sram_used_kib == 29.56 and report.off_chip_flash_used_kib == 7.45
    assert report.system_config == U55 and report.accelerator == "Ethos_U55_128"
    assert report.inference_time_s == pytest.approx(44625 / 500e6)
    assert report.per_layer_from == "stdout" and len(report.per_layer) == 22
    assert any("stdout" in w and "rounded" in w for w in report.warnings)
    record = vela_record(report)
    assert record["summaries"] == [] and record["stdout_summary"]["cycles_total"] == 44625
    assert len(record["per_layer"]) == 22


def test_stdout_without_cycle_estimate_has_no_cycles(tmp_path: Path) -> None:
    shutil.copy(DATA / "01_u55_128_et_default_raw" / "stdout.txt", tmp_path / "vela_stdout.txt")
    report = load_vela_report(tmp_path)
    assert report.cycles is None and report.inference_time_s is None
    assert report.sram_used_kib == 29.56 and report.npu_operators == 20


def test_stdout_verbose_allocation_and_config() -> None:
    alloc = parse_vela_stdout((DATA / "06_u55_128_verbose_allocation" / "stdout.txt").read_text())
    assert alloc.allocation_peak_bytes == [30272, 7632]
    assert alloc.summary["sram_memory_used"] == 29.56
    config = parse_vela_stdout((DATA / "09_u55_128_verbose_config" / "stdout.txt").read_text())
    system = config.config[f"System Configuration ({U55})"]
    assert system["core_clock"] == "500000000.0" and system["OffChipFlash_clock_scales"] == "0.125"
    assert config.config["Memory Mode (Shared_Sram)"]["arena_mem_area"] == "Axi0"
    assert config.summary["memory_mode"] == "Shared_Sram"


def test_stdout_default_config_warnings() -> None:
    report = load_vela_report(DATA / "13_u55_128_no_config_defaults")
    assert len(report.vela_warnings) == 3
    assert report.vela_warnings[1].startswith("Warning: No system configuration specified")


@pytest.mark.parametrize("folder", sorted(FAILED))
def test_failed_run(folder: str) -> None:
    report = load_vela_report(DATA / folder)
    assert report.failed
    assert len(report.errors) == 1 and FAILED[folder] in report.errors[0]
    assert report.summaries == [] and report.cycles is None and report.stdout is None
    record = vela_record(report)
    assert record["failed"] is True and record["errors"] == report.errors
    assert record["summaries"] == [] and record["per_layer"] == []
    assert record["npu_operators"] is None and record["vela_version"] is None
    single = load_vela_report(DATA / folder / "stdout.txt")
    assert single.errors == report.errors


def test_legacy_core_error_and_truncated_traceback() -> None:
    out = parse_vela_stdout("Error: Invalid tflite file.\n")
    assert out.errors == ["Error: Invalid tflite file."] and out.failed
    cut = (DATA / "41_tflite_u55_128_regor_raw" / "stdout.txt").read_text()
    cut = cut[: cut.index("RuntimeError")]
    out = parse_vela_stdout(cut, "cut.txt")
    assert out.failed and any("truncated" in w for w in out.warnings)


def test_stdout_with_two_partitions_and_version() -> None:
    one = (DATA / "16_u55_128_all_files" / "stdout.txt").read_text()
    two = (DATA / "40_tflite_u55_128_regor_all" / "stdout.txt").read_text()
    out = parse_vela_stdout(f"ethos-u-vela 5.2.0\n{one}\nsome executorch log line\n{two}")
    assert [s["network"] for s in out.summaries] == ["out", "tiny"]
    assert out.summary["cycles_total"] == 19072
    assert out.vela_version == "5.2.0"
    assert len(out.per_layer) == 22 + 5


def test_truncated_stdout_table() -> None:
    text = (DATA / "02_u55_128_verbose_performance" / "stdout.txt").read_text()
    cut = text[: text.index("tosa_rescale_default_2 ") - 40]
    out = parse_vela_stdout(cut, "cut.txt")
    assert [row.name for row in out.per_layer][-1] == "tosa_rescale_default_1"
    assert len(out.per_layer) == 3
    assert any("truncated" in w for w in out.warnings)


# --------------------------------------------------------------------------- versions


def _regor_folder(tmp_path: Path) -> Path:
    for name in ("out_summary_Ethos_U55_High_End_Embedded.csv", "out_per-layer.csv", "stdout.txt"):
        shutil.copy(DATA / "16_u55_128_all_files" / name, tmp_path / name)
    return tmp_path


def test_version_from_compile_record(tmp_path: Path) -> None:
    folder = _regor_folder(tmp_path)
    (folder / "etu_compile.json").write_text(json.dumps({"versions": {"ethos-u-vela": "5.1.0"}}))
    report = load_vela_report(folder)
    assert (report.vela_version, report.vela_version_from) == ("5.1.0", "etu_compile.json")
    assert vela_record(report)["vela_version"] == "5.1.0"
    single = load_vela_report(folder / "out_per-layer.csv")
    assert single.vela_version == "5.1.0"


def test_version_from_stdout_wins_and_disagreement_is_warned(tmp_path: Path) -> None:
    folder = _regor_folder(tmp_path)
    stdout = folder / "stdout.txt"
    stdout.write_text("Vela version 5.2.0\n" + stdout.read_text())
    (folder / "etu_compile.json").write_text(json.dumps({"versions": {"ethos-u-vela": "5.1.0"}}))
    report = load_vela_report(folder)
    assert (report.vela_version, report.vela_version_from) == ("5.2.0", "stdout")
    assert any("5.2.0" in w and "5.1.0" in w for w in report.warnings)


@pytest.mark.parametrize("content", ["{not json", "[1, 2]", '{"versions": {"torch": "2"}}'])
def test_bad_or_partial_compile_record(tmp_path: Path, content: str) -> None:
    folder = _regor_folder(tmp_path)
    (folder / "etu_compile.json").write_text(content)
    report = load_vela_report(folder)
    assert report.vela_version is None and report.cycles == 44625


# --------------------------------------------------------------------------- folders that mix runs


def test_several_summaries_in_one_folder(tmp_path: Path) -> None:
    shutil.copy(
        DATA / "20_u65_256_et_default_perf" / "out_summary_Ethos_U65_High_End.csv", tmp_path
    )
    for name in ("out_summary_Ethos_U65_Mid_End.csv", "out_per-layer.csv", "stdout.txt"):
        shutil.copy(DATA / "21_u65_256_mid_end_shared_sram" / name, tmp_path / name)
    report = load_vela_report(tmp_path)
    assert len(report.summaries) == 2
    assert report.system_config == "Ethos_U65_Mid_End" and report.cycles == 37909
    assert any("2 summary rows" in w for w in report.warnings)
    record = vela_record(report)
    assert [Path(p).name for p in record["summary_sources"]] == [
        "out_summary_Ethos_U65_High_End.csv",
        "out_summary_Ethos_U65_Mid_End.csv",
    ]
    assert record["primary_summary"] == 1


def test_files_from_different_runs_are_flagged(tmp_path: Path) -> None:
    shutil.copy(DATA / "16_u55_128_all_files" / f"out_summary_{U55}.csv", tmp_path)
    shutil.copy(DATA / "30_u85_256_et_default_perf" / "out_per-layer.csv", tmp_path)
    shutil.copy(DATA / "30_u85_256_et_default_perf" / "stdout.txt", tmp_path)
    report = load_vela_report(tmp_path)
    assert report.cycles == 44625
    assert any("sum to 38310 but cycles_total is 44625" in w for w in report.warnings)
    assert any("disagree on system_config" in w for w in report.warnings)


# --------------------------------------------------------------------------- malformed input


def _summary_text() -> str:
    return (DATA / "16_u55_128_all_files" / f"out_summary_{U55}.csv").read_text()


def test_truncated_summary_keeps_what_is_there(tmp_path: Path) -> None:
    text = _summary_text()
    cut = text[: text.index(",1631060,") + 4]  # ends inside nn_macs
    (tmp_path / f"out_summary_{U55}.csv").write_text(cut)
    report = load_vela_report(tmp_path)
    assert report.sram_used_kib == 29.5625
    assert "nn_macs" not in report.summary and report.cycles is None
    assert any("truncated" in w and "nn_macs" in w for w in report.warnings)


def test_summary_missing_column_and_non_numeric_cell() -> None:
    header, row = (line.split(",") for line in _summary_text().splitlines()[:2])
    drop = header.index("sram_memory_used")
    del header[drop], row[drop]
    row[header.index("cycles_total")] = "lots"
    parsed = parse_summary_csv(",".join(header) + "\n" + ",".join(row) + "\n", "odd.csv")
    assert parsed.missing_columns == ["sram_memory_used"]
    assert parsed.rows[0]["cycles_total"] is None
    assert any("cycles_total" in w and "'lots'" in w for w in parsed.warnings)
    report = VelaReport(summaries=parsed.rows)
    assert report.sram_used_kib is None and report.cycles is None
    assert report.dram_used_kib == 0.0


@pytest.mark.parametrize(
    ("data", "kind"),
    [
        (b"", TruncatedError),
        (b"\n\r\n  \n", TruncatedError),
        (b"PK\x03\x04\x00\x00binary zip", WrongKindError),
        (bytes(range(256)), WrongKindError),
        (b"\xff\xfe\x00garbage", WrongKindError),
    ],
)
@pytest.mark.parametrize(
    "parse", [parse_summary_csv, parse_per_layer_csv, parse_debug_db, parse_vela_stdout]
)
def test_bad_files_for_every_parser(parse, data: bytes, kind: type) -> None:
    with pytest.raises(kind) as caught:
        parse(data, "some/file")
    message = str(caught.value)
    assert message.startswith("some/file: ") and "\n" not in message


def test_some_other_csv_is_the_wrong_kind() -> None:
    other = b"a,b,c\n1,2,3\n"
    for parse in (parse_summary_csv, parse_per_layer_csv, parse_debug_db):
        with pytest.raises(WrongKindError, match=r"^other\.csv: "):
            parse(other, "other.csv")
    assert not parse_vela_stdout(other, "other.csv").recognised


def test_header_only_files() -> None:
    header = _summary_text().splitlines()[0] + "\r\n"
    with pytest.raises(TruncatedError, match=r"^h\.csv: row 2: header row only"):
        parse_summary_csv(header, "h.csv")
    per_layer = (DATA / "16_u55_128_all_files" / "out_per-layer.csv").read_text()
    parsed = parse_per_layer_csv(per_layer.splitlines()[0] + "\n", "p.csv")
    assert parsed.rows == [] and parsed.warnings == ["per-layer CSV has a header but no layer rows"]


def test_wrong_csv_kind_is_named() -> None:
    per_layer = (DATA / "16_u55_128_all_files" / "out_per-layer.csv").read_bytes()
    with pytest.raises(WrongKindError, match="per-layer CSV, not a summary CSV"):
        parse_summary_csv(per_layer, "x.csv")
    with pytest.raises(WrongKindError, match="summary CSV, not a per-layer CSV"):
        parse_per_layer_csv(_summary_text(), "x.csv")


def test_truncated_and_corrupt_per_layer() -> None:
    text = (DATA / "16_u55_128_all_files" / "out_per-layer.csv").read_text()
    cut = text[: text.index("tosa_rescale_default_2\n") - 30]
    parsed = parse_per_layer_csv(cut, "cut.csv")
    assert len(parsed.rows) == 3
    assert any("row 5 has" in w and "truncated" in w for w in parsed.warnings)
    bad = text.replace(",18560,", ",eighteen,", 1)
    parsed = parse_per_layer_csv(bad, "bad.csv")
    assert parsed.rows[2].cycles is None and len(parsed.rows) == 22
    assert any("Op Cycles" in w and "eighteen" in w for w in parsed.warnings)


def test_latin1_names_are_read_with_a_warning() -> None:
    text = (
        DATA / "48_tflite_npu_only_u55_128_regor_raw" / "tiny_npu_only_per-layer.csv"
    ).read_text()
    data = text.replace("maxpool", "max\u00e9").encode("latin-1")
    parsed = parse_per_layer_csv(data, "l1.csv")
    assert parsed.rows[2].name == "max\u00e9" and any("Latin-1" in w for w in parsed.warnings)


def test_load_errors_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(ParseError, match="no such file or folder"):
        load_vela_report(tmp_path / "missing")
    with pytest.raises(WrongKindError, match="no Vela output here"):
        load_vela_report(tmp_path)
    junk = tmp_path / "notes.txt"
    junk.write_text("just some notes\nnothing from vela\n")
    with pytest.raises(WrongKindError) as caught:
        load_vela_report(junk)
    assert str(caught.value).startswith(f"{junk}: ")
    binary = tmp_path / "model.bin"
    binary.write_bytes(b"\x00\x01\x02TFL3" * 50)
    with pytest.raises(WrongKindError, match=r"binary"):
        load_vela_report(binary)


def test_corrupt_file_in_folder_strict_and_lenient(tmp_path: Path) -> None:
    folder = _regor_folder(tmp_path)
    (folder / "out_debug.xml").write_bytes(b"\x00\x01garbage")
    with pytest.raises(WrongKindError) as caught:
        load_vela_report(folder)
    assert str(caught.value).startswith(str(folder / "out_debug.xml") + ": ")
    report = load_vela_report(folder, strict=False)
    assert report.cycles == 44625 and report.debug_db is None
    assert any("out_debug.xml" in w and "binary" in w for w in report.warnings)


def test_empty_stdout_beside_csv_is_only_a_warning(tmp_path: Path) -> None:
    folder = _regor_folder(tmp_path)
    (folder / "stdout.txt").write_text("")
    report = load_vela_report(folder)
    assert report.cycles == 44625 and report.npu_operators is None
    assert any("empty" in w for w in report.warnings)


# --------------------------------------------------------------------------- fuzzing

PARSERS = (parse_summary_csv, parse_per_layer_csv, parse_debug_db, parse_vela_stdout)
SEEDS = [
    (DATA / "16_u55_128_all_files" / f"out_summary_{U55}.csv").read_text(),
    (DATA / "42_tflite_u55_128_legacy_all" / "tiny_per-layer.csv").read_text(),
    (DATA / "40_tflite_u55_128_regor_all" / "tiny_debug.xml").read_text(),
    (DATA / "45_tflite_u85_256_regor_all" / "stdout.txt").read_text(),
]


def _only_parse_errors(parse, data: bytes | str) -> None:
    try:
        result = parse(data, "fuzz.in")
    except ParseError as error:
        message = str(error)
        assert message.startswith("fuzz.in") and "\n" not in message
        return
    assert isinstance(result.warnings, list)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.one_of(st.binary(max_size=600), st.text(max_size=600)))
def test_random_input_only_raises_parse_errors(data: bytes | str) -> None:
    for parse in PARSERS:
        _only_parse_errors(parse, data)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.sampled_from(SEEDS),
    cut=st.integers(min_value=0, max_value=8000),
    insert=st.text(alphabet=st.sampled_from(list(',"\n\r<>]x0.-\x00 ')), max_size=12),
    where=st.integers(min_value=0, max_value=8000),
)
def test_mutated_real_files_only_raise_parse_errors(
    seed: str, cut: int, insert: str, where: int
) -> None:
    text = seed[:cut]
    text = text[:where] + insert + text[where:]
    for parse in PARSERS:
        _only_parse_errors(parse, text)
        _only_parse_errors(parse, text.encode())


# --------------------------------------------------------------------------- the demo workspace


def test_demo_workspace_vela_folder() -> None:
    """The real ExecuTorch-produced folder (runner/aot.py): CSVs, stdout and compile record."""
    report = load_vela_report(DEMO)
    record_json = json.loads((DEMO / "etu_compile.json").read_text())
    spec, versions = record_json["spec"], record_json["versions"]
    assert report.vela_version == versions["ethos-u-vela"]
    assert report.vela_version_from == "etu_compile.json"
    assert report.system_config == spec["system_config"]
    assert report.memory_mode == spec["memory_mode"]
    assert report.accelerator == spec["target"].replace("ethos-u", "Ethos_U").replace("-", "_")
    assert report.warnings == [] and report.errors == []
    assert report.per_layer_from == "csv" and report.per_layer_layout == "regor"
    assert report.cycles > 0
    assert sum(row.cycles for row in report.per_layer) == report.cycles
    assert report.stdout is not None
    assert report.stdout["sram_memory_used"] == pytest.approx(report.sram_used_kib, abs=0.005)
    assert report.npu_operators and report.cpu_operators is not None
    assert report.stdout["nn_macs"] == report.nn_macs
    assert report.inference_time_s == pytest.approx(report.cycles / report.core_clock_hz)
    record = vela_record(report)
    json.dumps(record, allow_nan=False)
    assert record["vela_version"] == versions["ethos-u-vela"]
    assert {Path(s).name for s in record["sources"]} == {
        "out_summary_Ethos_U55_High_End_Embedded.csv",
        "out_per-layer.csv",
        "vela_stdout.txt",
        "etu_compile.json",
    }


def test_layer_row_is_a_plain_dict() -> None:
    row = LayerRow({"Op Cycles": 5, "Name": "n", "NNG Operator": "Conv2D"})
    assert json.loads(json.dumps(row)) == {"Op Cycles": 5, "Name": "n", "NNG Operator": "Conv2D"}
    assert (row.cycles, row.name, row.operator, row.target) == (5, "n", "Conv2D", None)


# ------------------------------------------------------------------ several Ethos-U delegates


def test_two_delegates_give_two_calls_and_a_total() -> None:
    """The real flow on conv → sort (CPU) → conv: Vela is called once per delegate, rewrites
    its CSVs each time (only the last call's summary row remains) and prints both calls on
    stdout; the report exposes each call and their total."""
    from tests.two_delegates import build

    folder = build() / "vela"
    summary_rows = load_vela_report(folder).summaries
    assert len(summary_rows) == 1, "Vela keeps only the last call's summary CSV row"
    report = load_vela_report(folder)
    assert len(report.calls) == 2
    first, second = report.calls
    assert second.cycles == report.cycles, "the last call is the summary CSV's row"
    assert all(call.cycles and call.layers for call in report.calls)
    assert first.cycles == sum(row.cycles for row in first.layers)
    total = report.total()
    assert total["cycles"] == first.cycles + second.cycles
    assert total["nn_macs"] == first.nn_macs + second.nn_macs
    assert total["sram_used_kib"] == pytest.approx(first.sram_used_kib + second.sram_used_kib)
    assert total["sram_peak_kib"] == max(first.sram_used_kib, second.sram_used_kib)
    assert report.share(first) + report.share(second) == pytest.approx(100)

    from etu.tui.cli import vela as vela_command

    parser = argparse.ArgumentParser()
    vela_command.configure(parser)
    out = io.StringIO()
    args = parser.parse_args([str(folder), "--json"])
    assert vela_command.run(args, out=out, err=io.StringIO()) == 0
    record = json.loads(out.getvalue())
    assert [call["cycles"] for call in record["calls"]] == [first.cycles, second.cycles]
    assert record["total"]["cycles"] == total["cycles"] and record["total"]["calls"] == 2
    assert record["headline"]["cycles"] == second.cycles  # existing fields kept
    assert len(record["summaries"]) == 1

    out = io.StringIO()
    assert vela_command.run(parser.parse_args([str(folder)]), out=out, err=io.StringIO()) == 0
    text = out.getvalue()
    assert "2 Vela calls (one per Ethos-U delegate)" in text
    assert f"All calls: {total['cycles']:,} cycles" in text
    assert f"delegate 0: {first.cycles:,} cycles ({report.share(first):.1f}%)" in text


def test_one_call_report_has_one_call_equal_to_the_headline() -> None:
    report = load_vela_report(DEMO)
    assert len(report.calls) == 1
    assert report.total()["cycles"] == report.cycles
    assert report.share(report.calls[0]) == pytest.approx(100)
