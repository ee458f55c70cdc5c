"""The notebooks: exercises generated from solutions, lessons saved executed, and every
exercise and solution notebook running top to bottom."""

from __future__ import annotations

import ast
import re
import textwrap
from pathlib import Path

import nbclient
import nbformat
import pytest

from grader import course
from grader.authoring import execute, generate

ROOT = Path(__file__).resolve().parents[2]
LESSONS = sorted((ROOT / "notebooks").glob("*.ipynb"))
SOLVED = sorted(course.SOLUTIONS.glob("*.ipynb"))
UNSOLVED = sorted(course.EXERCISE_NOTEBOOKS.glob("*.ipynb"))
#: The first code cell of every notebook: the helpers (installed where missing), then the
#: devices, chosen and said; it stands aside when the grader runs an exercise notebook.
SETUP_CELL = generate.setup_cell()


def code_cells(path: Path) -> list:
    return [c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]


def test_exercises_are_exactly_what_the_solutions_generate():
    """Is exercises/ in sync with solutions/ (run `make exercises` if not)?"""
    assert SOLVED, "no solution notebooks"
    assert generate.stale_exercises() == []


def test_generate_writes_and_names_only_what_changed(tmp_path):
    """Does generate write, and name, only the files whose text changed: every exercise
    notebook into an empty folder, then one whose text was changed by hand, then nothing?"""
    first = generate.generate(exercises=tmp_path)
    names = generate.expected_exercises(course.SOLUTIONS)
    assert first == sorted(str(tmp_path / name) for name in names)
    edited = tmp_path / sorted(p.name for p in tmp_path.iterdir())[0]
    edited.write_text(edited.read_text() + " ")
    assert generate.generate(exercises=tmp_path) == [str(edited)]
    assert generate.generate(exercises=tmp_path) == []


def test_stubs_replace_the_marked_blocks_only():
    """Does a stub keep the signature, docstring and indentation, and drop the solution?"""
    solved = (
        'def f(x):\n    """Doc."""\n    # BEGIN SOLUTION\n    return x + 1\n    # END SOLUTION\n'
    )
    stub = generate.strip_solutions(solved)
    assert stub == f'def f(x):\n    """Doc."""\n    {generate.STUB}\n'


def test_an_unpaired_marker_is_an_error():
    """Is a BEGIN SOLUTION without its END refused instead of leaking the solution?"""
    with pytest.raises(generate.MarkerError):
        generate.strip_solutions("def f():\n    # BEGIN SOLUTION\n    return 1\n")


def with_the_answer_in_a_helper(source: str) -> str:
    """A solution cell refactored as an author might: the marked body moved into a helper
    above the function, outside the markers, and the marked body a call of it."""
    block = re.search(r"^([ \t]*)# BEGIN SOLUTION\n(.*?)^[ \t]*# END SOLUTION[ \t]*$",
                      source, re.S | re.M)
    function = next(node for node in ast.parse(source).body
                    if isinstance(node, ast.FunctionDef)
                    and node.lineno <= source.count("\n", 0, block.start()) + 1 <= node.end_lineno)
    parameters = [a.arg for a in function.args.args]
    helper = (f"def _answer({', '.join(parameters)}):\n"
              + textwrap.indent(textwrap.dedent(block.group(2)), "    ") + "\n\n")
    marked = (f"{block.group(1)}# BEGIN SOLUTION\n{block.group(1)}return _answer("
              f"{', '.join(parameters)})\n{block.group(1)}# END SOLUTION")
    return helper + source[:block.start()] + marked + source[block.end():]


def leaky_copy_of(lesson: str, given_in: str = "") -> nbformat.NotebookNode:
    """A lesson's solved notebook whose first solution sits in a helper outside the markers;
    ``given_in``, if any, is Markdown added to the notebook."""
    solved = nbformat.read(course.SOLUTIONS / f"{lesson}.ipynb", as_version=4)
    cell = next(c for c in solved.cells if c.cell_type == "code" and "# BEGIN SOLUTION" in c.source)
    cell.source = with_the_answer_in_a_helper(cell.source)
    if given_in:
        solved.cells.append(nbformat.v4.new_markdown_cell(given_in))
    return solved


