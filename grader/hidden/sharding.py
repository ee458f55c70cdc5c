"""Hidden tests of lesson 1 (sharding): only the grader runs them, on 8 devices and, for
exercises that must work on all devices, on 2 as well (and on 4 where a case says so). Mesh
shapes come from the device count: on 8 devices 4 x 2, 2 x 4 and 8 x 1; on 2 devices 1 x 2 and
2 x 1. Meshes are built with jax.make_mesh (Explicit axes) and jax.sharding.Mesh (Auto axes),
some with their devices in reverse order."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from grader.framework.cases import case
from grader.public.sharding import (
    BLOCK_HINTS,
    CONGRUENT_HINTS,
    HOLDING_HINTS,
    MESH_4X2,
    SHAPE_HINTS,
    SPEC_HINTS,
    TRANSPOSED_JUDGE,
    block_specs,
    congruence,
    every_index,
    grid,
    holders,
    mesh_xy,
    readable,
    shard_shapes,
    shuffled_mesh,
    specs_giving_the_blocks,
    template,
    transposed_placement,
)

MESH_2X3X2 = {"a": 2, "b": 3, "c": 2}


def blocks_per_dimension(spec: P, mesh_shape: dict[str, int], rank: int) -> tuple[int, ...]:
    """How many blocks ``spec`` cuts each of ``rank`` dimensions into."""
    entries = list(spec) + [None] * (rank - len(spec))
    return tuple(
        1 if entry is None else mesh_shape[entry] if isinstance(entry, str)
        else math.prod(mesh_shape[name] for name in entry)
        for entry in entries
    )


# --- is_congruent ---------------------------------------------------------------------------
@case("is_congruent", hidden=True, hints=CONGRUENT_HINTS)
def shapes_of_different_lengths(fn):
    return congruence(fn, [((8,), (4, 2)), ((8, 4), (4,)), ((), (1,)), ((4, 4, 4), (2, 2)),
                           ((), ()), ((6, 3), (3, 3, 1)), ((6, 3), (3, 3))])


@case("is_congruent", hidden=True, hints=CONGRUENT_HINTS)
def zero_sized_dimensions(fn):
    return congruence(fn, [((0,), (4,)), ((0, 6), (2, 3)), ((0, 5), (8, 2)), ((0, 0), (1, 1)),
                           ((3, 0), (3, 7)), ((0,), (1,))])


@case("is_congruent", hidden=True, hints=CONGRUENT_HINTS)
def dimensions_smaller_than_their_blocks(fn):
    return congruence(fn, [((2,), (4,)), ((4, 2), (8, 2)), ((3,), (3,)), ((12, 1), (4, 1)),
                           ((1, 1), (2, 1)), ((2, 8), (2, 16))])


@case("is_congruent", hidden=True, hints=CONGRUENT_HINTS)
def random_shapes(fn):
    rng = np.random.default_rng(60)
    pairs = []
    for _ in range(40):
        rank = int(rng.integers(0, 4))
        blocks_rank = rank if rng.random() > 0.15 else max(0, rank + int(rng.choice([-1, 1])))
        sizes = tuple(int(v) for v in rng.integers(0, 13, size=rank))
        counts = tuple(int(v) for v in rng.integers(1, 5, size=blocks_rank))
        pairs.append((sizes, counts))
    return congruence(fn, pairs)


@case("is_congruent", hidden=True, hints=CONGRUENT_HINTS)
def agrees_with_device_put(fn):
    """The shapes JAX accepts for real shardings on this machine's devices."""
    meshes = [mesh_xy(grid()), mesh_xy(grid(2))]
    specs = [P("x", "y"), P(("x", "y")), P(None, "y"), P("y", "x")]
    shapes = [(8, 4), (6, 4), (4, 6), (16, 2), (0, 2), (12, 10)]
    pairs, accepted = [], []
    for mesh in meshes:
        for spec in specs:
            for shape in shapes:
                pairs.append((shape, blocks_per_dimension(spec, dict(mesh.shape), len(shape))))
                try:
                    jax.device_put(np.zeros(shape, np.float32), NamedSharding(mesh, spec))
                    accepted.append(True)
                except ValueError:
                    accepted.append(False)
    return {**congruence(fn, pairs), "_jax_accepts": accepted}


# --- shard_shape ----------------------------------------------------------------------------
@case("shard_shape", hidden=True, hints=SHAPE_HINTS)
def missing_trailing_entries(fn):
    return shard_shapes(fn, [
        ((8, 6, 4), MESH_4X2, ("x",)),
        ((8, 6, 4), MESH_4X2, (None, "y")),
        ((4, 4, 4, 4), MESH_4X2, ("y", "x")),
        ((5, 7), MESH_4X2, ()),
        ((12, 5), MESH_2X3X2, ("b",)),
    ])


