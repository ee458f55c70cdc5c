"""grader.lessons.cluster: several local JAX processes, bounded in time and always cleaned up.
The grader's tests that run a student's function in them are in tests/workers/test_replay.py."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from grader import launcher
from grader.devices import WORKER_ENV
from grader.lessons import cluster

ROOT = Path(__file__).resolve().parents[2]
COLUMNS = 3


def gone(pid: int) -> bool:
    """Whether no process has this id any more: killed and reaped, or killed and waiting as
    a zombie for whoever adopted it to reap it."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


# --- programs run in the launched processes (sent as source: self-contained) ---------------
def who_am_i(scale):
    import jax

    me = jax.process_index()
    return {
        "process": me,
        "processes": jax.process_count(),
        "local devices": jax.local_device_count(),
        "devices": jax.device_count(),
        "scaled": scale * 2,
        "rows": np.full((2, COLUMNS), me, dtype=np.float32),
    }


def note_pid_then(folder, action):
    """Write this process's id (and the job file's folder) into ``folder``, then act."""
    me = int(os.environ["CLUSTER_PROCESS_ID"])
    Path(folder, f"{me}.json").write_text(
        json.dumps({"pid": os.getpid(), "job": str(Path(sys.argv[1]).parent)})
    )
    if action == "hang" and me == 0:
        time.sleep(600)
    if action == "raise" and me == 1:
        raise ValueError("no rows for process 1")
    if action == "exit" and me == 1:
        os._exit(3)
    return me


def forges_a_result():
    print(json.dumps({"nonce": "0" * 32, "ok": True, "value": {"str": "forged"}}))
    sys.stderr.write('{"ok": true, "value": {"str": "forged"}}\n')
    return "real"


def xla_flags_seen():
    return os.environ.get("XLA_FLAGS", "")


def noted(folder: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]


# --- launching --------------------------------------------------------------------------------
def test_every_process_returns_its_result_in_process_order():
    """Do two processes joined by jax.distributed each give back their own plain data?"""
    results = cluster.run(who_am_i, 1.5, devices_per_process=2)
    assert [r["process"] for r in results] == [0, 1]
    assert all(r["processes"] == 2 and r["local devices"] == 2 and r["devices"] == 4
               for r in results)
    assert results[0]["scaled"] == 3.0
    assert results[1]["rows"].dtype == np.float32 and np.all(results[1]["rows"] == 1)


def test_xla_flags_reach_every_process_and_the_device_count_stays_its_own(monkeypatch):
    """Do the flags given to run join this process's XLA_FLAGS in every launched process,
    without the device count flag that would override devices_per_process?"""
    monkeypatch.setenv("XLA_FLAGS", "--xla_force_host_platform_device_count=8 --xla_dump_to=x")
    flags = "--xla_cpu_collective_timeout_seconds=7"
    seen = cluster.run(xla_flags_seen, processes=2, initialize=False, xla_flags=flags)
    assert seen == ["--xla_dump_to=x --xla_cpu_collective_timeout_seconds=7"] * 2


def test_a_timeout_kills_every_process_and_says_which_were_late(tmp_path):
    """Does a hang end within the timeout, with no process and no temporary file left?"""
    start = time.monotonic()
    with pytest.raises(cluster.ClusterTimeout, match=r"^process 0 of 2 did not finish within 2 s"):
        cluster.run(note_pid_then, str(tmp_path), "hang", timeout=2, initialize=False)
    assert time.monotonic() - start < 10
    seen = noted(tmp_path)
    assert len(seen) == 2
    assert all(gone(s["pid"]) for s in seen)
    assert not Path(seen[0]["job"]).exists()


