"""Grading a batch of broken, hostile and correct submissions, each named by its outcome.

Every fixture in tests/submissions/ that is a ``.py`` file is graded on top of a complete,
correct notebook (the example submission ``ada``): it redefines one function or adds a cell.
So each one must cost exactly the exercise it targets and nothing else.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from grader import cases, grade, notebooks, runner
from grader.course import EXERCISES
from grader.runner import Limits, Run

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "submissions"
# The base every .py fixture is added to: a complete, correct notebook of one lesson.
LESSON = "03_collectives"
CORRECT = ROOT / "examples" / "submissions" / "ada" / f"{LESSON}.ipynb"
LIMITS = Limits(exercise=20, cell=20)

# fixture -> {exercise: (points, status)}; every exercise not listed must get full marks.
OUTCOMES: dict[str, dict[str, tuple[float, str]]] = {
    "exits-with-sys-exit-in-ring-shift": {"ring_shift": (0, "failed")},
    "kills-its-process-in-ring-shift": {"ring_shift": (0, "crashed")},
    "segfaults-in-distributed-dot": {"distributed_dot": (0, "crashed")},
    "hangs-ignoring-signals-in-pmap-scaled-sum": {"pmap_scaled_sum": (0, "timeout")},
    "hangs-in-a-top-level-cell": {},
    "raises-keyboard-interrupt-in-ring-shift": {"ring_shift": (0, "failed")},
    "patches-comparisons-with-wrong-dot": {"distributed_dot": (0, "failed")},
    "returns-object-equal-to-everything-from-dot": {"distributed_dot": (0, "failed")},
    "returns-one-row-instead-of-one-per-device": {"pmap_scaled_sum": (0, "failed")},
    "prints-fake-reports-around-wrong-ring-shift": {"ring_shift": (0, "failed")},
    "hard-codes-eight-devices-in-dot": {"distributed_dot": (2, "partial")},
    "tries-to-change-the-device-count": {},
    "forged-stdout-warnings-and-noise-all-correct": {},
    "reuses-global-names-in-another-file-all-correct": {},
    "allocates-without-bound-in-ring-shift": {"ring_shift": (0, "failed")},
}
# Fixtures only the sandbox makes harmless or harmless-looking: without bubblewrap they would
# really plant hooks in the environment or leave processes behind, so they are not run.
SANDBOX_ONLY: dict[str, dict[str, tuple[float, str]]] = {
    "reads-solutions-and-hidden-tests-from-disk-all-correct": {},
    "plants-startup-hooks-all-correct": {},
    "starts-a-child-that-would-outlive-it-all-correct": {},
}
if runner.BWRAP:
    OUTCOMES.update(SANDBOX_ONLY)


@pytest.fixture(scope="module")
def graded(tmp_path_factory) -> dict:
    """Grade every fixture, the solutions and the stubs in one batch; return results.json."""
    batch = tmp_path_factory.mktemp("batch")
    for name in OUTCOMES:
        student = batch / name
        student.mkdir()
        shutil.copy(CORRECT, student / CORRECT.name)
        shutil.copy(FIXTURES / f"{name}.py", student / f"zz_{name}.py")
    for notebook in FIXTURES.glob("*.ipynb"):
        shutil.copy(notebook, batch / notebook.name)
    shutil.copytree(notebooks.SOLUTIONS, batch / "reference-solutions")
    shutil.copytree(notebooks.EXERCISES, batch / "untouched-stubs")
    out = tmp_path_factory.mktemp("out")
    grade.grade(batch, out, jobs=2, limits=LIMITS)
    return json.loads((out / "results.json").read_text())["students"]


def max_points(exercise: str) -> float:
    return sum(c.points for c in cases.for_exercise(exercise))


@pytest.mark.slow
@pytest.mark.parametrize("fixture", sorted(OUTCOMES))
def test_each_fixture_costs_exactly_its_exercise(graded, fixture):
    """Does a crash, hang, exit, patch or forgery cost its own exercise and nothing else?"""
    exercises = graded[fixture]["exercises"]
    for exercise in (e for e in EXERCISES if e.lesson == LESSON):
        got = exercises[exercise.name]
        points, status = OUTCOMES[fixture].get(exercise.name, (max_points(exercise.name), "passed"))
        assert (got["points"], got["status"]) == (points, status), (exercise.name, got["message"])


@pytest.mark.slow
@pytest.mark.skipif(not runner.BWRAP, reason="bubblewrap is not installed")
def test_the_sandbox_leaves_no_hook_and_no_process_behind(graded):
    """After hostile submissions ran, is every start-up hook absent and every process gone?"""
    import site
    import sys

    for folder in [*map(Path, site.getsitepackages()), Path(sys.prefix)]:
        for name in ("sitecustomize.py", "usercustomize.py", "zz-planted-by-a-submission.pth"):
            assert not (folder / name).exists()
    marker = b"orphan-marker-5b1e"
    alive = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and marker in (proc / "cmdline").read_bytes():
                alive.append(proc.name)
        except OSError:
            pass
    assert alive == []


@pytest.mark.slow
def test_a_memory_hog_is_stopped_by_the_cap(graded):
    """Does unbounded allocation end in a MemoryError for that exercise only?"""
    ring = graded["allocates-without-bound-in-ring-shift"]["exercises"]["ring_shift"]
    assert "MemoryError" in ring["message"]


@pytest.mark.slow
def test_solutions_score_full_marks_and_stubs_zero(graded):
    """Do the reference solutions pass every hidden test, and the generated stubs none?"""
    solved, stubs = graded["reference-solutions"], graded["untouched-stubs"]
    assert solved["total"] == solved["max_total"] == sum(c.points for c in cases.load())
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
    hang = graded["hangs-ignoring-signals-in-pmap-scaled-sum"]["exercises"]["pmap_scaled_sum"]
    assert "stopped after 20 s" in hang["message"]
    segfault = graded["segfaults-in-distributed-dot"]["exercises"]["distributed_dot"]
    assert "SIGSEGV" in segfault["message"]
    exit_ = graded["exits-with-sys-exit-in-ring-shift"]["exercises"]["ring_shift"]
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
    result = graded["returns-one-row-instead-of-one-per-device"]["exercises"]["pmap_scaled_sum"]
    assert "shape" in result["message"]
    assert "one row per device" in result["hint"]


@pytest.mark.slow
def test_magics_and_cell_magics_do_not_break_a_notebook(graded):
    """Do %magics and ! lines do nothing, while a %%time cell still defines its function?"""
    student = graded["magics-shell-lines-and-cell-magics-around-psum"]
    assert student["problems"] == []
    psum = student["exercises"]["shard_map_psum"]
    assert psum["points"] == psum["max_points"] == max_points("shard_map_psum")
    assert student["exercises"]["ring_shift"]["status"] == "not found"


@pytest.mark.slow
def test_check_calls_left_in_a_notebook_do_nothing(graded):
    """Are check() calls inert in the grader (a call that would raise does not)?"""
    student = graded["leaves-check-calls-on-a-missing-function"]
    assert len(student["problems"]) == 1 and "NameError" in student["problems"][0]
    assert student["total"] == 0
    assert student["exercises"]["ring_shift"]["message"].startswith("not found")


def test_a_grader_failure_on_one_entry_costs_only_that_entry(tmp_path, monkeypatch):
    """If the grader itself breaks on a submission, is that student told why, at 0 points,
    instead of the batch stopping?"""

    def broken_measure(*args, **kwargs):
        raise RuntimeError("simulated grader bug")

    monkeypatch.setattr(grade, "measure", broken_measure)
    entry = tmp_path / "dora.py"
    entry.write_text("def ring_shift(x):\n    return x\n")
    no_reference = {n: Run(n) for n in grade.device_counts(cases.load())}
    result = grade.grade_entry(entry, cases.load(), wants=no_reference, limits=LIMITS)
    assert result.student == "dora" and result.total == 0
    assert result.max_total == sum(c.points for c in cases.load())
    ring = result.exercises["ring_shift"]
    assert ring.status == "failed" and "simulated grader bug" in ring.message