def test_a_solution_moved_into_a_helper_outside_the_markers_is_refused(tmp_path):
    """Is the answer in a helper above its function, which the student copy would ship in
    full, named (helper, exercise and the fix), and does generate stop before writing?"""
    leaky = leaky_copy_of("04_prng")
    first = generate.strip_solutions(next(c.source for c in leaky.cells if c.cell_type == "code"
                                          and "_answer" in c.source))
    assert "def _answer(" in first  # what a student would receive
    [found] = generate.leaks(leaky, "04_prng.ipynb")
    assert "solutions/04_prng.ipynb: `_answer`" in found and "the solution of `" in found
    assert "move it between # BEGIN SOLUTION and # END SOLUTION" in found
    solutions, exercises = tmp_path / "solutions", tmp_path / "exercises"
    solutions.mkdir()
    nbformat.write(leaky, solutions / "04_prng.ipynb")
    with pytest.raises(generate.SolutionLeak, match="_answer"):
        generate.generate(solutions=solutions, exercises=exercises)
    assert not exercises.exists()


def test_a_helper_given_to_students_or_used_by_the_notebook_is_not_a_leak():
    """Is a helper that the exercise's text names, or that the notebook's own code calls,
    left alone, as the course's own solutions need?"""
    assert generate.leaks(leaky_copy_of("04_prng", "Use `_answer` as given."), "n") == []
    calls_it = leaky_copy_of("04_prng")
    calls_it.cells.append(nbformat.v4.new_code_cell("print(_answer)"))
    assert generate.leaks(calls_it, "n") == []
    for path in SOLVED:
        assert generate.leaks(nbformat.read(path, as_version=4), path.name) == []


def test_no_solution_reaches_the_exercise_notebooks():
    """Do the exercise notebooks hold no solution marker and no stored output?"""
    for path in UNSOLVED:
        text = path.read_text()
        assert "BEGIN SOLUTION" not in text and "END SOLUTION" not in text
        assert all(not c.outputs for c in code_cells(path))


@pytest.mark.parametrize("path", LESSONS + SOLVED + UNSOLVED + [course.LANDING],
                         ids=lambda p: p.name)
def test_every_notebook_starts_by_setting_up_the_devices(path):
    """Is the set-up cell (helpers, then devices) the first code cell, before JAX can start?"""
    assert code_cells(path)[0].source == SETUP_CELL


@pytest.mark.parametrize("path", LESSONS + SOLVED + UNSOLVED + [course.LANDING],
                         ids=lambda p: p.name)
def test_every_notebook_opens_on_colab_and_kaggle_from_its_own_path(path):
    """Does the first Markdown cell carry, under the title, the links that open this very
    notebook (its own folder and name, on the course's repository) on Colab and Kaggle?"""
    title = next(c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown")
    own = path.relative_to(ROOT).as_posix()
    line = title.source.splitlines()[2]
    assert line == generate.links(own)
    slug = course.REPOSITORY.removeprefix("https://github.com/")
    assert f"(https://colab.research.google.com/github/{slug}/blob/{course.BRANCH}/{own})" in line
    assert f"(https://kaggle.com/kernels/welcome?src={course.REPOSITORY}/blob/{course.BRANCH}/" \
           f"{own})" in line


def test_the_openings_are_what_make_exercises_writes():
    """Are the links and set-up cell of every lesson, solution and the landing notebook the
    generated ones, and does generating them again change nothing?"""
    assert generate.stale_openings() == []
    lesson = nbformat.read(LESSONS[0], as_version=4)
    assert generate.with_opening(lesson, "notebooks/x.ipynb") == generate.with_opening(
        generate.with_opening(lesson, "notebooks/x.ipynb"), "notebooks/x.ipynb")


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name)
def test_every_lesson_cell_was_executed_in_order_and_saved(path):
    """Were all code cells of a lesson run top to bottom in one session and saved with their
    outputs (nbval checks nothing in a cell without stored outputs)?"""
    cells = code_cells(path)
    assert [c.execution_count for c in cells] == list(range(1, len(cells) + 1))
    assert sum(bool(c.outputs) for c in cells) >= len(cells) // 2
    assert cell_errors_match_tags(nbformat.read(path, as_version=4)) == []


#: An absolute path into a folder of files: what a stored output must not show of the machine
#: the notebook ran on.
ABSOLUTE_PATH = re.compile(r"(?<![\w.:/\-])/(?:[\w.\-]+/)+[\w.\-]+\.py\b")
_COLOUR = re.compile(r"\x1b\[[\d;]*m")


