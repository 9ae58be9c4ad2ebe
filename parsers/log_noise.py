"""Third-party noise in a compile's output: lines a library prints on every import or
lowering that say nothing about the user's model (torchao's optional CUDA kernels that do
not load on a CPU machine, torch's pytree deprecation warning, ExecuTorch's cpuinfo lines,
the TOSA serializer's note on a compatible older graph).
They are kept in the job's log file and left out of what etu shows (stderr, the Compile
tab's worker log). Pure: text in, text out."""

from __future__ import annotations

import re

NOISE = (
    # torchao: optional CUDA/cutlass kernels that cannot load without a GPU
    re.compile(r"^Failed to load \S*torchao/_C\w*\S*(: .*)?$"),
    # torch/utils/_pytree.py: "Calling register_constant() on Enum subclasses is deprecated"
    re.compile(r"^W\d{4} [\d:.]+ +\d+ \S*_pytree\.py:\d+\] .*register_constant"),
    # ExecuTorch's host runtime probing the CPU: [cpuinfo_utils.cpp:NN] ...
    re.compile(r"^\[cpuinfo\w*\.(?:cpp|c|cc):\d+\]"),
    # the TOSA serializer reading a graph written by an older, compatible one (the reference)
    re.compile(
        r"^WARNING: Different TOSA spec in flatbuffer and serializer versions detected\."
        r".* is backward compatible with serializer version"
    ),
)


def is_noise(line: str) -> bool:
    """True for one line (without its end) of known third-party noise."""
    text = line.rstrip("\r\n")
    return any(pattern.search(text) for pattern in NOISE)


def without_noise(text: str) -> str:
    """``text`` without its lines of third-party noise (line ends kept)."""
    return "".join(line for line in text.splitlines(keepends=True) if not is_noise(line))


class NoiseFilter:
    """Filters a stream that arrives in chunks: whole lines out, noise dropped; a line cut
    between chunks waits for its end (``flush`` gives what is left)."""

    def __init__(self) -> None:
        self._pending = ""

    def feed(self, chunk: str) -> str:
        text = self._pending + chunk
        cut = text.rfind("\n") + 1
        self._pending = text[cut:]
        return without_noise(text[:cut])

    def flush(self) -> str:
        text, self._pending = self._pending, ""
        return without_noise(text)


__all__ = ["NOISE", "NoiseFilter", "is_noise", "without_noise"]
