"""How many programs XLA compiles to grade each exercise, and the seconds it takes, per device
count: what a new submission costs before any cache helps (issue 35: fewer distinct
compilations per test).

    .venv/bin/python benchmarks/compilations.py [--devices 8 2] [--exercise NAME ...] [--catches]

For each device count, one process loads the solutions as a worker does and runs every hidden
test of each exercise on a fresh copy of its function (a new function, which JAX traces and
compiles again, as for any submission), counting XLA's compilations and their seconds (JAX's
own monitoring events). The functions the tests build around the student's (inputs placed on
a mesh, comparisons) are compiled once per process, by the first exercise that needs them; a
second pass over the same exercises, printed as "again", counts what a warm process still
compiles. Lesson 6's tests launch processes of their own, whose compilations are not counted
here. With ``--catches`` it then lists, per exercise and device count, each test (named for
what it catches) with the shapes of the arrays it hands the function: each distinct shape is a
program of its own to compile. Measured here, never asserted in a test.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

from grader import course
from grader.course import EXERCISES

COUNT = """
import json, os, sys, time
from grader.devices import WORKER_ENV, use_cpu_devices
devices = int(sys.argv[1])
use_cpu_devices(devices)
os.environ[WORKER_ENV] = "1"  # the notebooks' own set-up cells and check() calls stand down
import jax
from pathlib import Path
from grader.course import BY_NAME
from grader.framework import cases
from grader.grading import submission
from grader.workers.worker import Worker

compiles = []
inside = []  # set while the function under test runs: its compilations are the worker's


def heard(event, seconds, **kw):
    if event == "/jax/core/compile/backend_compile_duration":
        compiles.append((seconds, bool(inside)))


jax.monitoring.register_event_duration_secs_listener(heard)


shapes = set()  # what the tests hand the function under test: each call's arrays' shapes


def watched(fn):
    def call(*args, **kwargs):
        shapes.add(" ".join(str(getattr(leaf, "shape", type(leaf).__name__)).replace(" ", "")
                            for leaf in jax.tree.leaves((args, kwargs))))
        inside.append(1)
        try:
            return fn(*args, **kwargs)
        finally:
            inside.pop()
    return call
sources = submission.load(Path(sys.argv[2])).sources
wanted = json.loads(sys.argv[3])
counts = {}
for again in (False, True):
    worker = Worker(open(os.devnull, "w"))  # a fresh copy of every function
    for source in sources:
        worker.cell(source.file, source.label, source.code)
    for c in cases.load(hidden=True):
        if devices not in c.device_counts or c.exercise not in wanted:
            continue
        if BY_NAME[c.exercise].lesson == "06_multiprocess":
            continue  # its tests launch processes
        before = len(compiles)
        shapes.clear()
        cases.measure(c, watched(worker.find(c.exercise)))
        new = compiles[before:]
        row = counts.setdefault(c.exercise, {"cases": 0, "compiles": 0, "function": 0,
                                             "seconds": 0.0, "again": 0, "tests": {}})
        if again:
            row["again"] += len(new)
        else:
            row["cases"] += 1
            row["tests"][c.name] = sorted(shapes)
            row["compiles"] += len(new)
            row["function"] += sum(1 for _, in_fn in new if in_fn)
            row["seconds"] += sum(seconds for seconds, _ in new)
print(json.dumps(counts))
"""


def counted(devices: int, exercises: list[str]) -> dict[str, dict]:
    done = subprocess.run([sys.executable, "-c", COUNT, str(devices), str(course.SOLUTIONS),
                           json.dumps(exercises)], capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", type=int, nargs="+", default=[8, 2])
    parser.add_argument("--exercise", nargs="+", default=[e.name for e in EXERCISES])
    parser.add_argument("--catches", action="store_true",
                        help="then, per exercise and device count, each test and the shapes "
                             "of the arrays it hands the function (what each catches)")
    args = parser.parse_args()
    by_devices = {n: counted(n, args.exercise) for n in args.devices}
    columns = ("cases", "compiles", "function", "seconds", "again")
    print(f"{'':28}" + "".join(f"{f'{n} devices':>40}" for n in args.devices))
    print(f"{'exercise':28}" + "".join(f"{'cases compiles fn s again':>40}"
                                       for _ in args.devices))
    totals = {n: dict.fromkeys(columns, 0) for n in args.devices}
    for name in args.exercise:
        line = f"{name:28}"
        for n in args.devices:
            row = by_devices[n].get(name)
            if row is None:
                line += f"{'-':>40}"
                continue
            line += _row(row)
            for key in columns:
                totals[n][key] += row[key]
        print(line)
    print(f"{'all':28}" + "".join(_row(t) for t in totals.values()))
    print("compiles: XLA's compilations in the tests; fn: those while the function under test "
          "ran (a worker's, in grading; the rest are the tester's); s: their seconds; again: "
          "what a warm process compiles for a fresh copy of the function")
    if args.catches:
        catches(args.exercise, by_devices)


def catches(exercises: list[str], by_devices: dict[int, dict[str, dict]]) -> None:
    """Per exercise and device count, each test (its name says what it catches) and the
    shapes of the arrays it hands the function: the distinct shapes are distinct programs."""
    for name in exercises:
        print(f"\n{name}")
        for n, by_name in by_devices.items():
            tests = by_name.get(name, {}).get("tests", {})
            distinct = {shape for called in tests.values() for shape in called}
            if tests:
                print(f"  {n} devices: {len(tests)} tests, {len(distinct)} distinct inputs")
            for test, called in tests.items():
                print(f"    {test}: {'; '.join(called) or 'no call'}")


def _row(row: dict) -> str:
    return (f"{row['cases']:>15}{row['compiles']:>9}{row['function']:>5}{row['seconds']:>6.1f}"
            f"{row['again']:>5}")

if __name__ == "__main__":
    main()
