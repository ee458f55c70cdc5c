"""Exercise notebooks are generated from the solved ones, never edited by hand.

In ``solutions/``, the body of each solution sits between ``# BEGIN SOLUTION`` and
``# END SOLUTION``; the student copy in ``exercises/`` has ``raise NotImplementedError`` there,
and no outputs.
"""

from __future__ import annotations

import ast
import itertools
import re
import textwrap
from collections.abc import Sequence
from pathlib import Path

import nbformat

from grader.authoring import texts
from grader.course import (
    BRANCH,
    EXERCISE_NOTEBOOKS,
    LANDING,
    LESSON_NOTEBOOKS,
    REPOSITORY,
    ROOT,
    SOLUTIONS,
    SOURCE_ENV,
    Exercise,
    in_repository,
)
from grader.grading.similarity import without_magics

_BLOCK = re.compile(r"^([ \t]*)# BEGIN SOLUTION\n.*?^[ \t]*# END SOLUTION[ \t]*$", re.S | re.M)
STUB = 'raise NotImplementedError("Replace this line with your solution.")'


class MarkerError(ValueError):
    """Solution markers that do not pair up."""


class SolutionLeak(ValueError):
    """A student copy that would hand out part of a solution (:func:`leaks`)."""


class ListError(ValueError):
    """A lesson's list of its exercises that cannot be written (:func:`with_exercise_list`)."""


def strip_solutions(source: str) -> str:
    """Replace every marked solution block by a stub at the same indentation."""
    stubbed = _BLOCK.sub(lambda m: f"{m.group(1)}{STUB}", source)
    if "BEGIN SOLUTION" in stubbed or "END SOLUTION" in stubbed:
        raise MarkerError(texts.MARKER_UNPAIRED)
    return stubbed


def student_copy(solved: nbformat.NotebookNode, name: str = "") -> nbformat.NotebookNode:
    """The exercise notebook for a solved notebook: stubs instead of solutions, no outputs,
    and (given its file ``name``) links that open ``exercises/<name>``."""
    copy = with_opening(solved, f"{EXERCISE_NOTEBOOKS.name}/{name}") if name else solved
    copy = nbformat.from_dict(copy)
    for cell in copy.cells:
        if cell.cell_type == "code":
            cell.source = strip_solutions(cell.source)
            cell.outputs = []
            cell.execution_count = None
    return copy


def _code(source: str) -> ast.Module | None:
    """A code cell's source as Python (IPython's magics and shell escapes blanked), or None
    where it is not Python."""
    try:
        return ast.parse(without_magics(source))
    except SyntaxError:
        return None


