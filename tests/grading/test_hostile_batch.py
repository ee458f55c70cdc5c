"""Grading a batch of broken, hostile and correct submissions, each named by its outcome.

Every fixture in tests/submissions/ that is a ``.py`` file is graded on top of a correct
notebook of the first five exercises of lesson 3 (from the example submission ``ada``): it
redefines one function or adds a cell. So each one must cost exactly the exercise it targets
and nothing else. The unreadable files
of tests/submissions/unreadable/ (and two too large to keep in the repository, made here) are
handed in next to that notebook too: each costs nothing but itself. The batch is graded on
lesson 3's assignment, so the solutions and stubs in it are lesson 3's.

The batch is graded by the command line in a process of its own, which reports its peak
memory: a submission that prints hundreds of megabytes must not make the grader hold them.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
from graded_class import LESSON, LIMITS, ROOT, grade_in_a_process, write_base
from markers import NEEDS_CGROUPS, NEEDS_MEMORY_GROUPS, NEEDS_THE_SANDBOX

from grader import course
from grader import messages as msg
from grader.course import EXERCISES
from grader.framework import cases
from grader.workers import confine, sandbox

FIXTURES = ROOT / "tests" / "submissions"
BASE_EXERCISES = ("nan_mean_var", "fixed_pmap_port", "distributed_dot", "pmean_update_step",
                  "halo_difference")

# distributed_dot's tests of how it computes (its jaxpr and its compiled code), and what the
# others, of its result, are worth.
HOW_DOT_COMPUTES = {c.name for c in cases.for_exercise("distributed_dot")
                    if c.judge.__qualname__.split(".")[0] in ("compiles_to", "runs_on_mesh")}
DOT_RESULTS = sum(c.points for c in cases.for_exercise("distributed_dot")
                  if c.name not in HOW_DOT_COMPUTES)
# What nan_mean_var's tests of its result are worth (the others: how it computes).
MOMENTS_RESULTS = sum(c.points for c in cases.for_exercise("nan_mean_var")
                      if c.judge.__qualname__ != "all_reduces_once")
# fixture -> {exercise: (points, status)}; every exercise not listed must get full marks.
OUTCOMES: dict[str, dict[str, tuple[float, str]]] = {
    "exits-with-sys-exit-in-halo-difference": {"halo_difference": (0, "failed")},
    "kills-its-process-in-halo-difference": {"halo_difference": (0, "crashed")},
    "segfaults-in-distributed-dot": {"distributed_dot": (0, "crashed")},
    "hangs-ignoring-signals-in-fixed-pmap-port": {"fixed_pmap_port": (0, "timeout")},
    "hangs-in-a-top-level-cell": {},
    "raises-keyboard-interrupt-in-halo-difference": {"halo_difference": (0, "failed")},
    "patches-comparisons-with-wrong-dot": {"distributed_dot": (0, "failed")},
    "returns-object-equal-to-everything-from-dot": {"distributed_dot": (0, "failed")},
    "returns-pmap-stacking-instead-of-rows": {"fixed_pmap_port": (0, "failed")},
    "prints-fake-reports-around-wrong-halo-difference": {"halo_difference": (0, "failed")},
    "hard-codes-eight-devices-in-dot": {"distributed_dot": (2, "partial")},
    "tries-to-change-the-device-count": {},
    "forged-stdout-warnings-and-noise-all-correct": {},
    "reuses-global-names-in-another-file-all-correct": {},
    "allocates-without-bound-in-halo-difference": {"halo_difference": (0, "failed")},
    "prints-hundreds-of-megabytes-all-correct": {},
    "searches-frames-and-heap-for-expected-values-in-halo-difference": {
        "halo_difference": (0, "failed")},
    "fakes-jax-to-describe-a-host-dot-as-distributed": {"distributed_dot": (DOT_RESULTS,
                                                                          "partial")},
    "fakes-compiled-text-in-jax-internals-for-a-host-dot": {"distributed_dot": (DOT_RESULTS,
                                                                              "partial")},
    "traces-a-decoy-psum-and-computes-the-dot-on-the-host": {"distributed_dot": (DOT_RESULTS,
                                                                               "partial")},
    "rewrites-replies-while-halo-difference-is-measured": {"halo_difference": (0, "failed")},
    "switches-the-seal-off-to-fake-how-dot-computes": {"distributed_dot": (DOT_RESULTS,
                                                                           "partial")},
    "rewrites-the-workers-locals-with-a-trace-function-in-dot": {
        "distributed_dot": (DOT_RESULTS, "partial")},
    "traces-a-decoy-psum-of-moments-and-computes-them-on-the-host": {
        "nan_mean_var": (MOMENTS_RESULTS, "partial")},
    "adds-a-psum-that-carries-nothing-to-a-replicated-dot": {"distributed_dot": (DOT_RESULTS,
                                                                                 "partial")},
    "hands-in-a-program-that-never-ends-for-dot": {"distributed_dot": (DOT_RESULTS,
                                                                       "partial")},
    "scales-a-replicated-dot-by-a-psum-of-ones": {"distributed_dot": (DOT_RESULTS,
                                                                      "partial")},
    "answers-for-its-worker-with-a-reply-bomb-and-nan-texts": {
        "halo_difference": (0, "failed"), "pmean_update_step": (0, "failed")},
    "answers-how-dot-computes-with-a-program-of-its-choosing": {
        "distributed_dot": (DOT_RESULTS, "partial")},
    "copies-the-hidden-tests-into-its-errors-in-halo-difference": {
        "halo_difference": (0, "failed")},
    "answers-every-test-with-megabytes-of-text": {
        name: (0, "failed") for name in BASE_EXERCISES},
    "leaves-a-thread-rewriting-replies-so-nothing-is-measured": {
        name: (0, "failed") for name in BASE_EXERCISES},
}
# fixture -> {exercise: what its message says}, and what the submission's problems say: the
# reason a student reads.
REASONS: dict[str, tuple[dict[str, str], tuple[str, ...]]] = {
    "exits-with-sys-exit-in-halo-difference": (
        {"halo_difference": "`halo_difference` raised SystemExit"}, ()),
    "kills-its-process-in-halo-difference": (
        {"halo_difference": "the process running `halo_difference` on 8 device(s) ended"}, ()),
    "segfaults-in-distributed-dot": ({"distributed_dot": "killed by signal SIGSEGV"}, ()),
    "hangs-ignoring-signals-in-fixed-pmap-port": ({"fixed_pmap_port": "it took too long or hung"},
                                                  ()),
    "raises-keyboard-interrupt-in-halo-difference": (
        {"halo_difference": "`halo_difference` raised KeyboardInterrupt"}, ()),
    "patches-comparisons-with-wrong-dot": (
        {"distributed_dot": "the result has the wrong values"},
        ("grader.framework.judge.difference", "numpy.allclose", "put back")),
    "returns-object-equal-to-everything-from-dot": (
        {"distributed_dot": "`distributed_dot` returned something the grader cannot read"}, ()),
    "returns-pmap-stacking-instead-of-rows": (
        {"fixed_pmap_port": "should have shape (16, 2)"}, ()),
    "prints-fake-reports-around-wrong-halo-difference": (
        {"halo_difference": "the result has the wrong values"}, ()),
    "tries-to-change-the-device-count": ({}, ("jax_num_cpu_devices",)),
    "answers-for-its-worker-with-a-reply-bomb-and-nan-texts": (
        {"halo_difference": msg.MSG_REPLY_TOO_LARGE.format(what="over 4 MiB"),
         "pmean_update_step": "`pmean_update_step` raised an error"}, ()),
    "holds-memory-in-children-beyond-the-cap-in-halo-difference": (
        {"halo_difference": "four children could not hold 6 GiB together"}, ()),
    "traces-a-decoy-psum-of-moments-and-computes-them-on-the-host": (
        {"nan_mean_var": "result 1 differs from the reference's"}, ()),
    "adds-a-psum-that-carries-nothing-to-a-replicated-dot": (
        {"distributed_dot": "so that all-reduce carries nothing"}, ()),
    "hands-in-a-program-that-never-ends-for-dot": (
        {"distributed_dot": msg.MSG_VERIFIER_TIME_UP.format(seconds=LIMITS.exercise)}, ()),
    "searches-frames-and-heap-for-expected-values-in-halo-difference": (
        {"halo_difference": "the result has the wrong values"}, ()),
}
# Fixtures only the sandbox makes harmless or harmless-looking: without bubblewrap they would
# really plant hooks in the environment or leave processes behind, so they are not run.
SANDBOX_ONLY: dict[str, dict[str, tuple[float, str]]] = {
    "reads-solutions-and-hidden-tests-from-disk-all-correct": {},
    "plants-startup-hooks-all-correct": {},
    "starts-a-child-that-would-outlive-it-all-correct": {},
    "writes-into-the-output-folder-all-correct": {},
    "tries-root-escapes-from-the-sandbox-all-correct": {},
    "plants-code-in-the-grader-package-all-correct": {},
    "plants-compiled-programs-for-the-class-all-correct": {},
    "reads-the-kept-reference-measurements-all-correct": {},
}
if sandbox.BWRAP:
    OUTCOMES.update(SANDBOX_ONLY)
# Fixtures only control groups make harmless to the rest of the batch: without them the
# processes it starts are capped in number but not in their share of the CPU, and would slow
# the other job slot down.
CGROUPS_ONLY: dict[str, dict[str, tuple[float, str]]] = {
    "starts-busy-processes-without-end-in-halo-difference": {"halo_difference": (0, "timeout")},
}
if confine.available():
    OUTCOMES.update(CGROUPS_ONLY)
# Fixtures only a memory control group holds: without one, each process is capped but not
# the children a worker starts, together.
MEMORY_GROUPS_ONLY: dict[str, dict[str, tuple[float, str]]] = {
    "holds-memory-in-children-beyond-the-cap-in-halo-difference": {
        "halo_difference": (0, "failed")},
}
if confine.caps_memory():
    OUTCOMES.update(MEMORY_GROUPS_ONLY)

# Unreadable files handed in as zz_<kind>.ipynb next to the correct notebook, each with the
# reason the student reads. Each file, were it read, would define a wrong halo_difference.
MIB = 2**20
UNREADABLE = {
    "binary-file-named-ipynb": "not UTF-8 text (invalid start byte at byte 0): a binary file, "
                               "or another encoding",
    "empty-file": "the file is empty, not a notebook",
    "invalid-json": "not a valid notebook (invalid JSON: Expecting ',' delimiter: line 1 "
                    "column 51 (char 50))",
    "nbformat-3": "notebook format 3 is not supported (4 is): open it in Jupyter and save it "
                  "again",
    "fifty-mib-of-outputs": "larger than 20 MiB: clear its outputs (Edit > Clear Outputs of All "
                            "Cells), save, and hand it in again",
    "a-hundred-thousand-cells": "more than 2000 code cells: put the code in fewer cells",
}
WRONG_HALO_DIFFERENCE = "def halo_difference(x):\n    return x\n"


def unreadable_student(kind: str) -> str:
    return f"hands-in-{kind}-next-to-a-correct-notebook"


def unreadable_file(kind: str) -> bytes:
    """The bytes of an unreadable fixture: from tests/submissions/unreadable/, or made here."""
    def code_cell(source: str, outputs: list) -> dict:
        return {"cell_type": "code", "execution_count": None, "metadata": {},
                "outputs": outputs, "source": source}

    def notebook_bytes(cells: list) -> bytes:
        return json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {},
                           "cells": cells}).encode()

    if kind == "fifty-mib-of-outputs":
        printed = {"output_type": "stream", "name": "stdout", "text": "x" * (50 * MIB)}
        return notebook_bytes([code_cell(WRONG_HALO_DIFFERENCE, [printed])])
    if kind == "a-hundred-thousand-cells":
        return notebook_bytes([code_cell("pass", []) for _ in range(100_000)]
                              + [code_cell(WRONG_HALO_DIFFERENCE, [])])
    return (FIXTURES / "unreadable" / f"{kind}.ipynb").read_bytes()


OUTCOMES.update({unreadable_student(kind): {} for kind in UNREADABLE})
# Links to the reference solutions next to the correct notebook: never followed.
LINKER = "links-to-the-reference-solutions-next-to-a-correct-notebook"
OUTCOMES[LINKER] = {}

def without_lateness(result: dict) -> dict:
    """A student's result without what the assignment's due date adds once the whole class is
    graded (results.json has it; the result stored per student does not)."""
    return {k: v for k, v in result.items() if k not in ("standing", "late", "penalty", "final")}


@pytest.fixture(scope="module")
def batch_run(tmp_path_factory) -> SimpleNamespace:
    """Grade every fixture, the solutions and the stubs in one batch, with 2 jobs, on lesson
    3's assignment (the whole course's solutions and stubs are graded by `validate`, in
    tests/authoring/test_release.py); return the folders, results.json's students, the log
    and the grader's peak memory."""
    batch = tmp_path_factory.mktemp("batch")
    unreadable = {unreadable_student(kind): kind for kind in UNREADABLE}
    for name in OUTCOMES:
        student = batch / name
        write_base(student)
        if name in unreadable:
            kind = unreadable[name]
            (student / f"zz_{kind}.ipynb").write_bytes(unreadable_file(kind))
        elif name == LINKER:
            (student / f"zz_{LESSON}.ipynb").symlink_to(course.SOLUTIONS / f"{LESSON}.ipynb")
            (student / "zz_solutions").symlink_to(course.SOLUTIONS, target_is_directory=True)
        else:
            shutil.copy(FIXTURES / f"{name}.py", student / f"zz_{name}.py")
    for notebook in FIXTURES.glob("*.ipynb"):
        shutil.copy(notebook, batch / notebook.name)
    shutil.copytree(course.SOLUTIONS, batch / "reference-solutions")
    shutil.copytree(course.EXERCISE_NOTEBOOKS, batch / "untouched-stubs")
    out = tmp_path_factory.mktemp("out")
    done = grade_in_a_process(batch, out, "--jobs", "2", "--assignment", LESSON)
    assert done.returncode == 0, done.stderr[-3000:]
    peak = [line for line in done.stderr.splitlines() if line.startswith("peak-rss-kib")]
    return SimpleNamespace(
        batch=batch, out=out, log=done.stderr, peak_bytes=int(peak[-1].split()[1]) * 1024,
        students=json.loads((out / "results.json").read_text())["students"],
    )


