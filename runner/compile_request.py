"""What to compile and for what: validated before any work starts, hashed for the cache.

No torch here: a request that Vela or the runner cannot use is refused in milliseconds,
with the reason, and the cache key is computed without importing the compile stack.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import asdict, dataclass, field, replace
from importlib import metadata
from pathlib import Path

from etu.parsers.ethosu_defaults import DEFAULT_CONFIGS
from etu.parsers.fit import RUNNER_SYSTEM_CONFIGS, is_dedicated_sram

TARGETS = (
    "ethos-u55-32", "ethos-u55-64", "ethos-u55-128", "ethos-u55-256",
    "ethos-u65-256", "ethos-u65-512",
    "ethos-u85-128", "ethos-u85-256", "ethos-u85-512", "ethos-u85-1024", "ethos-u85-2048",
)  # fmt: skip
# Vela 5.x's Arm/vela.ini sections.
SYSTEM_CONFIGS = {
    "Ethos_U55_Deep_Embedded": "OffChipFlash",
    "Ethos_U55_High_End_Embedded": "OffChipFlash",
    "Ethos_U65_Embedded": "OffChipFlash",
    "Ethos_U65_Mid_End": "Dram",
    "Ethos_U65_High_End": "Dram",
    "Ethos_U65_Client_Server": "Dram",
    "Ethos_U85_SYS_Flash_Low": "OffChipFlash",
    "Ethos_U85_SYS_Flash_High": "OffChipFlash",
    "Ethos_U85_SYS_DRAM_Low": "Dram",
    "Ethos_U85_SYS_DRAM_Mid": "Dram",
    "Ethos_U85_SYS_DRAM_High": "Dram",
}  # system config → what its AXI1 port is
MEMORY_MODES = (
    "Sram_Only", "Shared_Sram", "Dedicated_Sram",
    "Dedicated_Sram_256KB", "Dedicated_Sram_384KB", "Dedicated_Sram_512KB",
)  # fmt: skip
# EthosUCompileSpec's defaults when none are given (ExecuTorch 1.5.1), shared with Fit.
DEFAULTS = DEFAULT_CONFIGS
DTYPES = ("float32", "float16", "bfloat16", "int8", "uint8", "int16", "int32", "int64", "bool")
BUILTIN_MODELS = ("add", "add2", "softmax", "cnn", "mv2")
CPU_BACKENDS = ("portable", "cortex-m")  # as runner.aot.CPU_BACKENDS (no torch import here)


MAX_INPUT_ELEMENTS = 1 << 28  # an example input bigger than this is a typo, not a model


class RequestError(ValueError):
    """The request cannot work; the message says why (one line)."""


@dataclass(frozen=True)
class InputSpec:
    shape: tuple[int, ...]
    dtype: str = "float32"

    @classmethod
    def parse(cls, text: str) -> InputSpec:
        """``1x3x224x224`` or ``1x3x224x224:float32``."""
        shape_text, _, dtype = text.partition(":")
        dtype = dtype or "float32"
        if dtype not in DTYPES:
            raise RequestError(f"input {text!r}: dtype {dtype!r} is not one of {', '.join(DTYPES)}")
        if not re.fullmatch(r"\d+(x\d+)*", shape_text):
            raise RequestError(f"input {text!r}: expected a shape like 1x3x224x224[:float32]")
        if len(shape_text) > 200:
            raise RequestError(f"input {text[:40]!r}...: a shape of at most 200 characters")
        shape = tuple(int(d) for d in shape_text.split("x"))
        if 0 in shape:
            raise RequestError(f"input {text!r}: dimensions must be positive")
        elements = math.prod(shape)
        if elements > MAX_INPUT_ELEMENTS:
            raise RequestError(
                f"input {text!r}: {elements:,} elements; an example input holds at most "
                f"{MAX_INPUT_ELEMENTS:,} (2^28)"
            )
        return cls(shape, dtype)

    def __str__(self) -> str:
        return "x".join(map(str, self.shape)) + f":{self.dtype}"


EXTERNAL_BLOCK_NAMES = ("cmd", "weights")  # → Vela's cmd_data, weight_data blocks


@dataclass(frozen=True)
class CompileRequest:
    source: str  # model.py:Name | file.pt2 | a built-in name
    inputs: tuple[InputSpec, ...] = ()
    input_file: str | None = None  # .pt / .npy: example inputs and calibration data
    target: str = "ethos-u55-128"
    system_config: str | None = None
    memory_mode: str | None = None
    quantize: bool = True
    per_channel: bool = True
    delegate: bool = True
    delegate_segments: bool = False
    vela_flags: tuple[str, ...] = ()
    external_blocks: tuple[str, ...] = ()  # "cmd", "weights": Vela blocks put in a .ptd
    calibration: str | None = None  # a .npz or a folder of .npy: one sample per array
    max_scratch_size: int | None = None  # bytes: a larger Ethos-U scratch fails the compile
    cpu_backend: str = "portable"  # or "cortex-m": the CPU part as cortex_m::* (CMSIS-NN)
    int8_io: bool = False  # inputs and outputs the integers the NPU takes (quantize_io_pass)
    extra: dict = field(default_factory=dict, compare=False, hash=False)

    @property
    def npu(self) -> str:
        return self.target.rsplit("-", 1)[0]

    @property
    def model_name(self) -> str:
        base = self.source.split(":")[-1] if ".py:" in self.source else Path(self.source).stem
        return re.sub(r"[^A-Za-z0-9_.-]", "_", base) or "model"

    def resolved(self) -> CompileRequest:
        """The request with ExecuTorch's defaults filled in, checked; RequestError if not."""
        if self.target not in TARGETS:
            raise RequestError(f"unknown target {self.target!r}; one of {', '.join(TARGETS)}")
        default_config, default_mode = DEFAULTS[self.npu]
        request = replace(
            self,
            system_config=self.system_config or default_config,
            memory_mode=self.memory_mode or default_mode,
        )
        request.check()
        return request

    def check(self) -> None:
        config, mode = self.system_config, self.memory_mode
        if config not in SYSTEM_CONFIGS:
            raise RequestError(
                f"unknown system config {config!r}; one of {', '.join(SYSTEM_CONFIGS)}"
            )
        if mode not in MEMORY_MODES:
            raise RequestError(f"unknown memory mode {mode!r}; one of {', '.join(MEMORY_MODES)}")
        family = config.split("_")[1].lower()  # U55 / U65 / U85
        if f"ethos-{family}" != self.npu:
            raise RequestError(
                f"system config {config} is for Ethos-{family.upper()}, the target is "
                f"{self.target}: the runner's build would not pair them"
            )
        if is_dedicated_sram(mode) and SYSTEM_CONFIGS[config] != "Dram":
            raise RequestError(
                f"{mode} needs a system config whose AXI1 is DRAM; {config} has off-chip "
                "flash (Vela: Invalid configuration of arena_mem_area=OffChipFlash)"
            )
        accepted = RUNNER_SYSTEM_CONFIGS.get(config)
        if accepted is None:
            raise RequestError(
                f"the runner cannot be built for {config} (Unsupported SYSTEM_CONFIG); use one "
                f"of {', '.join(RUNNER_SYSTEM_CONFIGS)}"
            )
        _platform, modes = accepted
        if self.npu != "ethos-u85" and not any(
            mode == m or (m.endswith("*") and is_dedicated_sram(mode)) for m in modes
        ):
            raise RequestError(
                f"the runner builds {config} only with {', '.join(modes)}, not {mode}"
            )
        unknown = [b for b in self.external_blocks if b not in EXTERNAL_BLOCK_NAMES]
        if unknown:
            raise RequestError(
                f"unknown external block {unknown[0]!r}; use {', '.join(EXTERNAL_BLOCK_NAMES)}"
            )
        if self.max_scratch_size is not None and not 0 < self.max_scratch_size <= 1 << 32:
            raise RequestError(f"max scratch size {self.max_scratch_size}: 1 B to 4 GiB")
        if self.cpu_backend not in CPU_BACKENDS:
            raise RequestError(
                f"unknown CPU backend {self.cpu_backend!r}; one of {', '.join(CPU_BACKENDS)}"
            )
        if self.cpu_backend == "cortex-m" and not self.quantize:
            raise RequestError(
                "the Cortex-M backend lowers quantized operators only: not with --no-quantize"
            )
        if self.int8_io and not self.quantize:
            raise RequestError("--int8-io takes the quantized model's integers: not with "
                               "--no-quantize")  # fmt: skip
        if self.external_blocks and not self.delegate:
            raise RequestError("external blocks are the NPU delegate's: not with --no-delegate")
        has_inputs = self.inputs or self.input_file
        from_python = ".py:" in self.source or self.source.endswith(".py")
        if not has_inputs and self.source not in BUILTIN_MODELS and from_python:
            raise RequestError("give example inputs (--input 1x3x224x224:float32) or a file")

    def to_json(self) -> dict:
        data = asdict(self)
        data["inputs"] = [str(spec) for spec in self.inputs]
        data.pop("extra")
        if not self.external_blocks:
            data.pop("external_blocks")  # so earlier jobs' cache keys stay what they were
        if self.calibration is None:
            data.pop("calibration")  # likewise
        if self.max_scratch_size is None:
            data.pop("max_scratch_size")  # likewise
        if self.cpu_backend == "portable":
            data.pop("cpu_backend")  # likewise
        if not self.int8_io:
            data.pop("int8_io")  # likewise
        return data

    @classmethod
    def from_json(cls, data: dict) -> CompileRequest:
        data = dict(data)
        data["inputs"] = tuple(InputSpec.parse(text) for text in data.get("inputs", ()))
        data["vela_flags"] = tuple(data.get("vela_flags", ()))
        data["external_blocks"] = tuple(data.get("external_blocks", ()))
        return cls(**data)


