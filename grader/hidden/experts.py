"""Hidden tests of lesson 10 (experts and overlap): only the grader runs them. The
predictions are compared with what a compiled program really does; what must work on any
device count is graded on 8 devices and on 2 (no mistake was found that 4 catches and they
miss)."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from grader.framework.cases import case
from grader.framework.hlo import collectives
from grader.framework.judge import (
    runs_on_mesh,
    traces,
    what_runs,
)
from grader.framework.placement import floats, layout
from grader.framework.probes import hlo_collectives, jitted, program_summary, trailing
from grader.hints import experts as hints
from grader.public.experts import (
    TOP2_HINTS,
    bytes_context,
    bytes_of_tokens,
    bytes_whole_buffer,
    capacity_average,
    capacity_context,
    capacity_one_group,
    moe_collectives,
    moe_inputs,
    moe_no_gate,
    moe_order,
    numpy_moe,
    rolled_blocks,
    rs_block,
    rs_inputs,
    rs_permutes,
    rs_reduces,
    skewed_ids,
    top2_choices,
    top2_context,
)


# --- the lesson's layer, one expert per device: what a capacity really drops -------------
def one_expert_per_device(capacity: int):
    n = jax.device_count()
    mesh = jax.make_mesh((n,), ("expert",))
    specs = (P("expert"), P(), P("expert"), P("expert"))

    def local(x, w_router, w1, w2):
        probs = jax.nn.softmax(x @ w_router, axis=-1)
        ids, gate = jnp.argmax(probs, axis=-1), jnp.max(probs, axis=-1)
        one_hot = jax.nn.one_hot(ids, n, dtype=jnp.int32)
        slot = jnp.sum((jnp.cumsum(one_hot, axis=0) - 1) * one_hot, axis=1)
        buffers = jnp.zeros((n, capacity, x.shape[1]), x.dtype).at[ids, slot].set(x, mode="drop")
        inbox = jax.lax.all_to_all(buffers, "expert", 0, 0, tiled=True)
        outbox = jax.nn.relu(inbox @ w1[0]) @ w2[0]
        back = jax.lax.all_to_all(outbox, "expert", 0, 0, tiled=True)
        return gate[:, None] * back.at[ids, slot].get(mode="fill", fill_value=0)

    @jax.jit
    def layer(x, w_router, w1, w2):
        args = [jax.reshard(a, NamedSharding(mesh, s))
                for a, s in zip((x, w_router, w1, w2), specs, strict=True)]
        return jax.shard_map(local, mesh=mesh, in_specs=specs, out_specs=P("expert"))(*args)

    return layer


@case("capacity_for_no_drops", hidden=True, hints=[capacity_one_group, capacity_average])
def eight_groups_of_sixteen(fn):
    ids = skewed_ids(100, (128,), 6)
    return {"result": int(fn(jnp.asarray(ids), 8)), **capacity_context(ids, 8, 6)}


@case("capacity_for_no_drops", hidden=True,
      judge=what_runs("_ran", (capacity_one_group, capacity_average)))
def predicts_what_the_layer_needs(fn):
    n, per_device, d, h = jax.device_count(), 12, 4, 16
    rng = np.random.default_rng(101)
    x = floats(rng.normal(size=(n * per_device, d)))
    w_router = floats(rng.normal(size=(d, n)) + np.linspace(1, 0, n))
    w1 = floats(rng.normal(size=(n, d, h)))
    w2 = floats(rng.normal(size=(n, h, d)))
    ids = np.asarray(jnp.argmax(x @ w_router, axis=-1)).astype(np.int32)
    needed = 1  # the first capacity at which no token comes back as zeros
    while needed < per_device and np.all(np.asarray(one_expert_per_device(needed)(
            x, w_router, w1, w2)) == 0, axis=1).any():
        needed += 1
    return {"result": int(fn(ids, n)), "_ran": needed, **capacity_context(ids, n, n)}


# --- dispatch_bytes: what the compiled all-to-all sends -----------------------------------
def compiled_dispatch_bytes(tokens_per_device: int, d_model: int, n_experts: int,
                            capacity_factor: float, itemsize: int) -> float:
    """Bytes one device sends in the all-to-all of (n_experts, capacity, d_model) buffers, as
    grader.framework.hlo reads them from the compiled program (0 on one device)."""
    n = jax.device_count()
    capacity = math.ceil(capacity_factor * tokens_per_device / n_experts)
    dtype = {4: jnp.float32}[itemsize]  # on CPU, XLA moves bfloat16 as float32
    mesh = jax.make_mesh((n,), ("expert",))

    def local(x):
        ids = jnp.arange(x.shape[0]) % n_experts
        one_hot = jax.nn.one_hot(ids, n_experts, dtype=jnp.int32)
        slot = jnp.sum((jnp.cumsum(one_hot, axis=0) - 1) * one_hot, axis=1)
        buffers = jnp.zeros((n_experts, capacity, d_model), dtype).at[ids, slot].set(
            x, mode="drop")
        return jax.lax.all_to_all(buffers, "expert", 0, 0, tiled=True)

    def dispatch(x):
        x = jax.reshard(x, NamedSharding(mesh, P("expert")))
        return jax.shard_map(local, mesh=mesh, in_specs=P("expert"), out_specs=P("expert"))(x)

    x = jnp.zeros((tokens_per_device * n, d_model), dtype)
    return float(sum(c.sent for c in collectives(dispatch, x) if c.op == "all-to-all"))


def bytes_case(args: tuple):
    def probe(fn):
        return {"result": float(fn(*args)), "_compiled": compiled_dispatch_bytes(*args),
                **bytes_context(*args)}

    return probe


BYTES_HINTS = (bytes_whole_buffer, bytes_of_tokens)


@case("dispatch_bytes", hidden=True, judge=what_runs("_compiled", BYTES_HINTS))
def one_expert_per_device_float32(fn):
    return bytes_case((12, 6, jax.device_count(), 1.5, 4))(fn)


@case("dispatch_bytes", hidden=True, judge=what_runs("_compiled", BYTES_HINTS))
def four_experts_per_device_float32(fn):
    return bytes_case((10, 8, 4 * jax.device_count(), 1.0, 4))(fn)


@case("dispatch_bytes", hidden=True, hints=BYTES_HINTS)
def two_experts_per_device_bfloat16(fn):
    """Compared with the reference's prediction only: XLA on CPU converts a bfloat16
    all-to-all to float32 and sends twice the bytes (the traffic model counts bfloat16)."""
    args = (16, 8, 2 * jax.device_count(), 1.25, 2)
    return {"result": float(fn(*args)), **bytes_context(*args)}


# --- top2_slots ---------------------------------------------------------------------------
@case("top2_slots", hidden=True, hints=TOP2_HINTS)
def eight_groups_of_twenty_under_jit(fn):
    choices = top2_choices(110, 8, 20, 6)
    slots = jitted(trailing(fn, 6, 4))(jnp.asarray(choices))
    return {"result": slots, **top2_context(choices, 6, 4)}


@case("top2_slots", hidden=True, hints=TOP2_HINTS)
def room_for_every_choice(fn):
    choices = top2_choices(111, 2, 6, 3)
    return {"result": fn(jnp.asarray(choices), 3, 12), **top2_context(choices, 3, 12)}


@case("top2_slots", hidden=True, hints=TOP2_HINTS)
def room_for_the_first_choices_only(fn):
    choices = top2_choices(112, 4, 8, 2)
    slots = jitted(trailing(fn, 2, 8))(jnp.asarray(choices))
    return {"result": slots, **top2_context(choices, 2, 8)}


# --- moe_two_experts_per_device -----------------------------------------------------------
def placed_moe_inputs(seed: int, **sizes) -> tuple:
    mesh = jax.make_mesh((jax.device_count(),), ("expert",))
    specs = (P("expert"), P(), P("expert"), P("expert"))
    return tuple(jax.device_put(a, NamedSharding(mesh, s))
                 for a, s in zip(moe_inputs(seed, **sizes), specs, strict=True))


@case("moe_two_experts_per_device", hidden=True, hints=[moe_no_gate, moe_order])
def random_layer_inputs_already_on_the_mesh(fn):
    args = placed_moe_inputs(120, tokens_per_device=8, d=3, h=5)
    result = fn(*args, 3)
    return {"result": result, "layout": layout(result),
            "_no_gate": numpy_moe(*args, 3, gated=False)}


@case("moe_two_experts_per_device", hidden=True, hints=[moe_collectives])
def two_all_to_all_on_every_device_count(fn):
    return hlo_collectives(trailing(fn, 3), *moe_inputs(122, tokens_per_device=8))


@case("moe_two_experts_per_device", hidden=True,
      judge=traces("all_to_all", "expert", hints.HINT_MOE_TWO_ALL_TO_ALL))
def exchanges_over_the_expert_axis(fn):
    return program_summary(trailing(fn, 2), *moe_inputs(123))


# --- reduce_scatter_matmul ----------------------------------------------------------------
def placed_rs_inputs(seed: int, **sizes) -> tuple:
    mesh = jax.make_mesh((jax.device_count(),), ("x",))
    x, w = rs_inputs(seed, **sizes)
    return (jax.device_put(x, NamedSharding(mesh, P(None, "x"))),
            jax.device_put(w, NamedSharding(mesh, P("x", None))))


@case("reduce_scatter_matmul", hidden=True, hints=[rs_block])
def inputs_already_split_on_the_contraction(fn):
    x, w = placed_rs_inputs(130, rows_per_device=2, k_per_device=3, cols=4)
    result = fn(x, w)
    return {"result": result, "layout": layout(result), **rolled_blocks(x, w)}


@case("reduce_scatter_matmul", hidden=True, hints=[rs_reduces, rs_permutes])
def n_minus_one_permutes_on_every_device_count(fn):
    return hlo_collectives(fn, *rs_inputs(132, rows_per_device=2))


@case("reduce_scatter_matmul", hidden=True,
      judge=traces("ppermute", "x", hints.HINT_RS_NO_COLLECTIVE_OP))
def passes_partial_sums_over_x(fn):
    return program_summary(fn, *rs_inputs(133))


@case("reduce_scatter_matmul", hidden=True, judge=runs_on_mesh)
def runs_on_a_mesh_of_all_devices(fn):
    return program_summary(fn, *rs_inputs(134))
