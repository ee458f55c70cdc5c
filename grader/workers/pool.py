"""Idle helpers kept between runs: the processes that run none of a submission's code.

A verifier (:mod:`grader.workers.verifier`) and a tester (:mod:`grader.workers.tester`) start
JAX on a run's device count like a worker, but no submission code runs there, so one can
serve one run after another (saving a JAX start each time). A helper is taken for a run and
put back when the run is done with it; one that crashed, stalled or was left mid-request is
closed instead, never put back. :func:`close_all` ends every idle one (at the end of a batch).
"""

from __future__ import annotations

import atexit
import threading
from collections.abc import Callable

from grader import messages as msg
from grader.workers.process import WorkerDied, WorkerProcess, WorkerTimeout
from grader.workers.sandbox import Limits, Sandbox

#: What a helper is made for: its device count, limits and sandbox.
Kind = tuple[int, Limits, Sandbox]


class Pool:
    """Idle helpers of one module, by kind; ``prepare`` readies a new one (sends it what it
    needs once) or raises WorkerDied or WorkerTimeout."""

    def __init__(self, module: str,
                 prepare: Callable[[WorkerProcess, Limits], None] | None = None) -> None:
        self.module = module
        self.prepare = prepare
        self.idle: dict[Kind, list[WorkerProcess]] = {}
        self.lock = threading.Lock()
        _POOLS.append(self)

    def take(self, kind: Kind) -> WorkerProcess:
        """An idle helper of this kind that is still alive, or a new one."""
        while True:
            with self.lock:
                idle = self.idle.get(kind, [])
                helper = idle.pop() if idle else None
            if helper is None:
                return self.start(*kind)
            if helper.process.poll() is None:
                return helper
            helper.close()

    def put(self, kind: Kind, helper: WorkerProcess) -> None:
        """Keep ``helper``, idle and well, for the next run of its kind."""
        with self.lock:
            self.idle.setdefault(kind, []).append(helper)

    def start(self, devices: int, limits: Limits, sandbox: Sandbox) -> WorkerProcess:
        helper = WorkerProcess(devices, limits, sandbox, module=self.module)
        try:
            ready = helper.receive("ready", limits.start)
            if not ready.get("ok"):
                raise WorkerDied(msg.WORKER_OTHER_DEVICES.format(devices=ready.get("devices")))
            if self.prepare:
                self.prepare(helper, limits)
        except (WorkerDied, WorkerTimeout):
            helper.close()
            raise
        return helper

    def close(self) -> None:
        """End every idle helper of this pool."""
        with self.lock:
            idle = [h for helpers in self.idle.values() for h in helpers]
            self.idle.clear()
        for helper in idle:
            helper.close()


_POOLS: list[Pool] = []


def close_all() -> None:
    """End every idle helper of every pool (at the end of a batch)."""
    for pool in _POOLS:
        pool.close()


atexit.register(close_all)  # after a batch that ended in an error, say
