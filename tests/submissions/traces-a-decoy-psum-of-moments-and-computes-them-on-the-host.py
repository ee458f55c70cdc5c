"""nan_mean_var computed with numpy on the host when called, the two numbers then put on
every device (so the values and the layout are right); traced (as jax.jit and jax.export see
it), a shard_map over 'data' with exactly the one all-reduce of three float32 numbers per
device that the test of how it computes counts, whose psum adds up the wrong totals (every
entry, NaN or not, and |x| for the squares). The old defence looked for the psum in the traced
program; this one counts what the compiled program all-reduces, and the decoy has that count.
Measured by the verifier and run next to the reference's program on fresh inputs, it earns
nothing for how the moments are computed."""
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P


def nan_mean_var(x):
    mesh = Mesh(jax.devices(), ("data",))
    try:
        values = np.asarray(x)
        moments = (np.float32(np.nanmean(values)), np.float32(np.nanvar(values)))
        return tuple(jax.device_put(m, NamedSharding(mesh, P())) for m in moments)
    except jax.errors.TracerArrayConversionError:  # traced: hand in the decoy

        def decoy(block):
            count, total, magnitudes = jax.lax.psum(
                (jnp.ones_like(block).sum(), block.sum(), jnp.abs(block).sum()), "data")
            return total / count, magnitudes / count

        return jax.shard_map(decoy, mesh=mesh, in_specs=P("data"), out_specs=(P(), P()))(x)
