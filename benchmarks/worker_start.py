"""What a warm worker start would save: a worker started fresh against one forked from a
template that has imported JAX and the grader but started no backend.

    .venv/bin/python benchmarks/worker_start.py [--starts 5]

Both are timed in CPU-seconds up to the point where a worker is ready for its first request
(JAX's CPU devices started, on 8 and on 2 devices): a fresh ``python -I`` that imports the
worker's module, as the grader starts each worker, against a child forked from a process that
has done those imports already (its own CPU only, which a fork starts at zero). No sandbox on
either side: bubblewrap's own start is the same for both designs. Prints the CPU-seconds per
start, and what a submission's starts (one worker per device count the tests name) would save.
Speed is measured here, never asserted in a test.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

from grader.framework import cases
from grader.grading import grade

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=5)
    args = parser.parse_args()
    counts = grade.device_counts(cases.load())
    saved = 0.0
    for devices in counts:
        cold, warm = fresh(devices, args.starts), forked(devices, args.starts)
        saved += cold - warm
        print(f"{devices} devices: fresh start {cold:5.2f} CPU-s, forked from a template "
              f"{warm:5.2f} CPU-s ({args.starts} starts each)")
    print(f"a submission starts {len(counts)} workers (device counts {counts}): a template "
          f"would save {saved:.2f} CPU-s of each submission's")


if __name__ == "__main__":
    main()