@pytest.fixture(scope="module")
def graded(batch_run) -> dict:
    """results.json's students."""
    return batch_run.students


def max_points(exercise: str) -> float:
    return sum(c.points for c in cases.for_exercise(exercise))


@pytest.mark.slow
@pytest.mark.parametrize("fixture", [
    pytest.param(name, marks=[NEEDS_THE_SANDBOX] if name in SANDBOX_ONLY else
                 [NEEDS_CGROUPS] if name in CGROUPS_ONLY else
                 [NEEDS_MEMORY_GROUPS] if name in MEMORY_GROUPS_ONLY else [])
    for name in sorted({**OUTCOMES, **SANDBOX_ONLY, **CGROUPS_ONLY, **MEMORY_GROUPS_ONLY})])
def test_each_fixture_costs_exactly_its_exercise(graded, fixture):
    """Does a crash, hang, exit, patch or forgery cost its own exercise and nothing else?"""
    exercises = graded[fixture]["exercises"]
    for exercise in (e for e in EXERCISES if e.lesson == LESSON):
        got = exercises[exercise.name]
        if exercise.name in BASE_EXERCISES:
            full = (max_points(exercise.name), "passed")
            points, status = OUTCOMES[fixture].get(exercise.name, full)
        else:
            points, status = 0, "not found"
        # the submission's problems say whether a cell of the fixture failed, which would leave
        # the base notebook's correct function to be graded in its place
        assert (got["points"], got["status"]) == (points, status), (
            exercise.name, got["message"], graded[fixture]["problems"])


