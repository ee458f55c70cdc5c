"""A small class graded with a stand-in for the workers, for tests of what grading does with
results (assignments, late work, the roster, regrading, exports, feedback): each submission's
text is the points its student gets on ``halo_difference`` out of 4, every other exercise graded is
not found. The real grading of real code is tested in test_cli.py and test_hostile_batch.py."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from grader import messages as msg
from grader.course import EXERCISES
from grader.framework.cases import Case
from grader.framework.results import ExerciseResult, StudentResult, TestResult
from grader.grading import grade, submission

HALO = "halo_difference"


def result_of(entry: Path, cases: Sequence[Case]) -> StudentResult:
    """What the stand-in makes of a submission, for the exercises ``cases`` test (a file that
    is not a number, such as code, gets 0 points; a folder 0 points, and what of it cannot be
    read is unreadable, as the grader says)."""
    unreadable = submission.load(entry).problems if entry.is_dir() else []
    try:
        points = 0.0 if entry.is_dir() else float(entry.read_text())
    except ValueError:
        points = 0.0
    exercises = {}
    tested = {c.exercise for c in cases}
    for name in (e.name for e in EXERCISES if e.name in tested):
        if name == HALO:
            status = msg.PASSED if points == 4 else msg.PARTIAL if points else msg.FAILED
            tests = [TestResult("values", points, 4, status, "" if points == 4 else "wrong",
                                hint="were the halos sent the right way round?",
                                got="[-1.  1.  0.]", want="[ 1. -1.  0.]")]
        else:
            tests = [TestResult("t", 0, 1, msg.NOT_FOUND, msg.MSG_NOT_FOUND.format(name=name))]
        exercises[name] = ExerciseResult(name, tests)
    return StudentResult(submission.student_name(entry), exercises, list(unreadable),
                         unreadable=list(unreadable))


def use(monkeypatch) -> None:
    """Grade with the stand-in: no reference run, no worker."""
    monkeypatch.setattr(grade, "reference", lambda *args, **kwargs: {})
    monkeypatch.setattr(grade, "grade_entry",
                        lambda entry, cases, *args, **kwargs: result_of(entry, cases))


def make_class(folder: Path, points: dict[str, float], when: float | None = None) -> Path:
    """A submissions folder: ``NAME.py`` holding the points of each student; files dated
    ``when`` (seconds since the epoch) if given."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, got in points.items():
        path = folder / f"{name}.py"
        path.write_text(f"{got:g}")
        if when is not None:
            os.utime(path, (when, when))
    return folder
