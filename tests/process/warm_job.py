"""A job for the warm host's tests: cheap to preload, and says where it ran.

Imported by the host (``preload``), then run as ``__main__`` in each forked child:
``warm_job EXIT_CODE CHANNEL_FD [SLEEP]`` prints one JSON line on stdout, a line on stderr
and one on the channel (none when CHANNEL_FD is -1), then exits with EXIT_CODE (after
SLEEP seconds, if given)."""

from __future__ import annotations

import os

PRELOADED = "xml.dom.minidom"  # imported by nothing else in the job


def preload() -> None:
    """What the host imports once: one module the job never imports itself (and, with
    ``PYTHON_WARM_JOB_STUCK`` set, an import that never ends)."""
    import xml.dom.minidom  # noqa: F401

    if os.environ.get("PYTHON_WARM_JOB_STUCK"):
        import time

        time.sleep(3600)


def main(argv: list[str]) -> int:
    import json
    import sys
    import time

    code, channel = int(argv[0]), int(argv[1])
    print(json.dumps({
        "pid": os.getpid(), "ppid": os.getppid(), "pgid": os.getpgid(0), "cwd": os.getcwd(),
        "env": os.environ.get("WARM_JOB_VALUE"), "preloaded": PRELOADED in sys.modules,
        "stdin": os.read(0, 10).decode(), "argv": argv,
        "channel_inheritable": os.get_inheritable(channel) if channel >= 0 else None,
    }), flush=True)  # fmt: skip
    print("to stderr", file=sys.stderr, flush=True)
    if channel >= 0:
        os.write(channel, b"on the channel\n")
    if len(argv) > 2:
        time.sleep(float(argv[2]))
    return code


if __name__ == "__main__":
    import sys

    raise SystemExit(main(sys.argv[1:]))
