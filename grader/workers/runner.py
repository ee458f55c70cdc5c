"""Running a submission: its cells in a worker, then every test, whatever the code does.

:func:`run` executes one set of sources (a submission or the reference solutions) on one
device count and measures a list of cases, surviving crashes and hangs: a cell or an exercise
that kills or stalls its worker is recorded, the whole process group is killed, and a fresh
worker goes on without it. Then what the worker sent as programs is verified
(:mod:`grader.workers.verification`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from grader import cases as case_registry
from grader import messages as msg
from grader.cases import Case
from grader.workers import replies
from grader.workers.process import Stopped, WorkerDied, WorkerProcess, WorkerTimeout, stopping
from grader.workers.run import Run, Source
from grader.workers.sandbox import DEFAULT_SANDBOX, Limits, Sandbox, warn_without_sandbox
from grader.workers.verification import verify


def run(sources: Sequence[Source], cases: Sequence[Case], devices: int, limits: Limits,
        sandbox: Sandbox = DEFAULT_SANDBOX, reference: Run | None = None) -> Run:
    """Execute ``sources`` in a worker on ``devices`` devices and measure every case, within
    ``limits.run`` seconds in all. Programs the worker hands in are checked against the
    ``reference`` run's (the reference solutions' run on as many devices), if given."""
    warn_without_sandbox(sandbox)
    hidden_tests = case_registry.hidden_sources()
    result = Run(devices)
    ends = time.monotonic() + limits.run
    skip: set[int] = set()
    reported: set[int] = set()
    todo: dict[str, list[Case]] = {}
    for found in cases:
        todo.setdefault(found.exercise, []).append(found)

    if not sources:  # nothing to run: no worker needed to know that nothing is defined
        for exercise in list(todo):
            _settle(result, todo, exercise, {"missing": msg.MSG_NOT_FOUND.format(name=exercise)})
    while todo:
        if stopping():
            break
        if time.monotonic() >= ends:
            why = msg.MSG_RUN_TOO_LONG.format(seconds=limits.run, devices=devices)
            result.problems.append(why)
            _give_up(result, todo, why)
            break
        try:
            worker = WorkerProcess(devices, limits, sandbox)
        except OSError as exc:
            _could_not_go_on(result, todo, exc)
            break
        try:
            try:
                ready = worker.receive("ready", limits.start)
                worker.request("tests", limits.start, modules=hidden_tests)
            except WorkerDied as exc:  # before any student code ran: say what the worker said
                last = worker.tail.decode(errors="replace").strip().splitlines()[-1:]
                raise WorkerDied(msg.WORKER_ENDED_SAYING.format(how=exc, last=" ".join(last))) \
                    from None
            if not ready.get("ok"):
                raise WorkerDied(msg.WORKER_OTHER_DEVICES.format(devices=ready.get("devices")))
            if _load(worker, sources, skip, reported, result, limits, ends):
                _measure(worker, todo, result, limits, ends)
        except (WorkerDied, WorkerTimeout) as exc:  # not the submission's doing
            if time.monotonic() < ends and not stopping():
                _could_not_go_on(result, todo, exc)
            # otherwise the top of the loop says why: the run's time is up, or the grader stops
        finally:
            worker.close()
    if not stopping():
        verify(result, limits, sandbox, reference, ends)
    if stopping():  # what a killed worker measured last is not to be trusted
        raise Stopped
    return result


def _could_not_go_on(result: Run, todo: dict[str, list[Case]], exc: Exception) -> None:
    """A worker would not start or answer: every case left is not run, and the run is marked
    unfinished, so that it is reported but not kept."""
    why = str(exc) or "no answer in time"
    result.unfinished = msg.MSG_WORKER_FAILED.format(devices=result.devices, why=why)
    _give_up(result, todo, result.unfinished)


def _load(worker, sources, skip, reported, result, limits, ends) -> bool:
    """Run the sources not skipped; False when one of them took the worker down, or the
    run's time (``ends``) ran out."""
    for index, source in enumerate(sources):
        if index in skip:
            continue
        seconds = min(limits.cell, ends - time.monotonic())
        try:
            reply = worker.request(
                "cell", seconds, file=source.file, label=source.label, source=source.code
            )
        except (WorkerDied, WorkerTimeout) as exc:
            if isinstance(exc, WorkerTimeout) and seconds < limits.cell:
                return False  # the run's time is up, whatever this cell's share of it
            skip.add(index)
            reported.add(index)
            if isinstance(exc, WorkerTimeout):
                text = msg.MSG_CELL_TIMEOUT.format(where=source.label, seconds=limits.cell)
            else:
                text = msg.MSG_CELL_CRASHED.format(where=source.label, how=exc)
            result.problems.append(text)
            return False
        if not reply.get("ok") and index not in reported:
            reported.add(index)
            error = reply.get("error") or {}
            result.problems.append(
                msg.MSG_CELL_RAISED.format(
                    where=source.label,
                    type=str(error.get("type", "an error"))[:case_registry.TYPE_NAME],
                    message=str(error.get("message", ""))[:case_registry.EXCERPT],
                )
            )
    return True


