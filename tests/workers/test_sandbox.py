"""The sandbox workers and verifiers run in, and how long they live (grader/workers/sandbox.py,
grader/workers/process.py's spawn, grader/processes.py).

Run by CI twice: as root and as an unprivileged user (see .ci/run), since bubblewrap started by
root keeps root's capabilities unless told otherwise.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from markers import NEEDS_THE_SANDBOX

from grader.workers import sandbox as sandboxing

ROOT = Path(__file__).resolve().parents[2]


def in_the_sandbox(code: str, tmp_path: Path) -> subprocess.CompletedProcess:
    home = tmp_path / "home"
    home.mkdir()
    return subprocess.run([*sandboxing.Sandbox().command(str(home)), sys.executable, "-I", "-c",
                           code], capture_output=True, text=True, timeout=60)


@NEEDS_THE_SANDBOX
def test_a_sandboxed_process_holds_no_capability_whoever_starts_it(tmp_path):
    """Started by root or by anyone else, does a process in the sandbox hold no capability,
    in effect, permitted or in its bounding set, with no way to gain one (no new privileges,
    no user namespace of its own to hold them all again)?"""
    done = in_the_sandbox(textwrap.dedent("""
        import ctypes, os
        status = dict(line.split(":", 1) for line in open("/proc/self/status"))
        print(*(status[k].strip() for k in ("CapEff", "CapPrm", "CapBnd", "NoNewPrivs")))
        libc = ctypes.CDLL(None, use_errno=True)
        print(libc.unshare(0x10000000), os.strerror(ctypes.get_errno()))  # CLONE_NEWUSER
    """), tmp_path)
    assert done.returncode == 0, done.stderr
    caps, userns = done.stdout.splitlines()
    assert caps.split() == ["0000000000000000"] * 3 + ["1"]
    assert userns.startswith("-1 ")


@NEEDS_THE_SANDBOX
def test_the_sandbox_mounts_its_private_tmp_before_what_it_shows():
    """A course cloned under /tmp: is the private /tmp mounted before the Python environment
    and the grader are bound (a later /tmp would hide them), and the worker's home after?"""
    args = sandboxing.Sandbox().command("/tmp/grader-worker-home")
    tmp = next(i for i in range(len(args) - 1) if args[i:i + 2] == ["--tmpfs", "/tmp"])
    binds = [i for i, a in enumerate(args) if a == "--ro-bind" and Path(args[i + 1]) in
             sandboxing._VISIBLE]
    home = args.index("/tmp/grader-worker-home")
    assert binds and tmp < min(binds) and max(binds) < home


def processes_with_home(homes: list[str]) -> list[str]:
    """The pids of processes whose HOME is one of ``homes`` (a worker's or a verifier's,
    sandboxed or not: bubblewrap passes the environment on), and of bubblewrap naming one."""
    wanted = [f"HOME={home}".encode() for home in homes]
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            environ = (proc / "environ").read_bytes().split(b"\0")
            cmdline = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        if any(w in environ for w in wanted) or any(h.encode() in cmdline for h in homes):
            found.append(proc.name)
    return found


def left_after(homes: list[str], seconds: float = 30) -> list[str]:
    """The processes of :func:`processes_with_home` still there after ``seconds`` at most (a
    killed sandbox's processes end as the kernel tears its namespace down)."""
    deadline = time.monotonic() + seconds
    while processes_with_home(homes) and time.monotonic() < deadline:
        time.sleep(0.2)
    return processes_with_home(homes)


# A grader stand-in: starts a worker from a thread that then ends, and a verifier; sets both to
# work for hours (a cell that sleeps, a program that loops), prints their homes, and sleeps
# until it is killed.
GRADER_STAND_IN = """
import json, sys, threading, time
from grader.devices import use_cpu_devices
use_cpu_devices(2)
import jax
from grader.framework import plain, probes
from grader.workers import process, runner, sandbox as sandboxing, verification
def forever(x):
    def body(state):
        return state[0] + 1, jax.numpy.sin(state[1])
    return jax.lax.while_loop(lambda state: state[0] >= 0, body, (0, x.sum()))[1]

blob = plain.to_plain(plain.Unverified("hlo_collectives", probes.Program.of(
    forever, jax.numpy.arange(4.0)).serialize()))["program"]["blob"]
sandbox = sandboxing.Sandbox(use_bwrap=sys.argv[1] == "sandboxed")
limits = sandboxing.Limits()
started = []
thread = threading.Thread(target=lambda: started.append(process.WorkerProcess(2, limits, sandbox)))
thread.start()
thread.join()
started.append(verification.VERIFIERS.start(2, limits, sandbox))
started.append(runner.TESTERS.start(2, limits, sandbox))
worker, verifier, tester = started
worker.receive("ready", limits.start)
for started_one, request in [
        (worker, {"op": "cell", "file": "a.py", "label": "a.py",
                  "source": "import time\\ntime.sleep(3600)"}),
        (verifier, {"op": "verify", "measures": ["hlo_collectives"], "blob": blob,
                    "reference": blob, "seed": 0}),
        (tester, {"op": "probe", "case_id": "halo_difference:differences_of_the_squares"})]:
    started_one.process.stdin.write((json.dumps({"req": "busy", **request}) + "\\n").encode())
    started_one.process.stdin.flush()
time.sleep(2)
print(*(p.home.name for p in started), flush=True)
time.sleep(3600)
"""


@pytest.mark.slow
@pytest.mark.parametrize("sandboxed", [
    pytest.param(True, marks=NEEDS_THE_SANDBOX, id="sandboxed"),
    pytest.param(False, id="plain"),
])
def test_workers_and_verifiers_end_when_the_grader_is_killed(sandboxed):
    """The grader killed by SIGKILL (which runs no clean-up) while a worker started from a
    thread that had ended, a verifier and a tester (waiting on the answer to its probe's
    call) are busy: does every process of theirs end with it (none waits to read its input
    again)?"""
    grader = subprocess.Popen(
        [sys.executable, "-c", GRADER_STAND_IN, "sandboxed" if sandboxed else "plain"],
        stdout=subprocess.PIPE, text=True, start_new_session=True, cwd=ROOT)
    try:
        homes = grader.stdout.readline().split()
        assert len(homes) == 3, "the stand-in did not start its worker, verifier and tester"
        assert processes_with_home(homes)
    finally:
        os.killpg(grader.pid, signal.SIGKILL)
        grader.wait()
        grader.stdout.close()
    assert left_after(homes) == []
