"""Compile jobs: the worker process, progress, the cache, and sweeps.

Each job owns one output folder named after the model, target, memory mode and cache key.
The worker writes into a ``.partial`` sibling that is renamed into place only when the
whole job succeeded, so a failed, cancelled or killed job never leaves something that
looks like a result. An unchanged job finds its folder and returns at once.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

from etu.parsers.log_noise import NoiseFilter
from etu.runner.compile_request import CompileRequest, cache_key, tool_versions
from etu.runner.isolated import isolated_python
from etu.runner.process import CHUNK, StreamingProcess
from etu.runner.warm_host import launch as warm_launch

WORKER = "etu.runner.compile_worker"
JOB_RECORD = "job.json"
LOG_NAME = "worker.log"  # the job's log: everything the worker printed, and a traceback


@dataclass
class CompileResult:
    request: CompileRequest
    status: str  # ok | failed | cancelled
    folder: Path | None
    pte: Path | None = None
    vela_dir: Path | None = None
    cached: bool = False
    key: str = ""
    stages: dict[str, float] = field(default_factory=dict)
    failed_stage: str | None = None
    message: str | None = None
    traceback: str | None = None  # the full traceback (also in the job's log file)
    log: str = ""
    where: str | None = None  # FILE:LINE in FUNCTION: the user's frame the error came from
    short_traceback: str | None = None  # the user's frames and the error's line
    traceback_file: Path | None = None  # the job's log file, the full traceback at its end
    calibration: dict | None = None  # quantised: {"samples": N, "source": what they were}
    seconds: float = 0.0
    warm: bool = False  # its worker was forked from the warm host (torch already imported)

    @property
    def data_files(self) -> list[Path]:
        """The ``.ptd`` files beside the program (external Vela blocks)."""
        if self.pte is None:
            return []
        return sorted(self.pte.parent.glob("*.ptd"))

    def to_json(self) -> dict:
        return {
            "data_files": [str(path) for path in self.data_files],
            "status": self.status,
            "cached": self.cached,
            "key": self.key,
            "folder": str(self.folder) if self.folder else None,
            "pte": str(self.pte) if self.pte else None,
            "vela_dir": str(self.vela_dir) if self.vela_dir else None,
            "stages": self.stages,
            "failed_stage": self.failed_stage,
            "message": self.message,
            # shortened: the user's frames and the error (the full one: traceback_file)
            "traceback": self.short_traceback or _tail(self.traceback),
            "where": self.where,
            "traceback_file": str(self.traceback_file) if self.traceback_file else None,
            "calibration": self.calibration,
            "seconds": round(self.seconds, 3),
            "warm": self.warm,
            "request": self.request.to_json(),
        }


def _tail(text: str | None, lines: int = 6) -> str | None:
    """The last ``lines`` lines of a traceback (None stays None)."""
    if not text:
        return None
    return "\n".join(text.rstrip().splitlines()[-lines:])


class CompileListener:
    """Progress of one job, called on the worker's reader threads."""

    def on_stage(self, stage: str, state: str, seconds: float | None) -> None: ...
    def on_log(self, text: str) -> None: ...


def job_folder(out_dir: Path, request: CompileRequest, key: str) -> Path:
    mode = request.memory_mode if request.delegate else "cpu"
    return Path(out_dir) / f"{request.model_name}-{request.target}-{mode}-{key[:10]}"


def find_cached(out_dir: Path, request: CompileRequest, key: str) -> CompileResult | None:
    from etu.parsers.errors import ParseError
    from etu.parsers.files import MiB, read_json

    folder = job_folder(out_dir, request, key)
    try:  # a FIFO, a device, a huge or hostile record: no cache hit, never a hang
        record = read_json(folder / JOB_RECORD, "a compile job's record", 16 * MiB)
    except ParseError:
        return None
    if not isinstance(record, dict) or not isinstance(record.get("pte"), str):
        return None
    pte = folder / Path(record["pte"]).name
    if record.get("key") != key or record.get("status") != "ok" or not pte.is_file():
        return None
    vela = folder / "vela"
    stages = record.get("stages")
    return CompileResult(
        request, "ok", folder, pte, vela if vela.is_dir() else None, cached=True, key=key,
        stages=stages if isinstance(stages, dict) else {},
        calibration=record["calibration"] if isinstance(record.get("calibration"), dict)
        else None,
    )  # fmt: skip


