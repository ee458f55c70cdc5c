"""Running a submission's code and tests in workers (grader/workers/runner.py): how a run
ends when the submission stalls everything. (A worker that crashes, hangs or stalls one
exercise is graded in tests/grading/test_hostile_batch.py, with the rest of the batch.)
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from markers import NEEDS_THE_SANDBOX

import grader
from grader import messages as msg
from grader.framework import cases
from grader.workers import runner
from grader.workers.run import Source
from grader.workers.sandbox import Limits


def test_a_submission_that_stalls_everything_ends_with_its_total_time(tmp_path):
    """Three functions that each hang, with 60 s per exercise but 4 s for the whole run: does
    the run end with every test not run, for that reason, instead of taking 3 x 60 s?"""
    hangs = "".join(f"def {name}(*args):\n    time.sleep(3600)\n\n\n"
                    for name in ("halo_difference", "distributed_dot", "fixed_pmap_port"))
    sources = [Source("stalls.py", "stalls.py", "import time\n\n\n" + hangs)]
    chosen = [c for name in ("halo_difference", "distributed_dot", "fixed_pmap_port")
              for c in cases.for_exercise(name) if 8 in c.device_counts]
    limits = Limits(exercise=60, cell=60, run=4)
    result = runner.run(sources, chosen, 8, limits)
    why = msg.MSG_RUN_TOO_LONG.format(seconds=4, devices=8)
    assert result.problems == [why]
    assert result.outcomes == {c.id: {"ok": False, "not_run": why} for c in chosen}


# A submission whose halo_difference, at every call a test makes, searches its whole worker for
# what the hidden tests are made of: every name in every string reachable from Python's
# objects (modules, functions and their code, dicts, lists, the worker's own records), the
# modules loaded, the environment, and every file it can read in the grader's package, its
# home and /tmp. It knows what it looks for only by digests (the names themselves would be
# found in its own code). It raises if it finds one, or if it misses either control (a name
# the worker holds, a public test's name on disk), which shows the search works; otherwise it
# returns the right values, so that every test passes.
SEARCHES_THE_WORKER = """
import gc, hashlib, os, re, sys, types
import grader

MARKERS = {markers!r}
CONTROLS = {controls!r}
WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{{8,}}")


def _texts():
    for obj in gc.get_objects():
        try:
            if isinstance(obj, dict):
                yield from (x for item in obj.items() for x in item if isinstance(x, str))
            elif isinstance(obj, (list, tuple, set, frozenset)):
                yield from (x for x in obj if isinstance(x, str))
            elif isinstance(obj, types.FunctionType):
                code = obj.__code__
                yield from (obj.__name__, *code.co_names, *code.co_varnames)
                yield from (c for c in code.co_consts if isinstance(c, str))
        except Exception:
            pass
    yield from sys.modules
    yield from os.environ.values()
    for root in (os.path.dirname(grader.__file__), os.environ.get("HOME", "/"), "/tmp"):
        for folder, _, files in os.walk(root):
            for name in files:
                try:
                    with open(os.path.join(folder, name), "rb") as f:
                        yield f.read(2**20).decode(errors="replace")
                except OSError:
                    pass


def halo_difference(x):
    words = {{w for text in _texts() for w in WORD.findall(text)}}
    seen = {{hashlib.md5(w.encode()).hexdigest() for w in words}}
    del words
    if not set(CONTROLS) <= seen:
        raise RuntimeError("the search is blind")
    found = len(seen & set(MARKERS))
    if found:
        raise RuntimeError(f"found {{found}} names of hidden tests in the worker")
    n = jax.device_count()
    mesh = jax.sharding.Mesh(jax.devices(), ("data",))
    spec = jax.sharding.PartitionSpec("data")

    def difference(b):
        before = jax.lax.ppermute(b[-1:], "data", [(i, (i + 1) % n) for i in range(n)])
        after = jax.lax.ppermute(b[:1], "data", [(i, (i - 1) % n) for i in range(n)])
        padded = jax.numpy.concatenate([before, b, after])
        return (padded[2:] - padded[:-2]) / 2

    return jax.shard_map(difference, mesh=mesh, in_specs=spec, out_specs=spec)(x)
