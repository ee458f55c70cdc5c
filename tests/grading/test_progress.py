"""What `grade` shows while it works: a bar on a terminal, one line per student elsewhere."""

from __future__ import annotations

import io

from rich.console import Console

from grader.framework.results import ExerciseResult, StudentResult, TestResult
from grader.grading import progress


def result(student: str, points: float) -> StudentResult:
    tests = [TestResult("t", points, 4, "passed" if points == 4 else "failed")]
    return StudentResult(student, {"halo_difference": ExerciseResult("halo_difference", tests)})


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_log_gets_one_line_per_student_with_done_and_total():
    """Off a terminal, is each student one line: graded or kept, points, done/total?"""
    log = io.StringIO()
    shown = progress.for_terminal(io.StringIO(), log)
    assert isinstance(shown, progress.Lines)
    with shown:
        shown.start(3)
        shown.finish(result("bob", 4), reused=True)
        shown.begin("ann")  # says nothing in a log: the line comes when the student is done
        shown.finish(result("ann", 1), reused=False)
        shown.finish(result("cid", 0), reused=False)
    assert log.getvalue().splitlines() == [
        "kept bob: 4/4 [1/3]",
        "graded ann: 1/4 [2/3]",
        "graded cid: 0/4 [3/3]",
    ]


def test_a_terminal_gets_a_bar_with_done_total_and_who_is_being_graded():
    """On a terminal, does the bar show done/total and the students being graded now?"""
    screen = io.StringIO()
    shown = progress.Bar(Console(file=screen, force_terminal=True, width=100))
    with shown:
        shown.start(2)
        shown.begin("ann")
        shown.begin("bob")
        drawn_while_grading = screen.getvalue()
        shown.finish(result("ann", 4), reused=False)
        shown.finish(result("bob", 0), reused=False)
    assert "0/2" in drawn_while_grading and "ann, bob" in drawn_while_grading
    last = screen.getvalue().rsplit("\r", 1)[-1]
    assert "2/2" in last and "ann" not in last and "bob" not in last


def test_a_terminal_stdout_chooses_the_bar():
    """Is the bar chosen exactly when stdout is a terminal?"""
    assert isinstance(progress.for_terminal(Terminal(), io.StringIO()), progress.Bar)
    assert isinstance(progress.for_terminal(io.StringIO(), io.StringIO()), progress.Lines)