def absolute_paths(text: str) -> list[str]:
    """The absolute paths of Python files in ``text``, terminal colours left out."""
    return ABSOLUTE_PATH.findall(_COLOUR.sub("", text))


@pytest.mark.parametrize("path", [*LESSONS, *SOLVED, ROOT / "start_here.ipynb"],
                         ids=lambda p: p.name)
def test_no_stored_output_names_the_folders_it_ran_in(path):
    """Does every traceback and output name files relative to the repository or the
    environment (``site-packages/jax/...``), never the author's own folders? (A cell's own
    file, ``/tmp/ipykernel_*``, is the kernel's, the same for everyone.)"""
    cells = nbformat.read(path, as_version=4).cells
    outputs = [str(o) for c in cells for o in c.get("outputs", [])]
    found = [m for text in outputs for m in absolute_paths(text)
             if not m.startswith("/tmp/ipykernel_")]
    assert found == []


def test_scrubbing_leaves_the_repository_and_environment_relative():
    """Does the execute tool's scrub turn an author's paths into ones every reader shares?"""
    root = Path("/home/ada/course")
    line = ('File \x1b[0;32m/home/ada/course/.venv/lib/python3.12/site-packages/jax/_src/api.py:3'
            '\x1b[0m, /home/ada/course/grader/lessons/cluster.py:9, '
            '/usr/lib/python3.12/json/decoder.py:2 and /tmp/ipykernel_7/1.py:4')
    assert execute.scrubbed(line, root) == (
        "File \x1b[0;32msite-packages/jax/_src/api.py:3\x1b[0m, grader/lessons/cluster.py:9, "
        "lib/python3.12/json/decoder.py:2 and /tmp/ipykernel_7/1.py:4")
    assert absolute_paths(line)[:2] == [
        "/home/ada/course/.venv/lib/python3.12/site-packages/jax/_src/api.py",
        "/home/ada/course/grader/lessons/cluster.py"]


def run_notebook(path: Path) -> nbformat.NotebookNode:
    notebook = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        notebook, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}
    )
    client.execute()
    return notebook


#: A cell tagged ``raises-exception`` whose error needs something split over several devices
#: (two devices that disagree, a dimension that does not divide): with one device it must run
#: without an error instead, as the lesson says.
NO_ERROR_ON_ONE_DEVICE = "no-error-on-one-device"


def cell_errors_match_tags(notebook: nbformat.NotebookNode, devices: int | None = None
                           ) -> list[str]:
    """The cells whose outcome disagrees with their tag: an error in an untagged cell, or a
    cell tagged ``raises-exception`` that ran without one (on 1 device, a cell also tagged
    ``no-error-on-one-device`` must run without one)."""
    wrong = []
    for cell in notebook.cells:
        if cell.cell_type == "code":
            tags = cell.metadata.get("tags", [])
            raises = "raises-exception" in tags
            if devices == 1 and NO_ERROR_ON_ONE_DEVICE in tags:
                raises = False
            if raises != any(o.output_type == "error" for o in cell.outputs):
                wrong.append(cell.source[:80])
    return wrong


#: The size a lesson keeps to: cells, and words of its Markdown (the code not counted).
MOST_CELLS, MOST_WORDS = 60, 3000


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name)
def test_every_lesson_keeps_to_its_size(path):
    """Does each lesson stay within 60 cells and 3,000 words of prose?"""
    cells = nbformat.read(path, as_version=4).cells
    words = sum(len(c.source.split()) for c in cells if c.cell_type == "markdown")
    assert len(cells) <= MOST_CELLS and words <= MOST_WORDS, (len(cells), words)


# Lesson 6 starts its own processes with 4 devices each, whatever its kernel has.
ON_FEWER_DEVICES = [p for p in LESSONS if not p.name.startswith("06_")]


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name)
def test_only_error_cells_are_tagged_to_run_on_one_device(path):
    """Is the one-device exception only ever a second tag of a cell that raises?"""
    for cell in code_cells(path):
        tags = cell.metadata.get("tags", [])
        assert NO_ERROR_ON_ONE_DEVICE not in tags or "raises-exception" in tags, cell.source[:80]


