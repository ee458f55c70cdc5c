"""Hidden tests of lesson 2 (jit and sharding propagation): only the grader runs them, on 8
devices and, for exercises that must work on all devices, on 2 as well."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, SingleDeviceSharding
from jax.sharding import PartitionSpec as P

from grader.cases import case
from grader.probes import hlo_collectives
from grader.public.jit_sharding import (
    affine_inputs,
    affine_mesh,
    auto_mesh,
    column_matrix,
    columns_not_split,
    constrained_late,
    counted_twice,
    explicit_product,
    line_mesh,
    matmul_without_communication,
    mesh_shape,
    normalized,
    norms_from_rows,
    on_one_device,
    placement,
    read_lowered,
    replicate_then,
    row_split,
    same_axis_twice,
    sharded_affine,
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
@case("make_sharded_affine", hidden=True, hints=[on_one_device, w_whole])
def random_inputs_on_a_mesh_with_more_model_devices(fn):
    return sharded_affine(fn, mesh_shape("few"), seed=30)


@case("make_sharded_affine", hidden=True, hints=[on_one_device, w_whole])
def every_device_on_data(fn):
    return sharded_affine(fn, mesh_shape("all"), seed=31)


@case("make_sharded_affine", hidden=True, hints=[on_one_device, w_whole])
def every_device_on_model(fn):
    return sharded_affine(fn, mesh_shape("none"), seed=32)


@case("make_sharded_affine", hidden=True, hints=[on_one_device, w_whole])
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


# --- explicit_matmul ------------------------------------------------------------------------
@case("explicit_matmul", hidden=True, hints=[columns_not_split])
def on_a_mesh_with_more_columns(fn):
    return explicit_product(fn, mesh_shape("few"), seed=40)


@case("explicit_matmul", hidden=True, hints=[columns_not_split])
def contraction_split_over_every_device(fn):
    return explicit_product(fn, mesh_shape("none"), seed=41)


@case("explicit_matmul", hidden=True, hints=[columns_not_split])
def rows_split_over_every_device(fn):
    return explicit_product(fn, mesh_shape("all"), seed=42)


@case("explicit_matmul", hidden=True, hints=[columns_not_split])
def works_under_jit(fn):
    return explicit_product(fn, mesh_shape("many"), seed=43, jit=True)
