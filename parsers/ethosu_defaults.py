"""Upstream ExecuTorch's Ethos-U defaults, in one place for compile, Fit and Delegates.

- Default Vela system config and memory mode per NPU (``EthosUCompileSpec``, executorch
  1.5.1 ``backends/arm/ethosu/compile_spec.py``).
- The TOSA profile string each target gets (``_tosa_spec_for_target``), and what a TOSA
  1.x profile string may hold (``backends/arm/tosa/specification.py``): a string outside it
  is one upstream would not produce, so Delegates warns.
- The compile-time scratch limit (``max_scratch_size``, PR 22884, 2026-09-16): 2 MiB for
  the standard U55 configuration (Corstone-300 ``Ethos_U55_High_End_Embedded`` +
  ``Shared_Sram``, ``Arm/vela.ini``); other or custom configurations have no implicit limit,
  an explicit ``max_scratch_size`` wins.

Pure: strings in, facts out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MiB = 1 << 20

# NPU family → (system config, memory mode), as EthosUCompileSpec picks them.
DEFAULT_CONFIGS: dict[str, tuple[str, str]] = {
    "ethos-u55": ("Ethos_U55_High_End_Embedded", "Shared_Sram"),
    "ethos-u65": ("Ethos_U65_High_End", "Dedicated_Sram_384KB"),
    "ethos-u85": ("Ethos_U85_SYS_DRAM_Mid", "Sram_Only"),
}
# NPU family → the TOSA profile string upstream compiles it with (U65 takes the U55 subset).
TOSA_PROFILES: dict[str, str] = {
    "ethos-u55": "TOSA-1.0+INT+int16+int4+u55",
    "ethos-u65": "TOSA-1.0+INT+int16+int4+u55",
    "ethos-u85": "TOSA-1.0+INT+int16+int4+cf",
}
TOSA_VERSIONS = ("1.0", "1.1")
TOSA_EXTENSIONS = {
    "INT": {"int16", "int4", "var", "cf", "u55"},
    "FP": {"bf16", "fp8e4m3", "fp8e5m2", "fft", "var", "cf"},
}
TOSA_LEVELS = {"8k"}
_TOSA = re.compile(r"TOSA-(\d+\.\d+)(?:\.\d+)?((?:\+[A-Za-z0-9]+)+)\Z")

DEFAULT_MAX_SCRATCH = 2 * MiB  # PR 22884's budget for the standard U55 configuration
STANDARD_CONFIG_INI = "Arm/vela.ini"


def npu_family(target: str | None) -> str | None:
    """``ethos-u55-128`` → ``ethos-u55``; None for anything else."""
    match = re.match(r"(ethos-u\d\d)", (target or "").strip().lower())
    family = match.group(1) if match else None
    return family if family in DEFAULT_CONFIGS else None


def tosa_profile_problem(profile: str | None, target: str | None = None) -> str | None:
    """Why a delegate's ``tosa_spec`` string is not one upstream makes, or None when it is.

    Checked: the ``TOSA-<version>+<profile>[+<extension>...]`` form, a TOSA version
    upstream supports, each extension valid for the profiles, and, for a U55 ``target``,
    the ``u55`` subset upstream requires.
    """
    if profile is None:
        return None
    text = profile.strip()
    match = _TOSA.fullmatch(text)
    if match is None:
        return f"TOSA profile {text[:60]!r} is not TOSA-<version>+<profile>[+<extension>...]"
    version, tokens = match.group(1), match.group(2).split("+")[1:]
    if version not in TOSA_VERSIONS:
        return f"TOSA version {version} is unknown (upstream knows {', '.join(TOSA_VERSIONS)})"
    profiles = [t for t in tokens if t in TOSA_EXTENSIONS]
    if not profiles:
        return f"TOSA profile {text!r} names no profile (INT or FP)"
    allowed = set().union(*(TOSA_EXTENSIONS[p] for p in profiles)) | TOSA_LEVELS
    unknown = [t for t in tokens if t not in TOSA_EXTENSIONS and t not in allowed]
    if unknown:
        return f"TOSA profile {text!r}: unknown extension {', '.join(unknown)}"
    if npu_family(target) == "ethos-u55" and "u55" not in tokens:
        return f"TOSA profile {text!r} lacks the u55 subset upstream requires for {target}"
    return None


@dataclass(frozen=True, slots=True)
class ScratchLimit:
    size: int | None  # None: no compile-time limit
    basis: str  # why this limit (or why none)


def scratch_limit(
    target: str | None,
    system_config: str | None,
    memory_mode: str | None,
    config_ini: str | None = STANDARD_CONFIG_INI,
    explicit: int | None = None,
) -> ScratchLimit:
    """The compile-time Ethos-U scratch limit ExecuTorch applies since PR 22884."""
    if explicit is not None:
        return ScratchLimit(explicit, "max_scratch_size given")
    standard = DEFAULT_CONFIGS["ethos-u55"]
    if (
        npu_family(target) == "ethos-u55"
        and (system_config, memory_mode) == standard
        and (config_ini or STANDARD_CONFIG_INI) == STANDARD_CONFIG_INI
    ):
        return ScratchLimit(DEFAULT_MAX_SCRATCH, "standard U55 Shared_Sram config")
    return ScratchLimit(None, "no implicit limit for this configuration")


__all__ = [
    "DEFAULT_CONFIGS",
    "DEFAULT_MAX_SCRATCH",
    "TOSA_PROFILES",
    "ScratchLimit",
    "npu_family",
    "scratch_limit",
    "tosa_profile_problem",
]