def _link_tree(source: Path, target: Path) -> None:
    """``target``, a copy of the job folder ``source`` made of hard links where the file
    system allows (a job's files are never written again), whole or not at all."""

    def link(src: str, dst: str) -> None:
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)

    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    shutil.copytree(source, partial, copy_function=link, symlinks=True)
    shutil.rmtree(target, ignore_errors=True)
    partial.rename(target)


def shared_hit(out_dir: Path, shared: Path | None, request: CompileRequest, key: str):
    """A job already compiled into ``shared`` (the workspace's compile folder, which the
    console and the CLI share), brought into ``out_dir``; None when there is none."""
    if shared is None or Path(shared).resolve() == Path(out_dir).resolve():
        return None
    found = find_cached(shared, request, key)
    if found is None or found.folder is None:
        return None
    try:
        _link_tree(found.folder, job_folder(out_dir, request, key))
    except OSError:
        return None
    return find_cached(out_dir, request, key)


class CompileJob:
    """One request compiled in a worker process; ``run()`` blocks, ``cancel()`` stops it.

    ``shared``: the workspace's compile folder when ``out_dir`` is another (``etu compile
    --out build``): a job compiled there (by the console or the CLI) is reused, and a new
    one is kept there too, so one request compiles once per workspace."""

    def __init__(
        self,
        request: CompileRequest,
        out_dir: Path,
        listener: CompileListener | None = None,
        *,
        use_cache: bool = True,
        shared: Path | None = None,
    ) -> None:
        self.request = request.resolved()  # RequestError before any work
        self.out_dir = Path(out_dir)
        self.shared = Path(shared) if shared is not None else None
        self.listener = listener or CompileListener()
        self.use_cache = use_cache
        self.key = cache_key(self.request)
        self._process: StreamingProcess | None = None
        self._cancelled = threading.Event()
        self._messages: list[dict] = []
        self._log: list[str] = []
        self._lock = threading.Lock()
        self._shown = NoiseFilter()  # what the listener sees: the log without library noise
        self._warm = False  # the worker was forked from the warm host (runner.warm_host)

    @property
    def folder(self) -> Path:
        return job_folder(self.out_dir, self.request, self.key)

    def cancel(self) -> None:
        self._cancelled.set()
        if self._process is not None:
            self._process.stop(grace=1.0)

    def run(self) -> CompileResult:
        started = time.perf_counter()
        if self.use_cache and (
            (hit := find_cached(self.out_dir, self.request, self.key))
            or (hit := shared_hit(self.out_dir, self.shared, self.request, self.key))
        ):
            hit.seconds = time.perf_counter() - started
            return hit
        partial = self.folder.with_name(self.folder.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        (partial / "request.json").write_text(json.dumps(self.request.to_json(), indent=2))
        if self._cancelled.is_set():
            return self._finish(partial, None, started)
        # The worker's messages travel on a pipe of their own: the model's prints (stdout,
        # Python or C) are its log and can neither break nor forge a result.
        read_end, write_end = os.pipe()
        args = (str(partial / "request.json"), str(partial), "--result-fd", str(write_end))

        def warm():  # forked from the warm host (torch imported once), else started cold
            child = warm_launch("etu.runner.aot", WORKER, args, pass_fds=(write_end,))
            self._warm = child is not None
            return child

        self._process = StreamingProcess(
            isolated_python(WORKER, *args), launcher=warm, on_output=self._on_output,
            pass_fds=(write_end,),
        )  # fmt: skip
        reader = threading.Thread(target=self._read_messages, args=(read_end,), daemon=True)
        try:
            self._process.start()
        finally:
            os.close(write_end)
        reader.start()
        returncode = self._process.wait()
        reader.join()
        return self._finish(partial, returncode, started)

    def _share(self) -> None:
        """Keep a finished job in the workspace's compile folder too (best effort)."""
        if self.shared is None or self.shared.resolve() == self.out_dir.resolve():
            return
        try:
            self.shared.mkdir(parents=True, exist_ok=True)
            _link_tree(self.folder, job_folder(self.shared, self.request, self.key))
        except OSError:
            pass  # the result in out_dir stands; the next compile elsewhere compiles again

    def _on_output(self, chunk: bytes, stream: str) -> None:
        """stdout and stderr alike: the job's log (whole); the listener's without the
        third-party noise (parsers.log_noise)."""
        text = chunk.decode("utf-8", "replace")
        with self._lock:
            self._log.append(text)
            shown = self._shown.feed(text)
        if shown:
            self.listener.on_log(shown)

    def _read_messages(self, fd: int) -> None:
        with open(fd, "rb", buffering=0) as channel:
            buffer = b""
            while chunk := channel.read(CHUNK):
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    self._on_message_line(line)
            if buffer:
                self._on_message_line(buffer)

    def _on_message_line(self, line: bytes) -> None:
        """One line of the private channel; anything but a known message is logged."""
        try:
            message = json.loads(line)
        except ValueError:
            message = None
        if not _is_message(message):
            self.listener.on_log(line.decode("utf-8", "replace") + "\n")
            return
        self._messages.append(message)
        if "stage" in message:
            self.listener.on_stage(message["stage"], message["state"], message.get("seconds"))

    def _finish(self, partial: Path, returncode: int | None, started: float) -> CompileResult:
        log = "".join(self._log)
        result = next((m["result"] for m in self._messages if "result" in m), None)
        error = next((m["error"] for m in self._messages if "error" in m), None)
        running = [m["stage"] for m in self._messages if m.get("state") == "start"]
        stages = {m["stage"]: m["seconds"] for m in self._messages if m.get("state") == "done"}
        outcome = CompileResult(
            self.request, "failed", None, key=self.key, stages=stages, log=log,
            seconds=time.perf_counter() - started, warm=self._warm,
        )  # fmt: skip
        with self._lock:
            rest = self._shown.flush()
        if rest:
            self.listener.on_log(rest)
        kept = log  # the job's log file: the log, and a failure's whole traceback after it
        if error is not None and error.get("traceback"):
            kept += f"\n--- the compile failed in {error.get('stage')} ---\n"
            kept += error["traceback"].rstrip() + "\n"
        (partial / LOG_NAME).write_text(kept)
        if self._cancelled.is_set():
            outcome.status, outcome.message = "cancelled", "cancelled by the user"
            outcome.failed_stage = running[-1] if running else None
        elif error is not None:
            outcome.failed_stage = error.get("stage")
            outcome.message = error.get("message")
            outcome.traceback = error.get("traceback")
            outcome.where = error.get("where")
            outcome.short_traceback = error.get("short_traceback")
            said = [line for line in log.splitlines() if "error" in line.lower()]
            if outcome.message.startswith("SystemExit") and said:
                outcome.message += f" ({said[-1].strip()})"  # a tool exited through argparse
        elif result is None or returncode != 0:
            how = (
                f"signal {-returncode}" if returncode and returncode < 0 else f"status {returncode}"
            )
            stage = running[-1] if running else "start"
            outcome.failed_stage = stage
            outcome.message = f"the compile worker died ({how}) during {stage}"
            outcome.traceback = log[-4000:] or None
        elif (problem := _result_problem(partial, result)) is not None:
            outcome.failed_stage = "write"
            outcome.message = problem
        else:
            record = {"key": self.key, "status": "ok", "stages": stages,
                      "pte": Path(result["pte"]).name, "versions": tool_versions(),
                      "request": self.request.to_json(),
                      # the float model kept for the host reference: source, shapes, file
                      "float_model": result.get("float_model"),
                      "calibration": result.get("calibration")}  # fmt: skip
            (partial / JOB_RECORD).write_text(json.dumps(record, indent=2) + "\n")
            shutil.rmtree(self.folder, ignore_errors=True)
            partial.rename(self.folder)  # only now does it look like a result
            outcome.status, outcome.folder = "ok", self.folder
            self._share()
            outcome.calibration = result.get("calibration")
            outcome.pte = self.folder / Path(result["pte"]).name
            vela = self.folder / "vela"
            outcome.vela_dir = vela if vela.is_dir() else None
            return outcome
        failed = partial.with_name(self.folder.name + ".failed")
        shutil.rmtree(failed, ignore_errors=True)
        partial.rename(failed)  # kept for its log, named so nothing mistakes it for a result
        outcome.folder = failed
        if outcome.traceback:
            outcome.traceback_file = failed / LOG_NAME
        return outcome


def _is_message(message) -> bool:
    """The shapes the worker sends; anything else (``0``, ``null``, text) is not one."""
    if not isinstance(message, dict):
        return False
    if "stage" in message:
        return isinstance(message["stage"], str) and message.get("state") in ("start", "done")
    if "result" in message:
        return isinstance(message["result"], dict) and isinstance(message["result"].get("pte"), str)
    if "error" in message:
        return isinstance(message["error"], dict)
    return "log" in message


def _result_problem(partial: Path, result: dict) -> str | None:
    """Why a reported result is not one: the .pte must be in the job folder and decode."""
    from etu.parsers.errors import ParseError
    from etu.parsers.pte import open_program

    pte = partial / Path(result["pte"]).name
    if not pte.is_file():
        return f"the worker reported {pte.name} but wrote no such file"
    try:
        with open_program(pte):
            pass
    except ParseError as error:
        return f"the worker's {pte.name} does not decode: {error}"
    return None


# ------------------------------------------------------------------------------ sweeps


def sweep_requests(
    base: CompileRequest, targets: Sequence[str] = (), memory_modes: Sequence[str] = (),
    system_configs: Sequence[str] = (),
) -> list[CompileRequest]:  # fmt: skip
    """Every combination; system config/memory mode default per target when not swept."""
    requests = []
    for target in targets or [base.target]:
        for config in system_configs or [None]:
            for mode in memory_modes or [None]:
                requests.append(
                    replace(
                        base, target=target,
                        system_config=config or (base.system_config if not targets else None),
                        memory_mode=mode or (base.memory_mode if not targets else None),
                    )
                )  # fmt: skip
    return requests


def run_sweep(
    requests: Sequence[CompileRequest],
    out_dir: Path,
    *,
    workers: int = 1,
    on_result: Callable[[CompileResult], None] | None = None,
) -> list[CompileResult]:
    """Compile each request (in turn, or ``workers`` at a time); results in request order."""

    def one(request: CompileRequest) -> CompileResult:
        from etu.runner.compile_request import RequestError

        try:
            result = CompileJob(request, out_dir).run()
        except RequestError as error:
            result = CompileResult(request, "failed", None, failed_stage="request",
                                   message=str(error))  # fmt: skip
        if on_result:
            on_result(result)
        return result

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        return list(pool.map(one, requests))


def comparison_row(result: CompileResult) -> dict:
    """One row of the sweep table, from the job's own artifacts."""
    from etu.parsers.errors import ParseError
    from etu.parsers.program_facts import cpu_operators, delegates
    from etu.parsers.pte import open_program
    from etu.parsers.vela import load_vela_report

    request = result.request
    row = {
        "target": request.target, "system_config": request.system_config,
        "memory_mode": request.memory_mode, "status": result.status,
        "cycles": None, "inference_time_s": None, "sram_kib": None, "flash_kib": None,
        "dram_kib": None, "npu_operators": None, "cpu_operators": None,
        "program_bytes": None, "scratch_bytes": None, "message": result.message,
    }  # fmt: skip
    if result.status != "ok" or result.pte is None:
        return row
    try:
        with open_program(result.pte) as program:
            row["program_bytes"] = program.file_size
            row["cpu_operators"] = len([op for op in cpu_operators(program) if not op.is_prim])
            scratch = [d.payload.scratch_size for d in delegates(program) if d.payload]
            row["scratch_bytes"] = max(scratch) if scratch else 0
        if result.vela_dir:
            report = load_vela_report(result.vela_dir)
            row.update(
                cycles=report.cycles, inference_time_s=report.inference_time_s,
                sram_kib=report.sram_used_kib, flash_kib=report.flash_used_kib,
                dram_kib=report.dram_used_kib, npu_operators=report.npu_operators,
            )  # fmt: skip
    except ParseError as error:
        row["message"] = str(error)
    return row
