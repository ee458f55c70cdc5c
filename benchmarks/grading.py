"""Grading speed: a class of identical, complete and correct submissions.

    .venv/bin/python benchmarks/grading.py [--students 40] [--jobs 2] [--copies 2]
    .venv/bin/python benchmarks/grading.py --mixed [--students 12] [--jobs 2]
    .venv/bin/python benchmarks/grading.py --hostile [--jobs 2]

Each student hands in a copy of solutions/ (every exercise of the course, solved), under a
name of its own. Prints:

- the wall time of the reference run and of the whole batch, per submission and per
  exercise, with ``--jobs`` submissions at a time;
- the bare limit: what running the same hidden tests costs with no isolation at all, on the
  same cores; a test of how a function computes takes its measure of the exported program
  in the same process (no verifier, and no run next to the reference's program). For each
  device count, ``--jobs`` warm processes (JAX started, imports done) run side by side, as
  the grader's job slots do; each loads a fresh copy of the solutions
  (new functions, which JAX has to trace and compile, as for any new submission) and times
  every test once, ``--copies`` times after one copy that warms the process up (reusing
  what a worker reuses of JAX's work, grader/reuse.py; here across copies too, where
  a worker starts with nothing: a stricter limit). The bare
  limit per submission is the time per copy divided by the processes sharing the cores,
  summed over the device counts. Running the cells is not in it (it is timed and printed
  apart): the bare limit is the tests alone;
- the overhead: the grader's wall time per submission against the bare limit (target: at
  most 1.3x); both use ``--jobs`` processes on the same cores. Also against the cold bare
  limit: each bare process's first copy, timed in a process that has run nothing yet, which is
  what any grader that starts a fresh process per submission pays before isolation costs
  anything;
- the load average before and after, since other work on the machine slows everything.

With ``--mixed``, it grades instead a class that is not all identical (a cache of compiled
programs makes identical classes cheapest): each student hands in the solutions with, drawn
at random per exercise (the same draw every run), about one exercise in six not done, one in
ten computed wrong (the reference's result, each float array off by one: another program),
and lesson 3's exercises written in another style one time in four (tests/alternatives.py);
one student in six also hands in a file whose function crashes or exits its worker (fixtures
of tests/submissions/). Prints the wall time, exercises graded per second, the CPU-seconds the
machine spent busy per submission (the grader's whole process tree on a quiet machine), and
the mean points, twice: for a first batch, whose reference run is in the time, and for a second
batch of the same grader, which reads the reference run the first kept
(grader/grading/reference_cache.py), as a regrade or the next week's batch does.

With ``--hostile``, it grades instead a class of every fixture of tests/submissions/ (each
``.py`` fixture handed in alone, and the notebooks), by the command line in a process of its
own, and prints that process's peak memory: what the grader itself holds, whatever the
submissions reply.

Speed is measured here, never asserted in a test.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from grader import course
from grader.course import BY_NAME, EXERCISES
from grader.framework import cases
from grader.grading import grade
from grader.workers import compiled
from grader.workers.sandbox import BWRAP, DEFAULT_LIMITS

ROOT = Path(__file__).resolve().parent.parent

# One warm process on a fixed device count: the worker's own bookkeeping (lesson 6's tests
# replay the cells it ran) without a process, pipe, seal or sandbox per submission. Each
# copy of the solutions is loaded as a new submission would be; the first warms up.
BARE = """
import base64, io, json, os, sys, time
from grader.devices import WORKER_ENV, use_cpu_devices
devices, copies = int(sys.argv[1]), int(sys.argv[3])
use_cpu_devices(devices)
os.environ[WORKER_ENV] = "1"  # the notebooks' own set-up cells and check() calls stand down
from grader import reuse
reuse.install()  # as every grader worker does
from pathlib import Path
from grader.framework import cases, plain
from grader.grading import submission
from grader.workers.record import RECORD
from grader.course import BY_NAME
from grader.framework.probes import MEASURES, Program
from grader.remote import Remote
from grader.workers.worker import SEALED, Worker
sources = submission.load(Path(sys.argv[2])).sources
chosen = [c for c in cases.load(hidden=True) if devices in c.device_counts]
times = []
for copy in range(copies + 1):
    RECORD.cells.clear()
    worker = Worker(io.StringIO())

    def ask(request, worker=worker):
        request = dict(request)
        return SEALED[request.pop("op")](worker, **request)

    start = time.perf_counter()
    for source in sources:
        assert worker.cell(source.file, source.label, source.code)["ok"], source.label
    cells = time.perf_counter() - start
    start = time.perf_counter()
    for c in chosen:
        if devices in c.device_counts:
            # lesson 6's processes are launched by a worker: its tests ask this process's
            fn = (Remote(ask, name=c.exercise) if BY_NAME[c.exercise].lesson == "06_multiprocess"
                  else worker.find(c.exercise))
            got = cases.measure(c, fn)
            assert got["ok"], (c.id, got)
            for _, found in plain.programs(got["data"]):  # measured here, as a kernel does
                MEASURES[found["measure"]](Program.load(base64.b64decode(found["blob"])))
    times.append({"cells": cells, "tests": time.perf_counter() - start})
