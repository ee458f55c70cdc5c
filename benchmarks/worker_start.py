"""What starting workers warm would save: a worker started as the grader starts one against
one forked from a template that has imported JAX and the grader but started no backend, and
how many workers a batch starts.

    .venv/bin/python benchmarks/worker_start.py [--starts 5] [--students 6] [--jobs 2]

First, per device count, the CPU-seconds of one start, until the worker is ready for its first
request (JAX's CPU devices started) and then exits:

- as the grader starts it: its own sandbox (bubblewrap, as the user ``nobody`` for a grader
  started by root), its own control group where one can be made, ``python -I``, the worker's
  imports: the machine's busy CPU meanwhile (quiet it first);
- the same ``python -I`` without the sandbox;
- forked from a warm template: the child's own CPU (a fork starts it at zero).

Then it grades the mixed class of ``benchmarks/grading.py --mixed`` (``--students``, 0 to skip)
twice, the second batch reading the reference run the first kept, and counts the workers the
second batch starts: one per submission and device count, and one more after each cell or
exercise that crashed or stalled one. From those counts it prints what a template would save
against the batch's busy CPU (the whole machine's, so quiet it first), for two designs: a
template per submission, which forks the worker of each of its device counts (one sandbox
shared by a submission's runs), and a template per run (submission and device count), which
forks only the workers that replace a crashed one. Testers and verifiers are left out: they run
no submission code and serve a whole batch (``grader/workers/pool.py``).

Speed is measured here, never asserted in a test.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

from grading import busy_cpu_seconds, mixed_class

from grader.framework import cases
from grader.grading import grade
from grader.workers import compiled, process
from grader.workers.sandbox import DEFAULT_LIMITS, DEFAULT_SANDBOX

#: One start: the worker's imports, then its devices; prints the CPU-seconds spent.
FRESH = """
import resource, sys
from grader.workers import worker  # what the worker's main imports
from grader.devices import use_cpu_devices
use_cpu_devices(int(sys.argv[1]))
import jax
jax.devices()
used = resource.getrusage(resource.RUSAGE_SELF)
print(used.ru_utime + used.ru_stime)
"""
#: A template that imports the same once, then forks a child per start; each child starts its
#: devices and reports its own CPU-seconds.
FORKED = """
import json, os, resource, sys
from grader.workers import worker
from grader.devices import use_cpu_devices
import jax
spent = []
for _ in range(int(sys.argv[2])):
    read, write = os.pipe()
    if os.fork() == 0:
        use_cpu_devices(int(sys.argv[1]))
        jax.devices()
        used = resource.getrusage(resource.RUSAGE_SELF)
        os.write(write, str(used.ru_utime + used.ru_stime).encode())
        os._exit(0)
    os.close(write)
    spent.append(float(os.read(read, 100)))
    os.wait()
print(json.dumps(spent))
"""


def as_graded(devices: int, starts: int) -> float:
    """A worker started as the grader starts one, until it is ready, then ended by closing its
    requests: the machine's busy CPU-seconds meanwhile (bubblewrap reaps what it runs without
    passing its use on, so no other count sees the sandbox's processes)."""
    spent = []
    for _ in range(starts):
        before = busy_cpu_seconds()
        worker = process.WorkerProcess(devices, DEFAULT_LIMITS, DEFAULT_SANDBOX)
        try:
            worker.receive("ready", DEFAULT_LIMITS.start)
            worker.process.stdin.close()  # its requests end: it exits
            worker.process.wait(60)
        finally:
            worker.close()
        spent.append(busy_cpu_seconds() - before)
    return sum(spent) / starts


def fresh(devices: int, starts: int) -> float:
    runs = [float(subprocess.run([sys.executable, "-I", "-c", FRESH, str(devices)],
                                 capture_output=True, text=True, check=True).stdout)
            for _ in range(starts)]
    return sum(runs) / starts


def forked(devices: int, starts: int) -> float:
    done = subprocess.run([sys.executable, "-I", "-c", FORKED, str(devices), str(starts)],
                          capture_output=True, text=True, check=True)
    runs = json.loads(done.stdout)
    return sum(runs) / starts


def worker_starts(students: int, jobs: int) -> tuple[Counter, float]:
    """Grade the mixed class twice; the workers the second batch started, by device count,
    and the machine's busy CPU-seconds during it."""
    started: Counter = Counter()
    counting = False
    start = process.WorkerProcess.__init__

    def counted(self, devices, limits, sandbox, module="grader.workers.worker") -> None:
        if counting and module == "grader.workers.worker":
            started[devices] += 1
        start(self, devices, limits, sandbox, module)

    process.WorkerProcess.__init__ = counted
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp).chmod(0o755)  # the workers' user must reach the kept reference run
        batch = Path(tmp) / "class"
        batch.mkdir()
        mixed_class(batch, students)
        try:
            for which in ("first", "second"):
                counting = which == "second"
                busy = busy_cpu_seconds()
                grade.grade(batch, Path(tmp) / which, jobs=jobs, cache=Path(tmp) / "kept")
                busy = busy_cpu_seconds() - busy
        finally:
            process.WorkerProcess.__init__ = start
            if (Path(tmp) / "kept").exists():
                compiled.remove(Path(tmp) / "kept")  # left read-only
    return started, busy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=5)
    parser.add_argument("--students", type=int, default=6)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    counts = grade.device_counts(cases.load())
    saved = {}
    print(f"one start, CPU-s ({args.starts} starts each; sandbox: "
          f"{'bubblewrap' if DEFAULT_SANDBOX.sandboxed else 'none'}):")
    for devices in counts:
        graded, plain = as_graded(devices, args.starts), fresh(devices, args.starts)
        warm = forked(devices, args.starts)
        saved[devices] = (graded, graded - warm)
        print(f"  {devices} devices: as the grader starts it {graded:5.2f}, plain python -I "
              f"{plain:5.2f}, forked from a warm template {warm:5.2f}")
    if not args.students:
        return
    started, busy = worker_starts(args.students, args.jobs)
    runs = args.students * len(counts)
    replaced = {d: started[d] - args.students for d in counts}
    total = sum(started.values())
    spent = sum(started[d] * saved[d][0] for d in counts)
    print(f"the mixed class of {args.students}, reference kept, --jobs {args.jobs}: "
          f"{busy:.1f} CPU-s busy; {total} workers started ("
          + ", ".join(f"{started[d]} on {d} devices" for d in counts)
          + f"), {runs} runs and {total - runs} after a crash or a stall; their starts "
          f"{spent:.1f} CPU-s ({spent / busy:.1%})")
    template = sum(saved[d][0] for d in counts) / len(counts)  # started as a worker is
    shared = sum(started[d] * saved[d][1] for d in counts) - args.students * template
    per_run = sum(replaced[d] * saved[d][1] for d in counts)
    for design, cpu in (("a template per submission, shared by its device counts", shared),
                        ("a template per run, forking only the replacements", per_run)):
        print(f"  {design}: would save {cpu:.1f} CPU-s ({cpu / busy:.1%}, "
              f"{cpu / args.students:.2f} CPU-s per submission)")


if __name__ == "__main__":
    main()
