import os

os.environ["JAX_NUM_CPU_DEVICES"] = "1"
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=1"

from grader.devices import use_cpu_devices  # noqa: E402

use_cpu_devices(1)

import jax  # noqa: E402

jax.config.update("jax_num_cpu_devices", 1)  # too late: raises, and changes nothing
