"""``python -m grader release DIR [--assignment NAME]``: the bundle students get.

Lessons, exercise notebooks, what installs them, and of the package only what a student's
kernel uses: ``check`` with the test framework, the public tests and their hints, and the
lesson helpers the notebooks import. No solution, no hidden test, and none of the grader's own
machinery (its workers, batch grading, authoring, command line):
``tests/authoring/test_release.py`` proves it on a real bundle. Its README and Makefile are
the students' own (``grader/authoring/student/``): how to set up, work, check and hand in,
and for an assignment, which lessons, exercises and due date; every target of that Makefile
works in the bundle.
"""

from __future__ import annotations

import ast
import shutil
from collections.abc import Iterable
from pathlib import Path

from grader.assignments import Assignment
from grader.authoring import generate, texts
from grader.course import EXERCISES, LANDING, LESSONS, ROOT

#: What a student bundle holds, relative to the course root.
INCLUDED = ("start_here.ipynb", "notebooks", "exercises", "grader", "pyproject.toml", "uv.lock",
            "requirements.txt", "environment.yml", "setup.mk")
#: The students' README and Makefile, written into the bundle in place of the course's.
STUDENT = Path(__file__).resolve().parent / "student"
#: Never in a bundle, wherever it sits.
EXCLUDED = ("hidden", "__pycache__", "*.pyc", ".ipynb_checkpoints")
#: The grader's own parts, which no student's kernel imports: not in a bundle.
GRADER_ONLY = ("grader/workers", "grader/grading", "grader/authoring", "grader/cli.py",
               "grader/verbs.py", "grader/__main__.py")


class ReleaseError(Exception):
    """The bundle cannot be written there."""


#: Folders holding one notebook per lesson: an assignment's bundle keeps only its lessons'.
PER_LESSON = ("notebooks", "exercises")
#: The public tests, and their expected values (one file per lesson): an assignment's bundle
#: keeps only what its exercises' ``check`` needs (:func:`public_modules`).
PUBLIC, EXPECTED = "grader/public", "grader/public/expected"


def release(destination: Path, root: Path = ROOT,
            assignment: Assignment | None = None) -> list[str]:
    """Write the student bundle to an empty or new folder (with ``assignment``, only the
    lessons and exercise notebooks it needs); return what it holds."""
    if destination.exists() and any(destination.iterdir()):
        raise ReleaseError(texts.DESTINATION_NOT_EMPTY.format(destination=destination))
    destination.mkdir(parents=True, exist_ok=True)
    patterns = shutil.ignore_patterns(*EXCLUDED)

    def ignore(folder: str, names: list[str]) -> set[str]:
        where = Path(folder).relative_to(root)
        left_out = {name for name in names if (where / name).as_posix() in GRADER_ONLY}
        if assignment and where.as_posix() in PER_LESSON:
            left_out |= {name for name in names if name.endswith(".ipynb")
                         and name.removesuffix(".ipynb") not in assignment.lessons}
        if assignment and where.as_posix() == PUBLIC:
            needed = public_modules(assignment.exercises, root / PUBLIC)
            left_out |= {name for name in names if name.endswith(".py")
                         and name != "__init__.py" and name.removesuffix(".py") not in needed}
        if assignment and where.as_posix() == EXPECTED:
            left_out |= {name for name in names if name.endswith(".json")
                         and name.removesuffix(".json") not in assignment.lessons}
        return set(patterns(folder, names)) | left_out

    for name in INCLUDED:
        source = root / name
        if source.is_dir():
            shutil.copytree(source, destination / name, ignore=ignore)
        else:
            shutil.copy2(source, destination / name)
    shutil.copy2(STUDENT / "Makefile", destination / "Makefile")
    (destination / "README.md").write_text(readme(assignment))
    if assignment:
        landing = destination / LANDING.name
        landing.write_text(generate.landing_with_table(landing.read_text(), assignment.lessons))
    return sorted(str(p.relative_to(destination)) for p in destination.rglob("*") if p.is_file())


def public_modules(exercises: Iterable[str], folder: Path) -> set[str]:
    """The public test modules (names in ``folder``) that ``check`` needs for ``exercises``:
    those registering their tests, and every public module those import (a measure is
    registered where it is defined)."""
    from grader.framework import cases

    wanted = set(exercises)
    needed = {c.probe.__module__.rpartition(".")[2] for c in cases.load(hidden=False)
              if c.exercise in wanted}
    package = PUBLIC.replace("/", ".")
    todo = list(needed)
    while todo:
        for node in ast.walk(ast.parse((folder / f"{todo.pop()}.py").read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == package:
                names = [alias.name for alias in node.names]  # from grader.public import x
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            for name in (n.removeprefix(f"{package}.") for n in names):
                if name not in needed and "." not in name and (folder / f"{name}.py").is_file():
                    needed.add(name)
                    todo.append(name)
    return needed


def readme(assignment: Assignment | None) -> str:
    """The students' README: the course's, or one assignment's with its due date."""
    lessons = assignment.lessons if assignment else LESSONS
    listed = []
    for lesson in lessons:
        names = [e.name for e in EXERCISES if e.lesson == lesson
                 and (assignment is None or e.name in assignment.exercises)]
        graded = ", ".join(f"`{name}`" for name in names)
        listed.append(f"- **{generate.lesson_title(lesson)}**: `notebooks/{lesson}.ipynb`, "
                      f"then `exercises/{lesson}.ipynb` ({graded})")
    if assignment is None:
        what = texts.STUDENT_COURSE.format(lessons=len(lessons), exercises=len(EXERCISES))
        return (STUDENT / "README.md").read_text().format(
            what=what, them="the lessons", lessons="\n".join(listed), due="")
    what = texts.STUDENT_ASSIGNMENT.format(name=assignment.name, lessons=len(lessons),
                                           exercises=len(assignment.exercises))
    return (STUDENT / "README.md").read_text().format(
        what=what, them="the assignment", lessons="\n".join(listed), due=_due(assignment))


def _due(assignment: Assignment) -> str:
    if assignment.due is None:
        return ""
    late = assignment.late
    text = texts.STUDENT_DUE.format(due=assignment.due.isoformat(sep=" ", timespec="minutes"))
    if late.percent_per_day:
        text += " " + texts.STUDENT_LATE.format(
            percent=late.percent_per_day, grace=late.grace_minutes, most=late.max_percent)
    return f"\n## Due\n\n{text}\n"


def by_folder(files: list[str]) -> dict[str, int]:
    """How many of ``files`` (paths in the bundle) each top-level folder holds; files at the
    top under "."."""
    counts: dict[str, int] = {}
    for name in files:
        top = name.split("/", 1)[0] if "/" in name else "."
        counts[top] = counts.get(top, 0) + 1
    return counts
