"""Test set-up, before any test module starts JAX: the device count, and deprecation warnings
as errors in every process the tests start."""

import os

from grader.devices import use_cpu_devices

#: Deprecation warnings fail the tests in the processes they start too (notebook kernels, the
#: grader's command line and workers): the course teaches current APIs only. pytest's own
#: process fails on any warning (pyproject.toml). One is let through: from Python 3.12 on,
#: tornado, under ipykernel, asks asyncio for an event loop in a way 3.12 deprecated, as every
#: kernel starts. That is Jupyter's plumbing, not the course, and a kernel that fails on it
#: never starts.
DEPRECATIONS = "error::DeprecationWarning,ignore::DeprecationWarning:tornado.ioloop"
os.environ["PYTHONWARNINGS"] = DEPRECATIONS

use_cpu_devices(8)