print(json.dumps(times))  # the first copy is the cold one
"""


def bare_seconds(jobs: int, copies: int) -> dict[str, float]:
    """The bare limit for one complete submission, summed over the device counts: seconds of
    tests (and, apart, of cells) per warm copy, divided by the ``jobs`` processes sharing the
    cores; and ``cold``, the seconds of tests of each process's first copy, in a process that
    has run nothing yet (what a fresh process per submission costs, without any isolation)."""
    total = {"cells": 0.0, "tests": 0.0, "cold": 0.0}

    def one(devices: int) -> list[dict[str, float]]:
        done = subprocess.run(
            [sys.executable, "-c", BARE, str(devices), str(course.SOLUTIONS), str(copies)],
            capture_output=True, text=True, check=True,
        )
        return json.loads(done.stdout.strip().splitlines()[-1])

    for devices in grade.device_counts(cases.load()):
        with ThreadPoolExecutor(jobs) as pool:
            runs = list(pool.map(one, [devices] * jobs))
        for kind in ("cells", "tests"):
            per_copy = sum(t[kind] for r in runs for t in r[1:]) / (jobs * copies)
            total[kind] += per_copy / jobs
        total["cold"] += sum(r[0]["tests"] for r in runs) / jobs / jobs
    return total


# The grader's command line, reporting its peak memory.
PEAK_MEMORY = ROOT / "benchmarks" / "peak_memory.py"


def hostile(jobs: int) -> None:
    """Grade every fixture of tests/submissions/ and print the time and the grader's peak
    memory."""
    folder = ROOT / "tests" / "submissions"
    fixtures = [*folder.glob("*.py"), *folder.glob("*.ipynb")]
    with tempfile.TemporaryDirectory() as tmp:
        batch = Path(tmp) / "class"
        batch.mkdir()
        for fixture in fixtures:
            shutil.copy(fixture, batch / fixture.name)
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, str(PEAK_MEMORY), "grade", str(batch),
             "--out", str(Path(tmp) / "out"), "--jobs", str(jobs), "--timeout", "20"],
            capture_output=True, text=True, check=True)
        total = time.perf_counter() - start
    peak = next(line.split()[1] for line in done.stderr.splitlines()
                if line.startswith("peak-rss-kib"))
    print(f"hostile fixtures: {len(fixtures)}, jobs: {jobs}, "
          f"sandbox: {'bubblewrap' if BWRAP else 'none'}")
    print(f"whole batch (with ref.):  {total:7.2f} s")
    print(f"grader's peak memory:     {int(peak) / 1024:7.1f} MiB (VmHWM of the grading "
          "process)")


#: What a student of the mixed class may hand in beside the solutions: functions that crash
#: or exit their worker (each costs its exercise).
CRASHES = ("kills-its-process-in-halo-difference.py", "segfaults-in-distributed-dot.py",
           "exits-with-sys-exit-in-halo-difference.py")
#: An exercise computed wrong: the reference's result, each float array off by one.
WRONG = """
_reference_{name} = {name}


