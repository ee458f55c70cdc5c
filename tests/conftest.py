"""Test set-up, before any test module starts JAX: the device count, and deprecation warnings
as errors in every process the tests start."""

import os
import tempfile

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

from grader.grading import reference_cache  # noqa: E402 - after the devices are set

#: The reference runs that `grade` keeps between batches (grader/grading/reference_cache.py):
#: one folder per test run, shared by its parallel processes (pytest-xdist's run id), and
#: never the user's own cache.
RUN = os.environ.get("PYTEST_XDIST_TESTRUNUID", str(os.getpid()))
os.environ[reference_cache.FOLDER_ENV] = os.path.join(tempfile.gettempdir(),
                                                      f"grader-tests-cache-{RUN}")
