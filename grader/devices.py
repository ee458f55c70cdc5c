"""The one place that decides how many CPU devices JAX exposes.

Every context calls :func:`use_cpu_devices` before JAX initialises its backend: the first
code cell of each notebook, the grader's worker processes and ``tests/conftest.py``.
"""

from __future__ import annotations

import os

#: Devices a lesson, an exercise and the hidden tests expect unless told otherwise.
DEFAULT_DEVICES = 8

#: Set inside a grader worker: the device count is fixed, notebook set-up and check() stand down.
WORKER_ENV = "GRADER_WORKER"

TOO_LATE = (
    "JAX has already started with {have} device(s), so it cannot be given {want} any more. "
    "Restart the kernel (Kernel > Restart Kernel) and run this cell first, before any other "
    "JAX code."
)


class DeviceSetupError(RuntimeError):
    """JAX was initialised before the device count could be set."""


def use_cpu_devices(n: int = DEFAULT_DEVICES) -> int:
    """Ask JAX for ``n`` virtual CPU devices; return how many devices JAX now has.

    Call it right after the imports, before any JAX computation. If JAX already runs with at
    least ``n`` devices nothing changes; if it runs with fewer, a :class:`DeviceSetupError`
    explains how to recover instead of a confusing failure later on.
    """
    import jax

    if os.environ.get(WORKER_ENV):
        return jax.device_count()
    try:
        jax.config.update("jax_num_cpu_devices", n)
    except RuntimeError:  # the backend is up: the count is whatever it was
        have = jax.device_count()
        if have < n:
            raise DeviceSetupError(TOO_LATE.format(have=have, want=n)) from None
        return have
    return jax.device_count()
