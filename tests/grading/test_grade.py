"""grade() itself: a batch with stand-ins for the workers (the grading of real hostile
submissions is tests/grading/test_hostile_batch.py).

A failure of the grader on one entry costs only that entry; progress is reported; results are
stored, reused, and written again when tampered with; a result the grader could not finish is
shown but not kept.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from grader import cases
from grader import messages as msg
from grader.course import EXERCISES
from grader.grading import grade, submission
from grader.grading.progress import Progress
from grader.results import ExerciseResult, StudentResult, TestResult
from grader.workers import process
from grader.workers.run import Run
from grader.workers.sandbox import Limits

LIMITS = Limits(exercise=20, cell=20)


def test_a_grader_failure_on_one_entry_costs_only_that_entry(tmp_path, monkeypatch):
    """If the grader itself breaks on a submission, is that student told why, at 0 points,
    instead of the batch stopping?"""

    def broken_measure(*args, **kwargs):
        raise RuntimeError("simulated grader bug")

    monkeypatch.setattr(grade, "measure", broken_measure)
    entry = tmp_path / "dora.py"
    entry.write_text("def ring_shift(x):\n    return x\n")
    no_reference = {n: Run(n) for n in grade.device_counts(cases.load())}
    result = grade.grade_entry(entry, cases.load(), wants=no_reference, limits=LIMITS)
    assert result.student == "dora" and result.total == 0
    assert result.max_total == sum(c.points for c in cases.load())
    ring = result.exercises["ring_shift"]
    assert ring.status == "failed" and "simulated grader bug" in ring.message


# --- grade() itself, with a stand-in for the workers ---------------------------------------
def stand_in_result(entry: Path) -> StudentResult:
    """What the stand-in grader makes of a submission: its text is the points of ring_shift
    (out of 4); every other exercise is not found."""
    exercises = {e.name: ExerciseResult(e.name, [TestResult("t", 0, 1, "not found")])
                 for e in EXERCISES}
    points = float(entry.read_text())
    exercises["ring_shift"] = ExerciseResult(
        "ring_shift", [TestResult("t", points, 4, "passed" if points == 4 else "failed")])
    return StudentResult(submission.student_name(entry), exercises)


class Recorder(Progress):
    def __init__(self) -> None:
        self.events: list[tuple] = []

    def start(self, total):
        self.events.append(("start", total))

    def begin(self, student):
        self.events.append(("begin", student))

    def finish(self, result, reused):
        self.events.append(("finish", result.student, reused))


def test_grade_reports_progress_stores_each_result_and_undoes_tampering(
        tmp_path, monkeypatch, capsys):
    """Does grade() tell its progress (kept results first, then each student as it begins
    and finishes), and, when a stored result is rewritten while the batch runs, write it
    again from its own result with a warning? Is an old student's feedback removed?"""
    batch = tmp_path / "class"
    batch.mkdir()
    for name, points in {"ann": 4, "bob": 1, "cid": 0}.items():
        (batch / f"{name}.py").write_text(str(points))
    out = tmp_path / "out"
    monkeypatch.setattr(grade, "reference", lambda *args, **kwargs: {})
    monkeypatch.setattr(grade, "grade_entry", lambda entry, *a, **k: stand_in_result(entry))
    grade.grade(batch, out, jobs=1)
    (out / "feedback" / "old-student.md").write_text("from another class")
    (batch / "cid.py").write_text("2")  # cid changed: graded again, ann and bob kept

    def tampering(entry, *args, **kwargs):  # what a submission could do without the sandbox
        stored = out / ".results" / "ann.json"
        data = json.loads(stored.read_text())
        data["result"]["exercises"]["ring_shift"]["tests"][0]["points"] = 99
        stored.write_text(json.dumps(data))
        return stand_in_result(entry)

    monkeypatch.setattr(grade, "grade_entry", tampering)
    shown = Recorder()
    results = grade.grade(batch, out, jobs=1, progress=shown)
    assert shown.events == [("start", 3), ("finish", "ann", True), ("finish", "bob", True),
                            ("begin", "cid"), ("finish", "cid", False)]
    assert [r.total for r in results] == [4, 1, 2]
    assert capsys.readouterr().err.splitlines() == [
        "warning: the stored results of ann changed while the batch was graded (by a "
        "submission running without the sandbox?); they were written again from the grader's "
        "own results"]
    stored = json.loads((out / ".results" / "ann.json").read_text())["result"]
    assert stored == results[0].to_json()
    assert sorted(p.name for p in (out / "feedback").iterdir()) == ["ann.md", "bob.md", "cid.md"]


