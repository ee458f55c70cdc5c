"""Lesson 6's grader tests: a student's function called in several processes joined by
``jax.distributed``, each of which first replays the cells the worker ran.

A worker records what it ran in :data:`grader.workers.record.RECORD` (the cells of each file
in order, its namespaces). A hidden test, in the tester, calls :func:`replay` with the student's
function and a probe of a public test module; the worker is asked to run it (:func:`run`): the
processes are launched by :func:`grader.launcher.launch` (the lesson's launcher too), and
each one runs :func:`grader.workers.launched.replayed`: it joins the others, replays the
cells of the file that defines the exercise, behind the worker's seal, and returns the
probe's value. Nothing hidden
is sent: the probe is public, and what it returned comes back to the test as data.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from grader import messages as msg
from grader.launcher import (
    DEFAULT_DEVICES_PER_PROCESS,
    DEFAULT_PROCESSES,
    ClusterError,
    launch,
)
from grader.remote import Remote
from grader.workers.record import RECORD

#: Seconds the processes of one :func:`replay` may take: well below a worker's per-exercise
#: limit (60 s by default), so that a hanging submission is reported as such.
REPLAY_TIMEOUT = 25.0
#: Where the probes run in launched processes come from: public test modules only.
PROBES = "grader.public."
#: What each launched process runs (:func:`grader.workers.launched.replayed`), named as the
#: job, which is plain data, names it.
ENTRY = "grader.workers.launched:replayed"


def replay(
    fn: Remote,
    probe: Callable,
    *,
    processes: int = DEFAULT_PROCESSES,
    devices_per_process: int = DEFAULT_DEVICES_PER_PROCESS,
) -> list[Any]:
    """In each of ``processes`` processes, replay the cells of the file that defines the
    function under test ``fn`` as the worker ran them, then return ``probe(function)`` of
    every process. ``probe`` is a module-level function of a public test module."""
    if not isinstance(fn, Remote):
        raise TypeError(msg.MSG_CLUSTER_GRADER_ONLY)
    return fn.replay(probe, processes, devices_per_process)


def run(exercise: str, probe: str, processes: int, devices_per_process: int,
        timeout: float = REPLAY_TIMEOUT) -> list[Any]:
    """In the worker: launch the processes of :func:`replay` for ``exercise`` and the probe
    named ``probe`` (``module:function``)."""
    if not probe.startswith(PROBES):
        raise ValueError(msg.MSG_CLUSTER_PROBE.format(probe=probe[:80]))
    file = RECORD.file_defining(exercise)
    if file is None:
        raise ClusterError(msg.MSG_CLUSTER_NOTHING_RECORDED.format(name=exercise))
    job = {
        "entry": ENTRY,
        "exercise": exercise,
        "probe": probe,
        "file": file,
        "cells": RECORD.cells.get(file, []),
    }
    return launch(job, processes, devices_per_process, timeout)
