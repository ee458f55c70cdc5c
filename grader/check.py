"""``check(fn)``: the public tests of one exercise, run in the student's own kernel.

Expected values come from the stored file of :mod:`grader.framework.expected`; from a terminal,
:mod:`grader.notebook_check` runs it on each exercise of a notebook.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from grader import messages as msg
from grader.course import BY_NAME
from grader.devices import DEFAULT_DEVICES, WORKER_ENV
from grader.framework import cases, expected
from grader.framework.results import ExerciseResult, TestResult


def check(exercise: Callable | str) -> ExerciseResult | None:
    """Run the public tests of an exercise on this kernel's devices and show the result.

    Pass the function you wrote (``check(shard_map_psum)``). Inside the grader this does
    nothing and returns None: grading never depends on it.
    """
    if os.environ.get(WORKER_ENV):
        return None
    import jax

    name = exercise if isinstance(exercise, str) else getattr(exercise, "__name__", "")
    if name not in BY_NAME:
        known = ", ".join(BY_NAME)
        raise ValueError(msg.CHECK_UNKNOWN_EXERCISE.format(name=name, known=known))
    if isinstance(exercise, str):
        raise TypeError(msg.CHECK_PASS_FUNCTION.format(name=name))
    devices = jax.device_count()
    note = _other_devices(name, devices)
    public = cases.for_exercise(name, hidden=False)
    wants = {c.id: expected.load().get(c.id, {}).get(str(devices)) for c in public}
    if any(want is None for want in wants.values()):
        return ExerciseResult(name, [_no_expected(c, devices) for c in public], note)
    return ExerciseResult(name, judge_here(exercise, public, wants, devices), note)


def judge_here(fn: Callable, found: list[cases.Case], wants: dict[str, dict],
               devices: int) -> list[TestResult]:
    """Run ``found`` on ``fn`` in this process, on its ``devices``, and judge them as the
    grader judges against ``wants``, the reference's outcomes by case id (a test of how it
    computes counts once its values are right). ``check`` runs the public cases; the
    side-by-side benchmark's nbgrader test cells, the hidden ones."""
    import jax

    outcomes, made = {}, {}
    for case in found:
        made[case.id] = []
        outcome = cases.measure(case, fn, made[case.id])
        if outcome.get("error", {}).get("type") == "KeyboardInterrupt":
            raise KeyboardInterrupt  # the student pressed stop: stop, not just this test
        outcomes[case.id] = {devices: outcome}
    stored = {c.id: {devices: wants[c.id]} for c in found}
    # the records were made on CPU devices, as the grader grades: another chip's results and
    # temporaries differ from them by more than a program's do
    if jax.default_backend() == "cpu" and not cases.values_wrong(found, outcomes, stored):
        for case in found:
            _compare_programs(outcomes[case.id][devices], made[case.id], wants[case.id])
    return cases.decide_all(found, outcomes, stored)


def _compare_programs(outcome: dict, made: list, want: dict) -> None:
    """Compare each program a test of how the function computes measured with the reference
    solution's, as the grader does (:func:`grader.workers.verifier.against`, on the stored
    record of the reference's program): a program that computes something else, whose
    collective carries nothing, or that goes past the reference's bounds, cannot pass."""
    from grader.workers.verifier import against

    programs = dict(made)
    for stored in want.get("programs", []) if outcome.get("ok") else []:
        program = programs.get(tuple(stored["where"]))
        why = program is not None and against(program, stored["record"])
        if why:
            outcome["differs"] = why
            return


def _other_devices(name: str, devices: int) -> str | None:
    """What to say when this kernel has other devices than the grader grades on."""
    if devices == DEFAULT_DEVICES:
        return None
    graded = BY_NAME[name].device_counts
    return msg.CHECK_OTHER_DEVICES.format(
        devices=devices, graded=" and ".join(map(str, graded)), default=DEFAULT_DEVICES)


def _no_expected(found: cases.Case, devices: int) -> TestResult:
    return TestResult(
        test=found.name,
        points=0,
        max_points=found.points,
        status=msg.ERROR,
        message=msg.MSG_NO_EXPECTED.format(devices=devices, default=DEFAULT_DEVICES),
        devices=[devices],
    )
