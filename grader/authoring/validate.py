"""``python -m grader validate``: is the course ready to hand out and to grade?

The reference solutions score full marks, the generated stubs score zero, ``exercises/`` is in
sync with ``solutions/``, and every exercise has public and hidden tests.
"""

from __future__ import annotations

from grader import cases
from grader import messages as msg
from grader.authoring import generate
from grader.course import EXERCISE_NOTEBOOKS, EXERCISES, SOLUTIONS
from grader.grading import grade
from grader.workers.sandbox import DEFAULT_LIMITS, Limits


def problems(limits: Limits = DEFAULT_LIMITS) -> list[str]:
    """Everything wrong with the course; an empty list when it is ready."""
    found = [f"exercises/{name} is not what solutions/ generates (run `make exercises`)"
             for name in generate.stale_exercises()]
    every = cases.load()
    for exercise in EXERCISES:
        kinds = {c.hidden for c in every if c.exercise == exercise.name}
        for hidden, kind in ((False, "public"), (True, "hidden")):
            if hidden not in kinds:
                found.append(f"{exercise.name} has no {kind} test")
    jobs = grade.default_jobs()
    try:
        wants = grade.reference(SOLUTIONS, every, limits, jobs=jobs)
    except grade.GradingError as exc:
        return [*found, str(exc)]
    stubs = grade.grade_entry(EXERCISE_NOTEBOOKS, every, wants, limits, jobs=jobs)
    for name, result in stubs.exercises.items():
        if result.points or result.status != msg.NOT_ATTEMPTED:
            found.append(f"the stub of {name} scores {result.points:g} ({result.status})")
    return found