def tool_versions() -> dict[str, str | None]:
    """torch/executorch/vela versions from package metadata (no import of the packages)."""
    versions: dict[str, str | None] = {}
    for dist in ("torch", "executorch", "ethos-u-vela", "tosa-tools"):
        try:
            versions[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            versions[dist] = None
    return versions


def source_digest(source: str) -> str:
    """What the model's source is made of: file bytes for files, the project's own model
    definitions for built-ins. Changing either changes the cache key."""
    digest = hashlib.sha256()
    path = Path(source.rsplit(":", 1)[0]) if ".py:" in source else Path(source)
    if source in BUILTIN_MODELS:
        digest.update(source.encode())
        path = Path(__file__).with_name("example_models.py")
    if not path.exists():
        raise RequestError(f"{path}: no such model file")
    _digest_file(digest, path, "a model file")
    return digest.hexdigest()


def _digest_file(digest, path: Path, what: str) -> None:
    """Hash a regular file in blocks (a FIFO, a device, a folder or an unreadable file is a
    RequestError, one line)."""
    from etu.parsers.errors import ParseError, describe_error
    from etu.parsers.files import GiB, digest_regular

    try:
        digest_regular(digest, path, what, 64 * GiB)
    except ParseError as error:
        raise RequestError(describe_error(error)) from None


def calibration_files(path: Path) -> list[Path]:
    """The files ``--calibration`` names: a ``.npz``, or a folder's ``.npy`` files in name
    order; RequestError when there are none."""
    if path.is_dir():
        files = sorted(path.glob("*.npy"))
        if not files:
            raise RequestError(f"{path}: no .npy files in the folder (--calibration)")
        return files
    if not path.exists():
        raise RequestError(f"{path}: no such calibration file (--calibration)")
    if path.suffix != ".npz":
        raise RequestError(f"{path}: not a .npz or a folder of .npy files (--calibration)")
    return [path]


def cache_key(request: CompileRequest) -> str:
    digest = hashlib.sha256()
    digest.update(source_digest(request.source).encode())
    if request.input_file:
        path = Path(request.input_file)
        if not path.exists():
            raise RequestError(f"{path}: no such input file (--input-file)")
        _digest_file(digest, path, "an input file (.pt or .npy)")
    if request.calibration:
        for path in calibration_files(Path(request.calibration)):
            _digest_file(digest, path, "calibration data (.npz or .npy)")
    digest.update(json.dumps(request.to_json(), sort_keys=True).encode())
    digest.update(json.dumps(tool_versions(), sort_keys=True).encode())
    digest.update(Path(__file__).with_name("aot.py").read_bytes())  # the flow itself
    return digest.hexdigest()
