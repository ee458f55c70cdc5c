# Prints 400 MiB when it is loaded and 64 MiB more on every call of halo_difference, which is
# otherwise correct. The grader drains what a worker prints and keeps only its last lines, so
# its own memory stays bounded and the submission is graded as if it had printed nothing.
import sys
from functools import partial

import jax
import jax.numpy as jnp
from jax.sharding import Mesh
from jax.sharding import PartitionSpec as P

LINE = "x" * (2**20 - 1) + "\n"
for _ in range(400):
    sys.stdout.write(LINE)
sys.stdout.flush()


def halo_difference(x):
    for _ in range(64):
        sys.stderr.write(LINE)
    devices = jax.devices()
    ring = Mesh(devices, axis_names=("data",))
    forwards = [(src, (src + 1) % len(devices)) for src in range(len(devices))]
    backwards = [(dst, src) for src, dst in forwards]

    @partial(jax.shard_map, mesh=ring, in_specs=P("data"), out_specs=P("data"))
    def difference(block):
        before = jax.lax.ppermute(block[-1:], "data", forwards)
        after = jax.lax.ppermute(block[:1], "data", backwards)
        return (jnp.concatenate([block[1:], after]) - jnp.concatenate([before, block[:-1]])) / 2

    return difference(x)
