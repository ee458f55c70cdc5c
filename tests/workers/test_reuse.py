"""What a worker reuses of JAX's work (grader/reuse.py): does a function that runs
shard_map outside jit lower nothing when called again in a worker, and do the programs a worker
lowers share an MLIR context, where a plain process of the pinned JAX does neither?"""

from __future__ import annotations

import json
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


# Each shard_map below is called as JAX runs it eagerly (a student's kernel outside check) and
# as one program (inside reuse.measuring, as check measures and as every grader process runs
# it); what each gives is printed as one JSON line per case.
BOTH_WAYS = """
import json, sys
from grader.devices import use_cpu_devices
use_cpu_devices(4)
import jax, jax.numpy as jnp, numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
from grader import reuse

reuse.install()
lowered = []
jax.monitoring.register_event_duration_secs_listener(
    lambda event, seconds, **kw: lowered.append(event)
    if event == "/jax/core/compile/jaxpr_to_mlir_module_duration" else None)
mesh = Mesh(np.array(jax.devices()), ("d",))
x = jax.device_put(jnp.arange(8.0) - 3, NamedSharding(mesh, P("d")))
offset = jnp.float32(0.5)


def smap(body, out_specs=P("d"), check_vma=True):
    return lambda a: jax.shard_map(body, mesh=mesh, in_specs=P("d"), out_specs=out_specs,
                                   check_vma=check_vma)(a)


def tiled(a):  # a number the body needs as a number (in_specs None): jit would trace it
    return jax.shard_map(lambda b, n: jnp.tile(b, n), mesh=mesh, in_specs=(P("d"), None),
                         out_specs=P("d"))(a, 2)


def refusing(b):
    raise ValueError(f"no blocks of {b.shape[0]}")


CASES = {
    "a psum and a closed-over array": smap(lambda b: jax.lax.psum(b * 2, "d") + offset),
    "copies that differ under P()": smap(lambda b: b * 0 + jax.lax.axis_index("d"), P(),
                                         check_vma=False),
    "a static number": tiled,
    "an error of the body": smap(refusing),
    "a device-varying result under P()": smap(lambda b: b, P()),
}


def outcome(fn):
    before = len(lowered)
    try:
        out = fn(x)
    except Exception as exc:
        return {"raised": f"{type(exc).__name__}: {exc}"[:300]}
    return {"spec": str(out.sharding.spec), "lowered": len(lowered) - before,
            "shards": [np.asarray(s.data).tolist() for s in
                       sorted(out.addressable_shards, key=lambda s: s.device.id)]}


for name, fn in CASES.items():
    as_jax = outcome(fn)
    with reuse.measuring():
        as_one = outcome(fn)
    print(json.dumps({"case": name, "as_jax": as_jax, "as_one": as_one}))
seen = []
jax.shard_map(lambda b: seen.append(repr(b)) or b, mesh=mesh, in_specs=P("d"),
              out_specs=P("d"))(x)
print(json.dumps({"printed": seen[0]}))
SCALE = 2.0
step = jax.shard_map(lambda b: b * SCALE, mesh=mesh, in_specs=P("d"), out_specs=P("d"))
with reuse.measuring():
    first = float(step(x).sum())
SCALE = 3.0
with reuse.measuring():
    second = float(step(x).sum())


def inner(a):
    n = 2
    return jax.shard_map(lambda b: b * n, mesh=mesh, in_specs=P("d"), out_specs=P("d"))(a)


with reuse.measuring():
    counts = []
    for _ in range(2):
        before = len(lowered)
        inner(x)
        counts.append(len(lowered) - before)
print(json.dumps({"rebound": [first, second], "inner": counts}))
"""


def test_a_shard_map_as_one_program_gives_what_jax_gives_eagerly():
    """Values, layout and every device's copy the same; what one program cannot take (a
    number the body needs as a number) run as JAX runs it; an error raised as JAX raises it;
    one program where JAX lowers one per operation, shared within a check by bodies made
    anew at each call and by none after it; and in a student's own cells (outside check)
    JAX's way, a print in the body showing values."""
    done = subprocess.run([sys.executable, "-c", BOTH_WAYS], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    *cases, printed, scopes = lines
    assert len(cases) == 5
    for case in cases:
        as_jax, as_one = case["as_jax"], case["as_one"]
        if "raised" in as_jax:
            assert as_one == as_jax, case
            continue
        assert {k: as_one[k] for k in ("spec", "shards")} == \
            {k: as_jax[k] for k in ("spec", "shards")}, case
        traceable = case["case"] != "a static number"
        assert (as_one["lowered"] == 1) is traceable, case
        assert as_jax["lowered"] > 1 or not traceable, case
    assert "Traced" not in printed["printed"] and "3." in printed["printed"], printed
    # a global rebound between two checks is read anew; a body made at every call, the same
    # code on the same values, is one program within a check
    assert scopes == {"rebound": [8.0, 12.0], "inner": [1, 0]}
