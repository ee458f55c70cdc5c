"""What a worker reuses of JAX's work (grader/reuse.py), with and without it.

    .venv/bin/python benchmarks/reuse.py [--steps 10] [--calls 4] [--programs 200] [--devices 8]

Two measures, each in a fresh process as JAX runs it and in one with
:func:`grader.reuse.install` (as every grader worker has it), printed side by side:

- an eager shard_map: a function of ``--steps`` steps (``tanh``, a multiply, an add, a
  ``psum``, a divide), run by ``jax.shard_map`` outside ``jax.jit`` as many lessons' functions
  are, called ``--calls`` times: each call's CPU-seconds and the programs JAX lowered to
  StableHLO during it;
- lowering: ``--programs`` small jitted programs, each of its own shape, lowered (not
  compiled): the CPU-seconds of all of them.

Speed is measured here, never asserted in a test.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

ONE_RUN = """
import json, os, sys, time
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count={devices}"
import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding, PartitionSpec as P

if {kept}:
    from grader import reuse
    assert all(reuse.install().values())
lowered = []
jax.monitoring.register_event_duration_secs_listener(
    lambda event, seconds, **kw: lowered.append(event)
    if event == "/jax/core/compile/jaxpr_to_mlir_module_duration" else None)
mesh = jax.make_mesh(({devices},), ("x",))


def body(a):
    for _ in range({steps}):
        a = jax.lax.psum(jnp.tanh(a) * 2 + 1, "x") / {devices}
    return a


step = jax.shard_map(body, mesh=mesh, in_specs=P("x"), out_specs=P("x"))
x = jax.device_put(jnp.ones(({devices} * 8, 16)), NamedSharding(mesh, P("x")))
calls = []
for _ in range({calls}):
    before, start = len(lowered), time.process_time()
    step(x).block_until_ready()
    calls.append((time.process_time() - start, len(lowered) - before))
program = jax.jit(lambda a: jnp.sin(a) @ a.T + a.sum())
start = time.process_time()
for n in range(1, {programs} + 1):
    program.lower(jax.ShapeDtypeStruct((n, 4), jnp.float32))
print(json.dumps({{"calls": calls, "lowering": time.process_time() - start}}))
"""


def one_run(kept: bool, args: argparse.Namespace) -> dict:
    source = ONE_RUN.format(kept=kept, devices=args.devices, steps=args.steps,
                            calls=args.calls, programs=args.programs)
    done = subprocess.run([sys.executable, "-c", source], capture_output=True, text=True,
                          check=True, cwd=os.path.dirname(os.path.dirname(__file__)))
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--calls", type=int, default=4)
    parser.add_argument("--programs", type=int, default=200)
    parser.add_argument("--devices", type=int, default=8)
    args = parser.parse_args()
    plain, kept = one_run(False, args), one_run(True, args)
    print(f"eager shard_map of {args.steps} steps on {args.devices} devices, "
          f"{args.calls} calls in one process")
    print("call  as JAX runs it: CPU s, programs lowered  |  reuse.install(): CPU s, lowered")
    for n, ((cpu_a, low_a), (cpu_b, low_b)) in enumerate(
            zip(plain["calls"], kept["calls"], strict=True), 1):
        print(f"{n:>4}  {cpu_a:>10.3f} {low_a:>6}                    |  {cpu_b:>10.3f} {low_b:>6}")
    sums = [(sum(c for c, _ in run["calls"]), sum(n for _, n in run["calls"]))
            for run in (plain, kept)]
    print(f"all   {sums[0][0]:>10.3f} {sums[0][1]:>6}                    |  "
          f"{sums[1][0]:>10.3f} {sums[1][1]:>6}")
    print(f"lowering {args.programs} small programs: {plain['lowering']:.3f} CPU s as JAX runs "
          f"it, {kept['lowering']:.3f} with reuse.install()")


if __name__ == "__main__":
    main()
