"""Grading speed: a class of identical, complete and correct submissions.

    .venv/bin/python benchmarks/grading.py [--students 10] [--jobs 2]

Prints the wall time of the whole batch, of the reference run that precedes it, and the
seconds per submission and per exercise. Speed is measured here, never asserted in a test.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

from grader import cases, grade
from grader.course import EXERCISES
from grader.runner import Limits

ROOT = Path(__file__).resolve().parent.parent
CORRECT = ROOT / "examples" / "submissions" / "ada" / "03_collectives.ipynb"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=10)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        batch = Path(tmp) / "class"
        batch.mkdir()
        for i in range(args.students):
            shutil.copy(CORRECT, batch / f"student{i:03d}.ipynb")

        start = time.perf_counter()
        grade.reference(grade.SOLUTIONS, cases.load(), Limits())
        reference = time.perf_counter() - start

        start = time.perf_counter()
        results = grade.grade(batch, Path(tmp) / "out", jobs=args.jobs)
        total = time.perf_counter() - start

    assert all(r.total == r.max_total for r in results), "a correct submission lost points"
    batch_only = total - reference
    per_submission = batch_only / args.students
    print(f"students: {args.students}, jobs: {args.jobs}, cores: {os.cpu_count()}")
    print(f"device counts per submission: {grade.device_counts(cases.load())}")
    print(f"reference run:            {reference:6.2f} s")
    print(f"whole batch (with ref.):  {total:6.2f} s")
    print(f"per submission:           {per_submission:6.2f} s (wall, {args.jobs} at a time)")
    print(f"per exercise:             {per_submission / len(EXERCISES):6.2f} s")


if __name__ == "__main__":
    main()
