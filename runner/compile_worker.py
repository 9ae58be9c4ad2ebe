"""The compile worker: ``python -I -c ... REQUEST.json OUT_DIR [--result-fd N]``.

Runs the ExecuTorch Ethos-U flow in its own process, so the console never imports torch.
The model's own code (a ``model.py``) is executed here, as Python: it is the user's code.
Speaks JSON Lines on a private channel, the file descriptor ``--result-fd`` (stdout when
none is given), one object per message:
``{"stage": NAME, "state": "start"|"done", "seconds": S}``, ``{"log": TEXT}``, and last
``{"result": {...}}`` or ``{"error": {"stage", "message", "traceback"}}``. Whatever the
model or a library prints, on stdout or stderr, from Python or C, is only the job's log:
it can neither break nor forge a message. The parent starts it isolated (``-I``, see
:mod:`etu.runner.isolated`), so nothing in the working folder can stand in for etu's modules.

Stages, in the order they run: load, export, quantize, calibrate, tosa, vela, serialize,
write. Vela is called from inside ExecuTorch's lowering; its stage runs from the first
Vela call to the end of lowering, and tosa ends where Vela starts.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import sys
import time
import traceback
from pathlib import Path

from etu.parsers.errors import first_line
from etu.runner.compile_request import CompileRequest

_ROOT = Path(__file__).resolve().parent.parent
_ETU_FOLDERS = tuple(_ROOT / name for name in ("runner", "parsers", "etu_tui", "fvp"))
STAGES = ("load", "export", "quantize", "calibrate", "tosa", "vela", "serialize", "write")
_PROTOCOL = sys.stdout  # the JSON channel; main() points it at --result-fd


def emit(message: dict) -> None:
    _PROTOCOL.write(json.dumps(message) + "\n")
    _PROTOCOL.flush()


class StageError(Exception):
    def __init__(self, stage: str, message: str) -> None:
        super().__init__(message)
        self.stage = stage


class Stages:
    """Stage bookkeeping: start/done messages and which stage an exception belongs to."""

    def __init__(self) -> None:
        self.current = "load"
        self.seconds: dict[str, float] = {}
        self.started = time.perf_counter()
        emit({"stage": "load", "state": "start"})

    def done(self, stage: str, seconds: float | None, following: str | None) -> None:
        if seconds is None:
            seconds = time.perf_counter() - self.started
        self.seconds[stage] = round(seconds, 4)
        emit({"stage": stage, "state": "done", "seconds": round(seconds, 4)})
        if following:
            self.current = following
            self.started = time.perf_counter()
            emit({"stage": following, "state": "start"})


def load_model(request: CompileRequest):
    """(model, example inputs or None) for any of the three source forms."""
    import torch

    # A model.py whose weights start at random (no checkpoint loaded) compiles to the same
    # program every time, as the compile cache, keyed on the request, assumes.
    torch.manual_seed(0)
    source = request.source
    if source.endswith(".pt2"):
        exported = torch.export.load(source)
        return exported.module(check_guards=False), tuple(exported.example_inputs[0])
    if ".py:" in source or source.endswith(".py"):
        path, name = source.rsplit(":", 1) if ".py:" in source else (source, None)
        folder = str(Path(path).resolve().parent)
        if folder not in sys.path:  # its own sibling modules, after etu's (already loaded)
            sys.path.append(folder)
        spec = importlib.util.spec_from_file_location(f"etu_user_model_{Path(path).stem}", path)
        if spec is None or spec.loader is None:
            raise StageError("load", f"{path}: cannot be imported as a Python module")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)  # the user's code: its traceback is shown as-is
        found = [
            n
            for n, v in vars(module).items()
            if isinstance(v, type)
            and issubclass(v, torch.nn.Module)
            and v.__module__ == module.__name__
        ]
        if name is None:  # model.py alone: its one nn.Module class
            if len(found) != 1:
                raise StageError(
                    "load",
                    f"{path} defines {len(found)} nn.Module classes"
                    + (f" ({', '.join(found)}): name one, e.g. {path}:{found[0]}" if found
                       else ": give model.py:ClassOrFactory"),
                )  # fmt: skip
            name = found[0]
        if not hasattr(module, name):
            raise StageError(
                "load",
                f"{path} has no {name!r}; nn.Module classes in it: {', '.join(found) or 'none'}",
            )
        factory = getattr(module, name)
        model = factory()
        if not isinstance(model, torch.nn.Module):
            raise StageError("load", f"{name}() returned {type(model).__name__}, not an nn.Module")
        return model, None
    from etu.runner.example_models import EXAMPLES

    if source not in EXAMPLES:
        raise StageError("load", f"{source!r} is not a model file, a .pt2 or a built-in example")
    factory, _shapes = EXAMPLES[source]
    return factory(), None


def make_inputs(request: CompileRequest, exported_inputs):
    """(example inputs, calibration samples) from the request, a file or the model."""
    import torch

    from etu.runner.example_models import EXAMPLES

    generator = torch.Generator().manual_seed(0)

    def random(spec):
        dtype = getattr(torch, spec.dtype)
        if dtype.is_floating_point:
            return torch.rand(spec.shape, generator=generator, dtype=dtype)
        if dtype == torch.bool:
            return torch.randint(0, 2, spec.shape, generator=generator).bool()
        return torch.randint(0, 100, spec.shape, generator=generator, dtype=dtype)

    if request.input_file:
        path = Path(request.input_file)
        if path.suffix == ".npy":
            import numpy

            data = torch.from_numpy(numpy.load(path))
            return (data,), [(data,)]
        loaded = torch.load(path, weights_only=True)
        if isinstance(loaded, torch.Tensor):
            return (loaded,), [(loaded,)]
        samples = [tuple(s) if isinstance(s, list | tuple) else (s,) for s in loaded]
        if samples and all(isinstance(t, torch.Tensor) for t in samples[0]):
            if isinstance(loaded, tuple):  # one tuple of inputs, not a list of samples
                return tuple(loaded), [tuple(loaded)]
            return samples[0], samples
        raise StageError("load", f"{path}: expected a tensor, a tuple of tensors or a list")
    if request.inputs:
        samples = [tuple(random(s) for s in request.inputs) for _ in range(4)]
        return samples[0], samples
    if exported_inputs is not None:
        return exported_inputs, [exported_inputs]
    from etu.runner.compile_request import InputSpec

    shapes = EXAMPLES[request.source][1] if request.source in EXAMPLES else [(1, 3, 224, 224)]
    specs = [InputSpec(tuple(s)) for s in shapes]
    samples = [tuple(random(s) for s in specs) for _ in range(4)]
    return samples[0], samples


def run(request: CompileRequest, out_dir: Path, stages: Stages) -> dict:
    started = time.perf_counter()  # importing torch is most of the load stage
    with contextlib.redirect_stdout(sys.stderr):
        from etu.runner import aot

        model, exported_inputs = load_model(request)
        example, calibration = make_inputs(request, exported_inputs)
        calibration, calibration_text = calibration_samples(request, example, calibration)
        stages.done("load", time.perf_counter() - started, "export")
        _time_vela(stages)
        order = iter(["quantize", "calibrate", "tosa"] if request.quantize else ["tosa"])

        def progress(stage: str, seconds: float) -> None:
            if stage == "export":
                stages.done("export", seconds, next(order))
            elif stage in ("quantize", "calibrate"):
                stages.done(stage, seconds, next(order))
            elif stage == "lower":
                # tosa ended where Vela started (if it did); whichever runs now ends here
                stages.done(stages.current, None if stages.current == "vela" else seconds,
                            "serialize")  # fmt: skip
            elif stage == "serialize":
                stages.done("serialize", seconds, "write")
            elif stage == "write":
                stages.done("write", seconds, None)

        spec = aot.LoweringSpec(
            target=request.target,
            system_config=request.system_config,
            memory_mode=request.memory_mode,
            quantize=request.quantize,
            per_channel=request.per_channel,
            delegate=request.delegate,
            extract_delegate_segments=request.delegate_segments,
            extra_vela_flags=("--verbose-performance", "--enable-debug-db", *request.vela_flags),
            external_blocks=request.external_blocks,
            max_scratch_size=request.max_scratch_size,
            cpu_backend=request.cpu_backend,
            int8_io=request.int8_io,
        )
        result = aot.lower_to_pte(
            model,
            example,
            spec,
            out_dir / f"{request.model_name}.pte",
            vela_dir=out_dir / "vela",  # a CPU-only compile keeps its record there too
            calibration=calibration,
            progress=progress,
            source=request.source,
        )
    return {
        "pte": str(result.pte),
        "vela_dir": str(result.vela_dir) if result.vela_dir else None,
        "stages": stages.seconds,
        "float_model": result.float_model,
        "calibration": (
            {"samples": len(calibration), "source": calibration_text} if request.quantize else None
        ),
    }


def calibration_samples(request: CompileRequest, example: tuple, samples: list):
    """The samples quantisation calibrates on and what they are, in words: the
    ``--calibration`` data (a .npz, or a folder of .npy: one sample per array, or N along a
    leading axis), else the example inputs the request gave."""
    if not request.calibration:
        count = f"{len(samples)} sample{'s' if len(samples) != 1 else ''}"
        hint = "; pass --calibration FILE.npz or a folder of .npy for real data"
        if request.input_file:
            return samples, f"{count} from {request.input_file}"
        if request.inputs or request.source in _builtin_names():
            return samples, f"{count} drawn at random (uniform [0, 1)){hint}"
        return samples, f"the example input only ({count}){hint}"
    import numpy
    import torch

    from etu.runner.compile_request import calibration_files

    path = Path(request.calibration)
    if len(example) != 1:
        raise StageError("load", f"{path}: --calibration is for one-input models; give a "
                         "list of input tuples in a .pt file (--input-file)")  # fmt: skip
    want = tuple(example[0].shape)
    arrays: list[tuple[str, object]] = []
    for file in calibration_files(path):
        if file.suffix == ".npz":
            with numpy.load(file, allow_pickle=False) as data:
                arrays += [(f"{file}:{name}", data[name]) for name in data.files]
        else:
            arrays.append((str(file), numpy.load(file, allow_pickle=False)))
    found: list[tuple] = []
    for name, array in arrays:
        tensor = torch.from_numpy(numpy.asarray(array)).to(example[0].dtype)
        if tuple(tensor.shape) == want:
            found.append((tensor,))
        elif tuple(tensor.shape[1:]) == want:  # N samples along a leading axis
            found += [(t,) for t in tensor]
        else:
            raise StageError("load", f"{name}: shape {tuple(tensor.shape)}, the model's input "
                             f"is {want} (or N×{want})")  # fmt: skip
    if not found:
        raise StageError("load", f"{path}: no calibration arrays")
    return found, f"{len(found)} sample{'s' if len(found) != 1 else ''} from {path}"


def _builtin_names() -> set[str]:
    from etu.runner.example_models import EXAMPLES

    return set(EXAMPLES)


def _time_vela(stages: Stages) -> None:
    """Report Vela as its own stage, after tosa: wrap the function the Ethos-U backend
    calls. The first call ends tosa and starts vela (an exception leaves it at vela)."""
    from executorch.backends.arm.ethosu import backend

    original = backend.vela_compile

    def timed(*args, **kwargs):
        if stages.current == "tosa":
            stages.done("tosa", None, "vela")
        return original(*args, **kwargs)

    backend.vela_compile = timed


def main(argv: list[str] | None = None) -> int:
    global _PROTOCOL
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--result-fd" in argv:
        at = argv.index("--result-fd")
        fd = int(argv[at + 1])
        del argv[at : at + 2]
        os.set_inheritable(fd, False)  # Vela and other children do not get it
        _PROTOCOL = os.fdopen(fd, "w", encoding="utf-8")
    request = CompileRequest.from_json(json.loads(Path(argv[0]).read_text()))
    out_dir = Path(argv[1])
    stages = Stages()
    try:
        emit({"result": run(request, out_dir, stages)})
        return 0
    except StageError as error:
        emit({"error": {"stage": error.stage, "message": str(error), "traceback": None}})
    except BaseException as error:  # the user's model or the tools failed: report, don't die
        stage = stages.current or _stage_from_traceback(error)
        text = "".join(traceback.format_exception(error))
        first = first_line(str(error))
        message = f"{type(error).__name__}: {first}"
        where, short = user_frame(error, request.source)
        emit({"error": {"stage": stage, "message": message, "traceback": text,
                        "where": where, "short_traceback": short}})  # fmt: skip
    return 1


def user_frame(error: BaseException, source: str) -> tuple[str | None, str | None]:
    """Where in the user's model ``error`` came from: ``("FILE:LINE in FUNCTION", the
    traceback cut to the user's frames and the error's line)``; (None, None) when no frame
    is the user's (a built-in, a .pt2, the tools' own failure)."""
    if ".py" not in source:
        return None, None
    path = Path(source.rsplit(":", 1)[0] if ".py:" in source else source).resolve()
    folder = path.parent
    last = f"{type(error).__name__}: {first_line(str(error))}"
    if isinstance(error, SyntaxError) and error.filename and error.lineno:
        where = f"{error.filename}:{error.lineno}"
        return where, f'  File "{error.filename}", line {error.lineno}\n{last}'

    def theirs(filename: str) -> bool:
        file = Path(filename)
        try:
            inside = file.resolve().is_relative_to(folder)
        except (OSError, ValueError):
            return False
        return (
            inside
            and "site-packages" not in file.parts
            and not any(file.resolve().is_relative_to(own) for own in _ETU_FOLDERS)
        )

    frames = [f for f in traceback.extract_tb(error.__traceback__) if theirs(f.filename)]
    if not frames:
        return None, None
    frame = frames[-1]
    short = "".join(traceback.format_list(frames[-3:])) + last
    return f"{frame.filename}:{frame.lineno} in {frame.name}", short


def _stage_from_traceback(error: BaseException) -> str:
    """Best guess of the stage from where the exception came from."""
    names = [frame.name for frame in traceback.extract_tb(error.__traceback__)]
    files = " ".join(frame.filename for frame in traceback.extract_tb(error.__traceback__))
    if "vela" in files and "ethosu" in files:
        return "vela"
    if "exec_module" in names or "load_model" in names:
        return "load"
    if "make_inputs" in names:
        return "load"
    if "prepare_pt2e" in names or "convert_pt2e" in names:
        return "quantize"
    if "to_edge_transform_and_lower" in names:
        return "tosa"
    if "to_executorch" in names:
        return "serialize"
    if "export" in names:
        return "export"
    return "unknown"


if __name__ == "__main__":
    raise SystemExit(main())
