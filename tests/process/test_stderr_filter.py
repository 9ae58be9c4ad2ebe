"""etu's stderr without third-party noise (issue 24 §8c): what C++ code, Python and child
processes write to fd 2 while a torch/ExecuTorch command runs passes through the filter,
the noise dropped and everything else kept, in order."""

from __future__ import annotations

import subprocess
import sys

from tests.helpers import ROOT, etu

CHILD = r"""
import os, subprocess, sys
from etu.runner.stderr_filter import filtered_stderr

with filtered_stderr():
    os.write(2, b"[cpuinfo_utils.cpp:71] Reading file /sys/devices/soc0/image_version\n")
    os.write(2, b"kept 1\n")
    print("Failed to load /v/site-packages/torchao/_C_mxfp8.so: Could not load", file=sys.stderr)
    sys.stderr.flush()
    subprocess.run(["sh", "-c", "echo '[cpuinfo_utils.cpp:125] CPU info' >&2; echo 'kept 2' >&2"])
    os.write(2, b"kept 3 without an end")
print("after", file=sys.stderr)
"""


def test_noise_written_to_fd_2_is_dropped_and_the_rest_kept() -> None:
    done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True,
                          cwd=ROOT, timeout=60, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stderr == "kept 1\nkept 2\nkept 3 without an endafter\n"


def test_etu_reference_prints_no_cpuinfo_lines() -> None:
    done = etu("reference", ROOT / "etu_tui" / "demo" / "demo_cnn.pte", timeout=300)
    assert done.returncode == 0, done.stderr
    assert "[cpuinfo" not in done.stderr and done.stdout.strip()
