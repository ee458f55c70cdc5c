# A student's own all-reduce: everything travels once round the ring, added up as it passes.
import jax
import jax.numpy as jnp
from jax.sharding import Mesh
from jax.sharding import PartitionSpec as P


def allreduce_from_ppermute(x):
    # pass everything around the ring, accumulating as it comes by
    devices = jax.devices()
    count = len(devices)
    grid = Mesh(devices, axis_names=("ring",))
    neighbours = [(src, (src + 1) % count) for src in range(count)]

    def body(local):
        acc = jnp.zeros_like(local)
        moving = local
        step = 0
        while step < count:
            acc = acc + moving
            moving = jax.lax.ppermute(moving, "ring", neighbours)
            step += 1
        return acc

    fn = jax.shard_map(body, mesh=grid, in_specs=P("ring"), out_specs=P("ring"))
    return fn(x)
