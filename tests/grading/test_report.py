"""The gradebook printed on the terminal."""

from grader.course import LESSONS
from grader.grading import report
from grader.results import ExerciseResult, StudentResult, TestResult


def student(name: str, earned: float) -> StudentResult:
    tests = [TestResult("a", earned, 1, "passed" if earned else "failed"),
             TestResult("b", 0, 1, "failed")]
    return StudentResult(name, {"ring_shift": ExerciseResult("ring_shift", tests)})


def test_the_table_has_a_row_per_student_and_a_column_per_lesson():
    """Are students sorted, with each lesson's points out of its maximum and the total?"""
    lines = report.table([student("zoe", 1), student("abe", 0)]).splitlines()
    assert lines[0].split()[0] == "student" and "03_collectives" in lines[0].split()
    per_lesson = ["0/2" if lesson == "03_collectives" else "0/0" for lesson in LESSONS]
    assert lines[2].split() == ["abe", *per_lesson, "0/2"]
    assert lines[3].split()[0] == "zoe" and lines[3].split()[-1] == "1/2"
