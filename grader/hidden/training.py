"""Hidden tests of lesson 5 (training in parallel): only the grader runs them, on 8 devices
and on 2, since every exercise of the lesson must work on all devices."""

from __future__ import annotations

import jax
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from grader.framework.cases import case
from grader.framework.judge import compiles_to, runs_on_mesh, same, traces
from grader.framework.placement import layout
from grader.framework.plain import Material
from grader.framework.probes import hlo_collectives, program_summary, trailing
from grader.hints import training as hints
from grader.public.cost import cost_memory_bytes
from grader.public.training import (
    HOLDS_ITS_SHARE,
    accumulation_inputs,
    attention_inputs,
    first_heads_only,
    first_model_block_of,
    forgot_pmean,
    fsdp_tp_forgot_psum,
    fsdp_tp_inputs,
    fsdp_tp_moves,
    gathered_shapes,
    grads_context,
    held_per_device,
    mlp_params,
    model_axis_size,
    not_replicated,
    on_one_device,
    one_microbatch_at_a_time,
    received_bytes,
    reduces_once,
    regression_batch,
    step_mesh,
    summed_grads,
    tpa_extra_communication,
    tpa_forgot_psum,
)


def data_mesh() -> Mesh:
    """The exercises' Explicit mesh: jax.make_mesh over every device."""
    return jax.make_mesh((jax.device_count(),), ("data",))


def place(tree, spec: P):
    """Put every array of ``tree`` on a 1-D mesh over all devices, laid out as ``spec``."""
    return jax.device_put(tree, NamedSharding(data_mesh(), spec))


# --- dp_step_on_mesh -----------------------------------------------------------------------
@case("dp_step_on_mesh", hidden=True, hints=[on_one_device, not_replicated])
def two_steps_on_a_three_axis_mesh_from_placed_inputs(fn):
    mesh = step_mesh("replica", "data", "fsdp")
    params = jax.device_put(mlp_params(110, 3, 6, 2), NamedSharding(mesh, P()))
    batch = jax.device_put(regression_batch(111, 3 * jax.device_count(), 3, 2),
                           NamedSharding(mesh, P(mesh.axis_names)))
    for _ in range(2):
        params = fn(params, batch, 0.5, mesh)
    return {"result": params, "layout": {k: layout(v) for k, v in params.items()}}


@case("dp_step_on_mesh", hidden=True, judge=HOLDS_ITS_SHARE)
def holds_its_share_on_a_three_axis_mesh(fn):
    batch = regression_batch(113, 4 * jax.device_count(), 3, 2)
    return {"held": held_per_device(trailing(fn, step_mesh("replica", "data", "fsdp")),
                                    mlp_params(112, 3, 4, 2), batch, 0.1)}


@case("dp_step_on_mesh", hidden=True, judge=HOLDS_ITS_SHARE)
def holds_its_share_on_a_one_axis_mesh_named_otherwise(fn):
    batch = regression_batch(115, 2 * jax.device_count(), 3, 2)
    return {"held": held_per_device(trailing(fn, step_mesh("batch")),
                                    mlp_params(114, 3, 4, 2), batch, 0.1)}


@case("dp_step_on_mesh", hidden=True,
      judge=compiles_to("all-reduce", hints.HINT_DP_ONE_DEVICE))
def compiles_to_a_gradient_all_reduce(fn):
    batch = regression_batch(117, 2 * jax.device_count(), 3, 2)
    return hlo_collectives(trailing(fn, step_mesh("data", "fsdp")), mlp_params(116, 3, 4, 2),
                           batch, 0.1)


# --- accumulated_grads ------------------------------------------------------------------------
@case("accumulated_grads", hidden=True, hints=[summed_grads, forgot_pmean])
def replicated_grads_from_placed_inputs_in_eight_steps(fn):
    params = mlp_params(100, 5, 6, 3)
    batch = regression_batch(101, 16 * jax.device_count(), 5, 3)
    grads = fn(place(params, P()), place(batch, P("data")), 8)
    return {"result": grads, "layout": {k: layout(v) for k, v in grads.items()},
            **grads_context(params, batch)}


