"""distributed_dot computed whole on every device, times a psum that counts the devices and
divided by their number again. The all-reduce carries something (the result changes when it
moves nothing) and the program computes the right dot on any input: only the work each
device does, the whole dot instead of its share, shows that nothing is split."""
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh
from jax.sharding import PartitionSpec as P


def distributed_dot(v1, v2):
    mesh = Mesh(np.array(jax.devices()), ("data",))
    count = jax.shard_map(lambda a: jax.lax.psum(jnp.ones((), a.dtype), "data"), mesh=mesh,
                          in_specs=P("data"), out_specs=P())(v1)
    return jnp.vdot(v1, v2) * count / len(jax.devices())