@pytest.mark.slow
@pytest.mark.parametrize("fixture", [
    pytest.param(name, marks=[NEEDS_MEMORY_GROUPS] if name in MEMORY_GROUPS_ONLY else [])
    for name in sorted(REASONS)])
def test_each_fixture_is_told_why(graded, fixture):
    """Does the student read the reason: in the message of the exercise it cost, and in the
    problems of the submission when it changed what the grader measures with?"""
    messages, problems = REASONS[fixture]
    student = graded[fixture]
    for exercise, reason in messages.items():
        assert reason in student["exercises"][exercise]["message"], student["exercises"][exercise]
    for reason in problems:
        assert any(reason in p for p in student["problems"]), student["problems"]


@pytest.mark.slow
@NEEDS_THE_SANDBOX
def test_the_sandbox_leaves_no_hook_and_no_process_behind(graded):
    """After hostile submissions ran, is every start-up hook absent and every process gone?"""
    import site
    import sys

    for folder in [*map(Path, site.getsitepackages()), Path(sys.prefix)]:
        for name in ("sitecustomize.py", "usercustomize.py", "zz-planted-by-a-submission.pth"):
            assert not (folder / name).exists()
    for folder in ("grader", "grader/public"):
        assert not (ROOT / folder / "zz_planted_by_a_submission.py").exists()
    marker = b"orphan-marker-5b1e"
    alive = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and marker in (proc / "cmdline").read_bytes():
                alive.append(proc.name)
        except OSError:
            pass
    assert alive == []


