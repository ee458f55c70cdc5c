"""Hidden tests of lesson 11 (the capstone): only the grader runs them. The predictions are
compared with what a compiled program really sends, read by grader.framework.hlo per mesh
axis; the fixed step is measured the same way, on its own compiled program, and the specs
of the attention layer on the tests' own layer, compiled with them."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from grader.framework.cases import case
from grader.framework.hlo import sent_per_axis
from grader.framework.judge import what_runs
from grader.public.capstone import (
    CKPT_HINTS,
    GATHER_HINTS,
    STATE_HINTS,
    checkpoint_context,
    gather_context,
    mqa_case,
    same_as_one_device,
    sends_no_more,
    state_context,
    tp_inputs,
    tp_sent_case,
    tp_values_case,
    within_the_references_bounds,
)


# --- fsdp_gather_bytes: what a compiled gradient gathers over 'data' ----------------------
def compiled_gather_bytes(d_model: int, d_hidden: int, layers: int, data: int, model: int,
                          remat: bool) -> float:
    """Bytes one device sends in the all-gathers over 'data' of jax.grad of the exercise's
    stack of blocks, in float32, on a data x model mesh of the first devices."""
    mesh = jax.make_mesh((data, model), ("data", "model"), devices=jax.devices()[:data * model])
    w1 = jax.device_put(jnp.zeros((layers, d_model, d_hidden)),
                        NamedSharding(mesh, P(None, "data", "model")))
    w2 = jax.device_put(jnp.zeros((layers, d_hidden, d_model)),
                        NamedSharding(mesh, P(None, "model", "data")))
    x = jax.device_put(jnp.ones((2 * data, d_model)), NamedSharding(mesh, P("data", None)))

    def block(h, w):
        a = jax.reshard(w[0], NamedSharding(mesh, P(None, "model")))
        b = jax.reshard(w[1], NamedSharding(mesh, P("model", None)))
        return h + jnp.matmul(jnp.tanh(h @ a), b,
                              out_sharding=NamedSharding(mesh, P("data", None)))

    if remat:
        block = jax.checkpoint(block,
                               policy=jax.checkpoint_policies.dots_with_no_batch_dims_saveable)

    def loss(ws, x):
        out, _ = jax.lax.scan(lambda h, w: (block(h, w), None), x, ws)
        return jnp.mean(out**2)

    text = jax.jit(jax.grad(loss)).lower((w1, w2), x).compile().as_text()
    sent = sent_per_axis(text, dict(mesh.shape), [d.id for d in mesh.devices.flat])
    return float(sent.get(("data",), {}).get("all-gather", 0))


def gather_case(args: tuple):
    def probe(fn):
        return {"result": float(fn(*args)), "_compiled": compiled_gather_bytes(*args[:6]),
                **gather_context(*args)}

    return probe


@case("fsdp_gather_bytes", hidden=True, judge=what_runs("_compiled", GATHER_HINTS))
def rematerialised_on_two_by_two(fn):
    return gather_case((16, 32, 4, 2, 2, True, 4))(fn)


@case("fsdp_gather_bytes", hidden=True, judge=what_runs("_compiled", GATHER_HINTS))
def kept_on_four_by_two(fn):
    return gather_case((16, 32, 3, 4, 2, False, 4))(fn)


@case("fsdp_gather_bytes", hidden=True, judge=what_runs("_compiled", GATHER_HINTS))
def rematerialised_on_eight_data_devices(fn):
    return gather_case((8, 48, 2, 8, 1, True, 4))(fn)


@case("fsdp_gather_bytes", hidden=True, hints=GATHER_HINTS)
def kept_in_bfloat16(fn):
    """Compared with the reference's prediction only: XLA on this CPU moves a bfloat16
    all-gather as float32 and sends twice the bytes (the traffic model counts bfloat16)."""
    args = (32, 64, 2, 4, 2, False, 2)
    return {"result": float(fn(*args)), **gather_context(*args)}


# --- checkpoint_bytes: Orbax's own plan of what each device writes ------------------------
def orbax_bytes(shapes, specs, data: int, model: int, itemsize: int) -> list[float]:
    """Bytes each device of a (data, model) mesh of the first devices writes when Orbax saves
    zeros of these shapes and specs: its replica-parallel plan (orbax-checkpoint's default on
    CPUs and TPUs), read from its serialization module, in the mesh's row-major order."""
    from orbax.checkpoint._src.serialization import replica_slices

    mesh = jax.make_mesh((data, model), ("data", "model"), devices=jax.devices()[:data * model])
    dtype = {4: jnp.float32, 2: jnp.bfloat16}[itemsize]
    written = {d.id: 0 for d in mesh.devices.flat}
    for shape, spec in zip(shapes, specs, strict=True):
        array = jax.device_put(jnp.zeros(shape, dtype), NamedSharding(mesh, spec))
        plan = replica_slices.get_replica_slices(array, replica_id=0, use_replica_parallel=True)
        for piece in plan.replica_slices:
            (device,) = piece.unsliced_data.devices()
            written[device.id] += int(np.prod(plan.local_shape)) * itemsize
    return [float(written[d.id]) for d in mesh.devices.flat]


def checkpoint_case(args: tuple):
    def probe(fn):
        return {"result": np.asarray(fn(*args), float),
                "_orbax": np.asarray(orbax_bytes(*args)),
                **checkpoint_context(*args)}

    return probe


