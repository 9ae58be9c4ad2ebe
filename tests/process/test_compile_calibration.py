"""Quantised compiles say what calibration used and take calibration data (issue 24 §8d):
``--calibration`` a .npz or a folder of .npy (one sample per array, or N along a leading
axis); without it, the note says the samples were drawn at random and how to give data."""

from __future__ import annotations

import json
from pathlib import Path

import numpy
import pytest

from tests.helpers import etu

pytestmark = pytest.mark.aot


def test_calibration_data_from_a_folder_of_npy(tmp_path: Path) -> None:
    data = tmp_path / "calib"
    data.mkdir()
    numpy.save(data / "a.npy", numpy.full((1, 8), 0.5, dtype=numpy.float32))
    numpy.save(data / "b.npy", numpy.linspace(-2, 2, 24, dtype=numpy.float32).reshape(3, 1, 8))
    done = etu("compile", "add", "--calibration", data, "--out", tmp_path / "out", "--json",
               timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert record["calibration"] == {"samples": 4, "source": f"4 samples from {data}"}
    assert f"etu: calibration: 4 samples from {data}" in done.stderr
    kept = json.loads((Path(record["vela_dir"]) / "etu_compile.json").read_text())
    assert kept["calibration"]["samples"] == 4
    assert kept["calibration"]["inputs"][0]["min"] == -2.0
    # an array of another shape: one line, at load, naming it
    numpy.savez(tmp_path / "bad.npz", numpy.zeros((1, 5), dtype=numpy.float32))
    bad = etu("compile", "add", "--calibration", tmp_path / "bad.npz", "--out",
              tmp_path / "out", timeout=600)  # fmt: skip
    assert bad.returncode == 1
    assert "compile failed in load: " in bad.stderr and "bad.npz:arr_0: shape (1, 5)" in bad.stderr
    missing = etu("compile", "add", "--calibration", tmp_path / "none.npz", "--out", tmp_path)
    assert missing.returncode == 2 and "none.npz: no such calibration file" in missing.stderr


def test_without_calibration_data_the_compile_says_what_it_used(tmp_path: Path) -> None:
    done = etu("compile", "add", "--out", tmp_path / "out", timeout=600)
    assert done.returncode == 0, done.stderr
    assert ("etu: calibration: 4 samples drawn at random (uniform [0, 1)); pass --calibration "
            "FILE.npz or a folder of .npy for real data") in done.stderr  # fmt: skip
