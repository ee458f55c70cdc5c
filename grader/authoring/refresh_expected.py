"""``python -m grader refresh-expected [LESSON ...]``: the public tests' expected values,
recomputed from the reference solutions in grader workers and stored for ``check``
(:mod:`grader.framework.expected` reads them)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from grader import course
from grader.authoring import texts
from grader.course import BY_NAME, LESSONS, in_repository
from grader.framework import cases
from grader.framework.expected import CHECK_SEED, DEVICE_COUNTS, FOLDER, keep_stored, load, path
from grader.grading import submission
from grader.workers.runner import run
from grader.workers.sandbox import DEFAULT_LIMITS, DEFAULT_SANDBOX, Limits
from grader.workers.verification import records


def compute(solutions: Path, lesson: str, limits: Limits = DEFAULT_LIMITS,
            hidden: bool = False, device_counts: Sequence[int] = DEVICE_COUNTS) -> dict:
    """Run the public cases of one lesson (and the hidden ones, if asked: for the side-by-side
    benchmark's nbgrader test cells) on the reference solutions, for every device count
    stored (or those given)."""
    from grader.grading.grade import GradingError

    chosen = [c for c in cases.load(hidden) if BY_NAME[c.exercise].lesson == lesson]
    sources = submission.load(solutions).sources
    table: dict[str, dict[str, dict]] = {c.id: {} for c in chosen}
    for devices in device_counts:
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


def refresh(lessons: Sequence[str] = (), solutions: Path | None = None) -> list[str]:
    """Recompute and store the expected values of some lessons (all by default). A float the
    same as the stored one but for its last bits
    (:func:`~grader.framework.expected.differences`) keeps its stored digits, so that a
    refresh with nothing new leaves the files as they are. Returns the files that changed, as
    :func:`~grader.course.in_repository` names them."""
    FOLDER.mkdir(exist_ok=True)
    written = []
    for lesson in lessons or LESSONS:
        if lesson not in LESSONS:
            raise ValueError(texts.UNKNOWN_LESSON.format(lesson=lesson, lessons=", ".join(LESSONS)))
        table = compute(solutions or course.SOLUTIONS, lesson)
        if path(lesson).exists():
            table = keep_stored(json.loads(path(lesson).read_text())["cases"], table)
        text = render(table)
        if not path(lesson).exists() or path(lesson).read_text() != text:
            path(lesson).write_text(text)
            written.append(in_repository(path(lesson)))
    load.cache_clear()
    return written
