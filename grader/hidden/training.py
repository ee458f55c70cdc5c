"""Hidden tests of lesson 5 (training in parallel): only the grader runs them, on 8 devices
and on 2, since every exercise of the lesson must work on all devices."""

from __future__ import annotations

import jax
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from grader.framework.cases import case
from grader.framework.judge import compiles_to, runs_on_mesh, traces
from grader.framework.placement import layout
from grader.framework.probes import hlo_collectives, program_summary
from grader.hints import training as hints
from grader.public.training import (
    first_model_block,
    forgot_pmean,
    fsdp_inputs,
    gathered_shapes,
    gathers_activations,
    grads_context,
    mlp_params,
    not_replicated,
    on_one_device,
    regression_batch,
    summed_grads,
    tp_extra_communication,
    tp_forgot_psum,
    tp_inputs,
)


def data_mesh() -> Mesh:
    """The exercises' Explicit mesh: jax.make_mesh over every device."""
    return jax.make_mesh((jax.device_count(),), ("data",))


def place(tree, spec: P):
    """Put every array of ``tree`` on a 1-D mesh over all devices, laid out as ``spec``."""
    return jax.device_put(tree, NamedSharding(data_mesh(), spec))


# --- data_parallel_grads --------------------------------------------------------------------
@case("data_parallel_grads", hidden=True, hints=[summed_grads, forgot_pmean])
def random_params_and_a_wider_batch(fn):
    params = mlp_params(100, 5, 6, 3)
    batch = regression_batch(101, 3 * jax.device_count(), 5, 3)
    return {"result": fn(params, batch), **grads_context(params, batch)}


@case("data_parallel_grads", hidden=True, hints=[summed_grads, forgot_pmean])
def replicated_grads_from_a_batch_already_split(fn):
    params = mlp_params(102, 3, 8, 2)
    batch = regression_batch(103, 2 * jax.device_count(), 3, 2)
    grads = fn(place(params, P()), place(batch, P("data")))
    return {"result": grads, "layout": {k: layout(v) for k, v in grads.items()},
            **grads_context(params, batch)}


@case("data_parallel_grads", hidden=True,
      judge=traces("psum", "data", hints.HINT_DP_FORGOT_PMEAN))
def averages_over_the_data_axis(fn):
    params = mlp_params(106, 3, 8, 2)
    return program_summary(fn, params, regression_batch(107, 2 * jax.device_count(), 3, 2))


# --- dp_train_step --------------------------------------------------------------------------
@case("dp_train_step", hidden=True, hints=[on_one_device, not_replicated])
def two_steps_from_inputs_on_the_mesh(fn):
    params = place(mlp_params(110, 3, 6, 2), P())
    batch = place(regression_batch(111, 3 * jax.device_count(), 3, 2), P("data"))
    for _ in range(2):
        params = fn(params, batch, 0.5)
    return {"result": params, "layout": {k: layout(v) for k, v in params.items()}}


@case("dp_train_step", hidden=True, judge=compiles_to("all-reduce", hints.HINT_DP_ONE_DEVICE))
def compiles_to_a_gradient_all_reduce(fn):
    params = mlp_params(112, 3, 4, 2)
    return hlo_collectives(fn, params, regression_batch(113, 2 * jax.device_count(), 3, 2), 0.1)


# --- tensor_parallel_mlp --------------------------------------------------------------------
@case("tensor_parallel_mlp", hidden=True, hints=[tp_forgot_psum])
def random_inputs_rows_split_over_data(fn):
    x, w1, w2 = tp_inputs(120, rows_per_block=2, d_in=7, d_out=4)
    result = fn(x, w1, w2)
    return {"result": result, "layout": layout(result),
            "_first_block": first_model_block(x, w1, w2)}


@case("tensor_parallel_mlp", hidden=True, hints=[tp_extra_communication])
def one_all_reduce_on_every_device_count(fn):
    return hlo_collectives(fn, *tp_inputs(122, rows_per_block=1))


@case("tensor_parallel_mlp", hidden=True,
      judge=traces("psum", "model", hints.HINT_TP_PSUM_AXIS))
def psums_over_the_model_axis(fn):
    return program_summary(fn, *tp_inputs(124))


@case("tensor_parallel_mlp", hidden=True, judge=runs_on_mesh)
def runs_on_a_data_by_model_mesh(fn):
    return program_summary(fn, *tp_inputs(126))


# --- fsdp_forward ---------------------------------------------------------------------------
@case("fsdp_forward", hidden=True)
def weights_stored_split_over_devices(fn):
    params, x = fsdp_inputs(130, rows_per_device=2)
    result = fn(place(params, P("data", None)), place(x, P("data", None)))
    return {"result": result, "layout": layout(result)}


@case("fsdp_forward", hidden=True, hints=[gathers_activations])
def gathers_weights_on_every_device_count(fn):
    return {"gathered": gathered_shapes(fn, *fsdp_inputs(132, rows_per_device=3))}


@case("fsdp_forward", hidden=True,
      judge=traces("all_gather", "data", hints.HINT_FSDP_GATHER_INSIDE))
def all_gathers_inside_the_shard_map(fn):
    return program_summary(fn, *fsdp_inputs(134))