@pytest.mark.slow
@pytest.mark.parametrize("devices", [1, 2])
@pytest.mark.parametrize("path", ON_FEWER_DEVICES, ids=lambda p: p.name)
def test_lessons_also_run_on_fewer_devices(path, devices):
    """With 1 or 2 CPU devices asked for in the first cell, does every lesson still run, each
    error cell raising (or, on 1 device, running cleanly where tagged no-error-on-one-device)
    and no other cell failing?"""
    notebook = nbformat.read(path, as_version=4)
    first = next(c for c in notebook.cells if c.cell_type == "code")
    assert first.source == SETUP_CELL
    first.source = SETUP_CELL.replace("use_devices(8)", f"use_devices({devices})")
    client = nbclient.NotebookClient(notebook, timeout=120, kernel_name="python3",
                                     allow_errors=True, store_widget_state=False,
                                     resources={"metadata": {"path": str(ROOT)}})
    notebook.cells.append(nbformat.v4.new_code_cell("import jax\n\njax.device_count()"))
    client.execute()
    assert notebook.cells[-1].outputs[0]["data"]["text/plain"] == str(devices)
    assert cell_errors_match_tags(notebook, devices) == []


def check_outputs(notebook: nbformat.NotebookNode) -> list[str]:
    """The status each check(...) cell displayed."""
    return [html.split('data-status="', 1)[1].split('"', 1)[0]
            for html in check_pages(notebook)]


def check_pages(notebook: nbformat.NotebookNode) -> list[str]:
    """The HTML each check(...) cell displayed."""
    return ["".join(o.get("data", {}).get("text/html", "") for o in cell.outputs)
            for cell in notebook.cells
            if cell.cell_type == "code" and cell.source.startswith("check(")]


@pytest.mark.slow
@pytest.mark.parametrize("path", SOLVED, ids=lambda p: p.name)
def test_solution_notebooks_run_and_pass_their_checks(path):
    """Does each solved notebook run top to bottom, every check showing "passed", each on
    every device count the grader uses (none left out with a note)?"""
    pages = check_pages(run_notebook(path))
    assert pages and {page.split('data-status="', 1)[1].split('"', 1)[0]
                      for page in pages} == {"passed"}
    assert not [page for page in pages if "Not checked on" in page]


@pytest.mark.slow
@pytest.mark.parametrize("path", UNSOLVED, ids=lambda p: p.name)
def test_exercise_notebooks_run_and_show_not_attempted(path):
    """Does each unsolved notebook run top to bottom, every check saying "not attempted"?"""
    statuses = check_outputs(run_notebook(path))
    assert statuses and set(statuses) == {"not attempted"}


@pytest.mark.parametrize("path", SOLVED, ids=lambda p: p.name)
def test_the_announced_ladder_of_stars_is_the_exercises(path):
    """Does an exercise notebook that announces its exercises "(★ to ★★★)" hold exercises of
    exactly the easiest and the hardest it names?"""
    cells = nbformat.read(path, as_version=4).cells
    announced = re.search(r"\((★+) to (★+)\)", cells[0].source)
    stars = [len(m[1]) for c in cells if c.cell_type == "markdown"
             for m in re.finditer(r"^## \d+\. (★+) ", c.source, re.M)]
    if announced:
        assert (min(stars), max(stars)) == (len(announced[1]), len(announced[2]))


def test_every_lessons_list_of_exercises_is_what_generate_writes():
    """Does each lesson's "## Exercises" cell list exactly its exercises of grader/course.py,
    as `make exercises` writes them?"""
    assert generate.stale_lists() == []
    for lesson in course.LESSONS:
        listed = generate.exercise_list(lesson)
        names = re.findall(r"^\d+\. ★+ `(\w+)`: ", listed, re.M)
        assert names == [e.name for e in course.EXERCISES if e.lesson == lesson]


