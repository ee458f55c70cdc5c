"""Verification: a verifier takes every measure a worker sent as a program.

What a worker says about how a function computes is the submission's word. :func:`verify`
has a verifier (:mod:`grader.workers.verifier`, a process where no submission code runs) take
each measure of each program, and run the program against the reference's; idle verifiers
serve one run after another.
"""

from __future__ import annotations

import secrets
import time

from grader import messages as msg
from grader.framework import cases as case_registry
from grader.framework import plain
from grader.workers.pool import Pool
from grader.workers.process import WorkerDied, WorkerTimeout, stopping
from grader.workers.run import Run
from grader.workers.sandbox import Limits, Sandbox


def verify(result: Run, limits: Limits, sandbox: Sandbox, reference: Run | None = None,
            ends: float | None = None) -> None:
    """Have a verifier take, in place, every measure a worker sent as a program (see
    :mod:`grader.workers.verifier`), each distinct program once, and run it against the
    ``reference`` run's program of the same case, place and measure. Where a reference run
    is given, a program it has no counterpart for fails (the test takes no such measure), as
    does a case whose program could not be measured, saying why; one whose program computes
    something else keeps its measures, for the judge's message and hint, with a ``differs``
    reason that stops it from passing; a case whose data claims to be verified already was
    forged, and fails.

    The programs of one exercise have ``limits.exercise`` seconds of the verifier in all,
    and every program must be done when the run's time (``ends``) is up: a program that
    takes longer costs its own cases, its verifier's whole sandbox is killed and a fresh
    verifier takes the next one."""
    todo: dict[tuple[str, str | None], list[tuple[str, tuple, object]]] = {}
    for case_id, outcome in result.outcomes.items():
        if not outcome.get("ok"):
            continue
        if plain.verified_paths(outcome.get("data")):
            result.outcomes[case_id] = {"ok": False, "unverified": "it claims to be verified"}
            continue
        for where, found in plain.programs(outcome.get("data")):
            blob, measure = found.get("blob"), found.get("measure")
            if not (isinstance(blob, str) and isinstance(measure, str)):
                result.outcomes[case_id] = {"ok": False, "unverified": "it is not a program"}
                break
            theirs = reference.programs.get((case_id, where, measure)) if reference else None
            if reference and theirs is None:  # the test took no such measure there
                result.outcomes[case_id] = {"ok": False, "unverified": "the test takes no "
                                            f"measure {measure[:40]!r} there"}
                break
            todo.setdefault((blob, theirs), []).append((case_id, where, measure))
    verifier, kind = None, (result.devices, limits, sandbox)
    deadlines: dict[str, float] = {}  # by exercise: when its programs' time is up
    try:
        for (blob, theirs), uses in todo.items():
            uses = [use for use in uses if result.outcomes[use[0]].get("ok")]
            if stopping() or not uses:
                continue  # stopping, or an earlier program of these cases failed
            now = time.monotonic()
            exercises = {case_registry.exercise_of(case_id) for case_id, _, _ in uses}
            for exercise in exercises:
                deadlines.setdefault(exercise, now + limits.exercise)
            seconds = min(deadlines[exercise] for exercise in exercises) - now
            if ends is not None and ends - now < seconds:
                seconds = ends - now
                late = msg.MSG_RUN_TOO_LONG.format(seconds=limits.run, devices=result.devices)
            else:
                late = msg.MSG_VERIFIER_TIME_UP.format(seconds=limits.exercise)
            if seconds <= 0:
                for case_id, _, _ in uses:
                    result.outcomes[case_id] = {"ok": False, "unverified": late}
                continue
            if verifier is None:
                try:
                    verifier = VERIFIERS.take(kind)
                except (OSError, WorkerDied, WorkerTimeout) as exc:
                    why = msg.MSG_VERIFIER_FAILED.format(devices=result.devices,
                                                         why=str(exc) or "no answer in time")
                    result.unfinished = result.unfinished or why
                    for case_id, _, _ in uses:
                        result.outcomes[case_id] = {"ok": False, "not_run": why}
                    continue
            try:
                reply = verifier.request("verify", seconds,
                                         measures=[measure for _, _, measure in uses], blob=blob,
                                         reference=theirs, seed=secrets.randbits(63))
            except (WorkerDied, WorkerTimeout) as exc:  # the program took it down: a new one
                verifier.close()
                verifier = None
                how = late if isinstance(exc, WorkerTimeout) else \
                    msg.MSG_VERIFIER_DIED.format(how=exc)
                reply = {"ok": False, "error": {"message": how}}
            measured = reply.get("measured")
            if reply.get("ok") and isinstance(measured, list) and len(measured) == len(uses):
                for (case_id, where, measure), taken in zip(uses, measured, strict=True):
                    outcome = result.outcomes[case_id]
                    if not outcome.get("ok"):
                        continue  # another of its measures failed
                    if not (isinstance(taken, dict) and taken.get("ok")):
                        result.outcomes[case_id] = {"ok": False, "unverified": _why(taken)}
                        continue
                    _put(outcome, where, {"verified": taken.get("data")})
                    if reply.get("differs"):  # judged as measured, and cannot pass
                        outcome["differs"] = str(reply["differs"])
                    else:
                        result.programs[(case_id, where, measure)] = blob
                continue
            for case_id, _, _ in uses:
                result.outcomes[case_id] = {"ok": False, "unverified": _why(reply)}
    finally:
        if verifier is not None:
            VERIFIERS.put(kind, verifier)


def records(result: Run, limits: Limits, sandbox: Sandbox, seed: int) -> dict[tuple, dict]:
    """The :func:`grader.framework.compare.record` of each program of a reference run
    (``result.programs``), made by a verifier on the run's devices, by (case id, place,
    measure): what ``refresh-expected`` stores for ``check``."""
    made: dict[tuple, dict] = {}
    kind = (result.devices, limits, sandbox)
    verifier = VERIFIERS.take(kind)
    try:
        for key, blob in result.programs.items():
            reply = verifier.request("record", limits.exercise, blob=blob, seed=seed)
            if not reply.get("ok") or not isinstance(reply.get("record"), dict):
                raise RuntimeError(msg.MSG_VERIFIER_FAILED.format(devices=result.devices,
                                                                  why=_why(reply)))
            made[key] = reply["record"]
    except BaseException:
        verifier.close()
        raise
    VERIFIERS.put(kind, verifier)
    return made


def _why(reply: object) -> str:
    """The reason a verifier gave for not taking a measure (or the grader, reading it)."""
    if isinstance(reply, dict) and isinstance(reply.get("unreadable"), str):
        return reply["unreadable"]
    error = reply.get("error") if isinstance(reply, dict) else None
    return str(error.get("message", "unknown error") if isinstance(error, dict)
               else "unknown error")


#: Verifiers waiting for work. A verifier runs none of a submission's code, so it serves one
#: run after another; one that crashed or stalled is never put back.
VERIFIERS = Pool("grader.workers.verifier")


def _put(outcome: dict, where: tuple, value: dict) -> None:
    """Replace the tagged value at ``where`` (keys and indices) in an outcome's data."""
    if not where:
        outcome["data"] = value
        return
    container = outcome["data"]
    for step in where[:-1]:
        container = next(iter(container.values()))[step]
    next(iter(container.values()))[where[-1]] = value
