"""Functions that compute the whole answer on every device and dress it as distributed work,
for test_verifier.py and test_check.py: each takes its inputs whole (or gathers them) and
adds a collective that carries something, masked to one device, so that the result is right,
the collective the exercise asks for is there, and removing it changes the result; or, for
best_mesh_step, sends nothing at all, which is fewer bytes than the reference sends. Only the
bounds on what each device holds and receives tell them from the reference solutions."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

#: The exercises this file answers.
EXERCISES = ("global_max_normalize", "reduce_scatter_columns", "accumulated_grads",
             "zero2_adam_step", "best_mesh_step")


def _mesh():
    return jax.make_mesh((jax.device_count(),), ("data",))


def _first_only(value, axis="data"):
    """``value`` on the first device of ``axis``, zero on the others."""
    return jnp.where(jax.lax.axis_index(axis) == 0, value, jnp.zeros_like(value))


def global_max_normalize(x):
    """Every device takes x whole and divides by its maximum; a pmax of the maximum, masked
    to the first device, makes the divisor."""
    mesh = _mesh()

    def whole(x):
        size = x.size // jax.device_count()
        mine = jax.lax.dynamic_slice_in_dim(x, jax.lax.axis_index("data") * size, size)
        return mine / jax.lax.pmax(_first_only(jnp.max(jnp.abs(x))), "data")

    x = jax.reshard(x, NamedSharding(mesh, P()))
    return jax.shard_map(whole, mesh=mesh, in_specs=P(), out_specs=P("data"))(x)


def reduce_scatter_columns(parts, mesh):
    """Every device takes parts whole and sums its row blocks, keeping its own columns; a
    reduce-scatter over 'x' of its block, masked to the first device along 'x', is added in
    place of the first row block."""
    size_x, size_y = mesh.shape["x"], mesh.shape["y"]

    def whole(parts):
        i, j = jax.lax.axis_index("x"), jax.lax.axis_index("y")
        blocks = parts.reshape(size_x, parts.shape[0] // size_x, parts.shape[1])
        width = parts.shape[1] // size_y
        mine = jax.lax.dynamic_slice_in_dim(blocks, j * width, width, axis=2)
        own = jax.lax.psum_scatter(_first_only(mine[0], "x"), "x", scatter_dimension=1,
                                   tiled=True)
        rest = jax.lax.dynamic_slice_in_dim(jnp.sum(mine[1:], axis=0), i * own.shape[1],
                                            own.shape[1], axis=1)
        return own + rest

    parts = jax.reshard(parts, NamedSharding(mesh, P()))
    return jax.shard_map(whole, mesh=mesh, in_specs=P(), out_specs=P(None, ("y", "x")))(parts)


def accumulated_grads(params, batch, steps):
    """Every device takes the batch whole and computes the gradient of its mean loss in one
    pass; a pmean of that gradient, masked to the first device and scaled back, is the
    result."""
    mesh = _mesh()
    n = jax.device_count()

    def loss_fn(params, batch):
        hidden = jax.nn.relu(batch["x"] @ params["w1"] + params["b1"])
        return jnp.mean((hidden @ params["w2"] + params["b2"] - batch["y"]) ** 2)

    def whole(params, batch):
        grads = jax.grad(loss_fn)(jax.lax.pcast(params, "data", to="varying"), batch)
        return jax.tree.map(lambda g: n * jax.lax.pmean(_first_only(g), "data"), grads)

    whole_everywhere = NamedSharding(mesh, P())
    return jax.jit(lambda params, batch: jax.shard_map(
        whole, mesh=mesh, in_specs=(P(), P()), out_specs=P())(
            *jax.reshard((params, batch), whole_everywhere)))(params, batch)


def zero2_adam_step(params, local_grads, m, v, t):
    """Every device takes every device's gradients whole, averages them and updates all the
    parameters and moments, then keeps its own part of the moments; a reduce-scatter of the
    first device's gradients, masked, is added to the first device's part of the average."""
    n = jax.device_count()
    mesh = _mesh()
    b1, b2, eps, lr = 0.9, 0.999, 1e-8, 0.01

    def whole(params, local_grads, m, v, t):
        mine = jax.lax.axis_index("data")
        size = params.size // n
        rest = jnp.mean(local_grads[1:], axis=0) * (n - 1) / n
        first = jax.lax.psum_scatter(_first_only(local_grads[0]), "data", tiled=True) / n
        others = jax.lax.dynamic_slice_in_dim(rest, mine * size, size)
        g = others + first
        p = jax.lax.dynamic_slice_in_dim(params, mine * size, size)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        update = lr * (m / (1 - b1 ** t)) / (jnp.sqrt(v / (1 - b2 ** t)) + eps)
        return p - update, m, v

    run = jax.shard_map(whole, mesh=mesh, in_specs=(P(), P(), P("data"), P("data"), P()),
                        out_specs=P("data"))
    params, local_grads = jax.reshard((params, local_grads), NamedSharding(mesh, P()))
    m, v = jax.reshard((m, v), NamedSharding(mesh, P("data")))
    params, m, v = run(params, local_grads, m, v, t)
    return jax.reshard(params, NamedSharding(mesh, P())), m, v


def best_mesh_step(w, x, y):
    """Every device takes w, x and y whole and takes the step itself, sending no byte at all
    (fewer than any mesh shape of the exercise), then keeps the rows of w the reference keeps
    on the mesh shape it chooses."""
    n = jax.device_count()
    (batch, d_in), d_out = x.shape, w.shape[1]

    def sent(data, model):
        return (2 * (model - 1) / model * batch / data + 2 * (data - 1) / data * d_in / model) \
            * d_out

    data, model = min(((d, n // d) for d in range(1, n + 1) if n % d == 0),
                      key=lambda shape: sent(*shape))
    mesh = jax.make_mesh((data, model), ("data", "model"))

    @jax.jit
    def run(w, x, y):
        w, x, y = jax.reshard((w, x, y), NamedSharding(mesh, P()))

        def whole(w, x, y):
            new = w - 0.1 * jax.grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)
            size = w.shape[0] // model
            return jax.lax.dynamic_slice_in_dim(new, jax.lax.axis_index("model") * size, size)

        return jax.shard_map(whole, mesh=mesh, in_specs=(P(), P(), P()),
                             out_specs=P("model", None))(w, x, y)

    return run(w, x, y)
