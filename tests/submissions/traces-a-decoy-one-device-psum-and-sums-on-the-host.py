"""shard_map_psum computed with numpy on the host when called; traced (as jax.jit and
jax.export see it), a shard_map over a one-device mesh named 'data' whose psum adds up the
wrong numbers (the squares). On one device a program keeps no mesh; the grader used to read
that test's summary from the jaxpr in the worker, where the submission decides what is
traced. Measured by the verifier and run next to the reference's program, the decoy earns
nothing for how the sum is computed."""
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh
from jax.sharding import PartitionSpec as P


def shard_map_psum(x):
    try:
        return np.float32(np.sum(np.asarray(x)))
    except jax.errors.TracerArrayConversionError:  # traced: hand in the decoy
        mesh = Mesh(jax.devices()[:1], ("data",))
        return jax.shard_map(lambda b: jax.lax.psum(jnp.sum(b * b), "data"), mesh=mesh,
                             in_specs=P("data"), out_specs=P())(x)
