"""Exercise notebooks are generated from the solved ones, never edited by hand.

In ``solutions/``, the body of each solution sits between ``# BEGIN SOLUTION`` and
``# END SOLUTION``; the student copy in ``exercises/`` has ``raise NotImplementedError`` there,
and no outputs.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import nbformat

from grader.authoring import texts
from grader.course import EXERCISE_NOTEBOOKS, LANDING, LESSON_NOTEBOOKS, ROOT, SOLUTIONS

_BLOCK = re.compile(r"^([ \t]*)# BEGIN SOLUTION\n.*?^[ \t]*# END SOLUTION[ \t]*$", re.S | re.M)
STUB = 'raise NotImplementedError("Replace this line with your solution.")'


class MarkerError(ValueError):
    """Solution markers that do not pair up."""


def strip_solutions(source: str) -> str:
    """Replace every marked solution block by a stub at the same indentation."""
    stubbed = _BLOCK.sub(lambda m: f"{m.group(1)}{STUB}", source)
    if "BEGIN SOLUTION" in stubbed or "END SOLUTION" in stubbed:
        raise MarkerError(texts.MARKER_UNPAIRED)
    return stubbed


def student_copy(solved: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The exercise notebook for a solved notebook: stubs instead of solutions, no outputs."""
    copy = nbformat.from_dict(solved)
    for cell in copy.cells:
        if cell.cell_type == "code":
            cell.source = strip_solutions(cell.source)
            cell.outputs = []
            cell.execution_count = None
    return copy


def render(notebook: nbformat.NotebookNode) -> str:
    return nbformat.writes(notebook) + "\n"


def expected_exercises(solutions: Path = SOLUTIONS) -> dict[str, str]:
    """The text every exercise notebook should have, by file name."""
    return {
        path.name: render(student_copy(nbformat.read(path, as_version=4)))
        for path in sorted(solutions.glob("*.ipynb"))
    }


def stale_exercises(solutions: Path = SOLUTIONS, exercises: Path = EXERCISE_NOTEBOOKS) -> list[str]:
    """Exercise notebooks that differ from what the solutions generate, or are extra."""
    wanted = expected_exercises(solutions)
    present = {p.name for p in exercises.glob("*.ipynb")}
    stale = [n for n, text in wanted.items()
             if n not in present or (exercises / n).read_text() != text]
    return sorted(stale + sorted(present - set(wanted)))


def generate(solutions: Path = SOLUTIONS, exercises: Path = EXERCISE_NOTEBOOKS) -> list[str]:
    """Write every exercise notebook, the README's exercise table and the landing notebook's
    table of lessons; return what was written."""
    exercises.mkdir(exist_ok=True)
    wanted = expected_exercises(solutions)
    for name, text in wanted.items():
        (exercises / name).write_text(text)
    README.write_text(readme_with_table(README.read_text()))
    LANDING.write_text(landing_with_table(LANDING.read_text()))
    return [f"exercises/{name}" for name in sorted(wanted)] + ["README.md", LANDING.name]


# --- the README's exercise table ------------------------------------------------------------
README = ROOT / "README.md"
TABLE_START = "<!-- exercise table: written by `python -m grader generate` -->"
TABLE_END = "<!-- end of exercise table -->"


def exercise_table() -> str:
    """The README's table of exercises, from the course's one list."""
    from grader.course import EXERCISES

    rows = [
        "| lesson | function | what it does | graded on |",
        "| --- | --- | --- | --- |",
    ]
    for e in EXERCISES:
        devices = " and ".join(map(str, e.device_counts)) + " devices"
        rows.append(f"| {e.lesson} | `{e.name}` | {e.summary} | {devices} |")
    return "\n".join(rows)


def readme_with_table(text: str) -> str:
    """The README text with its exercise table replaced by the current one."""
    start, end = text.index(TABLE_START), text.index(TABLE_END)
    return f"{text[:start]}{TABLE_START}\n{exercise_table()}\n{text[end:]}"


# --- the landing notebook's table of lessons ------------------------------------------------
#: The tag of the landing notebook's cell that holds the table.
LESSON_TABLE_TAG = "lesson-table"


def lesson_title(lesson: str) -> str:
    """A lesson's title, from its notebook's first heading ("# Lesson 1: Sharding")."""
    first = nbformat.read(LESSON_NOTEBOOKS / f"{lesson}.ipynb", as_version=4).cells[0].source
    return first.splitlines()[0].lstrip("# ").strip()


def lesson_table(lessons: Sequence[str] | None = None) -> str:
    """The landing notebook's table: each lesson (default: all), its exercises, how many."""
    from grader.course import EXERCISES, LESSONS

    lessons = LESSONS if lessons is None else lessons
    rows = [
        "| lesson | read | then solve | exercises |",
        "| --- | --- | --- | --- |",
    ]
    for lesson in lessons:
        count = sum(e.lesson == lesson for e in EXERCISES)
        read, solve = (f"[{folder}/{lesson}.ipynb]({folder}/{lesson}.ipynb)"
                       for folder in ("notebooks", "exercises"))
        rows.append(f"| {lesson_title(lesson)} | {read} | {solve} | {count} |")
    return "\n".join(rows)


def landing_with_table(text: str, lessons: Sequence[str] | None = None) -> str:
    """The landing notebook's text with its table of lessons (default: all) replaced by the
    current one."""
    notebook = nbformat.reads(text, as_version=4)
    (cell,) = [c for c in notebook.cells if LESSON_TABLE_TAG in c.metadata.get("tags", [])]
    cell.source = lesson_table(lessons)
    return render(notebook)