@case("accumulated_grads", hidden=True, hints=[summed_grads, forgot_pmean])
def one_step_is_the_whole_batch_at_once(fn):
    params = mlp_params(102, 3, 8, 2)
    batch = regression_batch(103, 3 * jax.device_count(), 3, 2)
    return {"result": fn(params, batch, 1), **grads_context(params, batch)}


@case("accumulated_grads", hidden=True, judge=reduces_once)
def averages_once_over_sixteen_microbatches(fn):
    params, batch = accumulation_inputs(104, rows_per_device=32, d_in=8, hidden=32)
    return {"received": received_bytes(trailing(fn, 16), params, batch)}


@case("accumulated_grads", hidden=True, judge=one_microbatch_at_a_time)
def holds_one_microbatch_of_a_wider_layer(fn):
    params, batch = accumulation_inputs(106, rows_per_device=32, d_in=8, hidden=512)
    return {"memory": cost_memory_bytes(trailing(fn, 4), params, batch)}


@case("accumulated_grads", hidden=True,
      judge=traces("psum", "data", hints.HINT_DP_FORGOT_PMEAN))
def averages_over_the_data_axis(fn):
    params = mlp_params(108, 3, 8, 2)
    return program_summary(trailing(fn, 2), params,
                           regression_batch(109, 4 * jax.device_count(), 3, 2))


# --- tp_attention ---------------------------------------------------------------------------
@case("tp_attention", hidden=True, hints=[tpa_forgot_psum])
def more_heads_per_device_and_a_longer_sequence(fn):
    arrays = attention_inputs(120, rows_per_block=1, seq=9, d_model=4, heads_per_block=3,
                              head_dim=2)
    result = fn(*arrays)
    return {"result": result, "layout": layout(result),
            "_first_heads": Material(lambda: first_heads_only(*arrays))}


@case("tp_attention", hidden=True, hints=[tpa_extra_communication])
def one_all_reduce_with_more_heads(fn):
    return hlo_collectives(fn, *attention_inputs(122, heads_per_block=3, d_model=8))


@case("tp_attention", hidden=True, judge=traces("psum", "model", hints.HINT_TP_PSUM_AXIS))
def psums_over_the_model_axis(fn):
    return program_summary(fn, *attention_inputs(124))


@case("tp_attention", hidden=True, judge=runs_on_mesh)
def runs_on_a_data_by_model_mesh(fn):
    return program_summary(fn, *attention_inputs(126))


# --- fsdp_tp_forward ------------------------------------------------------------------------
@case("fsdp_tp_forward", hidden=True, hints=[fsdp_tp_forgot_psum])
def weights_stored_split_both_ways(fn):
    params, x = fsdp_tp_inputs(140, rows_per_block=2)
    model = model_axis_size()
    mesh = jax.make_mesh((jax.device_count() // model, model), ("data", "model"))
    placed = {"w1": jax.device_put(params["w1"], NamedSharding(mesh, P("data", "model"))),
              "w2": jax.device_put(params["w2"], NamedSharding(mesh, P("model", "data")))}
    result = fn(placed, jax.device_put(x, NamedSharding(mesh, P("data", None))))
    return {"result": result, "layout": layout(result),
            "_first_block": first_model_block_of(params, x)}


@case("fsdp_tp_forward", hidden=True, judge=same("gathered", "collectives",
                                                 hints=[fsdp_tp_moves]))
def gathers_model_blocks_on_every_device_count(fn):
    args = fsdp_tp_inputs(142, rows_per_block=3)
    return {"gathered": gathered_shapes(fn, *args), "collectives": hlo_collectives(fn, *args)}


@case("fsdp_tp_forward", hidden=True,
      judge=traces("all_gather", "data", hints.HINT_FSDP_GATHER_INSIDE))
def all_gathers_over_data_inside_the_shard_map(fn):
    return program_summary(fn, *fsdp_tp_inputs(144))


@case("fsdp_tp_forward", hidden=True, judge=traces("psum", "model", hints.HINT_TP_PSUM_AXIS))
def psums_partial_outputs_over_model(fn):
    return program_summary(fn, *fsdp_tp_inputs(146))