def leaks(solved: nbformat.NotebookNode, name: str) -> list[str]:
    """What of a solution the student copy of ``solved`` (the notebook ``name``) would hand
    out: each function or class it defines outside the markers that a marked solution calls,
    that no code of the student copy calls, and that no Markdown cell names as given to the
    students (in backquotes). Moved out of a solution into a helper above it, an answer would
    otherwise ship in full while its marked body shrinks to a call."""
    cells = [cell.source for cell in solved.cells if cell.cell_type == "code"]
    prose = " ".join(cell.source for cell in solved.cells if cell.cell_type == "markdown")
    copies = [_code(strip_solutions(source)) for source in cells]
    defined = {node.name: node for tree in copies if tree for node in tree.body
               if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    called = set()  # the names the student copy uses (a definition's use of itself aside)
    for tree in filter(None, copies):
        for top in tree.body:
            own = getattr(top, "name", None)
            called |= {node.id for node in ast.walk(top) if isinstance(node, ast.Name)
                       and isinstance(node.ctx, ast.Load) and node.id != own}
    found = []
    for source in cells:
        solved_tree = _code(source)
        for block in _BLOCK.finditer(source):
            body = _code(textwrap.dedent(block.group(0)))
            line = source.count("\n", 0, block.start()) + 1
            owner = next((node.name for node in (solved_tree.body if solved_tree else [])
                          if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                          and node.lineno <= line <= (node.end_lineno or line)), "a solution")
            for used in sorted({node.id for node in ast.walk(body) if isinstance(node, ast.Name)}
                               if body else ()):
                if used in defined and used != owner and used not in called \
                        and f"`{used}" not in prose:
                    found.append(texts.SOLUTION_LEAKS.format(notebook=name, helper=used,
                                                             exercise=owner))
    return list(dict.fromkeys(found))


def render(notebook: nbformat.NotebookNode) -> str:
    return nbformat.writes(notebook) + "\n"


def expected_exercises(solutions: Path = SOLUTIONS) -> dict[str, str]:
    """The text every exercise notebook should have, by file name."""
    return {
        path.name: render(student_copy(nbformat.read(path, as_version=4), path.name))
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
    """Write the opening (links and set-up cell) of every lesson, solution and the landing
    notebook, every exercise notebook, each lesson's list of its exercises, the students'
    page's exercise table and the landing notebook's table of lessons; return the paths of
    those that changed, relative to the repository. A solution that its student copy would
    hand out (:func:`leaks`) stops it before anything is written, :class:`SolutionLeak`
    naming each, as does a list that cannot be written (:class:`ListError`)."""
    leaked = [leak for path in sorted(solutions.glob("*.ipynb"))
              for leak in leaks(nbformat.read(path, as_version=4), path.name)]
    if leaked:
        raise SolutionLeak("\n".join(leaked))
    listed = stale_lists()  # a ListError before anything is written
    changed = []

    def write(path: Path, text: str) -> None:
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
            changed.append(in_repository(path))

    for path in stale_openings():
        write(path, render(with_opening(nbformat.read(path, as_version=4),
                                        path.relative_to(ROOT).as_posix())))
    exercises.mkdir(exist_ok=True)
    for name, text in sorted(expected_exercises(solutions).items()):
        write(exercises / name, text)
    for path in listed:  # the openings leave a lesson's list as it was
        write(path, render(with_exercise_list(nbformat.read(path, as_version=4), path.stem)))
    write(TABLE_PAGE, page_with_table(TABLE_PAGE.read_text()))
    write(LANDING, landing_with_table(LANDING.read_text()))
    return changed


# --- every notebook's opening: links to Colab and Kaggle, and the set-up cell ----------------
#: How the line of links starts in a notebook's first Markdown cell (right under its title).
LINKS_START = "[![Open in Colab]"
COLAB = "https://colab.research.google.com/assets/colab-badge.svg"
KAGGLE = "https://kaggle.com/static/images/open-in-kaggle.svg"


def links(path: str) -> str:
    """The line of links that opens the notebook at ``path`` (relative to the repository's
    root) on Colab and on Kaggle, both reading it from :data:`REPOSITORY` on GitHub."""
    slug = REPOSITORY.removeprefix("https://github.com/")
    colab = f"https://colab.research.google.com/github/{slug}/blob/{BRANCH}/{path}"
    kaggle = f"https://kaggle.com/kernels/welcome?src={REPOSITORY}/blob/{BRANCH}/{path}"
    return f"{LINKS_START}({COLAB})]({colab}) [![Open in Kaggle]({KAGGLE})]({kaggle})"


def setup_cell(devices: int = 8) -> str:
    """The first code cell of every notebook: the course's helpers (installed, without
    touching JAX, where they are missing: Colab, Kaggle; from :data:`SOURCE_ENV` where it is
    set), then the devices."""
    return (
        "import importlib.util\n"
        "import os\n"
        "import subprocess\n"
        "import sys\n"
        "\n"
        'if importlib.util.find_spec("grader") is None:  # Colab, Kaggle: fetch the helpers once\n'
        f'    published = "git+{REPOSITORY}@{BRANCH}"\n'
        f'    course = os.environ.get("{SOURCE_ENV}", published)  # or a path, a wheel, a fork\n'
        '    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", course],\n'
        "                   check=True)\n"
        '    subprocess.run([sys.executable, "-m", "grader.install"], check=True)  # never JAX\n'
        "    importlib.invalidate_caches()\n"
        "\n"
        "from grader.devices import use_devices\n"
        "\n"
        f"use_devices({devices})  # {devices} GPUs or TPUs where there are, else {devices} CPU "
        "devices: it says which"
    )


#: The language every notebook names, the same in all: Python, no version. JupyterLab shows a
#: notebook as changed as soon as its kernel starts unless the stored language_info is the
#: kernel's own, version included, which no stored value can be for every student (the
#: student bundle's ``make lab`` writes the kernel's in: ``grader.lab --match-kernel``).
LANGUAGE_INFO = {"name": "python"}


def with_opening(notebook: nbformat.NotebookNode, path: str) -> nbformat.NotebookNode:
    """A copy of ``notebook`` whose title cell has the links for ``path`` under its heading,
    whose first code cell is :func:`setup_cell` (its outputs kept if it was already, or if
    only its install part changed), and which names :data:`LANGUAGE_INFO`."""
    copy = nbformat.from_dict(notebook)
    copy.metadata["language_info"] = dict(LANGUAGE_INFO)
    title = next(c for c in copy.cells if c.cell_type == "markdown")
    heading, *rest = [line for line in title.source.splitlines()
                      if not line.startswith(LINKS_START)]
    while rest and not rest[0].strip():
        rest.pop(0)
    title.source = "\n".join([heading, "", links(path), *([""] + rest if rest else [])])
    first = next(c for c in copy.cells if c.cell_type == "code")
    if first.source != setup_cell():
        # Where the course is installed, as wherever notebooks are executed and stored, the
        # install part runs nothing: the outputs are the device line's, kept while it is.
        kept = first.source.splitlines()[-1:] == setup_cell().splitlines()[-1:]
        first.source = setup_cell()
        if not kept:
            first.outputs, first.execution_count = [], None
    return copy


def stale_openings() -> list[Path]:
    """The lessons, solutions and landing notebook whose opening is not what
    :func:`with_opening` writes."""
    paths = sorted(LESSON_NOTEBOOKS.glob("*.ipynb")) + sorted(SOLUTIONS.glob("*.ipynb")) + [LANDING]
    return [p for p in paths if (notebook := nbformat.read(p, as_version=4))
            != with_opening(notebook, p.relative_to(ROOT).as_posix())]


# --- the students' page's exercise table ---------------------------------------------------
TABLE_PAGE = ROOT / "docs" / "students.md"
TABLE_START = "<!-- exercise table: written by `python -m grader generate` -->"
TABLE_END = "<!-- end of exercise table -->"


def exercise_table() -> str:
    """The table of exercises of the students' page, from the course's one list."""
    from grader.course import EXERCISES

    rows = [
        "| lesson | function | what it does | graded on |",
        "| --- | --- | --- | --- |",
    ]
    for e in EXERCISES:
        devices = _devices(graded_on(e))
        rows.append(f"| {e.lesson} | `{e.name}` | {e.summary} | {devices} |")
    return "\n".join(rows)


def page_with_table(text: str) -> str:
    """The students' page with its exercise table replaced by the current one."""
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


# --- each lesson's list of its exercises -----------------------------------------------------
#: Where a lesson's list of its exercises starts, in the Markdown cell under its "## Exercises":
#: :func:`with_exercise_list` writes the rest of that cell; what the lesson itself says of its
#: exercises goes above this line.
LIST_START = "Open `exercises/"
#: An exercise's heading in its notebook, "## 2. ★★ `shard_shape(...)`: the block each device
#: holds": its number, stars, name and title.
HEADING = re.compile(r"^## (\d+)\. (★+) `(\w+)[^`\n]*`: (.+)$", re.M)


def graded_on(exercise: Exercise) -> tuple[int, ...]:
    """The device counts the grader runs an exercise's hidden tests on, in the order its
    tests first name them (those it declares, while it has none)."""
    from grader.framework import cases

    return tuple(dict.fromkeys(n for c in cases.for_exercise(exercise.name) if c.hidden
                               for n in c.device_counts)) or exercise.device_counts


def _and(items: Sequence[str]) -> str:
    """("a", "b", "c") -> "a, b and c"."""
    *rest, last = items
    return f"{', '.join(rest)} and {last}" if rest else last


def _devices(counts: Sequence[int]) -> str:
    """(8, 2, 4) -> "8, 2 and 4 devices"."""
    return f"{_and([str(n) for n in counts])} devices"


def exercise_list(lesson: str) -> str:
    """A lesson's list of its exercises, from the course's one list: where they are, each
    one's stars and title (its heading in the solutions), then the device counts the grader
    runs the hidden tests on, those of most exercises first, then the others by name."""
    from grader.course import EXERCISES

    exercises = [e for e in EXERCISES if e.lesson == lesson]
    solved = nbformat.read(SOLUTIONS / f"{lesson}.ipynb", as_version=4)
    headings = {name: (int(number), stars, title) for cell in solved.cells
                if cell.cell_type == "markdown"
                for number, stars, name, title in HEADING.findall(cell.source)}
    for position, e in enumerate(exercises, 1):
        if e.name not in headings:
            raise ListError(texts.LIST_NO_HEADING.format(lesson=lesson, name=e.name))
        if headings[e.name][0] != position:
            raise ListError(texts.LIST_NUMBER.format(lesson=lesson, name=e.name,
                                                     number=headings[e.name][0],
                                                     position=position))
    for before, after in itertools.pairwise(exercises):
        if len(headings[after.name][1]) < len(headings[before.name][1]):
            raise ListError(texts.LIST_ORDER.format(
                lesson=lesson, name=after.name, stars=headings[after.name][1],
                before=before.name, harder=headings[before.name][1]))
    lines = [f"{LIST_START}{lesson}.ipynb`: its exercises, easiest first.", ""]
    lines += [f"{i}. {headings[e.name][1]} `{e.name}`: {headings[e.name][2]}"
              for i, e in enumerate(exercises, 1)]
    groups: dict[tuple[int, ...], list[str]] = {}
    for e in exercises:
        groups.setdefault(graded_on(e), []).append(f"`{e.name}`")
    most, *others = sorted(groups, key=lambda counts: -len(groups[counts]))
    said = [f"on {_devices(most)}"]
    said += [f"for {_and(groups[counts])}, on {_devices(counts)}"
             for counts in others]
    lines += ["", f"The grader runs the hidden tests {'; '.join(said)}."]
    return "\n".join(lines)


def with_exercise_list(notebook: nbformat.NotebookNode, lesson: str) -> nbformat.NotebookNode:
    """A copy of the lesson ``notebook`` whose Markdown cell under "## Exercises" ends with
    :func:`exercise_list`, from :data:`LIST_START` on."""
    copy = nbformat.from_dict(notebook)
    cells = [c for c in copy.cells if c.cell_type == "markdown" and "## Exercises" in c.source
             and LIST_START in c.source.split("## Exercises", 1)[1]]
    if len(cells) != 1:
        raise ListError(texts.LIST_NO_PLACE.format(lesson=lesson, start=LIST_START))
    [cell] = cells
    cell.source = cell.source[:cell.source.rindex(LIST_START)] + exercise_list(lesson)
    return copy


def stale_lists() -> list[Path]:
    """The lessons whose list of exercises is not what :func:`with_exercise_list` writes."""
    from grader.course import LESSONS

    paths = [LESSON_NOTEBOOKS / f"{lesson}.ipynb" for lesson in LESSONS]
    return [p for p in paths if (notebook := nbformat.read(p, as_version=4))
            != with_exercise_list(notebook, p.stem)]
