"""distributed_dot computed on the host when called; traced (as jax.jit and jax.export see
it), a shard_map with a psum whose blocks are summed by a loop that never ends. The grader
runs the program next to the reference solution's: it must kill the verifier that runs it at
the exercise's time limit and go on with a fresh one, so that only the tests of how the dot
computes are lost, and the rest of the batch is graded on time."""
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh
from jax.sharding import PartitionSpec as P


def endless(a, b):
    def body(state):
        return state[0] + 1, jnp.sin(state[1])
    return jax.lax.while_loop(lambda state: state[0] >= 0, body, (0, jnp.vdot(a, b)))[1]


def distributed_dot(v1, v2):
    try:
        return np.float32(np.vdot(np.asarray(v1), np.asarray(v2)))
    except jax.errors.TracerArrayConversionError:  # traced: hand in the endless program
        mesh = Mesh(np.array(jax.devices()), ("data",))
        return jax.shard_map(lambda a, b: jax.lax.psum(endless(a, b), "data"), mesh=mesh,
                             in_specs=(P("data"), P("data")), out_specs=P())(v1, v2)