def windows(text: str, width: int) -> set[str]:
    """Every run of ``width`` characters of ``text``, its whitespace collapsed as a message's
    is."""
    flat = " ".join(text.split())
    return {flat[i:i + width] for i in range(len(flat) - width + 1)}


@pytest.mark.slow
def test_the_hidden_tests_cannot_leave_through_feedback(graded):
    """A submission hunts its worker for the hidden tests and raises what it finds, 700
    characters per call: does it find nothing (the worker holds none), and does its results'
    every message hold no run of 100 characters of them (a hidden test shows at most 80
    characters of what the submission wrote), where they once held their whole text?"""
    width = 100
    hidden = set().union(*(windows(path.read_text(), width)
                           for path in (ROOT / "grader" / "hidden").glob("*.py")))
    student = graded["copies-the-hidden-tests-into-its-errors-in-halo-difference"]
    texts = [student["problems"], [e["message"] for e in student["exercises"].values()]]
    texts += [[t["message"], t.get("got") or ""] for e in student["exercises"].values()
              for t in e["tests"]]
    found = [w for group in texts for text in group for w in windows(str(text), width)
             if w in hidden]
    assert found == []
    ring = student["exercises"]["halo_difference"]
    assert all("raised ValueError: no hidden test was found" in t["message"]
               for t in ring["tests"])


