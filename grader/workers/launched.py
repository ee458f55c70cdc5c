"""What each process that lesson 6's grader tests launch runs (:mod:`grader.workers.replay`):
a worker of its own that replays the cells the grader's worker ran, then a public probe."""

from __future__ import annotations

import importlib
import os
from typing import Any

from grader import messages as msg
from grader.devices import WORKER_ENV
from grader.launcher import join


def replayed(job: dict) -> Any:
    """In a launched process: replay a file's cells as the grader's worker ran them, then run
    the probe on the exercise's function."""
    join()
    os.environ[WORKER_ENV] = "1"  # the cells' device set-up, check() and run() stand down
    from grader.framework import cases
    from grader.workers import reuse
    from grader.workers import seal as sealing
    from grader.workers.worker import Worker

    reuse.install()  # as in the grader's worker
    module, name = job["probe"].split(":")
    probe = getattr(importlib.import_module(module), name)
    with open(os.devnull, "w") as nowhere:
        worker = Worker(nowhere)  # sealed here, before the cells ran; kept in locals, as the
        state, restore = worker.seal().state, sealing.restore  # worker does (Worker.serve)
        code, defaults = restore.__code__, restore.__defaults__
        for label, source in job["cells"]:
            worker.cell(job["file"], label, source)  # a cell that raises is skipped
        found = worker.find(job["exercise"])
    restore.__code__, restore.__defaults__ = code, defaults
    restore(state)
    if not callable(found):
        raise LookupError(msg.MSG_NOT_FOUND.format(name=job["exercise"]))
    value = probe(found)
    restore.__code__, restore.__defaults__ = code, defaults
    during = restore(state)
    if during:
        raise RuntimeError(msg.MSG_TAMPERED.format(name=job["exercise"],
                                                   what=cases.changes(during)))
    return value
