"""How many processes a worker may start, and its share of the CPU (grader/workers/confine.py, and
WorkerProcess, which puts each worker in a control group of its own).

Run by CI as root, where the grader makes its groups at the top of the cgroup hierarchies, and
as an unprivileged user twice: in a group delegated to it, and with none (the fallback: the
worker caps its own user's processes).
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import threading
import time
from pathlib import Path

import pytest
from markers import NEEDS_CGROUPS, NEEDS_MEMORY_GROUPS
from test_sandbox import left_after

from grader.workers import confine, sandbox
from grader.workers.process import WorkerProcess
from grader.workers.sandbox import BWRAP, Limits, Sandbox

ROOT = Path(__file__).resolve().parents[2]

SANDBOXED = [pytest.param(True, id="sandboxed", marks=pytest.mark.skipif(
                 not BWRAP, reason="bubblewrap is not installed")),
             pytest.param(False, id="plain")]
# A cell that starts processes (sleeping: cheap) until it cannot, up to 2000, and says how many.
SPAWNS = """
import os
started = 0
while started < 2000:
    try:
        os.posix_spawn("/bin/sleep", ["sleep", "1000"], os.environ)
    except OSError:
        break
    started += 1
raise RuntimeError(f"started {started}")
"""


def started_in_a_worker(sandboxed: bool, until_started=None) -> tuple[int, WorkerProcess]:
    """How many processes a cell could start in a fresh worker, and the worker (closed).
    ``until_started`` is entered before the worker starts and left once the cell has ended,
    before the worker is closed."""
    limits = Limits()
    with until_started or contextlib.nullcontext():
        worker = WorkerProcess(2, limits, Sandbox(use_bwrap=sandboxed))
        try:
            worker.receive("ready", limits.start)
            reply = worker.request("cell", 120, file="a.py", label="a.py", source=SPAWNS)
        except BaseException:
            worker.close()
            raise
    worker.close()
    return int(re.search(r"started (\d+)", reply["error"]["message"]).group(1)), worker


def users_processes() -> set[str]:
    """The workers' user's processes, in any state (ending, or waiting to be reaped,
    included)."""
    found, uid = set(), (sandbox.worker_user() or (os.getuid(),))[0]
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if stat.stat().st_uid == uid:
                found.add(stat.parent.name)
        except OSError:
            continue
    return found


def a_user_of_its_own(monkeypatch) -> None:
    """As root, run this test's workers as a user no other process runs as, so that the cap,
    which counts what that user runs, is not widened by another test's workers (run as
    ``nobody`` beside this one by xdist) ending while this one starts its processes."""
    if os.geteuid() != 0:
        return
    running = set()
    for path in Path("/proc").glob("[0-9]*"):
        try:
            running.add(path.stat().st_uid)
        except OSError:  # ended meanwhile
            continue
    uid = next(uid for uid in range(60000 + os.getpid() % 4000, 65000) if uid not in running)
    monkeypatch.setattr(sandbox, "worker_user", lambda: (uid, uid))


def users_tasks() -> dict[str, int]:
    """The workers' user's processes, each with its number of threads (each counts for the
    kernel's cap), as the worker counts them."""
    return confine.tasks_of((sandbox.worker_user() or (os.getuid(),))[0])


@contextlib.contextmanager
def places_freed(freed: list[int]):
    """Set ``freed[0]``, once the block ends, to how many of the workers' user's tasks ended
    while it ran, as often as /proc was read (every few milliseconds): the places others freed
    under a cap counted while it began."""
    most, done = {}, threading.Event()

    def watch():
        while True:
            for pid, threads in users_tasks().items():
                most[pid] = max(threads, most.get(pid, 0))
            if done.wait(0.005):
                return

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        yield
    finally:
        done.set()
        watcher.join()
        now = users_tasks()
        freed[0] = sum(threads - now.get(pid, 0) for pid, threads in most.items()
                       if threads > now.get(pid, 0))


def settle(seconds: float = 30, still: float = 2) -> None:
    """Wait, ``seconds`` at most, until this user's processes have stayed the same for
    ``still`` seconds: a killed worker's processes take a moment to end and to be reaped."""
    deadline, seen, since = time.monotonic() + seconds, None, time.monotonic()
    while time.monotonic() < deadline:
        now = users_processes()
        if now != seen:
            seen, since = now, time.monotonic()
        elif time.monotonic() - since >= still:
            return
        time.sleep(0.1)


@NEEDS_CGROUPS
@pytest.mark.parametrize("sandboxed", SANDBOXED)
def test_a_worker_in_its_control_group_runs_at_most_max_tasks_and_leaves_nothing(sandboxed):
    """Does a worker's cell run out of processes at the cap (its own threads count too), and
    once the worker is closed, is every process it started gone, and its group with them?"""
    started, worker = started_in_a_worker(sandboxed)
    assert 10 < started < confine.MAX_TASKS
    assert worker.group and not any(folder.exists() for folder in worker.group.folders)
    assert left_after([worker.home.name]) == []


@pytest.mark.parametrize("sandboxed", SANDBOXED)
def test_without_a_control_group_a_worker_caps_its_users_processes(sandboxed, monkeypatch):
    """Where no group can be made, does the worker cap its user at MAX_TASKS more processes
    than it runs (in the sandbox, its namespace's alone), and leave none behind? (Root is
    exempt from that cap, but a grader started by root runs its workers as another user.)"""
    monkeypatch.setattr(confine.Group, "create", classmethod(lambda cls, memory=None: None))
    a_user_of_its_own(monkeypatch)
    # The cap counts what the user runs now, and an earlier test's killed processes may still
    # be ending or waiting to be reaped: they would free their places in the middle of this.
    settle()
    # Unprivileged, the workers' user is this test's own, and another test run beside it by xdist
    # as that user may end processes or threads meanwhile: each frees a place under the cap.
    freed = [0]
    started, worker = started_in_a_worker(sandboxed, places_freed(freed))
    assert 10 < started <= confine.MAX_TASKS + freed[0]
    assert left_after([worker.home.name]) == []


@NEEDS_MEMORY_GROUPS
@pytest.mark.parametrize("sandboxed", SANDBOXED)
def test_a_workers_children_hold_at_most_its_memory_together(sandboxed):
    """Each process of a worker is capped at the worker's memory, so four children of 1.5 GiB
    each fit one by one: do they fail to hold 6 GiB together, the kernel killing one in the
    worker's group, and does the group say so?"""
    source = (ROOT / "tests" / "submissions" /
              "holds-memory-in-children-beyond-the-cap-in-halo-difference.py").read_text()
    limits = Limits()
    worker = WorkerProcess(2, limits, Sandbox(use_bwrap=sandboxed))
    try:
        worker.receive("ready", limits.start)
        held = "\nWAIT = 90\nraise RuntimeError(f'held {children_held_six_gib()}')"
        reply = worker.request("cell", 120, file="a.py", label="a.py", source=source + held)
        killed = worker.group is not None and worker.group.out_of_memory()
    finally:
        worker.close()
    assert worker.group and worker.group.memory == limits.memory == 4 * 2**30
    assert reply["error"]["message"] == "held False"
    assert killed


def test_a_group_is_joined_before_its_command_runs(tmp_path):
    """The command a worker is started with: does the shell write its own pid into every
    folder's cgroup.procs, then become the command, its arguments untouched?"""
    folders = (tmp_path / "pids", tmp_path / "cpu")
    for folder in folders:
        folder.mkdir()
    command = confine.Group(folders).command(["sh", "-c", 'echo "$$ $0 $1"', "a b", "c"])
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    pid, args = done.stdout.strip().split(" ", 1)
    assert args == "a b c"
    assert [(f / "cgroup.procs").read_text().strip() for f in folders] == [pid, pid]


def test_a_probe_left_by_a_killed_process_of_the_same_pid_does_not_hide_the_groups(tmp_path):
    """A grader killed while it probed for control groups leaves its probe group behind; the
    sweep spares it once a new grader has that pid. Does the new grader still find a place
    where groups can be made, instead of grading without them?"""
    left = tmp_path / f"jax-course-grader-{os.getpid()}-probe"
    left.mkdir()
    (left / "cgroup.procs").write_text("")  # a group folder has its files
    assert confine._usable(tmp_path, v2=False, capped=False)


@NEEDS_CGROUPS
def test_workers_started_at_once_find_the_same_control_groups(monkeypatch):
    """With --jobs, workers start from several threads at once, and each asks where control
    groups can be made. Do they all find what one search alone finds (the memory hierarchy
    too), rather than removing each other's probe groups and leaving the grader without its
    memory cap?"""
    alone = confine._find()
    monkeypatch.setattr(confine, "_found", [])
    start = threading.Barrier(8)
    found = []

    def search() -> None:
        start.wait()
        found.append(confine._bases())

    threads = [threading.Thread(target=search) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert found == [alone] * 8
