"""How long ``check(fn)`` takes in a student's kernel, for every exercise of the solutions, with
and without the run on the grader's other device counts (issue 34).

    .venv/bin/python benchmarks/check_time.py [--lesson 03_collectives ...]

For each lesson and each way, one fresh process plays the student's kernel: 8 CPU devices, the
solution notebook's cells run in order as IPython runs them (each cell's source kept where
``inspect`` finds it, so that a function can be sent elsewhere), and the time of each
exercise's first ``check`` taken. "here" runs the public tests on the kernel's 8 devices only,
as ``check`` did before (the other process is never asked); "all" runs them on 2 devices as
well for the exercises graded on both, in the process ``check`` keeps for them, whose start
the first such exercise of a lesson pays. Measured here, never asserted in a test.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

from grader import course

KERNEL = """
import json, linecache, sys, time
import nbformat
from grader.devices import use_cpu_devices
use_cpu_devices(8)
from grader import check_elsewhere
from grader.course import BY_NAME

path, way = sys.argv[1], sys.argv[2]
if way == "here":
    def never(*args):
        raise check_elsewhere.CannotRun("not asked")
    check_elsewhere.Run = never
    check_elsewhere.started = lambda devices: None
namespace = {"__name__": "__main__"}
seconds = {}
for index, cell in enumerate(nbformat.read(path, as_version=4).cells):
    source = cell.source
    if cell.cell_type != "code" or "use_devices(" in source:
        continue
    name = f"<cell {index}>"
    linecache.cache[name] = (len(source), None, source.splitlines(True), name)
    if source.startswith("check("):
        exercise = source[len("check("):source.index(")")]
        fn = namespace[exercise]
        started = time.perf_counter()
        result = namespace["check"](fn)
        seconds[exercise] = time.perf_counter() - started
        assert result.points == result.max_points, str(result)
        continue
    exec(compile(source, name, "exec"), namespace)
print(json.dumps(seconds))
"""


def timings(lesson: str, way: str) -> dict[str, float]:
    path = course.SOLUTIONS / f"{lesson}.ipynb"
    done = subprocess.run([sys.executable, "-c", KERNEL, str(path), way], capture_output=True,
                          text=True, check=False)
    if done.returncode:
        sys.exit(f"{lesson} ({way}): {done.stderr.strip().splitlines()[-1:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lesson", nargs="*", default=list(course.LESSONS))
    args = parser.parse_args()
    here, both = {}, {}
    print(f"{'exercise':28} {'graded on':>10} {'here':>7} {'all':>7}")
    for lesson in args.lesson:
        here |= timings(lesson, "here")
        both |= timings(lesson, "all")
        for name in (e.name for e in course.EXERCISES if e.lesson == lesson):
            counts = " and ".join(map(str, course.BY_NAME[name].device_counts))
            print(f"{name:28} {counts:>10} {here[name]:7.2f} {both[name]:7.2f}")
    for label, seconds in (("here", here), ("all", both)):
        values = sorted(seconds.values())
        print(f"{label}: median {statistics.median(values):.2f} s, over 1 s "
              f"{sum(v > 1 for v in values)} of {len(values)}, longest {values[-1]:.2f} s, "
              f"total {sum(values):.1f} s")


if __name__ == "__main__":
    main()