@case("shard_shape", hidden=True, hints=SHAPE_HINTS)
def tuple_entries(fn):
    return shard_shapes(fn, [
        ((12, 6), MESH_2X3X2, (("a", "b"), "c")),
        ((24,), MESH_2X3X2, (("a", "b", "c"),)),
        ((8, 4), MESH_4X2, (("x",), "y")),
        ((6, 4), MESH_2X3X2, (("b", "a"), None)),
        ((8, 8), {"x": 4, "y": 1}, (("x", "y"), None)),
        ((12, 6), MESH_2X3X2, (None, ("a", "b"))),
    ])


@case("shard_shape", hidden=True, hints=SHAPE_HINTS)
def zero_sized_dimensions_split(fn):
    return shard_shapes(fn, [
        ((0, 6), MESH_4X2, ("x", "y")),
        ((0,), MESH_2X3X2, (("a", "b", "c"),)),
        ((4, 0), MESH_4X2, (None, "y")),
        ((0, 5), MESH_4X2, ("x", "y")),
    ])


@case("shard_shape", hidden=True, hints=SHAPE_HINTS)
def uneven_splits_raise_value_error(fn):
    return shard_shapes(fn, [
        ((9, 4), MESH_4X2, ("x", None)),
        ((8, 4), MESH_2X3X2, ("b",)),
        ((18, 6), MESH_2X3X2, (("a", "b", "c"),)),
        ((6, 3), MESH_2X3X2, ("a", "c")),
        ((4, 4), MESH_4X2, ("x", "y")),
        ((2, 8), MESH_4X2, ("x", "y")),
    ])


