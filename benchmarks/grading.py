"""Grading speed: a class of identical, complete and correct submissions.

    .venv/bin/python benchmarks/grading.py [--students 40] [--jobs 2]

Each student hands in a copy of solutions/ (every exercise of the course, solved), under a
name of its own. Prints:

- the wall time of the reference run and of the whole batch, per submission and per
  exercise, with ``--jobs`` submissions at a time;
- the bare limit: the same tests run once more in one warm process per device count, with no
  sandbox, no fresh worker and no time limits, which is the least any grader has to spend;
- the overhead: the grader's wall time per submission against that bare limit (the target
  is at most 1.5x), and the same for one of the ``--jobs`` slots, which grades a submission
  in ``--jobs`` times that wall time;
- the load average before and after, since other work on the machine slows everything.

Speed is measured here, never asserted in a test.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from grader import cases, grade
from grader.course import EXERCISES
from grader.runner import BWRAP, DEFAULT_LIMITS

ROOT = Path(__file__).resolve().parent.parent

# One warm process: the worker's own bookkeeping (lesson 6's tests replay the cells it ran)
# without a process, pipe or sandbox of its own; load the solutions, run every case once to
# warm up, then time a second run.
BARE = """
import io, os, sys, time
from grader.devices import WORKER_ENV, use_cpu_devices
devices = int(sys.argv[1])
use_cpu_devices(devices)
os.environ[WORKER_ENV] = "1"  # the notebooks' own set-up cells and check() calls stand down
from pathlib import Path
from grader import cases, submission
from grader.worker import Worker
worker = Worker(io.StringIO())
worker.tests(cases.hidden_sources())
for source in submission.load(Path(sys.argv[2])).sources:
    assert worker.cell(source.file, source.label, source.code)["ok"], source.label
todo = [c for c in cases.load(hidden=True) if devices in c.device_counts]
for c in todo:
    cases.measure(c, worker.find(c.exercise))
start = time.perf_counter()
for c in todo:
    got = cases.measure(c, worker.find(c.exercise))
    assert got["ok"], (c.id, got)
print(time.perf_counter() - start)
"""


def bare_seconds() -> float:
    """The bare limit for one complete submission, over every device count."""
    total = 0.0
    for devices in grade.device_counts(cases.load()):
        done = subprocess.run(
            [sys.executable, "-c", BARE, str(devices), str(grade.SOLUTIONS)],
            capture_output=True, text=True, check=True,
        )
        total += float(done.stdout.strip().splitlines()[-1])
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=40)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    load_before = os.getloadavg()

    with tempfile.TemporaryDirectory() as tmp:
        batch = Path(tmp) / "class"
        batch.mkdir()
        for i in range(args.students):
            shutil.copytree(grade.SOLUTIONS, batch / f"student{i:03d}")

        start = time.perf_counter()
        grade.reference(grade.SOLUTIONS, cases.load(), DEFAULT_LIMITS, jobs=args.jobs)
        reference = time.perf_counter() - start

        start = time.perf_counter()
        results = grade.grade(batch, Path(tmp) / "out", jobs=args.jobs)
        total = time.perf_counter() - start

    assert all(r.total == r.max_total for r in results), "a correct submission lost points"
    per_submission = (total - reference) / args.students
    print(f"students: {args.students}, jobs: {args.jobs}, cores: {os.cpu_count()}, "
          f"sandbox: {'bubblewrap' if BWRAP else 'none'}")
    print(f"exercises: {len(EXERCISES)}, tests: {len(cases.load())}, "
          f"device counts: {grade.device_counts(cases.load())}")
    print(f"reference run:            {reference:7.2f} s")
    print(f"whole batch (with ref.):  {total:7.2f} s")
    print(f"per submission:           {per_submission:7.2f} s (wall, {args.jobs} at a time)")
    print(f"per exercise:             {per_submission / len(EXERCISES):7.2f} s", flush=True)
    bare = bare_seconds()
    print(f"bare limit per submission:{bare:7.2f} s (one warm process per device count)")
    print(f"overhead:                 {per_submission / bare:7.2f} x the bare limit "
          "(target: at most 1.5)")
    print(f"per job slot:             {per_submission * args.jobs / bare:7.2f} x the bare limit "
          f"(the wall time of one submission in one of the {args.jobs} slots)")
    print(f"load average (1, 5, 15 min): before {_load(load_before)}, "
          f"after {_load(os.getloadavg())}")


def _load(averages: tuple[float, float, float]) -> str:
    return " ".join(f"{a:.2f}" for a in averages)


if __name__ == "__main__":
    main()
