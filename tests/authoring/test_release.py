"""The student bundle and the course's own validation."""

from __future__ import annotations

import subprocess
import sys
import sysconfig

import pytest

from grader import cases, course
from grader.authoring import validate
from grader.authoring.release import ReleaseError, release


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
                   or f in ("grader/cli.py", "grader/__main__.py") for f in files)
    hidden_names = [c.name for c in cases.load() if c.hidden]
    solved = [line.strip() for path in course.SOLUTIONS.glob("*.ipynb")
              for line in path.read_text().split("# BEGIN SOLUTION")[1:]]
    assert hidden_names and solved
    for path in bundle.rglob("*"):
        if path.is_file():
            text = path.read_text(errors="replace")
            assert not [n for n in hidden_names if f"def {n}(" in text], path
            assert not [s[:200] for s in solved if s[:200] in text], path


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
        "from grader import cases, check\n"
        f"import grader; assert grader.__file__.startswith({str(bundle)!r}), grader.__file__\n"
        "assert all(not c.hidden for c in cases.load())\n"
        f"{LESSON_IMPORTS}\n"
        "def ring_shift(x):\n    raise NotImplementedError\n"
        "print(check(ring_shift).status)\n"
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
    """Do solutions score full marks, stubs zero, with public and hidden tests everywhere?"""
    assert validate.problems() == []
