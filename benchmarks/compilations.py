"""How many programs XLA compiles to grade each exercise, and the seconds it takes, per device
count: what a new submission costs before any cache helps (issue 35: fewer distinct
compilations per test).

    .venv/bin/python benchmarks/compilations.py [--devices 8 2] [--exercise NAME ...]

For each device count, one process loads the solutions as a worker does and runs every hidden
test of each exercise on a fresh copy of its function (a new function, which JAX traces and
compiles again, as for any submission), counting XLA's compilations and their seconds (JAX's
own monitoring events). The functions the tests build around the student's (inputs placed on
a mesh, comparisons) are compiled once per process, by the first exercise that needs them; a
second pass over the same exercises, printed as "again", counts what a warm process still
compiles. Lesson 6's tests launch processes of their own, whose compilations are not counted
here. Measured here, never asserted in a test.
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
jax.monitoring.register_event_duration_secs_listener(
    lambda event, seconds, **kw: compiles.append(seconds)
    if event == "/jax/core/compile/backend_compile_duration" else None)
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
        before = len(compiles), sum(compiles)
        cases.measure(c, worker.find(c.exercise))
        row = counts.setdefault(c.exercise, {"cases": 0, "compiles": 0, "seconds": 0.0,
                                             "again": 0})
        if again:
            row["again"] += len(compiles) - before[0]
        else:
            row["cases"] += 1
            row["compiles"] += len(compiles) - before[0]
            row["seconds"] += sum(compiles) - before[1]
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
    args = parser.parse_args()
    by_devices = {n: counted(n, args.exercise) for n in args.devices}
    print(f"{'exercise':28}" + "".join(f"{f'{n} devices: cases compiles s again':>38}"
                                       for n in args.devices))
    totals = {n: [0, 0, 0.0, 0] for n in args.devices}
    for name in args.exercise:
        line = f"{name:28}"
        for n in args.devices:
            row = by_devices[n].get(name)
            if row is None:
                line += f"{'-':>38}"
                continue
            line += (f"{row['cases']:>17}{row['compiles']:>9}{row['seconds']:>7.1f}"
                     f"{row['again']:>5}")
            for i, key in enumerate(("cases", "compiles", "seconds", "again")):
                totals[n][i] += row[key]
        print(line)
    print(f"{'all':28}" + "".join(f"{t[0]:>17}{t[1]:>9}{t[2]:>7.1f}{t[3]:>5}"
                                  for t in totals.values()))


if __name__ == "__main__":
    main()
