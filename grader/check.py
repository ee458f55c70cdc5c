"""``check(fn)``: the public tests of one exercise, run in the student's own kernel and, on
the grader's other device counts, in a process of its own (:mod:`grader.check_elsewhere`).

Expected values come from the stored file of :mod:`grader.framework.expected`; from a terminal,
:mod:`grader.notebook_check` runs it on each exercise of a notebook.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator

from grader import check_elsewhere, reuse
from grader import messages as msg
from grader.course import ALL_DEVICE_COUNTS, BY_NAME
from grader.devices import DEFAULT_DEVICES, WORKER_ENV
from grader.framework import cases, expected
from grader.framework.compare import measure_here
from grader.framework.results import ExerciseResult, TestResult

#: True while ``python -m grader.notebook_check`` runs a notebook's cells (:func:`deferred`).
_deferred = False


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """While in it, ``check`` returns None at once: ``notebook_check`` runs a notebook's
    cells, whose ``check(...)`` calls it then makes itself, once per exercise."""
    global _deferred
    before, _deferred = _deferred, True
    try:
        yield
    finally:
        _deferred = before


def check(exercise: Callable | str) -> ExerciseResult | None:
    """Run the public tests of an exercise on this kernel's devices and show the result;
    where they all pass, run them on the grader's other device counts as well, in a process
    of CPU devices of its own (:mod:`grader.check_elsewhere`).

    Pass the function you wrote (``check(nan_mean_var)``). Inside the grader this does
    nothing and returns None: grading never depends on it.
    """
    if os.environ.get(WORKER_ENV) or _deferred:
        return None
    import jax

    name = exercise if isinstance(exercise, str) else getattr(exercise, "__name__", "")
    if name not in BY_NAME:
        known = ", ".join(BY_NAME)
        raise ValueError(msg.CHECK_UNKNOWN_EXERCISE.format(name=name, known=known))
    if isinstance(exercise, str):
        raise TypeError(msg.CHECK_PASS_FUNCTION.format(name=name))
    reuse.install()  # a function run eagerly, called again by each test, is not compiled again
    devices = jax.device_count()
    public = cases.for_exercise(name, hidden=False)
    counts = [devices, *(n for n in BY_NAME[name].device_counts if n != devices)]
    stored = expected.load()
    wants = {c.id: {n: stored.get(c.id, {}).get(str(n)) for n in counts} for c in public}
    unstored = [c for c in public if wants[c.id][devices] is None]
    if len(unstored) == len(public):
        note = _other_devices(name, devices, [devices])
        return ExerciseResult(name, [_no_expected(c, devices) for c in public], note, ran_on={})
    result = _run(exercise, name, [c for c in public if c not in unstored], wants, counts)
    if unstored:  # the others are checked all the same, in the order of the tests
        order = [c.name for c in public]
        result.tests = sorted([*result.tests, *(_no_expected(c, devices) for c in unstored)],
                              key=lambda t: order.index(t.test))
        result.ran_on = dict.fromkeys(result.ran_on or {}, False)
    return result


def _run(exercise: Callable, name: str, public: list[cases.Case],
         wants: dict[str, dict[int, dict]], counts: list[int]) -> ExerciseResult:
    """Run ``public`` on this kernel's devices (``counts[0]``), and, where they all pass,
    on the others (``counts[1:]``) in processes of their own."""
    devices = counts[0]
    for n in ALL_DEVICE_COUNTS:  # ready for the exercises that the grader runs on them
        if n != devices:
            check_elsewhere.started(n)
    elsewhere, unrun = {}, []
    for n in counts[1:]:  # started first: they run while this kernel runs its own
        try:
            elsewhere[n] = check_elsewhere.Run(exercise, name, n)
        except check_elsewhere.CannotRun as why:
            unrun.append(msg.CHECK_NOT_RUN_ELSEWHERE.format(devices=n, why=why))
    try:
        with reuse.measuring():
            found = {devices: measure_here(exercise, public,
                                           {i: w[devices] for i, w in wants.items()}, devices)}
        results = _decide(public, found, wants)
        if any(r.status != msg.PASSED for r in results):  # the first failure is shown
            return _result(name, public, found, wants, _other_devices(name, devices, [devices]))
        for n in list(elsewhere):
            try:
                found[n] = elsewhere.pop(n).outcomes()
            except check_elsewhere.CannotRun as why:
                unrun.append(msg.CHECK_NOT_RUN_ELSEWHERE.format(devices=n, why=why))
    finally:
        for run in elsewhere.values():  # not waited for
            run.cancel()
    note = " ".join([*filter(None, [_other_devices(name, devices, list(found))]), *unrun])
    return _result(name, public, found, wants, note or None)


def _result(name: str, public: list[cases.Case], found: dict[int, dict[str, dict]],
            wants: dict[str, dict[int, dict]], note: str | None) -> ExerciseResult:
    """The exercise's result from the outcomes ``found`` by device count, saying on which
    device counts every public test passed."""
    ran_on = {n: all(r.status == msg.PASSED for r in _decide(public, {n: got}, wants))
              for n, got in found.items()}
    return ExerciseResult(name, _decide(public, found, wants), note, ran_on=ran_on)


def _decide(public: list[cases.Case], outcomes: dict[int, dict[str, dict]],
            wants: dict[str, dict[int, dict]]) -> list:
    """Judge the public tests from their outcomes by device count, then case id."""
    return cases.decide_all(public, {c.id: {n: got[c.id] for n, got in outcomes.items()}
                                     for c in public},
                            {c.id: {n: wants[c.id][n] for n in outcomes} for c in public})


def _other_devices(name: str, devices: int, run: list[int]) -> str | None:
    """What to say when the grader grades this exercise on device counts that were not
    ``run``: the kernel's own ``devices`` differs from them and no other process ran them."""
    graded = BY_NAME[name].device_counts
    if set(graded) <= set(run):
        return None
    if devices in graded:
        return None  # those left out are said one by one, with why
    return msg.CHECK_OTHER_DEVICES.format(
        devices=devices, graded=" and ".join(map(str, graded)), default=DEFAULT_DEVICES)


def _no_expected(found: cases.Case, devices: int) -> TestResult:
    """The test cannot be checked on this kernel's ``devices``: on a device count the course
    stores, a value left unstored (the maintainers' to mend); on another, the kernel's."""
    if devices in expected.DEVICE_COUNTS:
        why = msg.MSG_NOT_STORED.format(test=found.name, devices=devices,
                                        lesson=BY_NAME[found.exercise].lesson)
    else:
        why = msg.MSG_NO_EXPECTED.format(devices=devices, default=DEFAULT_DEVICES)
    return TestResult(test=found.name, points=0, max_points=found.points, status=msg.ERROR,
                      message=why, devices=[devices])