def {name}(*args, **kwargs):
    return jax.tree.map(lambda v: v + 1 if isinstance(v, jax.Array)
                        and jnp.issubdtype(v.dtype, jnp.floating) else v,
                        _reference_{name}(*args, **kwargs))
"""
NOT_DONE = """

def {name}(*args, **kwargs):
    raise NotImplementedError
"""


def other_styles() -> tuple[str, dict[str, str]]:
    """tests/alternatives.py's imports, and each of its functions' source by name."""
    text = (ROOT / "tests" / "alternatives.py").read_text()
    tree = ast.parse(text)
    imports = "\n".join(ast.get_source_segment(text, node) for node in tree.body
                        if isinstance(node, (ast.Import, ast.ImportFrom))
                        and getattr(node, "module", None) != "__future__")
    return imports, {node.name: ast.get_source_segment(text, node) for node in tree.body
                     if isinstance(node, ast.FunctionDef)}


@dataclass
class Student:
    """One student of the mixed class: what replaces each changed exercise (the code of a cell
    that comes after the solution's), and the fixture of tests/submissions/ handed in beside
    the notebooks, if any."""

    name: str
    changes: dict[str, str]
    crash: str | None


def mixed_students(students: int) -> tuple[list[Student], dict[str, int], str]:
    """The mixed class (see the module's doc), the same draw every run; how many exercises of
    each kind it holds; and the imports every change needs."""
    draw = random.Random(35)
    imports, styles = other_styles()
    kinds = {"reference": 0, "other style": 0, "not done": 0, "wrong": 0, "crashes": 0}
    drawn = []
    for i in range(students):
        changes = {}
        for exercise in EXERCISES:
            roll = draw.random()
            if roll < 1 / 6:
                kind, text = "not done", NOT_DONE.format(name=exercise.name)
            elif roll < 1 / 6 + 1 / 10:
                kind, text = "wrong", WRONG.format(name=exercise.name)
            elif exercise.name in styles and draw.random() < 1 / 4:
                kind, text = "other style", "\n\n" + styles[exercise.name]
            else:
                kind, text = "reference", ""
            kinds[kind] += 1
            if text:
                changes[exercise.name] = text
        crash = CRASHES[i // 6 % len(CRASHES)] if i % 6 == 5 else None
        kinds["crashes"] += crash is not None
        drawn.append(Student(f"student{i:03d}", changes, crash))
    return drawn, kinds, imports


def mixed_class(batch: Path, students: int) -> dict[str, int]:
    """Write the mixed class into ``batch``: each student's changes are a code cell added at
    the end of its lesson's notebook (a notebook's cells share their names); how many
    exercises of each kind it holds."""
    drawn, kinds, imports = mixed_students(students)
    for student in drawn:
        folder = batch / student.name
        shutil.copytree(course.SOLUTIONS, folder)
        by_lesson: dict[str, list[str]] = {}
        for name, text in student.changes.items():
            by_lesson.setdefault(BY_NAME[name].lesson, [imports]).append(text)
        for lesson, texts in by_lesson.items():
            notebook = folder / f"{lesson}.ipynb"
            content = json.loads(notebook.read_text())
            content["cells"].append({"cell_type": "code", "execution_count": None,
                                     "metadata": {}, "outputs": [],
                                     "source": "\n".join(texts) + "\n"})
            notebook.write_text(json.dumps(content))
        if student.crash:
            fixture = ROOT / "tests" / "submissions" / student.crash
            shutil.copy(fixture, folder / f"zz_{student.crash}")
    return kinds


def mixed(students: int, jobs: int) -> None:
    """Grade the mixed class twice, as a first batch (the reference run in the time, and
    kept) and as a second batch of the same grader (which reads it); print the time, pace,
    CPU and points of each."""
    load_before = os.getloadavg()
    cache = Path(tempfile.mkdtemp(prefix="grading-bench-cache-"))
    cache.chmod(0o755)  # reachable by the workers' user of a grader started by root
    try:
        with tempfile.TemporaryDirectory() as tmp:
            batch = Path(tmp) / "class"
            batch.mkdir()
            kinds = mixed_class(batch, students)
            print(f"mixed class: {students} students, jobs: {jobs}, cores: {os.cpu_count()}, "
                  f"sandbox: {'bubblewrap' if BWRAP else 'none'}")
            print("exercises handed in: " + ", ".join(f"{n} {kind}"
                                                     for kind, n in kinds.items()))
            for which in ("first batch, reference run included", "second batch, reference kept"):
                cpu_before = busy_cpu_seconds()
                start = time.perf_counter()
                results = grade.grade(batch, Path(tmp) / which.split(",")[0], jobs=jobs,
                                      cache=cache / "kept")
                _mixed_figures(which, students, time.perf_counter() - start,
                               busy_cpu_seconds() - cpu_before, results)
    finally:
        compiled.remove(cache)
    print(f"load average (1, 5, 15 min): before {_load(load_before)}, "
          f"after {_load(os.getloadavg())}")


def _mixed_figures(which: str, students: int, total: float, cpu: float, results) -> None:
    graded = students * len(EXERCISES)
    print(f"{which}:")
    print(f"  whole batch:            {total:7.2f} s")
    print(f"  exercises per second:   {graded / total:7.3f} ({graded} graded)")
    print(f"  CPU per submission:     {cpu / students:7.2f} CPU-s (the machine's, busy during "
          "the batch, a reference run shared out: quiet the machine first)")
    print(f"  mean points:            {sum(r.total for r in results) / students:7.1f} of "
          f"{results[0].max_total:g}")


def busy_cpu_seconds() -> float:
    """CPU-seconds the whole machine has spent busy since it started (/proc/stat): on an
    otherwise quiet machine, the difference over a batch is the grader's whole process tree,
    sandboxed workers included, whose use no other count sees once they are killed."""
    with open("/proc/stat") as stat:
        fields = [int(v) for v in stat.readline().split()[1:]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields[:8]
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--copies", type=int, default=2,
                        help="fresh copies of the solutions each bare process times")
    parser.add_argument("--mixed", action="store_true",
                        help="grade a class that is not all identical instead (default: 12 "
                             "students)")
    parser.add_argument("--hostile", action="store_true",
                        help="grade the fixtures of tests/submissions/ and print the "
                             "grader's peak memory instead")
    args = parser.parse_args()
    if args.hostile:
        hostile(args.jobs)
        return
    if args.mixed:
        mixed(args.students or 12, args.jobs)
        return
    args.students = args.students or 40
    load_before = os.getloadavg()

    with tempfile.TemporaryDirectory() as tmp:
        batch = Path(tmp) / "class"
        batch.mkdir()
        for i in range(args.students):
            shutil.copytree(course.SOLUTIONS, batch / f"student{i:03d}")

        start = time.perf_counter()
        grade.reference(course.SOLUTIONS, cases.load(), DEFAULT_LIMITS, jobs=args.jobs)
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
    bare = bare_seconds(args.jobs, args.copies)
    print(f"bare limit per submission:{bare['tests']:7.2f} s (the tests, {args.jobs} warm "
          f"processes side by side, fresh functions)")
    print(f"  running the cells:      {bare['cells']:7.2f} s more (not in the bare limit)")
    print(f"  cold:                   {bare['cold']:7.2f} s (the first copy, in a process that "
          "has run nothing yet)")
    print(f"overhead:                 {per_submission / bare['tests']:7.2f} x the bare limit "
          "(target: at most 1.3)")
    print(f"  against tests + cells:  {per_submission / (bare['tests'] + bare['cells']):7.2f} x")
    print(f"  against the cold tests: {per_submission / bare['cold']:7.2f} x (a fresh process "
          "per submission, no isolation)")
    print(f"load average (1, 5, 15 min): before {_load(load_before)}, "
          f"after {_load(os.getloadavg())}")


def _load(averages: tuple[float, float, float]) -> str:
    return " ".join(f"{a:.2f}" for a in averages)


if __name__ == "__main__":
    main()
