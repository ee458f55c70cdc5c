"""Points an instructor gives or takes by hand, on top of the tests, with the reason the
student reads: ``adjustments.csv`` in the output folder
(:data:`~grader.grading.outputs.ADJUSTMENTS`), CSV with the header
``student,exercise,points,comment``.

- ``student``: the name in the gradebook's first column; ``exercise``: an exercise the batch
  graded; ``points``: added to what the tests gave (negative takes away), the exercise staying
  between 0 and its points; ``comment``: why, shown in the student's feedback. A student may
  have several rows, also for one exercise.
- The file is the whole truth: ``python -m grader adjust OUT`` applies it to the graded
  results (the gradebook, feedback, summary and LMS exports follow); every later ``grade``,
  ``grade --student`` or regrade into OUT applies it again; editing the file and running
  ``adjust`` again replaces what it said before. Without the file (a ``merge`` into a new
  folder), the results keep the adjustments they were written with.

Each mistake in the file is one :class:`~grader.grading.roster.RosterError` naming the file and
the line, raised before anything is written.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from grader.framework.results import Adjustment, StudentResult
from grader.grading import texts
from grader.grading.roster import RosterError, csv_rows

COLUMNS = ("student", "exercise", "points", "comment")
#: The most points one row may give or take (no exercise is worth more).
LARGEST = 1000.0


@dataclass(frozen=True)
class Row:
    """One line of the file."""

    line: int
    student: str
    exercise: str
    adjustment: Adjustment


def read(path: Path) -> list[Row]:
    """The rows of an adjustments file, each checked on its own."""
    header, rows = csv_rows(path)
    if header != list(COLUMNS):
        raise RosterError(f"{path}:1: {texts.ADJUST_HEADER.format(columns=','.join(COLUMNS))}")
    read_rows = []
    for line, row in rows:
        student, exercise, points, comment = ((row.get(c) or "").strip() for c in COLUMNS)
        if not student or not exercise:
            raise RosterError(f"{path}:{line}: {texts.ADJUST_EMPTY}")
        try:
            value = float(points)
        except ValueError:
            value = math.nan
        if not -LARGEST <= value <= LARGEST:
            raise RosterError(f"{path}:{line}: {texts.ADJUST_BAD_POINTS.format(value=points)}")
        if not comment:
            raise RosterError(f"{path}:{line}: {texts.ADJUST_NO_COMMENT}")
        read_rows.append(Row(line, student, exercise, Adjustment(value, comment)))
    return read_rows


def unmatched(rows: Sequence[Row], results: Sequence[StudentResult]) -> list[str]:
    """Why each row that names no graded student's exercise matches nothing ("LINE: ...")."""
    exercises = {r.student: set(r.exercises) for r in results}
    why = []
    for row in rows:
        if row.student not in exercises:
            why.append(f"{row.line}: {texts.ADJUST_NO_STUDENT.format(student=row.student)}")
        elif row.exercise not in exercises[row.student]:
            why.append(f"{row.line}: {texts.ADJUST_NO_EXERCISE.format(exercise=row.exercise)}")
    return why


def apply(rows: Sequence[Row], results: Sequence[StudentResult]) -> list[StudentResult]:
    """The results with exactly the adjustments ``rows`` give (any others dropped); rows that
    match nothing (:func:`unmatched`) are left out."""
    given: dict[tuple[str, str], list[Adjustment]] = {}
    for row in rows:
        given.setdefault((row.student, row.exercise), []).append(row.adjustment)
    return [replace(result, exercises={
        name: replace(e, adjustments=given.get((result.student, name), []))
        for name, e in result.exercises.items()}) for result in results]


def count(results: Sequence[StudentResult]) -> int:
    """How many adjustments the results carry."""
    return sum(len(e.adjustments) for r in results for e in r.exercises.values())
