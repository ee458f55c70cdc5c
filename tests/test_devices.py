"""The device count: set once per context, and a clear error when it is too late."""

import subprocess
import sys

import jax

from grader.devices import DEFAULT_DEVICES


def run_python(code: str) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin", "JAX_PLATFORMS": "cpu"}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=120)


def test_the_test_process_has_the_default_device_count():
    """Did conftest.py give this process 8 devices before JAX started?"""
    assert jax.device_count() == DEFAULT_DEVICES


def test_asking_before_jax_starts_gives_that_many_devices():
    """Does use_cpu_devices(n) in a fresh process give exactly n devices?"""
    done = run_python("from grader.devices import use_cpu_devices; print(use_cpu_devices(3))")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "3"


def test_asking_too_late_says_restart_the_kernel():
    """After JAX started with one device, is the error clear instead of a failure later?"""
    code = (
        "import jax; jax.devices()\n"
        "from grader.devices import use_cpu_devices\n"
        "use_cpu_devices(8)\n"
    )
    done = run_python(code)
    assert done.returncode != 0
    assert "DeviceSetupError" in done.stderr and "Restart the kernel" in done.stderr
