"""The FVP command line, built exactly as ExecuTorch's ``run_fvp.sh`` builds it (§5.2).

run_fvp.sh runs through a shell, so its ``uart0.out_file='-'`` reaches the FVP as ``-``;
we pass argv lists (never a shell) and write the value the shell would have produced.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from etu.fvp.targets import FvpTarget

DEFAULT_TIMELIMIT = 600  # seconds, run_fvp.sh's default --timeout
PMU_TRACE_FILE = "pmu_trace.json"  # the Ethos-U plugin's --pmu-trace, in the session folder


@dataclass(frozen=True)
class FvpOptions:
    timelimit: int | None = DEFAULT_TIMELIMIT
    semihosting_cwd: Path | None = None
    data: tuple[str, ...] = ()  # FILE@ADDRESS, e.g. a .pte at ET_MODEL_PTE_ADDR
    fast: bool = False  # the Ethos-U plugin's functional (non-timed) mode
    pmu_trace: Path | None = None
    # prepare_fvp_launch: with no pmu_trace, the plugin writes PMU_TRACE_FILE into the session
    keep_pmu_trace: bool = True
    extra_params: tuple[tuple[str, str], ...] = field(default_factory=tuple)  # from a profile


def build_command(
    executable: str | Path, target: FvpTarget, elf: Path, options: FvpOptions | None = None
) -> list[str]:
    options = options or FvpOptions()
    board, cpu, npu = target.board, target.cpu, target.ethosu
    params = [f"{npu}.num_macs={target.num_macs}", f"{board}.visualisation.disable-visualisation=1"]
    if target.platform == "corstone-320":
        params.append("vis_hdlcd.disable_visualisation=1")
    params += [f"{board}.telnetterminal0.start_telnet=0", f"{board}.uart0.out_file=-"]
    if target.platform == "corstone-320":
        params.append(f"{board}.uart0.unbuffered_output=1")
    params.append(f"{board}.uart0.shutdown_on_eot=1")
    plugin_args = _plugin_args(options)
    if plugin_args:
        params.append(f"{npu}.extra_args={plugin_args}")
    if options.semihosting_cwd is not None:
        params += [
            f"{cpu}.semihosting-enable=1",
            f"{cpu}.semihosting-stack_base=0",
            f"{cpu}.semihosting-heap_limit=0",
            f"{cpu}.semihosting-cwd={Path(options.semihosting_cwd).resolve()}",
        ]
    params += [f"{name}={value}" for name, value in options.extra_params]
    argv = [str(executable)]
    for param in params:
        argv += ["-C", param]
    argv += ["-a", str(elf)]
    for item in options.data:
        argv += ["--data", item]
    if options.timelimit is not None:
        argv += ["--timelimit", str(options.timelimit)]
    return argv


def _plugin_args(options: FvpOptions) -> str:
    parts: list[str] = []
    if options.fast:
        parts.append("--fast")
    if options.pmu_trace is not None:
        parts += ["--pmu-trace", str(options.pmu_trace)]
    return " ".join(parts)


def parse_param(text: str) -> tuple[str, str]:
    """``name=value`` of a ``-C`` argument or a profile entry."""
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise ValueError(f"expected NAME=VALUE, got {text!r}")
    return name.strip(), value.strip()


def format_command(argv: Sequence[str]) -> str:
    """The command as a user would type it in a POSIX shell (for display only)."""
    import shlex

    return shlex.join(argv)