def test_a_result_the_grader_could_not_finish_is_shown_but_not_kept(
        tmp_path, monkeypatch, capsys):
    """When the grader itself fails on a student (a worker that would not start), is the
    result in the gradebook with a warning, but not stored, so that the next run grades that
    student again while reusing the others?"""
    batch = tmp_path / "class"
    batch.mkdir()
    for name in ("ann", "bob"):
        (batch / f"{name}.py").write_text("4")
    out = tmp_path / "out"
    monkeypatch.setattr(grade, "reference", lambda *args, **kwargs: {})

    def failing_for_bob(entry, *args, **kwargs):
        result = stand_in_result(entry)
        if result.student == "bob":
            result.unfinished = "the grader could not start a worker on 8 device(s): no memory"
        return result

    monkeypatch.setattr(grade, "grade_entry", failing_for_bob)
    grade.grade(batch, out, jobs=1)
    assert capsys.readouterr().err.splitlines() == [msg.WARN_NOT_KEPT.format(
        student="bob", why="the grader could not start a worker on 8 device(s): no memory")]
    assert sorted(p.name for p in (out / ".results").iterdir()) == ["ann.json"]
    assert "bob" in (out / "gradebook.csv").read_text()

    shown = Recorder()
    monkeypatch.setattr(grade, "grade_entry", lambda entry, *a, **k: stand_in_result(entry))
    grade.grade(batch, out, jobs=1, progress=shown)
    assert shown.events == [("start", 2), ("finish", "ann", True), ("begin", "bob"),
                            ("finish", "bob", False)]


def test_a_submission_changed_while_it_is_graded_is_graded_again(tmp_path, monkeypatch):
    """A file replaced while its student is graded: is the stored result tied to what was
    there when grading began, so that the next run grades the new file?"""
    batch = tmp_path / "class"
    batch.mkdir()
    (batch / "ann.py").write_text("1")
    out = tmp_path / "out"
    monkeypatch.setattr(grade, "reference", lambda *args, **kwargs: {})

    def replaced_meanwhile(entry, *args, **kwargs):
        result = stand_in_result(entry)
        entry.write_text("4")  # the student hands in again while the grader works
        return result

    monkeypatch.setattr(grade, "grade_entry", replaced_meanwhile)
    assert [r.total for r in grade.grade(batch, out, jobs=1)] == [1]
    monkeypatch.setattr(grade, "grade_entry", lambda entry, *a, **k: stand_in_result(entry))
    assert [r.total for r in grade.grade(batch, out, jobs=1)] == [4]


def test_a_batch_that_failed_does_not_stop_the_next_one(tmp_path, monkeypatch):
    """A batch that ends in an error stops every worker and lets none start; does the next
    batch in the same process let workers start again?"""
    batch = tmp_path / "class"
    batch.mkdir()
    (batch / "ann.py").write_text("4")
    monkeypatch.setattr(grade, "reference", lambda *args, **kwargs: {})

    def broken(entry, *args, **kwargs):
        raise RuntimeError("a bug in the grader")

    monkeypatch.setattr(grade, "grade_entry", broken)
    with pytest.raises(RuntimeError):
        grade.grade(batch, tmp_path / "out", jobs=1)
    assert process.stopping()
    monkeypatch.setattr(grade, "grade_entry", lambda entry, *a, **k: stand_in_result(entry))
    assert [r.total for r in grade.grade(batch, tmp_path / "out", jobs=1)] == [4]
    assert not process.stopping()


def test_a_submission_cannot_fill_its_feedback_with_problems():
    """Are a thousand failing cells (each could carry 300 characters of what its worker
    holds) listed as the first few and a count?"""
    runs = {8: Run(8, problems=[f"lab.ipynb, cell {i} raised ValueError: {i}"
                                for i in range(1000)])}
    result = grade.assemble("eve", [], runs, {})
    assert len(result.problems) == grade.MAX_PROBLEMS + 1
    assert result.problems[-1] == msg.MSG_MORE_PROBLEMS.format(count=1000 - grade.MAX_PROBLEMS)
