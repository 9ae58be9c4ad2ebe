"""The runner firmware a run on chosen inputs needs (issue 22 §3).

Inputs reach the runner bundled into the program it is built with (BundleIO), so running on
other inputs means the firmware built with them: ``PROGRAM.<board>/`` beside the program,
rebuilt only when the request changed (the program's bytes, the pools, the operators, the
inputs and, for a file, its bytes). Shared by ``etu run --board … PROGRAM --inputs`` and the
Run tab, so both build the same firmware in the same place and record the same request.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

Progress = Callable[[str], None]


def build_request(
    pte: Path, inputs: str | None, *, pools: str = "auto", select_ops: str = "auto"
) -> dict:
    """What a firmware build is asked for; a file's content, not only its name, counts."""
    from etu.runner.session import file_sha256

    wanted = {"program_sha256": file_sha256(pte), "pools": pools, "select_ops": select_ops}
    if inputs is not None:
        wanted["inputs"] = inputs
        named = Path(inputs)
        if not inputs.startswith("random:") and named.is_file():
            wanted["inputs_sha256"] = file_sha256(named)
    return wanted


def built_firmware(folder: Path, wanted: dict) -> Path | None:
    """The ELF built in ``folder`` for exactly ``wanted``, None when it must be built."""
    from etu.runner.runtime_build import load_record

    record = load_record(folder)
    if record and record.get("request") == wanted and Path(str(record.get("elf"))).is_file():
        return Path(record["elf"])
    return None


def save_request(folder: Path, result, wanted: dict) -> None:
    """The build's record (``etu_firmware.json``) with the request it answered."""
    data = result.to_json()
    data["request"] = wanted
    (Path(folder) / "etu_firmware.json").write_text(json.dumps(data, indent=2) + "\n")


def firmware_for_inputs(
    pte: Path,
    board: str,
    inputs: str | None,
    *,
    folder: Path | None = None,
    pools: str = "auto",
    select_ops: str = "auto",
    progress: Progress | None = None,
) -> tuple[Path, bool]:
    """The runner ELF of ``pte`` for ``board`` with ``inputs`` bundled (``FILE.npy``,
    ``FILE.npz`` or ``random:SEED``; None: the firmware's own, all ones), built in ``folder``
    (default ``PROGRAM.<board>/``) when not already; (elf, built now). ``pools`` and
    ``select_ops`` as ``etu firmware build`` takes them. Raises BundleError,
    RuntimeBuildError or SourceError with one line."""
    from etu.runner.build_plan import parse_pools, parse_select_ops
    from etu.runner.bundleio import parse_inputs_option
    from etu.runner.runtime_build import build_runner
    from etu.runner.workspace import firmware_dir

    if inputs is not None:
        parse_inputs_option(inputs)  # a bad choice is refused before anything is built
    pool_sizes = parse_pools(pools)  # likewise a bad size
    select = parse_select_ops(select_ops)
    folder = Path(folder) if folder is not None else firmware_dir(pte, board)
    wanted = build_request(pte, inputs, pools=pools, select_ops=select_ops)
    elf = built_firmware(folder, wanted)
    if elf is not None:
        return elf, False
    result = build_runner(pte, board, folder, pools=pool_sizes, select_ops=select,
                          inputs=inputs, progress=progress)  # fmt: skip
    save_request(folder, result, wanted)
    return Path(result.elf), True