@pytest.mark.slow
def test_a_memory_hog_is_stopped_by_the_cap(graded):
    """Does unbounded allocation end in a MemoryError for that exercise only?"""
    ring = graded["allocates-without-bound-in-halo-difference"]["exercises"]["halo_difference"]
    assert "MemoryError" in ring["message"]


@pytest.mark.slow
def test_printing_hundreds_of_megabytes_leaves_the_grader_small(batch_run, graded):
    """A submission printed 400 MiB in each of its workers and 64 MiB per call of halo_difference,
    another answered for its worker with 60 MiB of empty dicts per test of halo_difference, another
    with 4 MiB of text per test of five exercises: does the grader's own peak memory over the
    whole batch stay below 400 MiB, with the first submission graded in full?"""
    printer = graded["prints-hundreds-of-megabytes-all-correct"]
    assert printer["problems"] == []
    assert batch_run.peak_bytes < 400 * MIB, batch_run.peak_bytes / MIB


@pytest.mark.slow
def test_unreadable_files_cost_only_themselves_with_their_reason(batch_run, graded):
    """Is each unreadable file next to a correct notebook the student's one problem, with its
    reason, in results.json and in the feedback, while the notebook is graded in full?"""
    for kind, reason in UNREADABLE.items():
        name = unreadable_student(kind)
        problem = f"zz_{kind}.ipynb: {reason}; nothing in it was graded"
        assert graded[name]["problems"] == [problem]
        assert f"- {problem}" in (batch_run.out / "feedback" / f"{name}.md").read_text()


