"""Everything needed to launch one FVP run: which executable, the exact argv, and what the
session should remember about it (hashes of the ELF and of the program inside it)."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

from etu.fvp.command import PMU_TRACE_FILE, FvpOptions, build_command
from etu.fvp.discovery import find_fvps
from etu.fvp.standin import is_standin
from etu.fvp.targets import FvpTarget, fvp_target
from etu.runner.run import SESSION_FOLDER
from etu.runner.session import firmware_meta


class LaunchError(Exception):
    """The run cannot start: no such target, no simulator, no ELF. One line."""


@dataclass(frozen=True)
class FvpLaunch:
    target: FvpTarget
    executable: Path
    found_via: str
    simulated: bool  # the etu stand-in, not an Arm model
    argv: list[str]
    elf: Path
    found: bool = True  # False: the simulator is not installed (argv has its bare name)
    pmu_trace: str | None = None  # the PMU trace the plugin writes, in the session folder

    def meta(self) -> dict:
        """The session's fields: the FVP's target and simulator, and the firmware with the
        program baked into it (runner.session.firmware_meta, as for every session)."""
        return {
            "target": self.target.target,
            "platform": self.target.platform,
            "simulator": str(self.executable),
            "simulator_found_via": self.found_via,
            "simulated": self.simulated,
            **firmware_meta(self.elf),
            **({"pmu_trace": self.pmu_trace} if self.pmu_trace else {}),
        }


def prepare_fvp_launch(
    target: str,
    elf: Path,
    options: FvpOptions | None = None,
    *,
    fvp_path: Path | None = None,
    env: dict[str, str] | None = None,
    settings=None,
    allow_missing: bool = False,
) -> FvpLaunch:
    """``settings`` (runner.config.Settings) adds its ``fvp_dir`` and ``executorch_src`` to
    the places searched; None reads no settings. ``allow_missing`` (a dry run): a simulator
    that is not installed gives the command with its bare name and ``found=False``. Unless
    ``options`` names a trace file or turns ``keep_pmu_trace`` off, the Ethos-U plugin
    writes its PMU trace into the run's session folder (``<session>`` in the argv)."""
    options = options or FvpOptions()
    trace = None
    if options.pmu_trace is None and options.keep_pmu_trace:
        options = replace(options, pmu_trace=Path(SESSION_FOLDER) / PMU_TRACE_FILE)
        trace = PMU_TRACE_FILE
    try:
        fvp = fvp_target(target)
    except ValueError as error:
        raise LaunchError(str(error)) from None
    if not Path(elf).is_file():
        raise LaunchError(f"{elf}: no such firmware ELF")
    if fvp_path is not None:
        if not (Path(fvp_path).is_file() and os.access(fvp_path, os.X_OK)):
            raise LaunchError(f"{fvp_path}: not an executable simulator")
        executable, found_via = Path(fvp_path), "--fvp-path"
    else:
        where = {}
        if settings is not None:
            origin = settings.origin("fvp_dir")
            where = {
                "fvp_dir": settings.fvp_dir,
                "fvp_dir_origin": f"fvp_dir ({origin.detail or origin.source})",
                "executorch_src": settings.executorch_src,
            }
        found = find_fvps(env, **where).get(fvp.executable)
        if found is None and allow_missing:
            argv = build_command(Path(fvp.executable), fvp, Path(elf), options)
            return FvpLaunch(
                fvp, Path(fvp.executable), "not found", False, argv, Path(elf), found=False,
                pmu_trace=trace,
            )  # fmt: skip
        if found is None:
            ignored = [w for w in (settings.warnings if settings else []) if ": fvp_dir = " in w]
            raise LaunchError(
                f"{fvp.executable} not found (looked in ETU_FVP_DIR, PATH and "
                "EXECUTORCH_ROOT/examples/arm/ethos-u-scratch, and the fvp_dir setting); "
                "install Arm's Corstone FVPs or point ETU_FVP_DIR (or fvp_dir in etu.toml) at them"
                + (f"; {ignored[0]}" if ignored else "")
            )
        executable, found_via = found.path, found.found_via
    argv = build_command(executable, fvp, Path(elf), options)
    simulated = is_standin(executable)
    return FvpLaunch(fvp, executable, found_via, simulated, argv, Path(elf), pmu_trace=trace)
