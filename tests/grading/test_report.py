"""The gradebook printed on the terminal."""

from grader.course import EXERCISES, LESSONS
from grader.framework.results import ExerciseResult, Late, StudentResult, TestResult
from grader.grading import report


def student(name: str, earned: float, exercises=("halo_difference",)) -> StudentResult:
    tests = [TestResult("a", earned, 1, "passed" if earned else "failed"),
             TestResult("b", 0, 1, "failed")]
    return StudentResult(name, {e: ExerciseResult(e, tests) for e in exercises})


def test_the_table_has_a_row_per_student_and_a_column_per_lesson_graded():
    """Are students sorted, with each lesson graded (and only those) as points out of its
    maximum, then the total?"""
    lines = report.table([student("zoe", 1),
                          student("abe", 0, ("halo_difference", "place_transposed"))]
                         ).splitlines()
    assert lines[0].split() == ["student", "01_sharding", "03_collectives", "total"]
    assert lines[2].split() == ["abe", "0/2", "0/2", "0/4"]
    assert lines[3].split()[0] == "zoe" and lines[3].split()[-1] == "1/2"
    one_per_lesson = [next(e.name for e in EXERCISES if e.lesson == lesson) for lesson in LESSONS]
    whole = report.table([student("abe", 0, one_per_lesson[::-1])])
    assert whole.splitlines()[0].split() == ["student", *LESSONS, "total"]


def test_late_work_shows_its_standing_and_the_total_after_the_penalty():
    late = student("ann", 1)
    late.late = Late("2027-01-02T00:00:00+00:00", "2027-01-01T00:00:00+00:00", 1, 50.0)
    lines = report.table([late, student("bob", 1)]).splitlines()
    assert lines[0].split()[-1] == "standing"
    assert lines[2].split()[-5:] == ["0.5/2", "late", "1", "day(s),", "-0.5"]
    assert lines[3].split()[-3:] == ["1/2", "handed", "in"]
