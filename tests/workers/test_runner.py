"""Running a submission's code and tests in workers (grader/workers/runner.py): how a run
ends when the submission stalls everything. (A worker that crashes, hangs or stalls one
exercise is graded in tests/grading/test_hostile_batch.py, with the rest of the batch.)
"""

from __future__ import annotations

from grader import cases
from grader import messages as msg
from grader.workers import runner
from grader.workers.run import Source
from grader.workers.sandbox import Limits


def test_a_submission_that_stalls_everything_ends_with_its_total_time(tmp_path):
    """Three functions that each hang, with 60 s per exercise but 4 s for the whole run: does
    the run end with every test not run, for that reason, instead of taking 3 x 60 s?"""
    hangs = "".join(f"def {name}(*args):\n    time.sleep(3600)\n\n\n"
                    for name in ("ring_shift", "distributed_dot", "pmap_scaled_sum"))
    sources = [Source("stalls.py", "stalls.py", "import time\n\n\n" + hangs)]
    chosen = [c for name in ("ring_shift", "distributed_dot", "pmap_scaled_sum")
              for c in cases.for_exercise(name) if 8 in c.device_counts]
    limits = Limits(exercise=60, cell=60, run=4)
    result = runner.run(sources, chosen, 8, limits)
    why = msg.MSG_RUN_TOO_LONG.format(seconds=4, devices=8)
    assert result.problems == [why]
    assert result.outcomes == {c.id: {"ok": False, "not_run": why} for c in chosen}
