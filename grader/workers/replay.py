"""Lesson 6's grader tests: a student's function called in several processes joined by
``jax.distributed``, each of which first replays the cells the worker ran.

A worker records what it ran in :data:`grader.workers.record.RECORD` (the cells of each file
in order, its namespaces). A hidden test, in the tester, calls :func:`replay` with the student's
function and a probe of a public test module; the worker is asked to run it (:func:`run`): the
processes are launched by :class:`grader.launcher.Cluster` (the lesson's launcher, kept for
one request after another), and each one runs :func:`grader.workers.launched.replaying`: it
joins the others and replays the cells of the file that defines the exercise, behind the
worker's seal, once; then, for each request, returns the probe's value on the exercise's
function. Nothing hidden is sent: the probe is public, and what it returned comes back to the
test as data.

A worker keeps one cluster for as long as the cells it replays stay the same: lesson 6's three
replayed tests then start two processes, not six, and replay the notebook twice, not six times
(the processes' start, their joining and the replay cost about 0.5 CPU-s each). Requests
share those processes as the worker's own tests share the worker: what one probe's call
changed of the seal is put back before the next. A request that fails or times out kills the
cluster, and the next one starts anew; so does a test of a function another file defines (the
next notebook's), and the end of the worker.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from grader import messages as msg
from grader.launcher import (
    DEFAULT_DEVICES_PER_PROCESS,
    DEFAULT_PROCESSES,
    Cluster,
    ClusterError,
)
from grader.remote import Remote
from grader.workers.record import RECORD

#: Seconds the processes of one :func:`replay` may take: well below a worker's per-exercise
#: limit (60 s by default), so that a hanging submission is reported as such.
REPLAY_TIMEOUT = 25.0
#: Where the probes run in launched processes come from: public test modules only.
PROBES = "grader.public."
#: What each launched process runs (:func:`grader.workers.launched.replaying`), named as the
#: job, which is plain data, names it.
ENTRY = "grader.workers.launched:replaying"
#: The cluster this worker keeps: what it was launched on (the file it replays, its cells,
#: processes and devices per process), and the cluster.
_KEPT: list[tuple[tuple, Cluster]] = []


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
    cells = list(RECORD.cells.get(file, []))
    launched = (file, cells, processes, devices_per_process)
    if not _KEPT or _KEPT[0][0] != launched:
        close()
        job = {"entry": ENTRY, "file": file, "cells": cells}
        _KEPT.append((launched, Cluster(job, processes, devices_per_process)))
    return _KEPT[0][1].ask({"exercise": exercise, "probe": probe}, timeout)


def asked_about(name: str) -> None:
    """The worker was asked about the function ``name``: a cluster kept for another file's
    cells ends, so that its processes do not hold the worker's memory and tasks through the
    tests of the next notebook."""
    if _KEPT and RECORD.file_defining(name) != _KEPT[0][0][0]:  # the file it replays
        close()


def close() -> None:
    """End the cluster this worker keeps, if any."""
    while _KEPT:
        _KEPT.pop()[1].close()
