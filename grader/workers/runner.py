"""Running a submission: its cells in a worker, then every test, whatever the code does.

:func:`run` executes one set of sources (a submission or the reference solutions) on one
device count and measures a list of cases, surviving crashes and hangs: a cell or an exercise
that kills or stalls its worker is recorded, the whole process group is killed, and a fresh
worker goes on without it. Each case's probe runs in a tester (:mod:`grader.workers.tester`),
which holds the tests; the runner relays each request it makes of the function to the worker
and the worker's reply back, so the worker never holds a test. Then what the worker sent as
programs is verified (:mod:`grader.workers.verification`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from grader import messages as msg
from grader.framework import cases as case_registry
from grader.framework.cases import Case
from grader.workers import replies
from grader.workers.pool import Pool
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
    result = Run(devices)
    ends = time.monotonic() + limits.run
    todo: dict[str, list[Case]] = {}
    for found in cases:
        todo.setdefault(found.exercise, []).append(found)

    if not sources:  # nothing to run: no worker needed to know that nothing is defined
        for exercise in list(todo):
            _settle(result, todo, exercise, {"missing": msg.MSG_NOT_FOUND.format(name=exercise)})
    # Testers and verifiers run no code of the submission. A verifier reads the compiled
    # programs as its worker does, a tester the testers' own (the hidden tests' programs,
    # which no worker sees); both write them in the reference run alone, so a tester or
    # verifier of the reference run serves no submission (the pools keep them apart by
    # sandbox).
    # The tests' hint material is read from the reference's outcomes: made in its run alone.
    tester = _Tester((devices, limits, sandbox.testing()), material=reference is None)
    try:
        _run(sources, todo, result, limits, sandbox, tester, ends)
    finally:
        tester.release()
    if not stopping():
        verify(result, limits, sandbox, reference, ends)
    if stopping():  # what a killed worker measured last is not to be trusted
        raise Stopped
    return result


def _run(sources, todo, result, limits, sandbox, tester, ends) -> None:
    """Run the sources in a worker and measure every case of ``todo``, starting a fresh
    worker after one that crashed or stalled, until all are done or the run's time is up."""
    devices = result.devices
    skip: set[int] = set()
    reported: set[int] = set()
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
            except WorkerDied as exc:  # before any student code ran: say what the worker said
                last = worker.tail.decode(errors="replace").strip().splitlines()[-1:]
                raise WorkerDied(msg.WORKER_ENDED_SAYING.format(how=exc, last=" ".join(last))) \
                    from None
            if not ready.get("ok"):
                raise WorkerDied(msg.WORKER_OTHER_DEVICES.format(devices=ready.get("devices")))
            if _load(worker, sources, skip, reported, result, limits, ends):
                _measure(worker, tester, todo, result, limits, ends)
        except (WorkerDied, WorkerTimeout) as exc:  # not the submission's doing
            if time.monotonic() < ends and not stopping():
                _could_not_go_on(result, todo, exc)
            # otherwise the top of the loop says why: the run's time is up, or the grader stops
        except _TesterFailed as exc:  # the grader's own failure
            _could_not_go_on(result, todo, exc)
        finally:
            worker.close()


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