def _measure(worker, todo: dict[str, list[Case]], result: Run, limits: Limits,
             ends: float) -> None:
    """Measure the cases of every exercise still to do, removing each as it is done; stop at
    the first exercise that took the worker down or stalled it, or when the run's time
    (``ends``) is up, leaving what was not measured in ``todo``."""
    seconds = min(limits.cell, ends - time.monotonic())
    try:
        found = worker.request("lookup", seconds, names=list(todo)).get("found", {})
    except (WorkerDied, WorkerTimeout) as exc:  # the cells left something that stalls it
        if isinstance(exc, WorkerTimeout) and seconds < limits.cell:
            return  # the run's time is up, which run() reports
        how = f"took over {seconds:g} s" if isinstance(exc, WorkerTimeout) else f"failed: {exc}"
        _give_up(result, todo, msg.MSG_LOOKUP_FAILED.format(how=how, devices=worker.devices))
        return
    for exercise in list(todo):
        kind = found.get(exercise, "missing")
        if kind != "function":
            text = (
                msg.MSG_NOT_FOUND.format(name=exercise)
                if kind == "missing"
                else msg.MSG_NOT_CALLABLE.format(name=exercise, kind=kind)
            )
            _settle(result, todo, exercise, {"missing": text})
    for exercise in list(todo):
        own = time.monotonic() + limits.exercise
        deadline = min(own, ends)
        pending = todo.pop(exercise)
        for i, c in enumerate(pending):
            try:
                reply = worker.request("probe", deadline - time.monotonic(), case_id=c.id)
            except WorkerTimeout:
                if deadline < own:  # the run's time is up: not this exercise's fault
                    todo[exercise] = pending[i:]
                    return
                failure = {"ok": False, "timeout": limits.exercise, "devices": worker.devices}
            except WorkerDied as exc:
                failure = {"ok": False, "crashed": str(exc), "devices": worker.devices}
            else:
                result.kept += worker.cost
                result.kept_bytes += worker.size
                if result.kept > replies.MAX_RUN_ITEMS:  # kept until judged: bounded
                    reply = replies.failed(msg.MSG_REPLIES_TOO_LARGE.format(
                        devices=worker.devices, items=replies.MAX_RUN_ITEMS))
                elif result.kept_bytes > replies.MAX_RUN_BYTES:  # in values and in bytes
                    reply = replies.failed(msg.MSG_REPLIES_TOO_MANY_BYTES.format(
                        devices=worker.devices, mib=replies.MAX_RUN_BYTES // 2**20))
                restored = reply.pop("restored", None)
                if restored:
                    text = msg.MSG_RESTORED.format(what=case_registry.changes(restored))
                    if text not in result.problems:
                        result.problems.append(text)
                result.outcomes[c.id] = reply
                continue
            for rest in pending[i:]:
                result.outcomes[rest.id] = failure
            return


def _settle(result: Run, todo: dict[str, list[Case]], exercise: str, outcome: dict) -> None:
    """Give every case of ``exercise`` the same failed outcome and take it off the list."""
    for c in todo.pop(exercise):
        result.outcomes[c.id] = {"ok": False, **outcome}


def _give_up(result: Run, todo: dict[str, list[Case]], why: str) -> None:
    for exercise in list(todo):
        _settle(result, todo, exercise, {"not_run": why})
