"""Hidden tests of lesson 3 (collectives): only the grader runs them, on 8 devices and, for
exercises that must work on all devices, on 2 as well."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from grader.framework.cases import case
from grader.framework.judge import compiles_to, runs_on_mesh, same, traces
from grader.framework.placement import layout, spec_of
from grader.framework.probes import hlo_collectives, program_summary, trailing
from grader.hints import collectives as hints
from grader.public.collectives import (
    HALO_HINTS,
    MOMENTS,
    MOVES_ALL_TO_ALL,
    ONLY_PERMUTES,
    PORT_FIXED,
    PORT_HINTS,
    ROW_SUMS,
    SCATTERED_COLUMNS,
    SCATTERS,
    a2a_layout,
    a2a_shape,
    all_reduce_kinds,
    all_reduces_in_hlo,
    all_reduces_once,
    always,
    centred_on,
    cumsum_context,
    dot_inputs,
    features,
    forgot_psum,
    gathered_per_device,
    gathers_block_totals_only,
    grid_matrix,
    grid_mesh,
    halo_context,
    local_max,
    moments_of,
    no_abs,
    normalize_context,
    one_row_per_device,
    own_total,
    partial_sums,
    received_by_kind,
    reduce_scatter_groups,
    regression_batch,
    restarts,
    ring_steps,
    row_split_matrix,
    row_sums_on,
    scatter_groups,
    scattered_on,
    sends_edges_only,
    signed_vector,
    split_over_devices,
    squares,
    step_context,
    sums_over_only,
    takes_a_maximum,
    with_gaps,
)


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


# --- nan_mean_var -------------------------------------------------------------------------
@case("nan_mean_var", hidden=True, judge=MOMENTS)
def moments_of_a_vector_without_gaps(fn):
    return moments_of(fn, with_gaps(4, seed=12, offset=2.0, gaps=0.0))


@case("nan_mean_var", hidden=True, judge=MOMENTS)
def moments_with_a_block_that_holds_only_nans(fn):
    return moments_of(fn, with_gaps(3, seed=13, offset=-1.0, empty_first_block=True))


@case("nan_mean_var", hidden=True, judge=MOMENTS)
def moments_of_a_vector_already_split_over_data(fn):
    x = with_gaps(5, seed=14, gaps=0.4)
    return moments_of(fn, x, split_over_devices(x, P("data")))


@case("nan_mean_var", hidden=True, judge=all_reduces_once)
def all_reduces_once_on_a_longer_vector(fn):
    return all_reduces_in_hlo(fn, jnp.asarray(with_gaps(16, seed=15, offset=3.0)))


# --- fixed_pmap_port ------------------------------------------------------------------------
@case("fixed_pmap_port", hidden=True, judge=PORT_FIXED)
def centres_a_plain_batch(fn):
    x, w, context = features(4, 5, 3, seed=22)
    return centred_on(fn, jnp.asarray(x), jnp.asarray(w), context)


@case("fixed_pmap_port", hidden=True, judge=PORT_FIXED)
def centres_a_batch_split_by_columns(fn):
    x, w, context = features(1, 2 * jax.device_count(), 2, seed=23)
    return centred_on(fn, split_over_devices(x, P(None, "data")), jnp.asarray(w), context)


@case("fixed_pmap_port", hidden=True, judge=runs_on_mesh)
def shard_maps_over_the_batch_axis(fn):
    x, w, _ = features(2, 3, 2, seed=24)
    return program_summary(fn, jnp.asarray(x), jnp.asarray(w))


# --- distributed_dot ----------------------------------------------------------------------
@case("distributed_dot", hidden=True, hints=[forgot_psum])
def random_arrays(fn):
    v1, v2, first = dot_inputs(4, seed=30)
    return {"result": fn(v1, v2), "_first_shard": first}


@case("distributed_dot", hidden=True, hints=[forgot_psum])
def inputs_already_split_over_devices(fn):
    v1, v2, first = dot_inputs(3, seed=31)
    placed = NamedSharding(Mesh(jax.devices(), ("data",)), P("data"))
    v1, v2 = jax.device_put(v1, placed), jax.device_put(v2, placed)
    return {"result": fn(v1, v2), "_first_shard": first}


@case("distributed_dot", hidden=True, judge=runs_on_mesh)
def shard_map_over_every_device(fn):
    v1, v2, _ = dot_inputs(1)
    return program_summary(fn, v1, v2)


@case("distributed_dot", hidden=True, judge=compiles_to("all-reduce", hints.HINT_FORGOT_PSUM))
def all_reduces_on_every_device_count(fn):
    v1, v2, _ = dot_inputs(2, seed=32)
    return hlo_collectives(fn, v1, v2)


# --- pmean_update_step ----------------------------------------------------------------------
@case("pmean_update_step", hidden=True, hints=PORT_HINTS)
def step_on_a_random_batch(fn):
    params = {"w": jnp.float32(0.3), "b": jnp.float32(-0.2)}
    batch = regression_batch(6, seed=40)
    plain_params = {k: float(v) for k, v in params.items()}
    return {"result": fn(params, batch), **step_context(plain_params, batch, 0.01)}


@case("pmean_update_step", hidden=True, hints=PORT_HINTS)
def step_with_a_large_learning_rate(fn):
    params = {"w": 2.0, "b": 1.0}
    batch = regression_batch(3, seed=41)
    return {"result": fn(params, batch, 0.5), **step_context(params, batch, 0.5)}


@case("pmean_update_step", hidden=True, hints=PORT_HINTS)
def batch_already_split_over_devices(fn):
    params = {"w": -1.0, "b": 2.0}
    batch = {k: split_over_devices(v, P("data")) for k, v in regression_batch(5, 43).items()}
    plain = {k: np.asarray(v) for k, v in batch.items()}
    return {"result": fn(params, batch), **step_context(params, plain, 0.01)}


@case("pmean_update_step", hidden=True,
      judge=traces("psum", "data_parallel_axis", hints.HINT_FORGOT_PMEAN))
def averages_over_the_named_axis(fn):
    return program_summary(fn, {"w": 0.0, "b": 0.0}, regression_batch(2, seed=42))


@case("pmean_update_step", hidden=True, judge=runs_on_mesh)
def shard_maps_over_every_device(fn):
    return program_summary(fn, {"w": 0.0, "b": 0.0}, regression_batch(2, seed=44))


@case("pmean_update_step", hidden=True, judge=same("layout", hints=[
    always(hints.HINT_PORT_STACKED)]))
def returns_the_parameters_once_replicated(fn):
    out = fn({"w": 0.1, "b": 0.2}, regression_batch(2, seed=45))
    return {"layout": {k: layout(v) for k, v in out.items()}}


# --- halo_difference ----------------------------------------------------------------------
@case("halo_difference", hidden=True, hints=HALO_HINTS)
def random_blocks_of_five(fn):
    x = _rng(50).normal(size=5 * jax.device_count()).astype(np.float32)
    return {"result": fn(jnp.asarray(x)), **halo_context(x)}


@case("halo_difference", hidden=True, hints=HALO_HINTS)
def one_element_per_device(fn):
    x = _rng(51).normal(size=jax.device_count()).astype(np.float32)
    return {"result": fn(jnp.asarray(x)), **halo_context(x)}


@case("halo_difference", hidden=True, judge=same("layout", hints=[
    always(hints.HINT_STAYS_SPLIT)]))
def result_stays_split_over_devices(fn):
    return {"layout": layout(fn(jnp.asarray(squares(3))))}


@case("halo_difference", hidden=True, judge=sends_edges_only)
def sends_edges_of_long_blocks_already_split(fn):
    x = split_over_devices(_rng(52).normal(size=256 * jax.device_count()).astype(np.float32),
                           P("data"))
    return {"received": received_by_kind(fn, x)}


# --- global_max_normalize -------------------------------------------------------------------
@case("global_max_normalize", hidden=True, hints=[local_max, no_abs])
def normalizes_random_values(fn):
    x = signed_vector(16, seed=70)
    return {"result": fn(jnp.asarray(x)), **normalize_context(x)}


@case("global_max_normalize", hidden=True, hints=[local_max, no_abs])
def largest_magnitude_on_the_first_device(fn):
    x = signed_vector(5, seed=71)[::-1].copy()
    return {"result": fn(jnp.asarray(x)), **normalize_context(x)}


@case("global_max_normalize", hidden=True, judge=same("layout", hints=[
    always(hints.HINT_STAYS_SPLIT)]))
def result_is_split_over_data(fn):
    return {"layout": layout(fn(jnp.asarray(signed_vector(4, seed=72))))}


@case("global_max_normalize", hidden=True,
      judge=traces("pmax", "data", hints.HINT_NORMALIZE_PMAX))
def traces_a_pmax_over_data(fn):
    return program_summary(fn, jnp.asarray(signed_vector(2, seed=73)))


@case("global_max_normalize", hidden=True, judge=takes_a_maximum)
def all_reduces_with_a_maximum_on_every_device_count(fn):
    return {"all_reduces": all_reduce_kinds(fn, jnp.asarray(signed_vector(3, seed=74)))}


# --- allreduce_from_ppermute ----------------------------------------------------------------
@case("allreduce_from_ppermute", hidden=True, hints=[ring_steps])
def random_rows_of_six(fn):
    x, context = one_row_per_device(6, seed=80)
    return {"result": fn(jnp.asarray(x)), **context}


@case("allreduce_from_ppermute", hidden=True, hints=[ring_steps])
def integer_rows_add_up_exactly(fn):
    x, context = one_row_per_device(5, seed=81, integers=True)
    return {"result": fn(jnp.asarray(x)), **context}


@case("allreduce_from_ppermute", hidden=True, judge=same("layout", hints=[
    always(hints.HINT_STAYS_SPLIT)]))
def keeps_one_row_on_each_device(fn):
    x, _ = one_row_per_device(3, seed=82)
    return {"layout": layout(fn(jnp.asarray(x)))}


@case("allreduce_from_ppermute", hidden=True, judge=ONLY_PERMUTES)
def permutes_only_on_every_device_count(fn):
    x, _ = one_row_per_device(8, seed=83)
    return hlo_collectives(fn, jnp.asarray(x))


# --- sharded_cumsum -------------------------------------------------------------------------
@case("sharded_cumsum", hidden=True, hints=[restarts, own_total])
def running_total_of_random_values(fn):
    x = _rng(90).normal(size=16 * jax.device_count()).astype(np.float32)
    return {"result": fn(jnp.asarray(x)), **cumsum_context(x)}


@case("sharded_cumsum", hidden=True, hints=[restarts, own_total])
def integers_already_split_over_devices(fn):
    x = _rng(91).integers(-9, 10, size=6 * jax.device_count()).astype(np.int32)
    return {"result": fn(split_over_devices(x, P("data"))), **cumsum_context(x)}


@case("sharded_cumsum", hidden=True, judge=same("layout", hints=[always(hints.HINT_STAYS_SPLIT)]))
def result_stays_split_over_data(fn):
    return {"layout": layout(fn(jnp.arange(8.0 * jax.device_count())))}


@case("sharded_cumsum", hidden=True, judge=gathers_block_totals_only)
def never_gathers_the_blocks(fn):
    x = _rng(92).normal(size=32 * jax.device_count()).astype(np.float32)
    return {"gathered_per_device": gathered_per_device(fn, jnp.asarray(x))}


# --- reduce_scatter_columns -----------------------------------------------------------------
@case("reduce_scatter_columns", hidden=True, judge=SCATTERED_COLUMNS)
def totals_on_a_wide_auto_mesh(fn):
    return scattered_on(fn, grid_mesh(rows_major=False, explicit=False), rows=3, columns=2,
                        seed=100)


@case("reduce_scatter_columns", hidden=True, judge=SCATTERED_COLUMNS)
def totals_on_a_tall_explicit_mesh(fn):
    return scattered_on(fn, grid_mesh(rows_major=True), rows=4, columns=1, seed=101)


@case("reduce_scatter_columns", hidden=True,
      judge=traces("reduce_scatter", "x", hints.HINT_SCATTER_NOT_PSUM))
def traces_a_psum_scatter_over_x(fn):
    mesh = grid_mesh()
    parts, _ = partial_sums(mesh, rows=2, columns=2, seed=102)
    return program_summary(trailing(fn, mesh), parts)


@case("reduce_scatter_columns", hidden=True, judge=scatter_groups)
def reduce_scatters_among_the_devices_along_x(fn):
    mesh = grid_mesh(rows_major=False)
    parts, _ = partial_sums(mesh, rows=2, columns=4, seed=103)
    return {"groups": reduce_scatter_groups(trailing(fn, mesh), parts)}


@case("reduce_scatter_columns", hidden=True, judge=SCATTERS)
def reduce_scatters_on_every_device_count(fn):
    mesh = grid_mesh(rows_major=False, explicit=False)
    parts, _ = partial_sums(mesh, rows=3, columns=2, seed=104, placed=False)
    return hlo_collectives(trailing(fn, mesh), parts)


# --- rows_to_columns ------------------------------------------------------------------------
@case("rows_to_columns", hidden=True, judge=same("values", "spec", "layout",
                                                 hints=[a2a_shape, a2a_layout]))
def random_tall_matrix(fn):
    out = fn(row_split_matrix(5, 2, seed=110))
    return {"values": out, "spec": spec_of(out), "layout": layout(out)}


@case("rows_to_columns", hidden=True, judge=same("values", "spec", "layout",
                                                 hints=[a2a_shape, a2a_layout]))
def random_wide_matrix(fn):
    out = fn(row_split_matrix(1, 6, seed=111))
    return {"values": out, "spec": spec_of(out), "layout": layout(out)}


@case("rows_to_columns", hidden=True,
      judge=traces("all_to_all", "data", hints.HINT_A2A_GATHERED))
def traces_an_all_to_all_over_data(fn):
    return program_summary(fn, row_split_matrix(2, 2, seed=112))


@case("rows_to_columns", hidden=True, judge=MOVES_ALL_TO_ALL)
def all_to_all_on_every_device_count(fn):
    return hlo_collectives(fn, row_split_matrix(3, 1, seed=113))


# --- row_group_sums -------------------------------------------------------------------------
@case("row_group_sums", hidden=True, judge=ROW_SUMS)
def on_a_tall_explicit_mesh(fn):
    return row_sums_on(fn, grid_mesh(rows_major=True), rows=3, columns=4, seed=120)


@case("row_group_sums", hidden=True, judge=ROW_SUMS)
def on_a_wide_auto_mesh(fn):
    return row_sums_on(fn, grid_mesh(rows_major=False, explicit=False), rows=2, columns=5,
                       seed=121)


@case("row_group_sums", hidden=True, judge=sums_over_only("y"))
def psums_over_y_only(fn):
    mesh = grid_mesh(rows_major=False)
    x, _ = grid_matrix(mesh, rows=2, columns=2, seed=122)
    return program_summary(trailing(fn, mesh), x)


@case("row_group_sums", hidden=True, judge=compiles_to("all-reduce", hints.HINT_ROW_SUMS_ONE_BLOCK))
def all_reduces_along_y(fn):
    mesh = grid_mesh(rows_major=True, explicit=False)
    x, _ = grid_matrix(mesh, rows=2, columns=3, seed=123)
    return hlo_collectives(trailing(fn, mesh), x)
