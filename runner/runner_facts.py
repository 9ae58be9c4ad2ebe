"""What etu knows about the runner that printed a log: its CPU and whether its ExecuTorch
reads the Cortex-M cycle counter (PR 21833, 2026-08-14).

The runner prints neither. etu learns them from the firmware build record beside the ELF
(``etu_firmware.json``: ``options.cpu`` and ``options.cpu_cycle_counter``, read from the
source's ``arm_perf_monitor.cpp`` at build time; older records: the source commit), and
from the session's board or simulator (Corstone-300 and the AN547 board have a Cortex-M55,
Corstone-320 a Cortex-M85).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from etu.parsers.log_summary import LogSummary

# The CPU of the boards and simulators etu runs on.
PLATFORM_CPUS = {"corstone-300": "cortex-m55", "corstone-320": "cortex-m85",
                 "qemu-an547": "cortex-m55"}  # fmt: skip
# ExecuTorch commits known to have PR 21833's fix (the pinned source, 2026-08-22).
FIXED_COMMITS = ("cff6f4dd",)


@dataclass(frozen=True, slots=True)
class RunnerFacts:
    cpu: str | None = None
    counter_fixed: bool | None = None  # None: the runner's ExecuTorch date is unknown
    source: str = ""  # where they came from, for a reader

    def apply(self, summary: LogSummary) -> LogSummary:
        summary.runner_cpu = self.cpu
        summary.runner_counter_fixed = self.counter_fixed
        return summary


def _record_facts(elf: Path | None) -> tuple[str | None, bool | None, str]:
    from etu.runner.runtime_build import load_record, reads_cpu_cycles

    if elf is None:
        return None, None, ""
    record = load_record(Path(elf).parent)
    if not record:
        return None, None, ""
    options = record.get("options") if isinstance(record.get("options"), dict) else {}
    cpu = options.get("cpu") if isinstance(options.get("cpu"), str) else "cortex-m55"
    fixed = options.get("cpu_cycle_counter")
    if not isinstance(fixed, bool):
        source = record.get("source") if isinstance(record.get("source"), dict) else {}
        commit, root = str(source.get("commit") or ""), source.get("root")
        if commit.startswith(FIXED_COMMITS):
            fixed = True
        elif isinstance(root, str) and Path(root).is_dir():
            fixed = reads_cpu_cycles(Path(root))
        else:
            fixed = None
    return cpu, fixed, "firmware record"


def runner_facts(meta: dict | None = None, elf: Path | None = None) -> RunnerFacts:
    """The runner's CPU and cycle-counter fix from the firmware record beside ``elf`` (or
    the ELF a session's ``meta`` names), else the CPU of the session's platform."""
    meta = meta or {}
    if elf is None and isinstance(meta.get("elf"), str):
        elf = Path(meta["elf"])
    cpu, fixed, source = _record_facts(elf)
    if cpu is None:
        for key in ("platform", "board", "target"):
            found = PLATFORM_CPUS.get(str(meta.get(key) or ""))
            if found:
                cpu, source = found, f"session {key}"
                break
    return RunnerFacts(cpu, fixed, source)


__all__ = ["RunnerFacts", "runner_facts"]
