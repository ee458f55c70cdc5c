import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh
from jax.sharding import PartitionSpec as P


def distributed_dot(v1, v2):
    mesh = Mesh(np.array(jax.devices()).reshape(8), ("data",))  # 8 written in

    def local(a, b):
        return jax.lax.psum(jnp.vdot(a, b), "data")

    return jax.shard_map(local, mesh=mesh, in_specs=(P("data"), P("data")), out_specs=P())(
        v1, v2
    )
