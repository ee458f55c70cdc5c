"""Lesson 6's grader tests (grader/workers/replay.py): a student's function run in several
processes, each of which replays the cells the worker ran. They run for real when a
submission of lesson 6 is graded (the reference solutions in `validate`, tested in
tests/authoring/test_release.py)."""

import os

import pytest

from grader.launcher import ClusterError
from grader.workers import record, replay

COUNTING = (
    "import os\n"
    "calls = []\n\n"
    "def total_over_processes(count):\n"
    "    calls.append(count)\n"
    "    return {'pid': os.getpid(), 'calls': len(calls)}\n"
)
PROBE = "grader.public.multiprocess:total_in_each_process"


def test_replay_outside_a_worker_is_a_clear_error():
    """Is replay refused when no worker recorded the submission's cells?"""
    probe = "grader.public.multiprocess:uneven_in_each_process"
    with pytest.raises(ClusterError, match="no cells that define `uneven_global_mean`"):
        replay.run("uneven_global_mean", probe, 2, 4)


def test_replay_runs_public_probes_only():
    """Does a worker refuse to run, in launched processes, a probe that is not in a public
    test module (a hidden one would have to be sent to it)?"""
    with pytest.raises(ValueError, match="public test module"):
        replay.run("uneven_global_mean", "grader.hidden.multiprocess:anything", 2, 4)


def test_replay_takes_the_function_of_a_grader_test():
    """Is replay, called on anything but the tester's stand-in for the function under test,
    a clear error?"""
    with pytest.raises(TypeError, match="grader's test only"):
        replay.replay(print, print)


def test_the_file_that_defines_a_name_last_is_the_one_replayed():
    """Does the record name the last file whose namespace defines the function, as the
    worker looks it up, and none for a name no file defines?"""
    ran = record.Record(namespaces={"a.ipynb": {"f": 1, "g": 2}, "b.py": {"f": 3}})
    assert ran.file_defining("f") == "b.py"
    assert ran.file_defining("g") == "a.ipynb"
    assert ran.file_defining("h") is None


def test_a_workers_replays_share_one_cluster_while_its_cells_stay_the_same(monkeypatch):
    """Do a worker's replayed tests run in the processes the first one launched, which
    replayed the cells once, while the worker tests that file's functions; does a worker whose
    cells changed launch new ones, and do they end when it tests another file's function?"""
    ran = record.Record(cells={"a.py": [("cell 1", COUNTING)]},
                        namespaces={"a.py": {"total_over_processes": print, "f": print},
                                    "b.py": {"g": print}})
    monkeypatch.setattr(replay, "RECORD", ran)
    try:
        first = replay.run("total_over_processes", PROBE, 2, 1)
        replay.asked_about("f")  # a test of another function of the same file
        second = replay.run("total_over_processes", PROBE, 2, 1)
        ran.cells["a.py"].append(("cell 2", "x = 1"))
        third = replay.run("total_over_processes", PROBE, 2, 1)
        replay.asked_about("g")  # the next notebook's tests
        for pid in [p["result"]["pid"] for p in third]:  # killed and reaped
            with pytest.raises(ProcessLookupError):
                os.kill(pid, 0)
    finally:
        replay.close()
    calls = [[p["result"]["calls"] for p in found] for found in (first, second, third)]
    assert calls == [[1, 1], [2, 2], [1, 1]]
    pids = [[p["result"]["pid"] for p in found] for found in (first, second, third)]
    assert pids[1] == pids[0] and not set(pids[2]) & set(pids[0])
