"""The handed-out bundle as a student gets it: released, installed the way its README says (no
repository on ``sys.path``), every exercise notebook filled with the solutions, then checked
from a terminal (``make check``) and in a kernel (``check()`` under each exercise).

One assignment goes the whole way with its own install; every other assignment's bundle is
checked with that environment, from its own folder. A correct answer must pass every public
test on the bundle's device counts: a bundle whose ``check()`` crashes on correct answers
stops a class.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest
from kernels import all_passed, execute, make, plain_env, unexpected_errors

from grader import assignments, course, messages
from grader.authoring.release import release

#: The assignment that goes the whole way: its lesson draws with rich (a dependency JAX does
#: not bring), and its exercises are checked on 8 and 2 devices.
WHOLE_WAY = "01_sharding"


def handed_out(folder: Path, name: str) -> tuple[Path, assignments.Assignment]:
    """The assignment's bundle, released into ``folder``, its exercise notebooks filled with
    the solutions (each solved notebook has the exercise notebook's name and cells)."""
    assignment = assignments.find(name)
    release(folder, assignment=assignment)
    for lesson in assignment.lessons:
        shutil.copyfile(course.SOLUTIONS / f"{lesson}.ipynb",
                        folder / "exercises" / f"{lesson}.ipynb")
    return folder, assignment


def passes_everything(output: str, assignment: assignments.Assignment) -> None:
    """``make check``'s lines say that every exercise of the assignment passed, and each
    notebook's summary that all of its exercises did."""
    lines = output.splitlines()
    for name in assignment.exercises:
        mine = [line for line in lines if line.strip().startswith(f"{name}:")]
        assert len(mine) == 1 and f"{name}: {messages.PASSED} (" in mine[0], (name, output)
    summaries = re.findall(r"(\d+) of (\d+) exercises pass the public tests", output)
    assert len(summaries) == len(assignment.lessons), output
    assert all(passed == total for passed, total in summaries), output


@pytest.fixture(scope="module")
def whole_way(tmp_path_factory):
    """One assignment's bundle, installed by its own Makefile as its README says, checked with
    `make check`: the bundle, that make's output, and the environment it made."""
    tmp_path = tmp_path_factory.mktemp("whole-way")
    bundle, assignment = handed_out(tmp_path / "bundle", WHOLE_WAY)
    done = make(bundle, "check", env=plain_env(tmp_path / "home"), timeout=1200)
    return bundle, assignment, done, tmp_path


@pytest.mark.slow
def test_make_check_passes_every_correct_answer_in_a_freshly_installed_bundle(whole_way):
    """Does `make check`, in a bundle that installs itself as its README says, pass every
    solution of the assignment, with the bundle's own grader and nothing of the repository?"""
    bundle, assignment, done, tmp_path = whole_way
    assert done.returncode == 0, done.stderr[-3000:]
    passes_everything(done.stdout, assignment)
    python = bundle / ".venv" / "bin" / "python"
    code = ("import grader, sys; print(grader.__file__); "
            f"print(not any(p.startswith({str(course.ROOT)!r}) for p in sys.path))")
    where = subprocess.run([python, "-c", code],
                           cwd=tmp_path, env=plain_env(tmp_path / "home"), capture_output=True,
                           text=True, timeout=120).stdout.split()
    assert where[0].startswith(str(bundle)) and where[1] == "True", where
    assert not (bundle / "grader" / "workers").exists()


@pytest.mark.slow
def test_a_kernel_of_the_bundle_runs_the_lesson_and_passes_every_check(whole_way):
    """In the bundle's own kernel (its install, its JupyterLab's kernel), does the lesson run
    top to bottom with no error it does not mean to show, and does `check()` under each
    exercise of the filled notebook show "passed"?"""
    bundle, assignment, done, tmp_path = whole_way
    assert done.returncode == 0, done.stderr[-3000:]
    (lesson,) = assignment.lessons
    said = execute(bundle / ".venv" / "bin" / "python", bundle,
                   [f"notebooks/{lesson}.ipynb", f"exercises/{lesson}.ipynb"],
                   plain_env(tmp_path / "home"))
    assert unexpected_errors(said) == []
    assert all_passed(said[f"exercises/{lesson}.ipynb"], assignment.exercises) == []


ASSIGNMENTS = sorted(name for name in assignments.load() if name != WHOLE_WAY)


@pytest.mark.slow
@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_every_assignments_bundle_passes_every_correct_answer(whole_way, tmp_path, name):
    """Does each other assignment's bundle, with only its own lessons' public tests and
    expected values, pass every solution of the assignment, run as its `make check` runs it
    (the bundle's folder first on the path, the student install's packages)?"""
    installed, _, done, _ = whole_way
    assert done.returncode == 0, done.stderr[-3000:]
    bundle, assignment = handed_out(tmp_path / "bundle", name)
    python = installed / ".venv" / "bin" / "python"
    notebooks = [f"exercises/{lesson}.ipynb" for lesson in assignment.lessons]
    code = ("import grader, runpy, sys; print(grader.__file__, flush=True); "
            "sys.argv = ['notebook_check', *sys.argv[1:]]; "
            "runpy.run_module('grader.notebook_check', run_name='__main__')")
    ran = subprocess.run([python, "-c", code, *notebooks], cwd=bundle,
                         env=plain_env(tmp_path / "home"), capture_output=True, text=True,
                         timeout=1200)
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert ran.stdout.startswith(str(bundle / "grader")), ran.stdout[:300]
    passes_everything(ran.stdout, assignment)


def test_make_handin_zips_the_notebooks_without_installing_anything(tmp_path):
    """In a bundle just unpacked, does `make handin` write handin.zip with the exercise
    notebooks, using the Python that would install the course, and install nothing; and with
    no notebook left, does it say so and fail, rather than pack an empty zip?"""
    bundle = tmp_path / "bundle"
    release(bundle, assignment=assignments.find("04_prng"))
    done = make(bundle, "handin", env=plain_env(tmp_path / "home"), timeout=120)
    assert done.returncode == 0, done.stderr
    with zipfile.ZipFile(bundle / "handin.zip") as packed:
        assert packed.namelist() == ["04_prng.ipynb"]
    assert not (bundle / ".venv").exists() and not (bundle / "build").exists()
    for notebook in (bundle / "exercises").glob("*.ipynb"):
        notebook.unlink()
    done = make(bundle, "handin", env=plain_env(tmp_path / "home"), timeout=120)
    assert done.returncode != 0 and not (bundle / "handin.zip").exists()
    assert "make handin: no notebook in exercises/ to hand in" in done.stderr
