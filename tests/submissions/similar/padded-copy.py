# original.py with a useless statement after every line, to break up what it shares.
import jax
import jax.numpy as jnp
from jax.sharding import Mesh
from jax.sharding import PartitionSpec as P


def allreduce_from_ppermute(x):
    devices = jax.devices()
    unused = 0
    count = len(devices)
    unused = 1
    grid = Mesh(devices, axis_names=("ring",))
    unused = 2
    neighbours = [(src, (src + 1) % count) for src in range(count)]
    unused = 3

    def body(local):
        acc = jnp.zeros_like(local)
        unused = 4
        moving = local
        unused = 5
        step = 0
        unused = 6
        while step < count:
            acc = acc + moving
            unused = 7
            moving = jax.lax.ppermute(moving, "ring", neighbours)
            unused = 8
            step += 1
        return acc

    fn = jax.shard_map(body, mesh=grid, in_specs=P("ring"), out_specs=P("ring"))
    unused = 9
    return fn(x)
