"""The student bundle and the course's own validation."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import sysconfig
import urllib.request
import zipfile

import nbformat
import numpy as np
import pytest
from kernels import make
from servers import free_port, stop, wait_until_up
from test_generate import leaky_copy_of

from grader import assignments, course
from grader.authoring import texts, validate
from grader.authoring.release import ReleaseError, release
from grader.devices import WORKER_ENV
from grader.framework import cases, expected, plain
from grader.grading import grade
from grader.workers.run import Run


def test_the_bundle_holds_no_solution_and_no_hidden_test(tmp_path):
    """Is every solution and every hidden test left out of what students get?"""
    bundle = tmp_path / "bundle"
    files = release(bundle)
    assert "exercises/03_collectives.ipynb" in files and "grader/check.py" in files
    # and what installs it, as locked, and opens it (`make lab`)
    assert {"uv.lock", "requirements.txt", "start_here.ipynb", "grader/lab.py"} <= set(files)
    assert not any(f.startswith(("solutions/", "grader/hidden/", "tests/")) for f in files)
    # nor the grader's own machinery: no worker, no batch grading, no authoring, no command line
    assert not any(f.startswith(("grader/workers/", "grader/grading/", "grader/authoring/"))
                   or f in ("grader/cli.py", "grader/verbs.py", "grader/__main__.py")
                   for f in files)
    hidden_names = [c.name for c in cases.load() if c.hidden]
    # Each solution's body, as its notebook's JSON holds it, and its opening unless students
    # are given that opening on purpose (a find-and-fix exercise hands out the code to mend).
    bodies, openings = [], []
    for notebook in course.SOLUTIONS.glob("*.ipynb"):
        text = notebook.read_text()
        given = re.sub(r"# BEGIN SOLUTION.*?# END SOLUTION", "", text, flags=re.S)
        for block in text.split("# BEGIN SOLUTION")[1:]:
            body = block.split("# END SOLUTION")[0].strip()
            bodies.append(body)
            if body[:200] not in given:
                openings.append(body[:200])
    assert hidden_names and bodies and openings
    for path in bundle.rglob("*"):
        if path.is_file():
            text = path.read_text(errors="replace")
            assert not [n for n in hidden_names if f"def {n}(" in text], path
            assert not [s for s in bodies + openings if s in text], path


#: Every import of the package's lesson helpers in the lessons, as the notebooks write them.
LESSON_IMPORTS = "\n".join(sorted({
    line.strip().strip('",').replace("\\n", "")
    for path in (course.ROOT / "notebooks").glob("*.ipynb")
    for line in path.read_text().splitlines() if "from grader.lessons" in line}))


def test_check_works_from_the_bundle_with_public_tests_only(tmp_path):
    """Can a student's kernel import check and every lesson helper the notebooks import from
    the bundle, which has no hidden tests and none of the grader's machinery, and run check?"""
    bundle = tmp_path / "bundle"
    release(bundle)
    assert "from grader.lessons.drawing import" in LESSON_IMPORTS
    code = (
        "from grader.devices import use_cpu_devices; use_cpu_devices(8)\n"
        "from grader import check\nfrom grader.framework import cases\n"
        f"import grader; assert grader.__file__.startswith({str(bundle)!r}), grader.__file__\n"
        "assert all(not c.hidden for c in cases.load())\n"
        f"{LESSON_IMPORTS}\n"
        "def halo_difference(x):\n    raise NotImplementedError\n"
        "print(check(halo_difference).status)\n"
    )
    # -S: without the site hooks, the course's own editable install cannot lend the bundle
    # what it lacks; the installed packages come in through PYTHONPATH instead.
    path = f"{bundle}:{sysconfig.get_paths()['purelib']}"
    done = subprocess.run([sys.executable, "-S", "-c", code], cwd=bundle, capture_output=True,
                          text=True, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": path},
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "not attempted"


def test_a_release_never_overwrites(tmp_path):
    """Does release refuse a folder that already holds something?"""
    (tmp_path / "old.txt").write_text("keep me")
    with pytest.raises(ReleaseError):
        release(tmp_path)
    assert (tmp_path / "old.txt").read_text() == "keep me"


@pytest.mark.slow
def test_the_course_validates():
    """Do solutions score full marks, stubs zero, with public and hidden tests everywhere,
    and does each step say what it checked as it goes?"""
    said: list[str] = []
    assert validate.problems(say=said.append) == []
    steps = [line.split("] ", 1)[1] for line in said]
    every = cases.load()
    assert steps[0] == ("exercises/ is what solutions/ generates, and hands out no solution "
                        f"({len(course.LESSONS)} notebooks): ok")
    assert steps[1] == (f"every one of the {len(course.EXERCISES)} exercises has public and "
                        f"hidden tests ({sum(not c.hidden for c in every)} public, "
                        f"{sum(c.hidden for c in every)} hidden): ok")
    points = sum(c.points for c in every)
    counts = grade.device_counts(every)
    assert steps[3] == f"the reference solutions pass every test: {points:g} points of {points:g}"
    assert steps[4] == (f"check()'s stored expected values: each of the "
                        f"{sum(not c.hidden for c in every)} public tests on 1 and 2 and 4 and 8 "
                        f"devices, the reference's on {' and '.join(map(str, counts))}: ok")
    assert steps[6] == (f"the stubs of the {len(course.EXERCISES)} exercises score 0 points (0, "
                        "each 'not attempted', wanted): ok")


def test_validate_takes_lessons_and_exercises_by_name():
    """Does validate's selection name a lesson's exercises, an exercise alone, both mixed, and
    refuse a name that is neither, naming it?"""
    lesson = [e.name for e in course.EXERCISES if e.lesson == "04_prng"]
    assert validate.chosen_exercises(["04_prng"]) == lesson
    assert validate.chosen_exercises(["device_keys", "nan_mean_var"]) == ["nan_mean_var",
                                                                          "device_keys"]
    assert validate.chosen_exercises([]) == [e.name for e in course.EXERCISES]
    with pytest.raises(ValueError, match="not a lesson or an exercise of the course: dvice_keys"):
        validate.chosen_exercises(["dvice_keys", "04_prng"])


@pytest.mark.slow
def test_validating_one_exercise_runs_only_it_and_says_so():
    """`validate device_keys`, a maintainer's loop for one exercise: does it run only that
    exercise's tests (its solution's, its stub's), check its stored values, and end by saying
    that it alone is ready, not the course?"""
    env = {k: v for k, v in os.environ.items() if k != WORKER_ENV}
    done = subprocess.run([sys.executable, "-m", "grader", "validate", "device_keys"],
                          capture_output=True, text=True, timeout=900, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    tests = [c for c in cases.load() if c.exercise == "device_keys"]
    public = sum(not c.hidden for c in tests)
    assert f"every one of the 1 exercises has public and hidden tests ({public} public" in \
        done.stdout
    assert f"through all {len(tests)} tests" in done.stdout
    assert done.stdout.splitlines()[-1] == ("device_keys: ready (the rest of the course was not "
                                            "validated)")


def test_validate_finds_a_stored_value_missing_or_not_the_references(monkeypatch):
    """check() reads stored expected values: does validate name a public test left unstored
    on a device count (a new test without `make expected`), and one whose stored value is
    not what the reference measured (a solution changed since), each with the command?"""
    stored = expected.load()
    public = [c for c in cases.for_exercise("replicated_noise") if not c.hidden]
    wants = {8: Run(8, {c.id: stored[c.id]["8"] for c in public})}
    assert validate.stored_problems(public, wants) == []
    gone, changed = public[0], public[1]
    table = {**stored, gone.id: {n: v for n, v in stored[gone.id].items() if n != "4"},
             changed.id: {**stored[changed.id], "8": {
                 **stored[changed.id]["8"], "data": plain.to_plain({"result": np.zeros(3)})}}}
    monkeypatch.setattr(expected, "load", lambda: table)
    found = validate.stored_problems(public, wants)
    assert found[0] == texts.VALIDATE_UNSTORED.format(case=gone.id, devices=4)
    assert found[1].startswith(f"the stored expected value of {changed.id} on 8 device(s) is "
                               "not the reference's (")
    assert len(found) == 2 and all("make expected" in line for line in found)


def test_validate_names_a_solution_its_student_copy_would_hand_out(monkeypatch, tmp_path):
    """The answer moved into a helper outside the markers: does validate's first step count
    it as a problem and name the helper, the exercise and the fix? (The solutions' run, which
    follows, is stopped here.)"""
    nbformat.write(leaky_copy_of("04_prng"), tmp_path / "04_prng.ipynb")
    monkeypatch.setattr(validate, "SOLUTIONS", tmp_path)

    def stopped(*args, **kwargs):
        raise grade.GradingError("stopped here")

    monkeypatch.setattr(grade, "reference", stopped)
    said: list[str] = []
    found = validate.problems(say=said.append, only=["04_prng"])
    assert found[-1] == "stopped here"
    [leak] = found[:-1]
    assert leak.startswith("solutions/04_prng.ipynb: `_answer`, defined outside the solution ")
    assert said[0].endswith("(1 notebooks): 1 problem(s), listed below")


# --- an assignment's bundle, and what its README and Makefile offer students ----------------
def test_an_assignment_bundle_holds_its_lessons_and_says_what_and_when(tmp_path):
    """Does `release --assignment` ship only the assignment's lesson and exercise notebooks,
    a landing page listing only them (every link there), and a README for students naming
    its exercises, the due date and the late policy, with nothing of the instructor's?"""
    bundle = tmp_path / "bundle"
    assignment = assignments.find("04_prng")
    files = release(bundle, assignment=assignment)
    assert [f for f in files if f.startswith(("notebooks/", "exercises/"))] == [
        "exercises/04_prng.ipynb", "notebooks/04_prng.ipynb"]
    assert [f for f in files if f.startswith("grader/public/")] == [
        "grader/public/__init__.py", "grader/public/expected/04_prng.json",
        "grader/public/prng.py"]
    assert {"Makefile", "setup.mk", "README.md"} <= set(files)
    landing = (bundle / "start_here.ipynb").read_text()
    links = set(re.findall(r"\]\(((?:notebooks|exercises)/[^)]+)\)", landing))
    assert links == {"notebooks/04_prng.ipynb", "exercises/04_prng.ipynb"}
    text = (bundle / "README.md").read_text()
    assert "Assignment **04_prng**" in text
    assert all(f"`{name}`" in text for name in assignment.exercises)
    assert f"Hand it in by **{assignment.due.isoformat(sep=' ', timespec='minutes')}**" in text
    assert "loses 10% of its points for each day" in text
    for instructor in ("hidden tests on a forced", "--shard", "python -m grader grade",
                       "solutions/"):
        assert instructor not in text, instructor
    whole = release(tmp_path / "whole")
    assert "exercises/01_sharding.ipynb" in whole
    assert "Hand it in by" not in (tmp_path / "whole" / "README.md").read_text()


def test_an_assignment_bundle_keeps_the_public_tests_its_own_import(tmp_path):
    """Lesson 2's public tests use measures registered in lessons 5's and 7's modules: does its
    bundle keep those modules (and no other lesson's tests or expected values), so that every
    public test of the assignment loads there?"""
    bundle = tmp_path / "bundle"
    assignment = assignments.find("02_jit_sharding")
    files = release(bundle, assignment=assignment)
    assert [f for f in files if f.startswith("grader/public/")] == [
        "grader/public/__init__.py", "grader/public/cost.py",
        "grader/public/expected/02_jit_sharding.json", "grader/public/jit_sharding.py",
        "grader/public/training.py"]
    code = ("from grader.framework import cases\n"
            f"import grader; assert grader.__file__.startswith({str(bundle)!r})\n"
            "print(sorted({c.exercise for c in cases.load()}))\n")
    path = f"{bundle}:{sysconfig.get_paths()['purelib']}"
    done = subprocess.run([sys.executable, "-S", "-c", code], cwd=bundle, capture_output=True,
                          text=True, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": path},
                          timeout=300)
    assert done.returncode == 0, done.stderr
    loaded = set(ast.literal_eval(done.stdout.strip().splitlines()[-1]))
    assert set(assignment.exercises) <= loaded
    assert all(course.BY_NAME[name].lesson in ("02_jit_sharding", "05_training", "07_cost")
               for name in loaded)


def bundle_make(bundle, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS")}
    return make(bundle, *args, env=env, timeout=timeout)


@pytest.mark.slow
def test_every_target_of_the_students_makefile_works_in_the_bundle(tmp_path):
    """In a fresh bundle: does `make check` install the lock (without the course's dev tools)
    and run the public tests of the notebook named, does `make handin` pack the exercise
    notebooks, does `make lab` serve JupyterLab on the landing page, and does `make clean`
    remove what make installed but no notebook?"""
    bundle = tmp_path / "bundle"
    release(bundle, assignment=assignments.find("03_collectives"))
    done = bundle_make(bundle, "check", "NOTEBOOK=exercises/03_collectives.ipynb")
    assert done.returncode == 0, done.stderr
    assert "0 of 11 exercises pass the public tests" in done.stdout
    assert "halo_difference: not attempted (0 of 2 public tests pass)" in done.stdout
    assert (bundle / ".venv" / "bin" / "python").exists()
    assert not (bundle / ".venv" / "bin" / "ruff").exists()  # the dev extra is the course's
    code = "import grader; print(grader.__file__)"
    where = subprocess.run([bundle / ".venv" / "bin" / "python", "-c", code], cwd=tmp_path,
                           capture_output=True, text=True, timeout=60).stdout
    assert where.startswith(str(bundle)), where  # the bundle's own grader, installed editable

    done = bundle_make(bundle, "handin")
    assert done.returncode == 0, done.stderr
    with zipfile.ZipFile(bundle / "handin.zip") as packed:
        assert packed.namelist() == ["03_collectives.ipynb"]

    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY",
                                                            "MAKELEVEL", "MAKEFLAGS", "MFLAGS")}
    env |= {"JUPYTER_TOKEN": "bundle-token", "JUPYTER_CONFIG_DIR": str(tmp_path / "config"),
            "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
            "JUPYTER_DATA_DIR": str(tmp_path / "data"), "IPYTHONDIR": str(tmp_path / "ip")}
    log = tmp_path / "lab.log"
    with log.open("w") as out:
        server = subprocess.Popen(["make", "-s", "lab", f"PORT={port}", "IP=127.0.0.1"],
                                  cwd=bundle, env=env, stdout=out, stderr=subprocess.STDOUT,
                                  start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(server, url, "bundle-token", log)
        with urllib.request.urlopen(f"{url}/?token=bundle-token", timeout=10) as answer:
            assert answer.url.split("?")[0] == f"{url}/lab/tree/start_here.ipynb"
    finally:
        stop(server, url, "bundle-token")
    # `make lab` told the notebooks which Python runs them (grader.lab --match-kernel)
    version = subprocess.run([bundle / ".venv" / "bin" / "python", "-c",
                              "import platform; print(platform.python_version())"],
                             capture_output=True, text=True, timeout=60).stdout.strip()
    for path in ("start_here.ipynb", "notebooks/03_collectives.ipynb",
                 "exercises/03_collectives.ipynb"):
        stored = json.loads((bundle / path).read_text())["metadata"]["language_info"]
        assert stored["version"] == version and stored["codemirror_mode"]["name"] == "ipython"

    done = bundle_make(bundle, "clean")
    assert done.returncode == 0, done.stderr
    assert not (bundle / ".venv").exists() and not (bundle / "handin.zip").exists()
    assert (bundle / "exercises" / "03_collectives.ipynb").exists()
