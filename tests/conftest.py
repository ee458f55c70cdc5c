"""Test set-up: the device count is fixed here, before any test module starts JAX."""

from grader.devices import use_cpu_devices

use_cpu_devices(8)