@pytest.mark.slow
def test_links_to_the_reference_solutions_are_not_followed(graded):
    """Do links to the lesson's solutions notebook and to the solutions folder earn nothing,
    each reported, while the student's own notebook is graded in full?"""
    student = graded[LINKER]
    link = "a symbolic link, which the grader does not follow: hand in the file itself, not a link"
    assert student["problems"] == [f"{name}: {link}; nothing in it was graded"
                                   for name in (f"zz_{LESSON}.ipynb", "zz_solutions")]
    rest = [e.name for e in EXERCISES if e.lesson == LESSON and e.name not in BASE_EXERCISES]
    assert rest and {student["exercises"][name]["status"] for name in rest} == {"not found"}


@pytest.mark.slow
@NEEDS_THE_SANDBOX
def test_the_sandbox_keeps_a_submission_out_of_the_output_folder(batch_run, graded):
    """A submission wrote into the output folder it found on the sandbox's command line: is
    the real one untouched (nothing planted, no forged row, no stored result to restore)?"""
    out = batch_run.out
    assert sorted(p.name for p in out.iterdir()) == [
        ".results", "feedback", "gradebook.csv", "results.json", "similarity.html", "summary.md",
        "summary.png"]
    assert not (batch_run.batch / "planted-by-a-submission.txt").exists()
    rows = (out / "gradebook.csv").read_text().splitlines()
    assert [row.split(",")[0] for row in rows[1:]] == sorted(graded)
    assert "changed while the batch was graded" not in batch_run.log
    for name, result in graded.items():
        stored = json.loads((out / ".results" / f"{name}.json").read_text())["result"]
        assert without_lateness(stored) == without_lateness(result)


@pytest.mark.slow
def test_without_the_sandbox_writes_into_the_output_folder_are_undone(tmp_path):
    """Without the sandbox a submission can write into the output folder (unless the grader
    was started by root: then it runs as nobody and cannot): are the gradebook and
    results.json it forged replaced, and the stored result it forged for another student
    (fingerprint kept, full marks) written again from the grader's own, with a warning, so
    that the next run reuses the true results? (The file it planted stays: see
    docs/grading.md.)"""
    writer = "writes-into-the-output-folder-all-correct"
    batch = tmp_path / "class"
    for name in ("ada", writer):
        write_base(batch / name)
    shutil.copy(FIXTURES / f"{writer}.py", batch / writer / f"zz_{writer}.py")
    out = tmp_path / "out"
    first = grade_in_a_process(batch, out, "--jobs", "1", "--no-sandbox", "--assignment", LESSON)
    assert first.returncode == 0, first.stderr[-3000:]
    can_write = sandbox.worker_user() is None
    warned = "warning: the stored results of ada changed while the batch was graded"
    assert (warned in first.stderr) == can_write
    students = json.loads((out / "results.json").read_text())["students"]
    base = sum(max_points(name) for name in BASE_EXERCISES)
    assert {name: s["total"] for name, s in students.items()} == {"ada": base, writer: base}
    rows = (out / "gradebook.csv").read_text().splitlines()
    assert [row.split(",")[0] for row in rows[1:]] == ["ada", writer]
    for name, result in students.items():
        stored = json.loads((out / ".results" / f"{name}.json").read_text())["result"]
        assert without_lateness(stored) == without_lateness(result)
    planted = out / "planted-by-a-submission.txt"
    assert (planted.read_text() == "owned\n") if can_write else not planted.exists()

    second = grade_in_a_process(batch, out, "--jobs", "1", "--no-sandbox", "--assignment", LESSON)
    assert second.returncode == 0, second.stderr[-3000:]
    verbs = [line.split()[0] for line in second.stderr.splitlines()
             if line.startswith(("kept ", "graded "))]
    assert verbs == ["kept", "kept"]
    assert json.loads((out / "results.json").read_text())["students"] == students


@pytest.mark.slow
def test_solutions_score_full_marks_and_stubs_zero(graded):
    """Do the reference solutions pass every test of the assignment, and the generated stubs
    none?"""
    solved, stubs = graded["reference-solutions"], graded["untouched-stubs"]
    points = sum(c.points for c in cases.load() if course.BY_NAME[c.exercise].lesson == LESSON)
    assert solved["total"] == solved["max_total"] == points
    assert stubs["total"] == 0
    assert {e["status"] for e in stubs["exercises"].values()} == {"not attempted"}


