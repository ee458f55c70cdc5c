# Each process of a worker is capped at 4 GiB of address space, but its children are
# processes of their own: four children of 1.5 GiB each hold 6 GiB together, over the 4 GiB a
# worker may hold. halo_difference computes the right answer only if all four held their memory
# at once (they write to it, so it is really held); a cap on the worker's whole process tree
# kills one of them, and it raises. They are started at the first call only, and given WAIT
# seconds to hold it, within the exercise's time limit (tests/workers/test_confine.py, which
# waits for the kernel to kill one, gives them longer: reclaiming memory at the cap is slow on
# a loaded machine).
import select
import subprocess
import sys
import time
from functools import partial

import jax
import jax.numpy as jnp
from jax.sharding import Mesh
from jax.sharding import PartitionSpec as P

WAIT = 12
HOLD = "import sys; held = b'x' * (1536 * 2**20); print('held', flush=True); sys.stdin.read()"
escaped = []


def children_held_six_gib() -> bool:
    children = [subprocess.Popen([sys.executable, "-c", HOLD], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE) for _ in range(4)]
    holding, waiting, deadline = 0, {c.stdout for c in children}, time.monotonic() + WAIT
    while waiting and time.monotonic() < deadline:
        ready, _, _ = select.select(list(waiting), [], [], 0.5)
        for stream in ready:
            holding += stream.readline() == b"held\n"
            waiting.discard(stream)
    for child in children:
        child.kill()
        child.wait()
    return holding == 4


def halo_difference(x):
    if not escaped:
        escaped.append(children_held_six_gib())
    if not escaped[0]:
        raise MemoryError("four children could not hold 6 GiB together")
    n = jax.device_count()
    mesh = Mesh(jax.devices(), ("data",))

    @partial(jax.shard_map, mesh=mesh, in_specs=P("data"), out_specs=P("data"))
    def difference(block):
        before = jax.lax.ppermute(block[-1:], "data", [(i, (i + 1) % n) for i in range(n)])
        after = jax.lax.ppermute(block[:1], "data", [(i, (i - 1) % n) for i in range(n)])
        padded = jnp.concatenate([before, block, after])
        return (padded[2:] - padded[:-2]) / 2

    return difference(x)