def _measure(worker: WorkerProcess, tester: _Tester, todo: dict[str, list[Case]],
             result: Run, limits: Limits, ends: float) -> None:
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
                reply = _probe(worker, tester, c, deadline, result)
            except _TesterFailed:
                todo[exercise] = pending[i:]  # not run, the run unfinished: see _run
                raise
            except WorkerTimeout:
                if deadline < own:  # the run's time is up: not this exercise's fault
                    todo[exercise] = pending[i:]
                    return
                failure = {"ok": False, "timeout": limits.exercise, "devices": worker.devices}
            except WorkerDied as exc:
                failure = {"ok": False, "crashed": str(exc), "devices": worker.devices}
            else:
                if result.kept > replies.MAX_RUN_ITEMS:  # kept until judged: bounded
                    reply = replies.failed(msg.MSG_REPLIES_TOO_LARGE.format(
                        devices=worker.devices, items=replies.MAX_RUN_ITEMS))
                elif result.kept_bytes > replies.MAX_RUN_BYTES:  # in values and in bytes
                    reply = replies.failed(msg.MSG_REPLIES_TOO_MANY_BYTES.format(
                        devices=worker.devices, mib=replies.MAX_RUN_BYTES // 2**20))
                result.outcomes[c.id] = reply
                if not reply.get("ok") and tester.process is None \
                        and any(key in reply for key in LASTS):
                    # The worker's answer ended this test and the tester was dropped mid-probe:
                    # it would end each of the exercise's others too, each at the cost of a
                    # tester. They fail with it at once.
                    for rest in pending[i + 1:]:
                        result.outcomes[rest.id] = reply
                    break
                continue
            for rest in pending[i:]:
                result.outcomes[rest.id] = failure
            return


#: What a test may ask of the worker about the function under test (see grader.remote).
ASKS = ("call", "export", "shardings", "replay")
#: What a worker's reply to such a request may say that ends the test at once: the seal was
#: broken, a thread ran, or the reply could not be read (see grader.workers.replies).
ENDS_THE_TEST = ("tampered", "threads", "unreadable")
#: What ends the exercise with it when the worker's answer says it: a thread, which outlives
#: the test; an answer that cannot be read (one forged in the worker's place, or one far larger
#: than any test needs), which the exercise's other tests would meet again. (A tester's
#: outcome that cannot be read fails its own test alone.)
LASTS = ("threads", "unreadable")


def _probe(worker: WorkerProcess, tester: _Tester, found: Case, deadline: float,
           result: Run) -> dict:
    """Run one case's probe in the tester, relaying each of its requests of the function to
    the worker, within ``deadline``; the outcome. Raises WorkerTimeout or WorkerDied when the
    worker (or, for the time, the tester) does, and _TesterFailed when the tester cannot be
    had; a tester left mid-probe is closed."""
    helper = tester.get()
    try:
        req = helper.send("probe", case_id=found.id, material=tester.material)
        while True:
            reply = helper.receive(req, deadline - time.monotonic(), "probe")
            ask = reply.get("ask")
            if ask is None:  # its outcome, kept until judged: counted (see replies)
                result.kept += helper.cost
                result.kept_bytes += helper.size
                return reply
            op = ask.get("op") if isinstance(ask, dict) else None
            if op not in ASKS:
                tester.drop()
                return {"ok": False, "not_run": msg.MSG_NO_SUCH_REQUEST}
            answer = worker.request(op, deadline - time.monotonic(),
                                    **{k: v for k, v in ask.items() if k != "op"})
            if not answer.get("ok") and any(key in answer for key in ENDS_THE_TEST):
                tester.drop()
                return answer
            restored = answer.pop("restored", None)
            if restored:
                text = msg.MSG_RESTORED.format(what=case_registry.changes(restored))
                if text not in result.problems:
                    result.problems.append(text)
            helper.answer(req, reply=answer)
    except WorkerDied as exc:
        if tester.process is helper and helper.process.poll() is not None:  # the tester's end
            tester.drop()
            return {"ok": False, "not_run": msg.MSG_TESTER_DIED.format(how=exc)}
        tester.drop()
        raise
    except BaseException:  # a timeout, or the grader stopping: never pooled mid-probe
        tester.drop()
        raise


class _TesterFailed(Exception):
    """No tester could be started: the grader's own failure."""


class _Tester:
    """A run's tester (see grader.workers.tester): taken from the pool when first needed, put
    back when the run is done, closed when left mid-probe."""

    def __init__(self, kind: tuple, material: bool) -> None:
        self.kind = kind
        self.material = material
        self.process: WorkerProcess | None = None

    def get(self) -> WorkerProcess:
        if self.process is None:
            try:
                self.process = TESTERS.take(self.kind)
            except (OSError, WorkerDied, WorkerTimeout) as exc:
                raise _TesterFailed(msg.MSG_TESTER_FAILED.format(
                    devices=self.kind[0], why=str(exc) or "no answer in time")) from None
        return self.process

    def drop(self) -> None:
        if self.process is not None:
            self.process.close()
            self.process = None

    def release(self) -> None:
        if self.process is not None:
            TESTERS.put(self.kind, self.process)
            self.process = None


def _install_tests(tester: WorkerProcess, limits: Limits) -> None:
    """Send a new tester the hidden tests (masked on disk in the sandbox)."""
    tester.request("tests", limits.start, modules=case_registry.hidden_sources())


#: Testers waiting for a run: they run none of a submission's code (see grader.workers.pool).
TESTERS = Pool("grader.workers.tester", prepare=_install_tests)


def _settle(result: Run, todo: dict[str, list[Case]], exercise: str, outcome: dict) -> None:
    """Give every case of ``exercise`` the same failed outcome and take it off the list."""
    for c in todo.pop(exercise):
        result.outcomes[c.id] = {"ok": False, **outcome}


def _give_up(result: Run, todo: dict[str, list[Case]], why: str) -> None:
    for exercise in list(todo):
        _settle(result, todo, exercise, {"not_run": why})