@pytest.mark.slow
def test_a_hang_in_a_cell_skips_that_cell_only(graded):
    """Is a never-ending top-level cell reported and skipped, the rest still graded?"""
    problems = graded["hangs-in-a-top-level-cell"]["problems"]
    assert any("did not finish within 20 s" in p for p in problems), problems


@pytest.mark.slow
def test_timeouts_and_crashes_say_what_happened(graded):
    """Does the feedback name the reason: a time limit, a signal, an exit code?"""
    hang = graded["hangs-ignoring-signals-in-fixed-pmap-port"]["exercises"]["fixed_pmap_port"]
    assert "stopped after 20 s" in hang["message"]
    segfault = graded["segfaults-in-distributed-dot"]["exercises"]["distributed_dot"]
    assert "SIGSEGV" in segfault["message"]
    exit_ = graded["exits-with-sys-exit-in-halo-difference"]["exercises"]["halo_difference"]
    assert "SystemExit" in exit_["message"]


@pytest.mark.slow
def test_hard_coded_device_count_gets_the_device_count_hint(graded):
    """Is a solution that only works on 8 devices told so?"""
    dot = graded["hard-codes-eight-devices-in-dot"]["exercises"]["distributed_dot"]
    failed = [t for t in dot["tests"] if t["status"] != "passed"]
    assert failed and all(t["devices"] == [2] for t in failed)
    assert "fixed number of devices" in dot["hint"]


@pytest.mark.slow
def test_a_scalar_does_not_pass_for_one_row_per_device(graded):
    """Does broadcasting fail the shape check, with the per-device hint?"""
    result = graded["returns-pmap-stacking-instead-of-rows"]["exercises"]["fixed_pmap_port"]
    assert "shape" in result["message"]
    assert "shape (n, N / n, m)" in result["hint"]


@pytest.mark.slow
def test_magics_and_cell_magics_do_not_break_a_notebook(graded):
    """Do %magics and ! lines do nothing, while a %%time cell still defines its function?"""
    student = graded["magics-shell-lines-and-cell-magics-around-psum"]
    assert student["problems"] == []
    moments = student["exercises"]["nan_mean_var"]
    assert moments["points"] == moments["max_points"] == max_points("nan_mean_var")
    assert student["exercises"]["halo_difference"]["status"] == "not found"


@pytest.mark.slow
def test_how_a_function_computes_is_measured_outside_the_submission(graded):
    """Does a patch of JAX's private executable class, which the seal does not cover, fail
    to describe a host dot as compiling to an all-reduce (the program is compiled by the
    verifier), while the dot's values still count?"""
    student = graded["fakes-compiled-text-in-jax-internals-for-a-host-dot"]
    tests = student["exercises"]["distributed_dot"]["tests"]
    failed = {t["test"] for t in tests if t["status"] != "passed"}
    assert failed == HOW_DOT_COMPUTES
    assert student["problems"] == []


@pytest.mark.slow
def test_a_decoy_program_is_told_apart_by_running_it_on_new_inputs(graded):
    """Does a function that hands jax.jit a decoy (a shard_map whose psum adds the wrong
    numbers) while computing its values on the host lose exactly the tests of how it
    computes, each saying that its program does not compute what the exercise asks?"""
    student = graded["traces-a-decoy-psum-and-computes-the-dot-on-the-host"]
    tests = student["exercises"]["distributed_dot"]["tests"]
    failed = {t["test"]: t["message"] for t in tests if t["status"] != "passed"}
    assert set(failed) == HOW_DOT_COMPUTES
    why = msg.MSG_DIFFERS.format(name="distributed_dot",
                                 why="its result differs from the reference's")
    assert set(failed.values()) == {why}


@pytest.mark.slow
def test_a_reply_written_in_the_workers_place_counts_only_as_a_verifier_measured_it(graded):
    """A submission that answers the worker's requests for its program in the worker's place,
    with a program of its own choosing and a measurement it made up: is the measurement
    dropped (a reply to that request holds a program only), and does every test of how it
    computes fail because that program does not compute the dot?"""
    student = graded["answers-how-dot-computes-with-a-program-of-its-choosing"]
    tests = student["exercises"]["distributed_dot"]["tests"]
    failed = {t["test"]: t["message"] for t in tests if t["status"] != "passed"}
    assert set(failed) == HOW_DOT_COMPUTES
    assert set(failed.values()) == {msg.MSG_DIFFERS.format(
        name="distributed_dot", why="its result differs from the reference's")}


