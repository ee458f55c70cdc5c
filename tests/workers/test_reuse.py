"""What a worker reuses of JAX's work (grader/reuse.py): does a function that runs
shard_map outside jit lower nothing when called again in a worker, and do the programs a worker
lowers share an MLIR context, where a plain process of the pinned JAX does neither?"""

from __future__ import annotations

import re
import subprocess
import sys

from grader.workers.process import WorkerProcess
from grader.workers.sandbox import Limits, Sandbox

# Calls an eager shard_map function of five steps twice and says how many programs JAX lowered
# to StableHLO during each call, counted by JAX's own event for that.
CALLED_TWICE = """
import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding, PartitionSpec as P

lowered = []
jax.monitoring.register_event_duration_secs_listener(
    lambda event, seconds, **kw: lowered.append(event)
    if event == "/jax/core/compile/jaxpr_to_mlir_module_duration" else None)
mesh = jax.make_mesh((2,), ("x",))


def body(a):
    for _ in range(5):
        a = jax.lax.psum(jnp.tanh(a) * 2, "x")
    return a


step = jax.shard_map(body, mesh=mesh, in_specs=P("x"), out_specs=P("x"))
x = jax.device_put(jnp.ones((4, 3)), NamedSharding(mesh, P("x")))
counts = []
for _ in range(2):
    before = len(lowered)
    step(x).block_until_ready()
    counts.append(len(lowered) - before)
first, second = (jax.jit(lambda a: a * n).lower(jnp.ones(n)).compiler_ir() for n in (2, 3))
raise RuntimeError(f"lowered {counts[0]} then {counts[1]}, one context: "
                   f"{first.context is second.context}")
"""


def _counts(text: str) -> tuple[int, int, bool]:
    """The programs lowered at each call, and whether two lowerings shared a context."""
    first, second, one = re.search(r"lowered (\d+) then (\d+), one context: (\w+)",
                                   text).groups()
    return int(first), int(second), one == "True"


def test_a_worker_lowers_an_eager_shard_map_once_in_one_context():
    """Called again in the same worker, does the function lower nothing at all, and do two
    programs lowered one after the other share their MLIR context?"""
    limits = Limits()
    worker = WorkerProcess(2, limits, Sandbox())
    try:
        worker.receive("ready", limits.start)
        reply = worker.request("cell", 120, file="a.py", label="a.py", source=CALLED_TWICE)
    finally:
        worker.close()
    first, second, one_context = _counts(reply["error"]["message"])
    assert first > 0
    assert second == 0
    assert one_context


def test_without_it_jax_lowers_every_primitive_again_each_in_a_new_context():
    """The reason for it: in a plain process of the pinned JAX, does the second call lower
    its primitives all over again, and does each program get a context of its own? (Should a
    JAX release do either itself, this fails, and that part of grader/reuse.py can
    go.)"""
    source = ("import os\nos.environ['XLA_FLAGS'] = "
              "'--xla_force_host_platform_device_count=2'\n" + CALLED_TWICE)
    done = subprocess.run([sys.executable, "-c", source], capture_output=True, text=True,
                          timeout=300)
    first, second, one_context = _counts(done.stderr)
    assert second >= 10  # every tanh, multiply and psum of the five steps
    assert first >= second
    assert not one_context


def test_a_students_kernel_reuses_them_from_its_first_check_on():
    """In a student's kernel, once check() has run (here on an exercise not attempted), does
    the eager function lower nothing when called again, as in a worker?"""
    source = ("from grader.devices import use_cpu_devices\nuse_cpu_devices(2)\n"
              "from grader import check\n"
              "def halo_difference(x):\n    raise NotImplementedError\n"
              "assert check(halo_difference).status == 'not attempted'\n" + CALLED_TWICE)
    done = subprocess.run([sys.executable, "-c", source], capture_output=True, text=True,
                          timeout=300)
    first, second, one_context = _counts(done.stderr)
    assert first > 0 and second == 0 and one_context