@case("checkpoint_bytes", hidden=True, judge=what_runs("_orbax", CKPT_HINTS))
def all_data_parallel_with_replicated_leftovers(fn):
    shapes = [(16, 4), (5, 8), (3,), ()]
    return checkpoint_case((shapes, [P("data"), P(None), P(), P()], 8, 1, 4))(fn)


@case("checkpoint_bytes", hidden=True, judge=what_runs("_orbax", CKPT_HINTS))
def both_axes_on_one_dimension(fn):
    shapes = [(16,), (4, 6), (8, 4), (2, 3)]
    specs = [P(("data", "model")), P("model", None), P(None, "data"), P()]
    return checkpoint_case((shapes, specs, 2, 4, 4))(fn)


@case("checkpoint_bytes", hidden=True, judge=what_runs("_orbax", CKPT_HINTS))
def model_only_in_bfloat16(fn):
    shapes = [(8, 6), (6, 8), (6,)]
    return checkpoint_case((shapes, [P("model"), P(None, "model"), P()], 1, 8, 2))(fn)


# --- adam_state_bytes: what a compiled Adam update takes as arguments, per device ---------
def compiled_state_bytes(shapes, specs, data: int, model: int) -> float:
    """memory_analysis().argument_size_in_bytes of a jitted Adam update of float32 weights of
    these shapes and specs, their two moments alike and an int32 step count, on a (data,
    model) mesh of the first devices."""
    mesh = jax.make_mesh((data, model), ("data", "model"), devices=jax.devices()[:data * model])
    weights = [jax.device_put(jnp.ones(shape), NamedSharding(mesh, spec))
               for shape, spec in zip(shapes, specs, strict=True)]
    state = {"params": weights, "m": [jnp.zeros_like(w) for w in weights],
             "v": [jnp.zeros_like(w) for w in weights],
             "t": jax.device_put(jnp.zeros((), jnp.int32), NamedSharding(mesh, P()))}

    def update(state):
        pairs = zip(state["params"], state["m"], state["v"], strict=True)
        m = [0.9 * m + 0.1 * w for w, m, _ in pairs]
        v = [0.99 * v + 0.01 * w * w for w, v in zip(state["params"], state["v"], strict=True)]
        new = [w - 1e-3 * a / (jnp.sqrt(b) + 1e-8)
               for w, a, b in zip(state["params"], m, v, strict=True)]
        return {"params": new, "m": m, "v": v, "t": state["t"] + 1}

    return float(jax.jit(update).lower(state).compile().memory_analysis()
                 .argument_size_in_bytes)


def state_case(args: tuple):
    def probe(fn):
        return {"result": float(fn(*args)), "_compiled": compiled_state_bytes(*args),
                **state_context(*args)}

    return probe


@case("adam_state_bytes", hidden=True, judge=what_runs("_compiled", STATE_HINTS))
def a_model_on_eight_by_one(fn):
    shapes = [(16, 8), (8, 16), (5,), (24,)]
    return state_case((shapes, [P("data"), P(None, "data"), P(), P("data")], 8, 1))(fn)


@case("adam_state_bytes", hidden=True, judge=what_runs("_compiled", STATE_HINTS))
def both_axes_on_one_dimension_of_two_by_four(fn):
    shapes = [(32, 6), (4, 8), (6, 6)]
    specs = [P(("data", "model"), None), P("data", "model"), P()]
    return state_case((shapes, specs, 2, 4))(fn)


@case("adam_state_bytes", hidden=True, judge=what_runs("_compiled", STATE_HINTS))
def tensor_parallel_only_on_one_by_eight(fn):
    shapes = [(4, 16), (16, 4), (4,)]
    return state_case((shapes, [P(None, "model"), P("model"), P()], 1, 8))(fn)


# --- fixed_tp_step: other sizes, the weights already stored as the fix stores them --------
@case("fixed_tp_step", hidden=True, judge=same_as_one_device)
def equals_the_one_device_step_from_stored_weights(fn):
    return tp_values_case(fn, *tp_inputs(70, 3, 8, 32, 2, stored=True))


@case("fixed_tp_step", hidden=True, judge=sends_no_more)
def sends_no_more_from_stored_weights(fn):
    return tp_sent_case(fn, *tp_inputs(71, 3, 8, 32, 2, stored=True))


@case("fixed_tp_step", hidden=True, judge=sends_no_more)
def sends_no_more_with_a_wide_hidden_layer(fn):
    return tp_sent_case(fn, *tp_inputs(72, 1, 8, 128, 3))


# --- mqa_specs: other meshes, head counts and widths --------------------------------------
@case("mqa_specs", hidden=True, judge=within_the_references_bounds)
def one_kv_head_with_every_device_on_model(fn):
    """1 x 8 (1 x 2 on 2 devices): eight query heads, one key/value head."""
    return mqa_case(fn, 90, "all", 16, 8, 16, 1, 64)


@case("mqa_specs", hidden=True, judge=within_the_references_bounds)
def three_kv_heads_for_six_query_heads(fn):
    """4 x 2 (1 x 2): G = 3 does not divide by 'model', though it is more than one."""
    return mqa_case(fn, 91, "data", 16, 6, 16, 3, 32)


@case("mqa_specs", hidden=True, judge=within_the_references_bounds)
def four_kv_heads_in_a_wider_layer(fn):
    """2 x 4 (2 x 1): G = 4 divides by 'model', D = 32 and a hidden layer of 128."""
    return mqa_case(fn, 92, "model", 32, 8, 16, 4, 128)