"""


def _digest(name: str) -> str:
    return hashlib.md5(name.encode()).hexdigest()  # noqa: S324 - a fingerprint, not a secret


def _hidden_markers() -> list[str]:
    """The names of the hidden tests that no other file of the grader package holds, of 20
    characters or more: a name of a few words that no library uses (scipy has a function
    `random_rows`, which a worker may well hold)."""
    root = Path(grader.__file__).parent
    others = "".join(p.read_text() for p in root.rglob("*.py") if "hidden" not in p.parts)
    names = [c.name for c in cases.load(hidden=True) if c.hidden and len(c.name) >= 20]
    return sorted({name for name in names if name not in others})


@NEEDS_THE_SANDBOX
def test_nothing_of_the_hidden_tests_is_readable_in_a_worker():
    """A worker runs the hidden tests' calls of the student's function: is nothing of the
    hidden tests (here, the name of any of them) to be found there, in memory or on disk, at
    any of those calls, while the search finds what the worker does hold?"""
    markers = _hidden_markers()
    assert len(markers) > 150  # most hidden tests have a long name of their own
    controls = ["forbid_trace_hooks", "differences_of_the_squares"]
    assert controls[1] in {c.name for c in cases.load(hidden=False)}
    source = "import jax\n" + SEARCHES_THE_WORKER.format(
        markers=[_digest(m) for m in markers], controls=[_digest(c) for c in controls])
    chosen = [c for c in cases.for_exercise("halo_difference") if 8 in c.device_counts]
    assert any(c.hidden for c in chosen)
    result = runner.run([Source("search.py", "search.py", source)], chosen, 8,
                        Limits(exercise=120, cell=60))
    assert result.problems == []
    assert {c.id: result.outcomes[c.id].get("error") for c in chosen} == \
        {c.id: None for c in chosen}


def test_a_tester_that_cannot_start_leaves_the_run_unfinished(monkeypatch):
    """The tests run in a tester: if none can be started, is every test not run, and the run
    marked unfinished with the reason (so that it is reported but never stored), rather than
    some tests lost?"""
    def fails(*kind):
        raise runner.WorkerDied("no tester for this test")

    monkeypatch.setattr(runner.TESTERS, "start", fails)
    monkeypatch.setattr(runner.TESTERS, "idle", {})
    chosen = [c for name in ("halo_difference", "distributed_dot")
              for c in cases.for_exercise(name) if 2 in c.device_counts]
    source = Source("a.py", "a.py", "def halo_difference(x):\n    return x\n\n"
                    "def distributed_dot(a, b):\n    return 0.0\n")
    result = runner.run([source], chosen, 2, Limits(exercise=30, cell=30))
    why = msg.MSG_WORKER_FAILED.format(devices=2, why=msg.MSG_TESTER_FAILED.format(
        devices=2, why="no tester for this test"))
    assert result.unfinished == why
    assert result.outcomes == {c.id: {"ok": False, "not_run": why} for c in chosen}


@pytest.fixture
def taken(monkeypatch) -> list:
    """The kinds of the testers a run takes from the pool, one entry each, as it takes them."""
    kinds = []
    take = runner.TESTERS.take

    def counted(kind):
        kinds.append(kind)
        return take(kind)

    monkeypatch.setattr(runner.TESTERS, "take", counted)
    return kinds


def test_a_thread_left_running_fails_each_exercise_at_the_cost_of_one_tester(taken):
    """A thread the submission started runs on while its functions are measured: is every
    test of every exercise failed for that reason, and does finding it cost one tester per
    exercise, not one per test? (A tester asked mid-probe is dropped and a new one started:
    one per test took pmean_update_step's nine tests past the hostile batch's 20 s on CI.)"""
    exercises = ("halo_difference", "pmean_update_step")
    chosen = [c for name in exercises for c in cases.for_exercise(name) if 2 in c.device_counts]
    source = Source("t.py", "t.py", "import threading, time\n\n"
                    "threading.Thread(target=lambda: time.sleep(3600), daemon=True).start()\n\n"
                    "def halo_difference(x):\n    return x\n\n"
                    "def pmean_update_step(*args):\n    return args\n")
    result = runner.run([source], chosen, 2, Limits(exercise=60, cell=60))
    assert {c.id: result.outcomes[c.id].get("threads") for c in chosen} == \
        {c.id: 1 for c in chosen}
    assert len(taken) == len(exercises) < len(chosen)


def test_a_reply_written_in_the_workers_place_fails_the_exercise_at_the_cost_of_one_tester(
        taken):
    """A submission writes a reply of 6 MiB in its worker's place, before the worker's own,
    at each call: is every test of the exercise failed with the reason, at the cost of one
    tester, not one per test (each new tester would find the same, and a loaded machine once
    took halo_difference's tests past the hostile batch's 20 s that way), while the next
    exercise is measured as usual?"""
    bombed = [c for c in cases.for_exercise("halo_difference") if 2 in c.device_counts]
    fine = [c for c in cases.for_exercise("distributed_dot") if 2 in c.device_counts]
    assert len(bombed) > 1
    source = Source("b.py", "b.py", "import sys\n\n"
                    "def halo_difference(x):\n"
                    "    frame = sys._getframe()\n"
                    "    while frame.f_code.co_name != 'serve':\n"
                    "        frame = frame.f_back\n"
                    "    line = '{\"req\": \"%s\", \"ok\": true, \"pad\": \"%s\"}\\n' % (\n"
                    "        frame.f_locals['req'], 'x' * (6 * 2**20))\n"
                    "    frame.f_locals['write'](line)\n"
                    "    frame.f_locals['flush']()\n"
                    "    return x\n\n"
                    "def distributed_dot(a, b):\n    return 0.0\n")
    result = runner.run([source], [*bombed, *fine], 2, Limits(exercise=60, cell=60))
    too_large = msg.MSG_REPLY_TOO_LARGE.format(what="over 4 MiB")
    assert {c.id: result.outcomes[c.id].get("unreadable") for c in bombed} == \
        {c.id: too_large for c in bombed}
    assert all("unreadable" not in result.outcomes[c.id] for c in fine)
    assert len(taken) == 2  # one dropped with the forged reply, one for distributed_dot
