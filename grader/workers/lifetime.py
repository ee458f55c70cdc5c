"""How long a process the grader starts may live: no longer than the one that started it.

A worker, a verifier and a process that lesson 6's tests launch each call
:func:`die_with_parent` first, so that they end however the grader ends (even by SIGKILL,
which runs no clean-up). In the sandbox bubblewrap does the same for every process inside
(``--die-with-parent``). Linux ties that signal to the *thread* that started the process, so
the grader starts all of them from one thread that lives as long as it does
(:func:`grader.workers.runner.spawn`).
"""

from __future__ import annotations

import os
import signal


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