def test_a_lessons_list_follows_the_course_list_and_the_hidden_tests(monkeypatch, tmp_path):
    """Is an exercise declared in grader/course.py listed at once, with the stars and title of
    its heading in the solutions; are the device counts said those its hidden tests run on;
    and does an exercise without a heading, numbered out of place or listed after a harder one,
    or a lesson with no place for its list, get a sentence naming the fix?"""
    from grader.course import Exercise

    listed = generate.exercise_list("01_sharding")
    assert "\n1. ★ `is_congruent`: does a shape fit a sharding?\n" in listed
    assert listed.endswith("The grader runs the hidden tests on 8 devices; for `place_transposed` "
                           "and `devices_holding`, on 8, 2 and 4 devices; for `block_map`, on 8 "
                           "and 2 devices.")
    assert generate.exercise_list("04_prng").endswith(
        "The grader runs the hidden tests on 8 and 2 devices.")
    new = Exercise("made_up_for_a_test", lesson="04_prng", summary="Never a real exercise.")
    monkeypatch.setattr(course, "EXERCISES", (*course.EXERCISES, new))
    with pytest.raises(generate.ListError, match=r"solutions/04_prng.ipynb has no heading for "
                                                 r"`made_up_for_a_test`: give it one, such as"):
        generate.exercise_list("04_prng")
    solved = nbformat.read(course.SOLUTIONS / "04_prng.ipynb", as_version=4)
    solved.cells.append(nbformat.v4.new_markdown_cell("## 5. ★★★ `made_up_for_a_test(x)`: new"))
    nbformat.write(solved, tmp_path / "04_prng.ipynb")
    monkeypatch.setattr(generate, "SOLUTIONS", tmp_path)
    listed = generate.exercise_list("04_prng")  # no hidden test yet: the default, 8 devices
    assert "\n5. ★★★ `made_up_for_a_test`: new\n" in listed
    assert listed.endswith("on 8 and 2 devices; for `made_up_for_a_test`, on 8 devices.")
    for heading, refusal in (("## 4. ★★★ `made_up_for_a_test(x)`: new", "numbers "
                              "`made_up_for_a_test` 4, and it is exercise 5"),
                             ("## 5. ★ `made_up_for_a_test(x)`: new", r"`made_up_for_a_test` "
                              r"\(★\) comes after `fixed_noisy_step` \(★★★\): move it")):
        solved.cells[-1].source = heading
        nbformat.write(solved, tmp_path / "04_prng.ipynb")
        with pytest.raises(generate.ListError, match=refusal):
            generate.exercise_list("04_prng")
    solved.cells[-1].source = "## 5. ★★★ `made_up_for_a_test(x)`: new"
    nbformat.write(solved, tmp_path / "04_prng.ipynb")
    lesson = nbformat.read(course.LESSON_NOTEBOOKS / "04_prng.ipynb", as_version=4)
    written = generate.with_exercise_list(lesson, "04_prng").cells[-1].source
    assert "`made_up_for_a_test`" in written and written.startswith("## Exercises")
    lesson.cells = [c for c in lesson.cells if "## Exercises" not in c.source]
    with pytest.raises(generate.ListError, match="needs one Markdown cell with"):
        generate.with_exercise_list(lesson, "04_prng")


NUMBERS = ("one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
           "fifteen").split()


@pytest.mark.parametrize("lesson", course.LESSONS)
def test_no_lesson_or_exercise_notebook_counts_its_exercises_in_words(lesson):
    """Is no count of a lesson's exercises written in words, where adding one would make it
    wrong: in the lesson's "## Exercises" cell and in its exercise notebook's opening ("Four
    functions", "All five", "the first three", "the last two")?"""
    cells = nbformat.read(ROOT / "notebooks" / f"{lesson}.ipynb", as_version=4).cells
    [closing] = [c.source.split("## Exercises", 1)[1] for c in cells
                 if c.cell_type == "markdown" and "## Exercises" in c.source]
    opening = nbformat.read(course.SOLUTIONS / f"{lesson}.ipynb", as_version=4).cells[0].source
    words = "|".join(NUMBERS)
    said = [m for text in (closing, opening) for m in re.findall(
        rf"\b(?:{words})\s+(?:functions|exercises)\b|\b(?:all|first|last|other) (?:{words})\b"
        rf"|contains (?:{words})\b", text, re.I)]
    assert said == []


def test_the_students_page_lists_exactly_the_graders_exercises():
    """Is the exercise table of docs/students.md the one the exercise list gives (`make
    exercises`)?"""
    text = generate.TABLE_PAGE.read_text()
    assert generate.page_with_table(text) == text


def test_the_landing_notebook_lists_every_lesson_and_its_exercises():
    """Is start_here.ipynb's table the one the lessons and the exercise list give (`make
    exercises`), with a link to each lesson and its exercises that exists?"""
    text = generate.LANDING.read_text()
    assert generate.landing_with_table(text) == text
    links = re.findall(r"\]\(([^)]+\.ipynb)\)", generate.lesson_table())
    lessons = {e.lesson for e in course.EXERCISES}
    assert sorted(links) == sorted([f"notebooks/{n}.ipynb" for n in lessons]
                                   + [f"exercises/{n}.ipynb" for n in lessons])
    assert all((ROOT / link).is_file() for link in links)
