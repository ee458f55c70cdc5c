"""distributed_dot computed whole on every device (no work split), plus a decorative shard_map
whose psum is added to the result as 0 * psum. The program really holds the mesh and the
all-reduce, and computes the right dot on any input, so running it next to the reference's
cannot tell: only running it again with its all-reduce moving nothing shows that the result
does not depend on it."""
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh
from jax.sharding import PartitionSpec as P


def distributed_dot(v1, v2):
    mesh = Mesh(np.array(jax.devices()), ("data",))
    decoration = jax.shard_map(lambda a, b: jax.lax.psum(jnp.vdot(a, b), "data"), mesh=mesh,
                               in_specs=(P("data"), P("data")), out_specs=P())(v1, v2)
    return jnp.vdot(v1, v2) + 0 * decoration
