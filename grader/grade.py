"""Grading a folder of submissions against every test, public and hidden.

For each device count the tests need, the reference solutions run once in a worker to give
the expected measurements; each submission then runs in workers of its own, and the trusted
judges compare. Each result is stored as it is known (:mod:`grader.store`); at the end
``OUT/results.json``, ``OUT/gradebook.csv`` and ``OUT/feedback/`` are written from all of them.
"""

from __future__ import annotations

import csv
import importlib
import io
import json
import os
import traceback
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import jax

from grader import cases as case_registry
from grader import feedback, submission
from grader import messages as msg
from grader.cases import Case
from grader.course import EXERCISES
from grader.results import ExerciseResult, StudentResult
from grader.runner import DEFAULT_LIMITS, DEFAULT_SANDBOX, Limits, Run, Sandbox, run
from grader.store import Store, grader_fingerprint, write_atomic

#: Where the reference solutions live in a clone of the course repository.
SOLUTIONS = Path(__file__).resolve().parent.parent / "solutions"


class GradingError(Exception):
    """The batch cannot be graded (for example, the reference solutions fail)."""


def device_counts(cases: Sequence[Case]) -> list[int]:
    """Every device count some case runs on, largest first."""
    return sorted({n for c in cases for n in c.device_counts}, reverse=True)


def measure(sources, cases: Sequence[Case], limits: Limits,
            sandbox: Sandbox = DEFAULT_SANDBOX) -> dict[int, Run]:
    """Run ``sources`` on every device count the cases need."""
    return {
        n: run(sources, [c for c in cases if n in c.device_counts], n, limits, sandbox)
        for n in device_counts(cases)
    }


def reference(solutions: Path, cases: Sequence[Case], limits: Limits,
              sandbox: Sandbox = DEFAULT_SANDBOX) -> dict[int, Run]:
    """The reference solutions' measurements; fails loudly if any test fails on them."""
    if not solutions.is_dir():
        raise GradingError(f"the reference solutions folder {solutions} does not exist")
    loaded = submission.load(solutions)
    if loaded.problems or not loaded.sources:
        raise GradingError(f"cannot read the reference solutions: {loaded.problems or 'empty'}")
    runs = measure(loaded.sources, cases, limits, sandbox)
    for n, result in runs.items():
        for case_id, outcome in result.outcomes.items():
            if not outcome.get("ok"):
                raise GradingError(
                    f"the reference solution fails {case_id} on {n} devices: {outcome}; "
                    f"problems: {result.problems}"
                )
    return runs


def assemble(student: str, cases: Sequence[Case], runs: dict[int, Run],
             wants: dict[int, Run], problems: Sequence[str] = ()) -> StudentResult:
    """Judge every case from the student's and the reference's measurements."""
    exercises = {e.name: ExerciseResult(e.name, []) for e in EXERCISES}
    for c in cases:
        outcomes = {n: runs[n].outcomes[c.id] for n in c.device_counts}
        expected = {n: wants[n].outcomes.get(c.id) for n in c.device_counts}
        exercises[c.exercise].tests.append(case_registry.decide(c, outcomes, expected))
    notes = list(problems) + [p for n in sorted(runs, reverse=True) for p in runs[n].problems]
    return StudentResult(student, exercises, list(dict.fromkeys(notes)))


def grade_entry(entry: Path, cases: Sequence[Case], wants: dict[int, Run],
                limits: Limits, sandbox: Sandbox = DEFAULT_SANDBOX) -> StudentResult:
    """Grade one student. Should the grader itself fail on this entry, the student gets an
    error for every test with the reason, and the rest of the batch goes on."""
    try:
        loaded = submission.load(entry)
        runs = measure(loaded.sources, cases, limits, sandbox)
        return assemble(loaded.student, cases, runs, wants, loaded.problems)
    except Exception as exc:  # noqa: BLE001 - one entry must never stop the batch
        traceback.print_exc()
        why = {"ok": False, "not_run": msg.MSG_GRADER_FAILED.format(error=repr(exc)[:300])}
        runs = {n: Run(n, {c.id: why for c in cases}) for n in device_counts(cases)}
        return assemble(submission.student_name(entry), cases, runs, wants)


def grade(
    submissions: Path,
    out: Path,
    *,
    jobs: int = os.cpu_count() or 1,
    limits: Limits = DEFAULT_LIMITS,
    use_sandbox: bool = True,
    solutions: Path = SOLUTIONS,
    force: bool = False,
    progress: Callable[[StudentResult, bool], None] = lambda result, reused: None,
) -> list[StudentResult]:
    """Grade every entry of ``submissions`` and write the outputs to ``out``.

    Each result is stored as soon as it is known; a result stored by an earlier run of the
    same grader on the same submission is reused unless ``force``. ``progress`` hears of
    every student, with whether the result was reused.
    """
    entries = submission.discover(submissions)
    names = [submission.student_name(e) for e in entries]
    clashes = sorted({n for n in names if names.count(n) > 1})
    if clashes:
        raise GradingError(f"several entries belong to the same student: {', '.join(clashes)}")
    cases = case_registry.load(hidden=True)
    kept = Store(out, grader_fingerprint(solutions, repr(limits)))
    results: dict[Path, StudentResult] = {}
    for entry in entries:
        previous = None if force else kept.get(submission.student_name(entry), entry)
        if previous is not None:
            results[entry] = previous
            progress(previous, True)
    todo = [e for e in entries if e not in results]
    if todo:
        sandbox = Sandbox(private_paths(submissions, out, solutions), use_bwrap=use_sandbox)
        wants = reference(solutions, cases, limits, sandbox)
        with ThreadPoolExecutor(max(1, jobs)) as pool:
            graded = pool.map(lambda e: (e, grade_entry(e, cases, wants, limits, sandbox)), todo)
            for entry, result in graded:
                kept.put(entry, result)
                results[entry] = result
                progress(result, False)
    ordered = [results[e] for e in entries]
    write(out, ordered)
    return ordered


def private_paths(submissions: Path, out: Path, solutions: Path) -> tuple[Path, ...]:
    """What no worker may see: every submission (a worker gets its own code through its
    pipe), the outputs, the reference solutions and the hidden tests."""
    hidden_tests = Path(importlib.import_module(case_registry.PACKAGES[True]).__path__[0])
    return (submissions, out, solutions, hidden_tests)


def write(out: Path, results: Sequence[StudentResult]) -> None:
    """Write ``results.json``, ``gradebook.csv`` and ``feedback/<student>.md``, each
    atomically."""
    (out / "feedback").mkdir(parents=True, exist_ok=True)
    report = {
        "jax_version": jax.__version__,
        "exercises": [e.name for e in EXERCISES],
        "students": {r.student: r.to_json() for r in results},
    }
    write_atomic(out / "results.json", json.dumps(report, indent=2, allow_nan=False))
    write_atomic(out / "gradebook.csv", gradebook_csv(results))
    for r in results:
        write_atomic(out / "feedback" / f"{r.student}.md", feedback.markdown(r))


def gradebook_csv(results: Sequence[StudentResult]) -> str:
    """One row per student: the points of each exercise, then the total."""
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(["student", *(e.name for e in EXERCISES), "total"])
    for r in sorted(results, key=lambda r: r.student):
        writer.writerow(
            [r.student, *(f"{r.exercises[e.name].points:g}" for e in EXERCISES), f"{r.total:g}"]
        )
    return text.getvalue()