@case("shard_shape", hidden=True, hints=SHAPE_HINTS)
def agrees_with_named_sharding(fn):
    """The block shapes (or the refusal) of real NamedShardings on this machine's devices."""
    n = jax.device_count()
    meshes = [(mesh_xy(grid()), [P("x", "y"), P(("x", "y")), P(None, ("y", "x")), P("y")])]
    if n % 4 == 0:
        three = jax.make_mesh((2, 2, n // 4), ("a", "b", "c"))
        meshes.append((three, [P(("a", "b"), "c"), P("c", None, ("a", "b")),
                               P(("a", "b", "c"))]))
    shapes = [(8, 4), (12, 6), (16, 2, 6), (6, 8, 4), (0, 4)]
    calls, refs = [], []
    for mesh, specs in meshes:
        for spec in specs:
            for shape in shapes:
                if len(spec) > len(shape):
                    continue
                calls.append((shape, dict(mesh.shape), tuple(spec)))
                try:
                    refs.append(list(NamedSharding(mesh, spec).shard_shape(shape)))
                except ValueError:
                    refs.append("ValueError")
    return {**shard_shapes(fn, calls), "_jax": refs}


# --- spec_for_block -------------------------------------------------------------------------
SPEC_JUDGE = specs_giving_the_blocks(SPEC_HINTS)


@case("spec_for_block", hidden=True, judge=SPEC_JUDGE)
def three_axis_mesh(fn):
    return block_specs(fn, [
        ((12, 6), MESH_2X3X2, (2, 3)),
        ((12,), MESH_2X3X2, (1,)),
        ((6, 4), MESH_2X3X2, (1, 1)),
        ((12, 6, 4), MESH_2X3X2, (4, 2, 2)),
        ((6, 6), MESH_2X3X2, (1, 6)),
        ((6, 6), MESH_2X3X2, (2, 2)),
        ((24, 5), MESH_2X3X2, (2, 5)),
    ])


@case("spec_for_block", hidden=True, judge=SPEC_JUDGE)
def axes_of_size_one_and_empty_dimensions(fn):
    ones = {"x": 4, "y": 1}
    return block_specs(fn, [
        ((8,), ones, (2,)),
        ((8, 3), ones, (8, 3)),
        ((0, 6), MESH_4X2, (0, 3)),
        ((0, 6), MESH_4X2, (2, 6)),
        ((8, 6), MESH_4X2, (0, 6)),
        ((), MESH_4X2, ()),
        ((8, 6), MESH_4X2, (2, 3, 1)),
    ])


@case("spec_for_block", hidden=True, judge=SPEC_JUDGE)
def every_block_shape_of_an_8x12_array(fn):
    """Every block shape (with sides that divide 8 and 12, and a few that do not), on the
    meshes this machine's devices make, from jax.make_mesh and from jax.sharding.Mesh."""
    meshes = [mesh_xy(grid()), mesh_xy(grid(2), auto=True), mesh_xy(grid(1), auto=True)]
    calls = [((8, 12), dict(mesh.shape), (rows, cols)) for mesh in meshes
             for rows in (1, 2, 3, 4, 8) for cols in (1, 2, 3, 5, 6, 12)]
    return block_specs(fn, calls)


# --- place_transposed -----------------------------------------------------------------------
@case("place_transposed", hidden=True, judge=TRANSPOSED_JUDGE)
def tuple_entry_on_an_explicit_mesh(fn):
    n = jax.device_count()
    return transposed_placement(fn, template((2 * n, 3), mesh_xy(grid(2)), P(("x", "y"), None),
                                             seed=51))


@case("place_transposed", hidden=True, judge=TRANSPOSED_JUDGE)
def one_axis_auto_mesh(fn):
    n = jax.device_count()
    mesh = Mesh(np.array(jax.devices()), ("i",))
    return transposed_placement(fn, template((3, 2 * n), mesh, P(None, "i"), seed=52))


@case("place_transposed", hidden=True, judge=TRANSPOSED_JUDGE)
def copies_and_a_third_dimension_on_a_shuffled_mesh(fn):
    rows, cols = grid()
    mesh = shuffled_mesh((rows, cols), ("x", "y"), auto=False)
    return transposed_placement(fn, template((2, 3 * rows, 2 * cols), mesh, P(None, "x"),
                                             seed=53))


@case("place_transposed", hidden=True, judge=TRANSPOSED_JUDGE, devices=(8, 2, 4))
def tuple_in_reverse_order_on_an_auto_mesh(fn):
    n = jax.device_count()
    mesh = shuffled_mesh(grid(), ("x", "y"), auto=True)
    return transposed_placement(fn, template((5, 2 * n, 2), mesh, P(None, ("y", "x")), seed=54))


@case("place_transposed", hidden=True, judge=TRANSPOSED_JUDGE)
def replicated_everywhere(fn):
    return transposed_placement(fn, template((3, 4), mesh_xy(grid()), P(), seed=55))


# --- block_map ------------------------------------------------------------------------------
def _placed(shape: tuple[int, ...], mesh: Mesh, spec: P, seed: int) -> jax.Array:
    data = np.random.default_rng(seed).normal(size=shape).astype(np.float32)
    return jax.device_put(data, NamedSharding(mesh, spec))


@case("block_map", hidden=True, hints=BLOCK_HINTS)
def columns_copied_along_x(fn):
    rows, cols = grid()
    return {"result": readable(fn(_placed((3, 2 * cols), mesh_xy((rows, cols)), P(None, "y"),
                                          seed=41)))}


@case("block_map", hidden=True, hints=BLOCK_HINTS)
def whole_array_on_every_device(fn):
    return {"result": readable(fn(_placed((4, 5), mesh_xy(grid(2)), P(), seed=42)))}


@case("block_map", hidden=True, hints=BLOCK_HINTS)
def three_dimensional_array(fn):
    rows, cols = grid(2)
    x = _placed((2, 2 * rows, 3 * cols), mesh_xy((rows, cols)), P(None, "x", "y"), seed=43)
    return {"result": readable(fn(x))}


@case("block_map", hidden=True, hints=BLOCK_HINTS)
def rows_over_both_axes_on_an_auto_mesh(fn):
    n = jax.device_count()
    x = _placed((2 * n, 3), mesh_xy(grid(2), auto=True), P(("y", "x")), seed=44)
    return {"result": readable(fn(x))}


@case("block_map", hidden=True, hints=BLOCK_HINTS)
def a_vector_and_a_single_device_array(fn):
    n = jax.device_count()
    vector = _placed((3 * n,), Mesh(jax.devices(), ("i",)), P("i"), seed=45)
    single = jnp.arange(6.0).reshape(2, 3)
    return {"result": readable(fn(vector)), "single_device": readable(fn(single))}


# --- devices_holding ------------------------------------------------------------------------
@case("devices_holding", hidden=True, hints=HOLDING_HINTS, devices=(8, 2, 4))
def copies_along_one_axis_of_an_explicit_mesh(fn):
    rows, cols = grid()
    arr = template((2 * rows, 3), shuffled_mesh((rows, cols), ("x", "y"), auto=False),
                   P("x", None), seed=61)
    return holders(fn, arr, every_index(arr.shape))


@case("devices_holding", hidden=True, hints=HOLDING_HINTS, devices=(8, 2, 4))
def rows_over_a_tuple_of_axes_on_an_auto_mesh(fn):
    n = jax.device_count()
    arr = template((2 * n, 2), shuffled_mesh(grid(2), ("x", "y"), auto=True), P(("y", "x")),
                   seed=62)
    return holders(fn, arr, every_index(arr.shape))


@case("devices_holding", hidden=True, hints=HOLDING_HINTS)
def three_dimensions_with_copies(fn):
    rows, cols = grid()
    arr = template((2, 2 * rows, 3), mesh_xy((rows, cols), auto=True), P("y", "x"), seed=63)
    return holders(fn, arr, every_index(arr.shape))


@case("devices_holding", hidden=True, hints=HOLDING_HINTS)
def everywhere_and_on_one_device(fn):
    whole = template((2, 3), mesh_xy(grid()), P(), seed=64)
    single = jnp.arange(6.0).reshape(2, 3)
    vector = template((jax.device_count(),), Mesh(jax.devices(), ("i",)), P("i"), seed=65)
    return {"result": [holders(fn, arr, every_index(arr.shape))["result"]
                       for arr in (whole, single, vector)]}
