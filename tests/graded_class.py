"""What the tests that grade real code by the command line share: the correct notebook of lesson
3's first five exercises that each fixture is added to, and `grade` run in a process of its own
that reports its peak memory (tests/grading/test_hostile_batch.py,
tests/workers/test_safe_by_default.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from grader.devices import WORKER_ENV
from grader.workers.sandbox import Limits

ROOT = Path(__file__).resolve().parents[1]
# The base every .py fixture is added to: a correct notebook of the exercises the fixtures
# aim at, the first five of lesson 3 (example student ada's notebook, cut after halo_difference).
# The later exercises of the lesson are not handed in, which keeps the batch quick.
LESSON = "03_collectives"
ADA = ROOT / "examples" / "submissions" / "ada" / f"{LESSON}.ipynb"
LIMITS = Limits(exercise=20, cell=20)
# The batch is graded by `python -m grader grade`, in a process that reports its peak memory.
PEAK_MEMORY = ROOT / "benchmarks" / "peak_memory.py"


def write_base(student: Path) -> None:
    """Put the base notebook into the folder ``student``."""
    notebook = json.loads(ADA.read_text())
    sources = ["".join(c["source"]) for c in notebook["cells"]]
    notebook["cells"] = notebook["cells"][:sources.index("check(halo_difference)") + 1]
    student.mkdir(parents=True, exist_ok=True)
    (student / ADA.name).write_text(json.dumps(notebook))


def grade_in_a_process(batch: Path, out: Path, *options: str,
                       path: str | None = None) -> subprocess.CompletedProcess:
    """`grade BATCH --out OUT --timeout 20 OPTIONS...`, its PATH replaced by ``path`` if
    given."""
    env = {k: v for k, v in os.environ.items() if k != WORKER_ENV}
    if path is not None:
        env["PATH"] = path
    return subprocess.run(
        [sys.executable, str(PEAK_MEMORY), "grade", str(batch),
         "--out", str(out), "--timeout", str(LIMITS.exercise), *options],
        env=env, capture_output=True, text=True, timeout=3600,
    )