@pytest.mark.slow
def test_jax_rebound_by_a_submission_is_put_back_before_measuring(graded):
    """Do fakes of jax.jit and jax.make_jaxpr fail to describe a host computation as a
    shard_map with an all-reduce, with the change named in the feedback?"""
    student = graded["fakes-jax-to-describe-a-host-dot-as-distributed"]
    failed = {t["test"] for t in student["exercises"]["distributed_dot"]["tests"]
              if t["status"] != "passed"}
    assert failed == HOW_DOT_COMPUTES
    [problem] = student["problems"]
    assert "jax.jit" in problem and "jax.make_jaxpr" in problem and "put back" in problem


@pytest.mark.slow
def test_a_change_made_while_measured_voids_the_measurement(graded):
    """Does a function that replaces json.dumps (the worker's replies) when called lose every
    test, with the reason, instead of turning failures into passes?"""
    halo = graded["rewrites-replies-while-halo-difference-is-measured"]["exercises"][
        "halo_difference"]
    for test in halo["tests"]:
        assert test["status"] == "failed"
        assert "while it was measured (json.dumps)" in test["message"], test["message"]


@pytest.mark.slow
def test_switching_the_seal_off_is_undone_and_named(graded):
    """Are a no-op restore (on the class and as swapped code), a wrapped export of the
    program (on the class, on the worker, in the worker's table of requests) and a rewritten
    table of opcodes all put back, so that only the dot's results count, and named in the
    feedback?"""
    student = graded["switches-the-seal-off-to-fake-how-dot-computes"]
    failed = {t["test"] for t in student["exercises"]["distributed_dot"]["tests"]
              if t["status"] != "passed"}
    assert failed == HOW_DOT_COMPUTES
    [problem] = student["problems"]
    for changed in ("grader.workers.seal.Seal.restore", "grader.workers.worker.Worker.export",
                    "grader.framework.hlo._OPCODE", "put back"):
        assert changed in problem, problem


@pytest.mark.slow
def test_a_trace_function_cannot_be_set(graded):
    """Does a cell that would set a trace function on the worker's serving frame fail (the
    worker has no sys.settrace), its fakes of JAX put back?"""
    student = graded["rewrites-the-workers-locals-with-a-trace-function-in-dot"]
    assert [p for p in student["problems"] if "settrace" in p] == [
        "zz_rewrites-the-workers-locals-with-a-trace-function-in-dot.py raised AttributeError: "
        "module 'sys' has no attribute 'settrace'"]


@pytest.mark.slow
def test_a_thread_left_running_stops_every_measurement_with_the_reason(graded):
    """While a thread the submission started still runs, is every test failed with the
    reason, rather than measured while the thread changes the grader?"""
    student = graded["leaves-a-thread-rewriting-replies-so-nothing-is-measured"]
    for name in BASE_EXERCISES:
        for test in student["exercises"][name]["tests"]:
            assert test["status"] == "failed"
            assert "left 1 thread(s) running" in test["message"], test["message"]


@pytest.mark.slow
def test_a_syntax_error_costs_only_the_function_of_its_cell(graded):
    """Does a cell that does not compile cost its function, with the line in the reason,
    while the cells before it still count?"""
    student = graded["has-a-syntax-error-in-the-halo-cell"]
    [problem] = student["problems"]
    assert "SyntaxError" in problem and "line 1" in problem, problem
    moments = student["exercises"]["nan_mean_var"]
    assert moments["points"] == moments["max_points"] == max_points("nan_mean_var")
    ring = student["exercises"]["halo_difference"]
    assert (ring["points"], ring["status"]) == (0, "not found")


@pytest.mark.slow
def test_check_calls_left_in_a_notebook_do_nothing(graded):
    """Are check() calls inert in the grader (a call that would raise does not)?"""
    student = graded["leaves-check-calls-on-a-missing-function"]
    assert len(student["problems"]) == 1 and "NameError" in student["problems"][0]
    assert student["total"] == 0
    assert student["exercises"]["halo_difference"]["message"].startswith("not found")
