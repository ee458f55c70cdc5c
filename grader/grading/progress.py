"""What ``grade`` shows while it works: a progress bar on a terminal, one line per student in
a log (CI, a file, a pipe).

:func:`grader.grading.grade.grade` calls :meth:`Progress.start` with the number of students to
grade, :meth:`Progress.begin` as each one starts (from the threads that grade) and
:meth:`Progress.finish` as each one is done or reused from an earlier run.
"""

from __future__ import annotations

import sys
import threading
from typing import TextIO

from grader.framework.results import StudentResult
from grader.grading import texts


class Progress:
    """Says nothing; the base of the two renderings, and what grading from Python uses."""

    def start(self, total: int) -> None:
        """``total`` students are about to be graded or reused."""

    def begin(self, student: str) -> None:
        """Grading ``student`` starts (called from a grading thread)."""

    def finish(self, result: StudentResult, reused: bool) -> None:
        """``result`` is known: just graded, or ``reused`` from an earlier run."""

    def close(self) -> None:
        """Grading is over."""

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Lines(Progress):
    """One line per student as it is done: ``graded ada: 66/177 [1/3]``."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.total = 0
        self.done = 0

    def start(self, total: int) -> None:
        self.total = total

    def finish(self, result: StudentResult, reused: bool) -> None:
        self.done += 1
        line = texts.PROGRESS_LINE.format(
            verb="kept" if reused else "graded", student=result.student, points=result.total,
            max_points=result.max_total, done=self.done, total=self.total,
        )
        print(line, file=self.stream, flush=True)


class Bar(Progress):
    """A rich progress bar: done/total, time elapsed, and the students being graded now."""

    def __init__(self, console) -> None:
        import rich.progress as rich

        self.bar = rich.Progress(
            rich.TextColumn("grading"), rich.BarColumn(), rich.MofNCompleteColumn(),
            rich.TimeElapsedColumn(), rich.TextColumn("{task.fields[now]}"), console=console,
        )
        self.task = None
        self.now: list[str] = []
        self.lock = threading.Lock()

    def start(self, total: int) -> None:
        self.bar.start()
        self.task = self.bar.add_task("grading", total=total, now="")

    def begin(self, student: str) -> None:
        with self.lock:
            self.now.append(student)
            self._show()

    def finish(self, result: StudentResult, reused: bool) -> None:
        with self.lock:
            if result.student in self.now:
                self.now.remove(result.student)
            self.bar.advance(self.task)
            self._show()

    def _show(self) -> None:
        self.bar.update(self.task, now=", ".join(self.now), refresh=True)

    def close(self) -> None:
        self.bar.stop()


def for_terminal(stdout: TextIO | None = None, log: TextIO | None = None) -> Progress:
    """A bar on ``stdout`` when it is a terminal, else one line per student on ``log``
    (by default the process's stdout and stderr)."""
    stdout = stdout or sys.stdout
    if stdout.isatty():
        from rich.console import Console

        return Bar(Console(file=stdout))
    return Lines(log or sys.stderr)
