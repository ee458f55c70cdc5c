"""Lesson 6's grader tests: a student's function called in several processes joined by
``jax.distributed``, each of which first replays the cells the worker ran.

A worker records what it ran in :data:`grader.workers.record.RECORD` (the cells of each file
in order, the test modules it received, its namespaces). A hidden test calls :func:`replay`
with the exercise and a probe; the processes are launched by
:func:`grader.lessons.cluster.launch` (the lesson's launcher), and each one runs
:func:`replayed`: it joins the others, replays the cells of the file that defines the
exercise, behind the worker's seal, and returns the probe's value.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from typing import Any

from grader import messages as msg
from grader.devices import WORKER_ENV
from grader.lessons.cluster import (
    DEFAULT_DEVICES_PER_PROCESS,
    DEFAULT_PROCESSES,
    ClusterError,
    join,
    launch,
)
from grader.workers.record import RECORD

#: Seconds the processes of one :func:`replay` may take: well below a worker's per-exercise
#: limit (60 s by default), so that a hanging submission is reported as such.
REPLAY_TIMEOUT = 25.0


def replay(
    exercise: str,
    probe: Callable,
    *,
    processes: int = DEFAULT_PROCESSES,
    devices_per_process: int = DEFAULT_DEVICES_PER_PROCESS,
    timeout: float = REPLAY_TIMEOUT,
) -> list[Any]:
    """In each of ``processes`` processes, replay the cells of the file that defines
    ``exercise`` as the worker ran them, then return ``probe(function)`` of every process.
    ``probe`` is a module-level function of a test module."""
    file = RECORD.file_defining(exercise)
    if file is None:
        raise ClusterError(msg.MSG_CLUSTER_NOTHING_RECORDED.format(name=exercise))
    job = {
        "entry": f"{__name__}:{replayed.__name__}",
        "exercise": exercise,
        "probe": f"{probe.__module__}:{probe.__qualname__}",
        "tests": dict(RECORD.tests),
        "file": file,
        "cells": RECORD.cells.get(file, []),
    }
    return launch(job, processes, devices_per_process, timeout)


def replayed(job: dict) -> Any:
    """In a launched process: replay a file's cells as the grader's worker ran them, then run
    the probe on the exercise's function."""
    join()
    os.environ[WORKER_ENV] = "1"  # the cells' device set-up, check() and run() stand down
    from grader import cases
    from grader.workers import seal as sealing
    from grader.workers.worker import Worker

    cases.install_sources(job["tests"])
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
