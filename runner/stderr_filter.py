"""The process's stderr (file descriptor 2, which C++ libraries and child processes write
to as well) without third-party noise: ExecuTorch's host runtime's ``[cpuinfo_utils.cpp:…]``
lines, torchao's optional kernels that do not load, torch's pytree deprecation warning
(:mod:`etu.parsers.log_noise`). Everything else passes through as it arrives."""

from __future__ import annotations

import codecs
import contextlib
import os
import sys
import threading
from collections.abc import Iterator

from etu.parsers.log_noise import NoiseFilter


@contextlib.contextmanager
def filtered_stderr() -> Iterator[None]:
    """While inside, fd 2 is a pipe read by a thread that drops the noise and writes the
    rest to the real stderr; restored on the way out (also on an exception)."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError, AttributeError):  # no real stderr: nothing to filter
        yield
        return
    read_end, write_end = os.pipe()
    os.set_inheritable(read_end, False)
    os.dup2(write_end, 2)
    os.close(write_end)

    def pump() -> None:
        lines, decoder = NoiseFilter(), codecs.getincrementaldecoder("utf-8")("replace")
        with open(read_end, "rb", buffering=0) as pipe:
            while chunk := pipe.read(65536):
                _write(saved, lines.feed(decoder.decode(chunk)))
        _write(saved, lines.feed(decoder.decode(b"", final=True)) + lines.flush())

    thread = threading.Thread(target=pump, name="etu-stderr-filter", daemon=True)
    thread.start()
    try:
        yield
    finally:
        with contextlib.suppress(Exception):
            sys.stderr.flush()
        os.dup2(saved, 2)  # the pipe's last writer here: the thread reads to its end
        thread.join(timeout=2.0)  # a child still holding the pipe does not hold etu up
        os.close(saved)


def _write(fd: int, text: str) -> None:
    data = text.encode("utf-8", "replace")
    while data:
        try:
            written = os.write(fd, data)
        except OSError:
            return
        data = data[written:]


__all__ = ["filtered_stderr"]
