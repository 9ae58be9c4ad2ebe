"""Third-party noise in a compile's output (issue 24 §8c): recognised line by line, the
user's and the tools' own lines kept, lines cut between chunks handled."""

from __future__ import annotations

from etu.parsers.log_noise import NoiseFilter, is_noise, without_noise

NOISE = [
    "Failed to load /work/main/.venv/lib/python3.11/site-packages/torchao/_C_mxfp8.cpython-"
    "310-x86_64-linux-gnu.so: Could not load this library: /x/torchao/_C_mxfp8.so",
    "Failed to load /v/site-packages/torchao/_C_cutlass_90a.abi3.so: Could not load this library",
    "W1125 00:44:33.076000 4408 .venv/lib/python3.11/site-packages/torch/utils/_pytree.py:630] "
    "<enum 'KernelPreference'> is an Enum subclass and is now natively supported by "
    "torch.compile as an opaque value type. Calling register_constant() on Enum subclasses is "
    "deprecated and will be an error in a future release.",
    "[cpuinfo_utils.cpp:71] Reading file /sys/devices/soc0/image_version",
    "WARNING: Different TOSA spec in flatbuffer and serializer versions detected. Read TOSA "
    "spec in flatbuffer 1.0.0 is backward compatible with serializer version 1.1.0d",
]
KEPT = [
    "Failed to load model.pte: not found",
    "W1125 00:44:33.076000 4408 torch/_dynamo/x.py:1] something about the user's graph",
    "RuntimeError: a and b must have same reduction dim",
    "Warning: Unsupported TOSA operator",
    "WARNING: Different TOSA spec in flatbuffer and serializer versions detected. Read TOSA "
    "spec in flatbuffer 2.0.0 is not compatible with serializer version 1.1.0d",
]


def test_noise_is_recognised_and_the_rest_kept() -> None:
    assert all(is_noise(line) for line in NOISE)
    assert not any(is_noise(line) for line in KEPT)
    text = "".join(line + "\n" for pair in zip(NOISE, KEPT, strict=True) for line in pair)
    assert without_noise(text) == "".join(line + "\n" for line in KEPT)


def test_a_line_cut_between_chunks_waits_for_its_end() -> None:
    text = "".join(line + "\n" for line in [NOISE[0], KEPT[0], NOISE[3], KEPT[2]]) + "tail"
    stream = NoiseFilter()
    shown = "".join(stream.feed(text[i : i + 7]) for i in range(0, len(text), 7))
    shown += stream.flush()
    assert shown == f"{KEPT[0]}\n{KEPT[2]}\ntail"
