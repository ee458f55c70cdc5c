"""Hidden tests of lesson 2 (jit and sharding propagation): only the grader runs them, on 8
devices and, for exercises that must work on all devices, on 2 as well."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, SingleDeviceSharding
from jax.sharding import PartitionSpec as P

from grader.framework.cases import case
from grader.framework.judge import same
from grader.framework.probes import hlo_collectives, trailing
from grader.public.jit_sharding import (
    CLIP_HINTS,
    INIT_HINTS,
    RESIDUAL_PROGRAM_HINTS,
    TYPE_HINTS,
    affine_inputs,
    affine_mesh,
    auto_mesh,
    clipped_case,
    clipped_program,
    column_matrix,
    constrained_late,
    counted_twice,
    given_mesh,
    initialised,
    jax_types,
    layer_sizes,
    line_mesh,
    matmul_without_communication,
    mesh_shape,
    no_more_bytes_than_a_row_gather,
    normalized,
    norms_from_rows,
    on_one_device,
    placement,
    predicted_types,
    read_lowered,
    replicate_then,
    residual_case,
    residual_not_rows,
    residual_program,
    row_split,
    same_axis_twice,
    sharded_affine,
    spec_pairs,
    split_contraction,
    still_by_rows,
    w_whole,
    wave,
)


# --- no_comm_matmul_specs -------------------------------------------------------------------
@case("no_comm_matmul_specs", hidden=True, hints=[split_contraction, same_axis_twice])
def no_collective_on_a_mesh_with_more_columns(fn):
    return matmul_without_communication(fn, mesh_shape("few"), seed=10)


@case("no_comm_matmul_specs", hidden=True, hints=[split_contraction, same_axis_twice])
def no_collective_with_every_device_on_x(fn):
    return matmul_without_communication(fn, mesh_shape("all"), seed=11)


@case("no_comm_matmul_specs", hidden=True, hints=[split_contraction, same_axis_twice])
def no_collective_with_every_device_on_y(fn):
    return matmul_without_communication(fn, mesh_shape("none"), seed=12)


# --- count_collectives ----------------------------------------------------------------------
def _line_split(shape: tuple[int, int], spec: P) -> jax.Array:
    data = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    return jax.device_put(data, NamedSharding(line_mesh(), spec))


@case("count_collectives", hidden=True, hints=[read_lowered, counted_twice])
def counts_a_collective_permute(fn):
    n = jax.device_count()
    x = _line_split((4 * n, 3), P("d", None))
    return {"roll": fn(lambda v: jnp.roll(v, 1, axis=0), x)}


@case("count_collectives", hidden=True, hints=[read_lowered, counted_twice])
def counts_a_reduce_scatter_and_an_all_to_all(fn):
    n = jax.device_count()
    mesh = line_mesh()
    x = _line_split((4 * n, 2 * n), P("d", None))

    def scatter_sums(v):
        return jax.shard_map(
            lambda block: jax.lax.psum_scatter(block, "d", scatter_dimension=1, tiled=True),
            mesh=mesh, in_specs=P("d", None), out_specs=P(None, "d"),
        )(v)

    def to_columns(v):
        return jax.lax.with_sharding_constraint(v * 2, NamedSharding(mesh, P(None, "d")))

    return {"psum_scatter": fn(scatter_sums, x), "rows_to_columns": fn(to_columns, x)}


@case("count_collectives", hidden=True, hints=[read_lowered, counted_twice])
def counts_several_kinds_in_one_program(fn):
    n = jax.device_count()
    mesh = line_mesh()
    x = _line_split((4 * n, 2 * n), P("d", None))

    def several(v):
        total = v.sum()
        shifted = jnp.roll(v, 1, axis=0)
        whole = jax.lax.with_sharding_constraint(jnp.tanh(v), NamedSharding(mesh, P()))
        return total + shifted.sum() * whole[0, 0]

    return {"several": fn(several, x)}


@case("count_collectives", hidden=True, hints=[read_lowered, counted_twice])
def counts_the_gathers_of_a_two_axis_mesh(fn):
    n = jax.device_count()
    grid = auto_mesh(mesh_shape("few"))
    data = np.arange(4 * n * 2 * n, dtype=np.float32).reshape(4 * n, 2 * n)
    x = jax.device_put(data, NamedSharding(grid, P("x", "y")))
    return {"gather": fn(replicate_then(wave, grid), x)}


@case("count_collectives", hidden=True, hints=[counted_twice])
def finds_nothing_where_nothing_moves(fn):
    n = jax.device_count()
    x = _line_split((4 * n, 3), P("d", None))
    w = jax.device_put(np.ones((3, 5), np.float32), NamedSharding(line_mesh(), P()))
    return {"rows_times_replicated": fn(jnp.dot, x, w),
            "one_device": fn(wave, np.ones((3, 4), np.float32))}


# --- normalize_columns ----------------------------------------------------------------------
@case("normalize_columns", hidden=True, hints=[still_by_rows])
def normalizes_a_random_matrix(fn):
    return normalized(fn, column_matrix(3, 5, seed=20))


@case("normalize_columns", hidden=True, hints=[still_by_rows])
def normalizes_one_column_per_device(fn):
    return normalized(fn, column_matrix(8, 1, seed=21))


@case("normalize_columns", hidden=True, hints=[constrained_late, norms_from_rows])
def one_all_to_all_on_every_device_count(fn):
    return hlo_collectives(fn, row_split(column_matrix(2, 3, seed=22)))


# --- make_sharded_affine --------------------------------------------------------------------
@case("make_sharded_affine", hidden=True, hints=[on_one_device, w_whole, given_mesh])
def random_inputs_on_a_mesh_with_more_model_devices(fn):
    return sharded_affine(fn, mesh_shape("few"), seed=30)


@case("make_sharded_affine", hidden=True, hints=[on_one_device, w_whole, given_mesh])
def every_device_on_data(fn):
    return sharded_affine(fn, mesh_shape("all"), seed=31)


@case("make_sharded_affine", hidden=True, hints=[on_one_device, w_whole, given_mesh])
def every_device_on_model(fn):
    return sharded_affine(fn, mesh_shape("none"), seed=32)


@case("make_sharded_affine", hidden=True, hints=[on_one_device, w_whole, given_mesh])
def accepts_inputs_already_placed_as_asked(fn):
    return sharded_affine(fn, mesh_shape("many"), seed=33, committed=True)


@case("make_sharded_affine", hidden=True, hints=[on_one_device])
def needs_no_communication(fn):
    f = fn(affine_mesh(mesh_shape("few")))
    x, w, b = affine_inputs(seed=34)
    out = f(x, w, b)
    return {"collectives": hlo_collectives(f, x, w, b),
            "result_blocks": placement(out.sharding, out.shape),
            "_one_device": placement(SingleDeviceSharding(jax.devices()[0]), out.shape)}


# --- fix_residual -------------------------------------------------------------------------
@case("fix_residual", hidden=True, hints=[residual_not_rows])
def residual_of_a_wider_layer(fn):
    return residual_case(fn, rows=16, width=4, seed=40)


@case("fix_residual", hidden=True, hints=[residual_not_rows])
def residual_under_jit(fn):
    return residual_case(fn, rows=8, width=2, seed=41, jit=True)


@case("fix_residual", hidden=True, hints=RESIDUAL_PROGRAM_HINTS)
def gathers_only_w_of_a_wider_layer(fn):
    return residual_program(fn, rows=16, width=4, seed=42)


@case("fix_residual", hidden=True, hints=RESIDUAL_PROGRAM_HINTS)
def gathers_only_w_of_a_narrow_layer(fn):
    return residual_program(fn, rows=4, width=1, seed=43)


# --- matmul_type --------------------------------------------------------------------------
@case("matmul_type", hidden=True, hints=TYPE_HINTS)
def predicts_every_pair_of_specs(fn):
    return predicted_types(fn, spec_pairs(("x", "y")))


@case("matmul_type", hidden=True, hints=TYPE_HINTS)
def predicts_for_other_axis_names(fn):
    return predicted_types(fn, spec_pairs(("model", "data")))


@case("matmul_type", hidden=True, judge=same("agrees"))
def agrees_with_jax_itself(fn):
    """Each prediction next to what JAX types (or refuses) on an Explicit mesh."""
    pairs = spec_pairs(("rows", "cols"))
    found = predicted_types(fn, pairs)["types"]
    return {"agrees": [got == truth for got, truth in
                       zip(found, jax_types(pairs, ("rows", "cols")), strict=True)]}


# --- init_layer ---------------------------------------------------------------------------
@case("init_layer", hidden=True, hints=INIT_HINTS)
def init_on_a_mesh_with_more_model_devices(fn):
    return initialised(fn, mesh_shape("few"), seed=50)


@case("init_layer", hidden=True, hints=INIT_HINTS)
def init_with_every_device_on_data(fn):
    return initialised(fn, mesh_shape("all"), seed=51)


@case("init_layer", hidden=True, hints=INIT_HINTS)
def init_with_every_device_on_model(fn):
    return initialised(fn, mesh_shape("none"), seed=52)


@case("init_layer", hidden=True, hints=INIT_HINTS)
def init_under_jit(fn):
    return initialised(fn, mesh_shape("many"), seed=53, jit=True)


@case("init_layer", hidden=True)
def draws_its_own_block_without_communicating(fn):
    """No collective, and (on 4 devices and more, in the verifier) no device doing the whole
    draw: each block is drawn where it lives."""
    shape = mesh_shape("many")
    d_in, d_out = layer_sizes(shape)
    with jax.set_mesh(jax.make_mesh(shape, ("data", "model"))):
        return hlo_collectives(trailing(fn, d_in, d_out), jax.random.key(54))


# --- clip_outliers ------------------------------------------------------------------------
@case("clip_outliers", hidden=True, hints=CLIP_HINTS)
def clipped_with_more_model_devices(fn):
    return clipped_case(fn, mesh_shape("few"), seed=60)


@case("clip_outliers", hidden=True, hints=CLIP_HINTS)
def clipped_with_features_over_every_device(fn):
    return clipped_case(fn, mesh_shape("none"), seed=61)


@case("clip_outliers", hidden=True, hints=CLIP_HINTS)
def clipped_under_jit(fn):
    return clipped_case(fn, mesh_shape("many"), seed=62, jit=True)


@case("clip_outliers", hidden=True, judge=no_more_bytes_than_a_row_gather)
def sends_no_more_with_more_model_devices(fn):
    return clipped_program(fn, mesh_shape("few"), seed=63)


@case("clip_outliers", hidden=True, judge=no_more_bytes_than_a_row_gather)
def sends_nothing_with_rows_over_every_device(fn):
    return clipped_program(fn, mesh_shape("all"), seed=64)
