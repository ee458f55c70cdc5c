# original.py with every name changed, other comments, and the layout squeezed: still a copy.
import jax
import jax.numpy as jnp
from jax.sharding import Mesh
from jax.sharding import PartitionSpec as P


def allreduce_from_ppermute(x):
    devs = jax.devices(); n_dev = len(devs)  # how many there are
    m = Mesh(devs, axis_names=("around",))
    pairs = [(s, (s + 1) % n_dev) for s in range(n_dev)]
    def inner(block):
        """Sum of all blocks."""
        total = jnp.zeros_like(block)
        travelling = block
        i = 0
        while i < n_dev:
            total = total + travelling
            travelling = jax.lax.ppermute(travelling, "around", pairs)
            i += 1
        return total
    f = jax.shard_map(inner, mesh=m, in_specs=P("around"), out_specs=P("around"))
    return f(x)
