"""Marks for tests that need what not every machine has: bubblewrap, control groups."""

import pytest

from grader.workers import confine, sandbox

NEEDS_THE_SANDBOX = pytest.mark.skipif(not sandbox.BWRAP, reason="bubblewrap is not installed")
NEEDS_CGROUPS = pytest.mark.skipif(not confine.available(),
                                   reason="no control group can be made here")
NEEDS_ROOT = pytest.mark.skipif(sandbox.worker_user() is None,
                                reason="only a grader started by root changes the workers' user")
NEEDS_MEMORY_GROUPS = pytest.mark.skipif(not confine.caps_memory(),
                                         reason="no control group here caps memory")
