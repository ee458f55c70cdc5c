"""Hidden tests of lesson 1 (sharding): only the grader runs them, on 8 devices and, for
exercises that must work on all devices, on 2 as well. Mesh shapes come from the device
count: on 8 devices 4 x 2, 2 x 4 and 8 x 1; on 2 devices 1 x 2 and 2 x 1."""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from grader.cases import case
from grader.hints import sharding as hints
from grader.judge import Hint, close
from grader.public.sharding import (
    BLOCK_HINTS,
    CONGRUENT_HINTS,
    MESH_4X2,
    REPLICATE_HINTS,
    ROWS_OVER_BOTH_HINTS,
    SHAPE_HINTS,
    SHARD_2D_HINTS,
    congruence,
    grid,
    guarded,
    matrix,
    mesh_xy,
    placed,
    placement,
    readable,
    shard_shapes,
)

MESH_2X3X2 = {"a": 2, "b": 3, "c": 2}


def blocks(x: Any) -> Any:
    """Which block each device holds: in device order, the offset where its block starts
    along every dimension, and which copy of that block it is."""
    if not isinstance(x, jax.Array):
        return "not a jax.Array"
    shards = sorted(x.addressable_shards, key=lambda s: s.device.id)
    return {
        "devices": [s.device.id for s in shards],
        "starts": [[part.indices(size)[0] for part, size in zip(s.index, x.shape, strict=True)]
                   for s in shards],
        "copy": [s.replica_id for s in shards],
    }


def mesh_of(x: Any) -> Any:
    """The mesh an array was placed on: axis names and types, and where each device sits."""
    sharding = getattr(x, "sharding", None)
    if not isinstance(sharding, NamedSharding):
        return "no mesh"
    mesh = sharding.mesh
    return {
        "names": [str(name) for name in mesh.axis_names],
        "types": [str(kind) for kind in mesh.axis_types],
        "device_ids": np.asarray(mesh.device_ids),
    }


def placed_on(x: Any) -> dict[str, Any]:
    """A placement with the block of every device and the mesh it is on."""
    return {**placed(x), "blocks": blocks(x), "mesh": mesh_of(x)}


given_mesh = Hint(
    guarded(lambda got, want: close(got["blocks"], want["blocks"])
          and not close(got["mesh"], want["mesh"])),
    hints.HINT_GIVEN_MESH,
)


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


# --- shard_2d -------------------------------------------------------------------------------
@case("shard_2d", hidden=True, judge=placement(SHARD_2D_HINTS))
def on_a_wide_mesh(fn):
    n = jax.device_count()
    return placed(fn(matrix((n, 2 * n), seed=11), mesh_xy(grid(2))))


@case("shard_2d", hidden=True, judge=placement(SHARD_2D_HINTS))
def on_a_tall_mesh(fn):
    n = jax.device_count()
    return placed(fn(matrix((2 * n, n), seed=12), mesh_xy(grid(n))))


@case("shard_2d", hidden=True, judge=placement(SHARD_2D_HINTS))
def on_an_auto_mesh(fn):
    n = jax.device_count()
    return placed(fn(matrix((n, n), seed=13, integers=True), mesh_xy(grid(), auto=True)))


@case("shard_2d", hidden=True,
      judge=placement([*SHARD_2D_HINTS, given_mesh], "blocks", "mesh"))
def blocks_sit_where_the_mesh_says(fn):
    n = jax.device_count()
    return placed_on(fn(matrix((2 * n, 3 * n), seed=14), mesh_xy(grid())))


# --- shard_rows_over_both -------------------------------------------------------------------
@case("shard_rows_over_both", hidden=True, judge=placement(ROWS_OVER_BOTH_HINTS))
def rows_over_both_on_a_wide_mesh(fn):
    n = jax.device_count()
    return placed(fn(matrix((3 * n, n), seed=21), mesh_xy(grid(2))))


@case("shard_rows_over_both", hidden=True, judge=placement(ROWS_OVER_BOTH_HINTS))
def rows_over_both_on_a_tall_auto_mesh(fn):
    n = jax.device_count()
    return placed(fn(matrix((n, n), seed=22, integers=True), mesh_xy(grid(n), auto=True)))


@case("shard_rows_over_both", hidden=True,
      judge=placement([*ROWS_OVER_BOTH_HINTS, given_mesh], "blocks", "mesh"))
def row_blocks_follow_the_mesh_order(fn):
    n = jax.device_count()
    return placed_on(fn(matrix((2 * n, n), seed=23), mesh_xy(grid())))


# --- replicate_over_x -----------------------------------------------------------------------
@case("replicate_over_x", hidden=True, judge=placement(REPLICATE_HINTS))
def copies_on_an_auto_mesh(fn):
    n = jax.device_count()
    return placed(fn(matrix((n, 3 * n), seed=31, integers=True), mesh_xy(grid(), auto=True)))


@case("replicate_over_x", hidden=True, judge=placement(REPLICATE_HINTS))
def copies_on_a_wide_mesh(fn):
    n = jax.device_count()
    return placed(fn(matrix((2 * n, n), seed=32), mesh_xy(grid(2))))


@case("replicate_over_x", hidden=True,
      judge=placement([*REPLICATE_HINTS, given_mesh], "blocks", "mesh"))
def every_device_of_a_mesh_column_holds_a_copy(fn):
    n = jax.device_count()
    return placed_on(fn(matrix((n, 2 * n), seed=33), mesh_xy(grid())))


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
