"""What each process that lesson 6's grader tests launch runs (:mod:`grader.workers.replay`):
a worker of its own that replays the cells the grader's worker ran once, then runs a public
probe on an exercise's function for each request of the worker's cluster."""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from typing import Any

from grader import messages as msg
from grader.devices import WORKER_ENV
from grader.launcher import join
from grader.workers.replay import PROBES


def replaying(job: dict) -> Callable[[dict], Any]:
    """In a launched process: replay a file's cells as the grader's worker ran them; returns
    what answers each request of the worker's :class:`grader.launcher.Cluster`: a public
    probe run on an exercise's function."""
    join()
    os.environ[WORKER_ENV] = "1"  # the cells' device set-up, check() and run() stand down
    from grader import reuse
    from grader.framework import cases
    from grader.workers import seal as sealing
    from grader.workers.worker import Worker

    reuse.install()  # as in the grader's worker
    with open(os.devnull, "w") as nowhere:
        worker = Worker(nowhere)  # sealed here, before the cells ran; kept in locals, as the
        state, restore = worker.seal().state, sealing.restore  # worker does (Worker.serve)
        code, defaults = restore.__code__, restore.__defaults__
        for label, source in job["cells"]:
            worker.cell(job["file"], label, source)  # a cell that raises is skipped

    def probed(request: dict) -> Any:
        restore.__code__, restore.__defaults__ = code, defaults
        restore(state)  # as sealed: what the cells or an earlier request changed is undone
        probe_name = str(request["probe"])
        module, name = probe_name.split(":")
        if not module.startswith(PROBES):
            raise ValueError(msg.MSG_CLUSTER_PROBE.format(probe=probe_name[:80]))
        probe = getattr(importlib.import_module(module), name)
        found = worker.find(request["exercise"])
        if not callable(found):
            raise LookupError(msg.MSG_NOT_FOUND.format(name=request["exercise"]))
        value = probe(found)
        restore.__code__, restore.__defaults__ = code, defaults
        during = restore(state)
        if during:
            raise RuntimeError(msg.MSG_TAMPERED.format(name=request["exercise"],
                                                       what=cases.changes(during)))
        return value

    return probed
