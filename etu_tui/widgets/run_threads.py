"""The runs a Run panel has under way, off the UI thread: start, stop and kill them.

The panel owns what a run shows; this owns the processes (controllers) and the listeners
(bridges) of its runs, so closing the console kills every one of them, even a run whose
start worker is still preparing (building a runner, opening a port).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from etu.runner.run import RunController
from etu.tui.widgets.run_launch import LaunchPlan, RunBridge, start_failure
from etu.tui.widgets.run_messages import RunFailed, RunStarted


@dataclass
class StartRequest:
    """What a start worker needs: the run's id, how to prepare it and where it records."""

    run_id: int
    prepare: Callable[[], LaunchPlan]
    root: Path  # the sessions folder
    env: dict[str, str] | None = None
    source: object = None  # a board's open byte source (runner.boards), or None


class RunThreads:
    """Controllers and bridges by run id, under one lock; ``target`` receives the messages
    (anything with a thread-safe ``post_message``: the panel)."""

    def __init__(self, target) -> None:
        self._target = target
        self._lock = threading.Lock()
        self._controllers: dict[int, RunController] = {}
        self._bridges: dict[int, RunBridge] = {}
        self._closing = False

    def bridge(self, run_id: int) -> RunBridge:
        """A listener for a run fed by the caller (a board's reader, a replay)."""
        bridge = RunBridge(self._target, run_id)
        with self._lock:
            self._bridges[run_id] = bridge
        return bridge

    def start(self, request: StartRequest) -> None:
        """Prepare and start a run (on a worker thread): posts RunStarted, or RunFailed
        with one line (no simulator, no ELF, no session folder)."""
        run_id = request.run_id
        try:
            plan = request.prepare()
            bridge = RunBridge(self._target, run_id)
            try:
                controller = RunController(
                    plan.argv or None, sessions=request.root, kind=plan.kind, meta=plan.meta,
                    listener=bridge, env=request.env, npu=plan.npu,
                    source=request.source or plan.source,
                )  # fmt: skip
            except BaseException:
                bridge.close()
                raise
        except Exception as error:
            self._target.post_message(RunFailed(run_id, start_failure(error, request.root)))
            return
        with self._lock:
            if self._closing:
                bridge.close()
                controller.session.finish(
                    exit_reason="killed", proof="the console closed before the run started"
                )
                return
            self._controllers[run_id] = controller
            self._bridges[run_id] = bridge
        self._target.post_message(RunStarted(run_id, controller, plan.info))
        controller.start()

    def ended(self, run_id: int) -> None:
        """Run ``run_id`` ended: nothing of it is left to kill."""
        with self._lock:
            self._controllers.pop(run_id, None)
            self._bridges.pop(run_id, None)

    def close(self) -> None:
        """Kill every run (the console is closing); later starts finish at once."""
        with self._lock:
            self._closing = True
            controllers = list(self._controllers.values())
            bridges = list(self._bridges.values())
        for controller in controllers:
            controller.kill()
        for bridge in bridges:
            bridge.close()