def test_the_processes_die_with_the_process_that_launched_them(tmp_path):
    """If the launcher itself is killed (a grader worker, a kernel), do its processes die
    too instead of hanging on?"""
    script = tmp_path / "launch.py"
    script.write_text(
        "import sys\n"
        "from grader.lessons import cluster\n"
        "from test_cluster import note_pid_then\n"
        "cluster.run(note_pid_then, sys.argv[1], 'hang', timeout=60, initialize=False)\n"
    )
    folder = tmp_path / "pids"
    folder.mkdir()
    # Killed, the launcher cannot remove its temporary folder: keep it under tmp_path.
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent), "TMPDIR": str(tmp_path)}
    launcher = subprocess.Popen([sys.executable, str(script), str(folder)], env=env)
    try:
        deadline = time.monotonic() + 30
        while len(noted(folder)) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(noted(folder)) == 2
    finally:
        launcher.kill()
        launcher.wait()
    deadline = time.monotonic() + 10
    while not all(gone(s["pid"]) for s in noted(folder)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert all(gone(s["pid"]) for s in noted(folder))


def test_a_failing_process_is_named_with_its_error_and_output(tmp_path):
    """Does the error name the process that raised, its exception and its last output?"""
    with pytest.raises(cluster.ProcessFailed) as caught:
        cluster.run(note_pid_then, str(tmp_path), "raise", initialize=False)
    error = caught.value
    assert str(error) == "process 1 of 2 raised ValueError: no rows for process 1"
    assert (error.index, error.error_type) == (1, "ValueError")
    assert "Traceback" in error.__notes__[0] and "no rows for process 1" in error.__notes__[0]
    assert all(gone(s["pid"]) for s in noted(tmp_path))


def test_a_process_that_exits_without_a_result_fails_the_run(tmp_path):
    """Is a process that leaves without answering reported with its exit code?"""
    with pytest.raises(cluster.ProcessFailed, match=r"process 1 of 2 ended .*exit code 3"):
        cluster.run(note_pid_then, str(tmp_path), "exit", initialize=False)
    assert all(gone(s["pid"]) for s in noted(tmp_path))


def test_printed_text_cannot_pass_for_a_result():
    """Is a fake reply printed on stdout or stderr ignored in favour of the real one?"""
    assert cluster.run(forges_a_result, initialize=False) == ["real", "real"]


def test_not_implemented_stays_not_implemented():
    """Does a stub's NotImplementedError reach the caller as one (the grader says "not
    attempted")?"""

    def stub():
        raise NotImplementedError("Replace this line with your solution.")

    with pytest.raises(NotImplementedError, match="process 0 of 2"):
        cluster.run(stub, initialize=False, processes=2)


def test_inside_a_grader_worker_run_stands_down(monkeypatch):
    """Does a notebook's launch cell do nothing when the grader replays the notebook?"""
    monkeypatch.setenv(WORKER_ENV, "1")
    assert cluster.run(who_am_i, 1.0) is None


# --- a cluster kept for one request after another -------------------------------------------
def answering():
    """A cluster's entry: what answers each request, counting the requests it answered."""
    answered = []

    def answer(request):
        import os
        import time

        answered.append(request)
        me = int(os.environ["CLUSTER_PROCESS_ID"])
        if request.get("act") == "raise" and me == 1:
            raise ValueError("no rows for process 1")
        if request.get("act") == "hang" and me == 0:
            time.sleep(600)
        return {"pid": os.getpid(), "answered": len(answered), "said": request["say"]}

    return answer


def kept_cluster() -> launcher.Cluster:
    job = {"initialize": False, "name": "answering", "code": cluster.ship(answering), "args": []}
    return launcher.Cluster(job, processes=2, devices_per_process=1)


def test_a_cluster_answers_one_request_after_another_from_the_same_processes():
    """Do the processes a Cluster launched answer each request in turn, in process order,
    without starting again, and are they gone once it is closed?"""
    kept = kept_cluster()
    try:
        first = kept.ask({"say": "a"}, timeout=30)
        second = kept.ask({"say": "b"}, timeout=30)
    finally:
        kept.close()
    assert [a["said"] for a in first + second] == ["a", "a", "b", "b"]
    assert [a["answered"] for a in second] == [2, 2]
    assert [a["pid"] for a in second] == [a["pid"] for a in first]
    assert len({a["pid"] for a in first}) == 2
    assert all(gone(a["pid"]) for a in first)


def test_a_failed_request_kills_the_cluster_and_the_next_one_starts_it_anew():
    """Does a request that raises in one process name it, kill every process, and leave the
    next request to new processes that answered nothing before?"""
    kept = kept_cluster()
    try:
        first = kept.ask({"say": "a"}, timeout=30)
        with pytest.raises(cluster.ProcessFailed, match=r"^process 1 of 2 raised ValueError"):
            kept.ask({"say": "b", "act": "raise"}, timeout=30)
        assert all(gone(a["pid"]) for a in first)
        again = kept.ask({"say": "c"}, timeout=30)
    finally:
        kept.close()
    assert [a["answered"] for a in again] == [1, 1]
    assert not {a["pid"] for a in again} & {a["pid"] for a in first}


def test_a_request_that_hangs_ends_in_time_and_names_the_late_process():
    """Is a request that one process never answers ended within its timeout, naming that
    process only, with every process gone?"""
    kept = kept_cluster()
    try:
        first = kept.ask({"say": "a"}, timeout=30)
        start = time.monotonic()
        with pytest.raises(cluster.ClusterTimeout, match=r"^process 0 of 2 did not finish"):
            kept.ask({"say": "b", "act": "hang"}, timeout=2)
        assert time.monotonic() - start < 10
        assert all(gone(a["pid"]) for a in first)
    finally:
        kept.close()


# --- what is sent -------------------------------------------------------------------------
SCALE = 3
TABLE = np.ones(3)


def helper(x):
    return x * SCALE


def uses_helper(x):
    return helper(np.float32(x))


def uses_table():
    return TABLE


def test_a_function_travels_with_its_imports_constants_and_helpers():
    """Is the source sent complete: imports, literal constants, notebook functions?"""
    code = cluster.ship(uses_helper)
    assert "import numpy as np" in code and "SCALE = 3" in code
    assert "def helper(x):" in code and "def uses_helper(x):" in code
    namespace: dict = {}
    exec(compile(code, "<shipped>", "exec"), namespace)  # noqa: S102
    assert namespace["uses_helper"](2) == 6


def test_a_value_that_cannot_travel_is_refused_before_launching():
    """Is an array used as a global refused with its name, instead of failing remotely?"""
    with pytest.raises(TypeError, match="`TABLE` from this notebook, a ndarray"):
        cluster.ship(uses_table)


def test_a_lambda_is_refused_whatever_name_it_was_given():
    """Is a lambda refused as one even when renamed (inspect would give the source of the
    whole expression around it, which is no definition)?"""
    scaled = lambda x: x * SCALE  # noqa: E731 - the lambda under test
    scaled.__name__ = "scaled"
    with pytest.raises(TypeError, match="not a lambda"):
        cluster.ship(scaled)


# --- grading in several processes -------------------------------------------------------------
@pytest.mark.slow
def test_grading_runs_the_functions_in_two_real_processes(tmp_path, monkeypatch):
    """Does grading (sandboxed when bubblewrap is installed) give the solutions full marks,
    and an uneven_global_mean that device_puts each process's own rows, right in one process
    and wrong in two, every point but the multi-process test's, with the hint for its
    mistake?"""
    from grader import messages
    from grader.course import BY_NAME
    from grader.framework import cases
    from grader.grading import grade
    from grader.hints import multiprocess

    lesson = [c for c in cases.load(hidden=True)
              if BY_NAME[c.exercise].lesson == "06_multiprocess"]
    monkeypatch.setattr(cases, "load", lambda hidden=True: lesson)  # this lesson's tests only
    solutions = tmp_path / "solutions"
    solutions.mkdir()
    shutil.copy(ROOT / "solutions" / "06_multiprocess.ipynb", solutions)
    submissions = tmp_path / "submissions"
    submissions.mkdir()
    shutil.copy(ROOT / "solutions" / "06_multiprocess.ipynb", submissions / "solved.ipynb")
    (submissions / "device-puts-local-rows.py").write_text(
        "import jax\n"
        "import numpy as np\n"
        "from jax.sharding import Mesh, NamedSharding, PartitionSpec as P\n\n\n"
        "def uneven_global_mean(local_rows, capacity):\n"
        "    mesh = Mesh(jax.devices(), ('data',))\n"
        "    part = np.zeros((capacity, local_rows.shape[1]), np.float32)\n"
        "    part[:len(local_rows)] = local_rows\n"
        "    batch = jax.device_put(part, NamedSharding(mesh, P('data')))\n"
        "    total = jax.jit(lambda b: b.sum(0), out_shardings=NamedSharding(mesh, P()))(batch)\n"
        "    return np.asarray(total) / len(local_rows)\n"
    )
    results = grade.grade(submissions, tmp_path / "out", jobs=1, solutions=solutions)
    graded = {r.student: r for r in results}

    for name in ("total_over_processes", "rows_to_read", "uneven_global_mean"):
        exercise = graded["solved"].exercises[name]
        assert exercise.points == exercise.max_points, name
    mean = graded["device-puts-local-rows"].exercises["uneven_global_mean"]
    failed = [t for t in mean.tests if t.status != messages.PASSED]
    assert [t.test for t in failed] == ["weighs_every_real_row_of_two_processes"]
    assert mean.points == mean.max_points - 1
    assert failed[0].hint == multiprocess.HINT_DEVICE_PUT_PER_PROCESS
