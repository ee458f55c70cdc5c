"""Safe by default (grader/workers/sandbox.py's Sandbox.problem and worker_user, and grade's
refusal): no sandbox means no grading unless the instructor passes --no-sandbox, and a grader
started by root runs no submission as root, sandboxed or not.

Run by CI as root and as an unprivileged user (see .ci/run); the tests of the workers' user
are root's alone.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest
from graded_class import LESSON, ROOT, grade_in_a_process, write_base
from markers import NEEDS_ROOT, NEEDS_THE_SANDBOX

from grader import messages as msg
from grader.workers import sandbox as sandboxing
from grader.workers.process import WorkerProcess
from grader.workers.sandbox import BWRAP, Limits, Sandbox

SANDBOXED = [pytest.param(True, id="sandboxed", marks=NEEDS_THE_SANDBOX),
             pytest.param(False, id="plain")]


def test_without_bubblewrap_grading_is_refused_in_one_line(tmp_path):
    """Where bubblewrap cannot be found, does `grade` stop before running any submission, with
    one line that names the ways out, and write no grade?"""
    batch = tmp_path / "class"
    write_base(batch / "ada")
    done = grade_in_a_process(batch, tmp_path / "out", "--assignment", LESSON,
                              path=str(tmp_path / "no-programs-here"))
    assert done.returncode == 2  # as every error that stops a command (verbs.USAGE_ERROR)
    said = [line for line in done.stderr.splitlines() if line.startswith("python -m grader")]
    assert said == ["python -m grader: error: " + msg.NO_SANDBOX.format(why=msg.BWRAP_MISSING)]
    assert "--no-sandbox" in said[0] and "apt-get install bubblewrap" in said[0]
    assert not (tmp_path / "out" / "gradebook.csv").exists()
    assert list((tmp_path / "out" / ".results").glob("*.json")) == []


def test_a_bubblewrap_that_cannot_make_its_sandbox_is_refused_with_its_reason(monkeypatch):
    """In a container that forbids user namespaces bubblewrap is installed but fails: is that a
    refusal that quotes it, rather than grading without a sandbox?"""
    folder = Path(tempfile.mkdtemp())  # where the workers' user (as root: nobody) may run it
    folder.chmod(0o755)
    stand_in = folder / "bwrap"
    stand_in.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\n"
                        "exit 1\n")
    stand_in.chmod(0o755)
    monkeypatch.setattr(sandboxing, "BWRAP", str(stand_in))
    try:
        problem = Sandbox().problem()
        plain = Sandbox(use_bwrap=False).problem()
    finally:
        shutil.rmtree(folder)
    assert problem == msg.NO_SANDBOX.format(why="bwrap: No permissions to create new namespace")
    assert plain is None  # --no-sandbox: plain processes work


@NEEDS_THE_SANDBOX
def test_a_working_sandbox_is_no_problem():
    """Here bubblewrap works: does the check find nothing to refuse?"""
    assert BWRAP and Sandbox().problem() is None


@NEEDS_ROOT
@pytest.mark.parametrize("sandboxed", SANDBOXED)
def test_a_grader_started_by_root_runs_no_worker_as_root(sandboxed):
    """Started by root, with or without bubblewrap: does a submission's cell run as another
    user, with no capability and no supplementary group, unable to write into the grader's
    package?"""
    limits = Limits()
    worker = WorkerProcess(2, limits, Sandbox(use_bwrap=sandboxed))
    cell = textwrap.dedent("""
        import os
        from pathlib import Path
        import grader
        status = dict(line.split(":", 1) for line in open("/proc/self/status"))
        assert os.getuid() != 0 and os.geteuid() != 0 and os.getgid() != 0, os.getuid()
        assert os.getgroups() == [] and status["CapEff"].strip() == "0" * 16, status["CapEff"]
        try:
            (Path(grader.__file__).parent / "zz_planted_by_a_test.py").write_text("")
        except OSError:  # not allowed, or read-only in the sandbox
            pass
        else:
            raise AssertionError("wrote into the grader's package")
    """)
    try:
        worker.receive("ready", limits.start)
        reply = worker.request("cell", 60, file="a.py", label="a.py", source=cell)
    finally:
        worker.close()
        (ROOT / "grader" / "zz_planted_by_a_test.py").unlink(missing_ok=True)
    assert reply == {"ok": True}


@NEEDS_ROOT
@pytest.mark.parametrize("sandboxed", SANDBOXED)
def test_a_worker_user_who_cannot_start_python_is_refused_with_the_way_out(sandboxed, tmp_path,
                                                                          monkeypatch):
    """The course's Python in a folder only root may enter: is that a refusal saying which
    user runs the submissions and how to let it in, rather than every submission crashing?"""
    private = tmp_path / "root-only"
    private.mkdir(mode=0o700)
    (private / "python").symlink_to(sys.executable)
    monkeypatch.setattr(sys, "executable", str(private / "python"))
    problem = Sandbox(use_bwrap=sandboxed).problem()
    assert problem is not None
    assert problem.startswith(msg.WORKER_USER_CANNOT_START.split("{")[0])
    assert "Permission denied" in problem or "No such file" in problem
    assert "chmod o+rX" in problem


@pytest.mark.slow
@NEEDS_ROOT
def test_without_the_sandbox_root_still_runs_submissions_as_another_user(tmp_path):
    """--no-sandbox, started by root: do submissions that plant start-up hooks in the Python
    environment and modules in the grader's package plant nothing, and so earn full marks on
    the exercises they hand in?"""
    import site

    fixtures = ("plants-startup-hooks-all-correct", "plants-code-in-the-grader-package-all-correct")
    batch = tmp_path / "class"
    for name in fixtures:
        write_base(batch / name)
        (batch / name / f"zz_{name}.py").write_bytes(
            (ROOT / "tests" / "submissions" / f"{name}.py").read_bytes())
    hooks = [folder / name for folder in [*map(Path, site.getsitepackages()), Path(sys.prefix)]
             for name in ("sitecustomize.py", "usercustomize.py",
                          "zz-planted-by-a-submission.pth")]
    planted = [ROOT / "grader" / "zz_planted_by_a_submission.py",
               ROOT / "grader" / "public" / "zz_planted_by_a_submission.py", *hooks]
    existing = {path for path in hooks if path.exists()}
    try:
        done = grade_in_a_process(batch, tmp_path / "out", "--no-sandbox", "--jobs", "1",
                                  "--assignment", LESSON)
        now = [path for path in planted if path.exists() and path not in existing]
    finally:  # a defence that failed must not leave the machine's Python broken
        for path in planted:
            if path not in existing:
                path.unlink(missing_ok=True)
    assert done.returncode == 0, done.stderr[-3000:]
    assert now == []
    assert msg.WARN_SANDBOX_OFF in done.stderr
    students = json.loads((tmp_path / "out" / "results.json").read_text())["students"]
    for name in fixtures:
        ring = students[name]["exercises"]["halo_difference"]
        assert ring["status"] == "passed", ring["message"]
