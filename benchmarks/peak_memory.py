"""The grader's command line (or another module's, after ``-m MODULE``), reporting its peak
memory when it ends:

    .venv/bin/python benchmarks/peak_memory.py grade SUBMISSIONS --out OUT ...
    .venv/bin/python benchmarks/peak_memory.py -m nbgrader autograde ASSIGNMENT ...

prints ``peak-rss-kib N`` last on stderr: VmHWM, the high-water mark of this process's own
memory (ru_maxrss would not do: Linux keeps it across exec, so it would start at the size of
the process this one was started from). Used by benchmarks/grading.py --hostile,
benchmarks/against_nbgrader.py and the hostile batch of tests/grading/test_hostile_batch.py.
"""

import runpy
import sys

if __name__ == "__main__":
    module = "grader"
    if sys.argv[1:2] == ["-m"]:
        module = sys.argv[2]
        del sys.argv[1:3]
    sys.argv[0] = module
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    finally:
        with open("/proc/self/status") as status:
            peak = next(line.split()[1] for line in status if line.startswith("VmHWM:"))
        print("peak-rss-kib", peak, file=sys.stderr)
