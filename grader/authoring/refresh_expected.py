"""``python -m grader refresh-expected [LESSON_OR_EXERCISE ...]``: the public tests' expected
values, recomputed from the reference solutions in grader workers and stored for ``check``
(:mod:`grader.framework.expected` reads them). Given exercises, only their tests are run and
their lesson's other stored values are kept."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

from grader import course
from grader.authoring import texts
from grader.authoring.validate import chosen_exercises
from grader.course import BY_NAME, in_repository
from grader.framework import cases
from grader.framework.expected import CHECK_SEED, DEVICE_COUNTS, FOLDER, keep_stored, load, path
from grader.grading import submission
from grader.workers.runner import run
from grader.workers.sandbox import DEFAULT_LIMITS, DEFAULT_SANDBOX, Limits
from grader.workers.verification import records


def compute(solutions: Path, lesson: str, limits: Limits = DEFAULT_LIMITS,
            hidden: bool = False, device_counts: Sequence[int] = DEVICE_COUNTS,
            exercises: Sequence[str] | None = None,
            say: Callable[[str], None] = lambda line: None) -> dict:
    """Run the public cases of one lesson (only those of ``exercises``, if given; and the
    hidden ones, if asked: for the side-by-side benchmark's nbgrader test cells) on the
    reference solutions, for every device count stored (or those given). ``say`` hears a line
    as each device count starts."""
    from grader.grading.grade import GradingError

    chosen = [c for c in cases.load(hidden) if BY_NAME[c.exercise].lesson == lesson
              and (exercises is None or c.exercise in exercises)]
    sources = submission.load(solutions).sources
    table: dict[str, dict[str, dict]] = {c.id: {} for c in chosen}
    for devices in device_counts:
        say(texts.REFRESH_RUNNING.format(lesson=lesson, tests=len(chosen), devices=devices))
        measured = run(sources, chosen, devices, limits)
        for case_id, outcome in measured.outcomes.items():
            if not outcome.get("ok"):
                raise GradingError(texts.REFERENCE_FAILS.format(
                    case=case_id, devices=devices, outcome=outcome))
            table[case_id][str(devices)] = outcome
        # what check() compares a student's program with, as the grader does
        for (case_id, where, measure), record in records(
                measured, limits, DEFAULT_SANDBOX, CHECK_SEED).items():
            table[case_id][str(devices)].setdefault("programs", []).append(
                {"where": list(where), "measure": measure, "record": record})
    return table


def render(table: dict[str, dict[str, dict]]) -> str:
    return json.dumps({"cases": table}, indent=1, sort_keys=True) + "\n"


def chosen(names: Sequence[str]) -> dict[str, list[str] | None]:
    """The lessons that ``names`` (lessons or exercises; none: every lesson) touch, each with
    the exercises to refresh there (None: all of them, the lesson being named or nothing
    being). ValueError names what is neither, as validate's selection does."""
    lessons: dict[str, list[str]] = {}
    for name in chosen_exercises(names):
        lessons.setdefault(BY_NAME[name].lesson, []).append(name)
    return {lesson: None if not names or lesson in names else exercises
            for lesson, exercises in lessons.items()}


def refresh(names: Sequence[str] = (), solutions: Path | None = None,
            say: Callable[[str], None] = lambda line: None) -> list[str]:
    """Recompute and store the expected values of some lessons or exercises (every lesson by
    default); an exercise's lesson keeps its other stored values. A float the same as the
    stored one but for its last bits (:func:`~grader.framework.expected.differences`) keeps
    its stored digits, so that a refresh with nothing new leaves the files as they are.
    Returns the files that changed, as :func:`~grader.course.in_repository` names them."""
    FOLDER.mkdir(exist_ok=True)
    written = []
    for lesson, exercises in chosen(names).items():
        table = compute(solutions or course.SOLUTIONS, lesson, exercises=exercises, say=say)
        if path(lesson).exists():
            stored = json.loads(path(lesson).read_text())["cases"]
            if exercises is not None:  # the lesson's other exercises keep what is stored
                table = {**{case: value for case, value in stored.items()
                            if case.split(":", 1)[0] not in exercises}, **table}
            table = keep_stored(stored, table)
        text = render(table)
        if not path(lesson).exists() or path(lesson).read_text() != text:
            path(lesson).write_text(text)
            written.append(in_repository(path(lesson)))
    load.cache_clear()
    return written
