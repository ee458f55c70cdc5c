"""Processes the grader starts: how long they may live, how they are killed, how they ended.

Shared by the grader's workers and verifiers (:mod:`grader.workers.process`) and by the
processes of lesson 6's launcher (:mod:`grader.launcher`), which each run in a process
group of their own.

Every such process calls :func:`die_with_parent` first, so that it ends however the grader
ends (even by SIGKILL, which runs no clean-up). In the sandbox bubblewrap does the same for
every process inside (``--die-with-parent``). Linux ties that signal to the *thread* that
started the process, so the grader starts its workers from one thread that lives as long as
it does (:func:`grader.workers.process.spawn`).
"""

from __future__ import annotations

import os
import signal
import subprocess


def die_with_parent(parent: int) -> None:
    """Be killed when the process ``parent`` ends, however it ends (Linux); end now if it
    has ended already."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:  # it ended before that took effect
        os._exit(1)


def kill_group(process: subprocess.Popen) -> None:
    """Kill ``process`` and whatever else is in its process group (it was started with
    ``start_new_session=True``); nothing to do if it is gone."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def how_it_ended(process: subprocess.Popen, wait: float, sandboxed: bool = False) -> str:
    """How ``process`` ended, in words, once it has (waiting at most ``wait`` seconds for
    it): its exit code or the signal that killed it. bubblewrap reports a signal that killed
    what it ran as 128 + the signal (``sandboxed``), Python as a negative code."""
    try:
        code = process.wait(timeout=wait)
    except subprocess.TimeoutExpired:
        return "it was still running"
    number = -code if code < 0 else code - 128 if sandboxed and code > 128 else 0
    if number:
        try:
            return f"killed by signal {signal.Signals(number).name}"
        except ValueError:
            return f"killed by signal {number}"
    return f"exit code {code}"
