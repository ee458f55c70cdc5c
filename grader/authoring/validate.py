"""``python -m grader validate``: is the course ready to hand out and to grade?

The reference solutions score full marks, the generated stubs score zero, ``exercises/`` is in
sync with ``solutions/``, and every exercise has public and hidden tests. Each step says what
it checked as it goes (the two runs take most of a minute).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import nbformat

from grader import messages as msg
from grader.authoring import generate, texts
from grader.course import BY_NAME, EXERCISE_NOTEBOOKS, EXERCISES, LESSONS, SOLUTIONS
from grader.framework import cases, expected
from grader.grading import grade
from grader.workers.run import Run
from grader.workers.sandbox import DEFAULT_LIMITS, Limits


def problems(limits: Limits = DEFAULT_LIMITS,
             say: Callable[[str], None] = lambda line: None,
             only: Sequence[str] = ()) -> list[str]:
    """Everything wrong with the course; an empty list when it is ready. ``say`` hears a line
    for each step: what it checked, and how long it took. ``only``: lessons or exercises, by
    name, to validate alone (their lessons' notebooks, their tests, their stubs), where the
    whole course takes minutes."""
    start = time.monotonic()
    chosen = chosen_exercises(only)
    lessons = {e.lesson for e in EXERCISES if e.name in chosen}

    def step(text: str, **values) -> None:
        say(f"[{time.monotonic() - start:4.0f} s] " + text.format(**values))

    stale = [name for name in generate.stale_exercises() if name.removesuffix(".ipynb") in lessons
             or name.removesuffix(".ipynb") not in LESSONS]
    found = [f"exercises/{name} is not what solutions/ generates (run `make exercises`)"
             for name in stale]
    found += [leak for path in sorted(SOLUTIONS.glob("*.ipynb")) if path.stem in lessons
              for leak in generate.leaks(nbformat.read(path, as_version=4), path.name)]
    step(texts.VALIDATE_SYNC, notebooks=len([p for p in SOLUTIONS.glob("*.ipynb")
                                             if p.stem in lessons]),
         verdict=texts.VALIDATE_BAD.format(count=len(found)) if found else "ok")
    every = [c for c in cases.load() if c.exercise in chosen]
    missing = []
    for exercise in (e for e in EXERCISES if e.name in chosen):
        kinds = {c.hidden for c in every if c.exercise == exercise.name}
        for hidden, kind in ((False, "public"), (True, "hidden")):
            if hidden not in kinds:
                missing.append(f"{exercise.name} has no {kind} test")
    found += missing
    step(texts.VALIDATE_TESTS, exercises=len(chosen),
         public=sum(not c.hidden for c in every), hidden=sum(c.hidden for c in every),
         verdict=texts.VALIDATE_BAD.format(count=len(missing)) if missing else "ok")
    jobs = grade.default_jobs()
    counts = grade.device_counts(every)
    step(texts.VALIDATE_RUNNING, what="the reference solutions", tests=len(every),
         devices=" and ".join(map(str, counts)))
    try:
        wants = grade.reference(SOLUTIONS, every, limits, jobs=jobs)
    except grade.GradingError as exc:
        step(texts.VALIDATE_SOLUTIONS_FAIL)
        return [*found, str(exc)]
    points = sum(c.points for c in every)
    step(texts.VALIDATE_SOLUTIONS, points=points)
    unstored = stored_problems(every, wants)
    found += unstored
    step(texts.VALIDATE_STORED, public=sum(not c.hidden for c in every),
         stored=" and ".join(map(str, expected.DEVICE_COUNTS)),
         devices=" and ".join(map(str, counts)),
         verdict=texts.VALIDATE_BAD.format(count=len(unstored)) if unstored else "ok")
    step(texts.VALIDATE_RUNNING, what="the stubs of exercises/", tests=len(every),
         devices=" and ".join(map(str, counts)))
    stubs = grade.grade_entry(EXERCISE_NOTEBOOKS, every, wants, limits, jobs=jobs)
    scoring = []
    for name, result in stubs.exercises.items():
        if result.points or result.status != msg.NOT_ATTEMPTED:
            scoring.append(f"the stub of {name} scores {result.points:g} ({result.status})")
    found += scoring
    step(texts.VALIDATE_STUBS, exercises=len(stubs.exercises), points=stubs.total,
         verdict=texts.VALIDATE_BAD.format(count=len(scoring)) if scoring else "ok")
    return found


def chosen_exercises(only: Sequence[str]) -> list[str]:
    """The exercises ``only`` names, itself or by lesson (every one if it names none); a
    ValueError naming what is not a lesson or an exercise."""
    unknown = [name for name in only if name not in LESSONS and name not in BY_NAME]
    if unknown:
        raise ValueError(texts.VALIDATE_UNKNOWN.format(names=", ".join(unknown)))
    return [e.name for e in EXERCISES
            if not only or e.name in only or e.lesson in only]


def stored_problems(every: list[cases.Case], wants: dict[int, Run]) -> list[str]:
    """What is wrong with the expected values ``check`` reads: a public test with no stored
    value on a device count the course stores, or one that is not what the reference run
    (``wants``, by device count) measured, beyond a float's last bits."""
    stored = expected.load()
    found = []
    for c in (c for c in every if not c.hidden):
        for n in expected.DEVICE_COUNTS:
            value = stored.get(c.id, {}).get(str(n))
            if value is None:
                found.append(texts.VALIDATE_UNSTORED.format(case=c.id, devices=n))
            elif n in wants and c.id in wants[n].outcomes:
                where = expected.differences(value.get("data"), wants[n].outcomes[c.id]["data"])
                if where:
                    found.append(texts.VALIDATE_STALE.format(case=c.id, devices=n,
                                                             where=where[0] or "/"))
    return found
