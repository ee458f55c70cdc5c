"""The usual mistakes of lesson 1 (sharding), each written as a student would: does check()
fail it with the hint of that mistake, and no other hint? And does a correct function, written
here independently of solutions/, pass with no hint?"""

from __future__ import annotations

import math

import jax
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P
from mistakes import Mistakes, assert_only_hint, assert_passes_without_hint

from grader.course import EXERCISES
from grader.hints import sharding as hints

mistake = Mistakes()
LESSON = [e.name for e in EXERCISES if e.lesson == "01_sharding"]


# --- correct functions ----------------------------------------------------------------------
def is_congruent(x_shape, sharding_shape):
    return len(x_shape) == len(sharding_shape) and all(
        size % blocks == 0 for size, blocks in zip(x_shape, sharding_shape, strict=True))


def blocks_of(entry, mesh_shape):
    names = () if entry is None else (entry,) if isinstance(entry, str) else tuple(entry)
    return math.prod(mesh_shape[name] for name in names)


def shard_shape(global_shape, mesh_shape, spec):
    entries = list(spec) + [None] * (len(global_shape) - len(spec))
    shape = []
    for size, entry in zip(global_shape, entries, strict=True):
        blocks = blocks_of(entry, mesh_shape)
        if size % blocks:
            raise ValueError(f"{size} does not split into {blocks} blocks")
        shape.append(size // blocks)
    return tuple(shape)


def placer(*spec):
    def place(x, mesh):
        return jax.device_put(x, NamedSharding(mesh, P(*spec)))

    return place


def block_map(x):
    return {shard.device.id: tuple((part.indices(size)[0], part.indices(size)[1])
                                   for part, size in zip(shard.index, x.shape, strict=True))
            for shard in x.addressable_shards}


CORRECT = {
    "is_congruent": is_congruent,
    "shard_shape": shard_shape,
    "shard_2d": placer("x", "y"),
    "shard_rows_over_both": placer(("x", "y")),
    "replicate_over_x": placer(None, "y"),
    "block_map": block_map,
}
for _name, _fn in CORRECT.items():
    _fn.__name__ = _fn.__qualname__ = _name


# --- is_congruent ---------------------------------------------------------------------------
@mistake("is_congruent", hints.HINT_CONGRUENT_LENGTH)
def zips_without_comparing_lengths(x_shape, sharding_shape):
    return all(size % blocks == 0 for size, blocks in zip(x_shape, sharding_shape))  # noqa: B905


@mistake("is_congruent", hints.HINT_CONGRUENT_REVERSED)
def divides_the_blocks_by_the_size(x_shape, sharding_shape):
    return len(x_shape) == len(sharding_shape) and all(
        blocks % size == 0 if size else True
        for size, blocks in zip(x_shape, sharding_shape, strict=True))


@mistake("is_congruent", hints.HINT_CONGRUENT_ZERO)
def wants_at_least_one_entry_per_block(x_shape, sharding_shape):
    return len(x_shape) == len(sharding_shape) and all(
        size >= blocks and size % blocks == 0
        for size, blocks in zip(x_shape, sharding_shape, strict=True))


# --- shard_shape ----------------------------------------------------------------------------
@mistake("shard_shape", hints.HINT_SHARD_SHAPE_INTEGERS)
def divides_with_a_slash(global_shape, mesh_shape, spec):
    entries = list(spec) + [None] * (len(global_shape) - len(spec))
    return tuple(size / blocks_of(entry, mesh_shape)
                 for size, entry in zip(global_shape, entries, strict=True))


@mistake("shard_shape", hints.HINT_SHARD_SHAPE_MISSING)
def stops_at_the_end_of_the_spec(global_shape, mesh_shape, spec):
    shape = []
    for size, entry in zip(global_shape, spec):  # noqa: B905
        blocks = blocks_of(entry, mesh_shape)
        if size % blocks:
            raise ValueError("uneven")
        shape.append(size // blocks)
    return tuple(shape)


@mistake("shard_shape", hints.HINT_SHARD_SHAPE_TUPLE, also=(hints.HINT_SHARD_SHAPE_RAISE,))
def uses_the_first_axis_of_a_tuple(global_shape, mesh_shape, spec):
    first = [entry[0] if isinstance(entry, tuple) else entry for entry in spec]
    return shard_shape(global_shape, mesh_shape, first)


@mistake("shard_shape", hints.HINT_SHARD_SHAPE_RAISE)
def rounds_instead_of_raising(global_shape, mesh_shape, spec):
    entries = list(spec) + [None] * (len(global_shape) - len(spec))
    return tuple(size // blocks_of(entry, mesh_shape)
                 for size, entry in zip(global_shape, entries, strict=True))


# --- shard_2d, shard_rows_over_both, replicate_over_x ---------------------------------------
PLACEMENTS = [
    ("shard_2d", hints.HINT_SPEC_ORDER, ("y", "x")),
    ("shard_2d", hints.HINT_TUPLE_NOT_TWO, (("x", "y"),)),
    ("shard_2d", hints.HINT_ROWS_ONLY, ("x",)),
    ("shard_rows_over_both", hints.HINT_TUPLE_ORDER, (("y", "x"),)),
    ("shard_rows_over_both", hints.HINT_TUPLE_NOT_TWO, ("x", "y")),
    ("shard_rows_over_both", hints.HINT_ROWS_ONE_AXIS, ("x",)),
    ("replicate_over_x", hints.HINT_REPLICATE_ROWS_SPLIT, ("y",)),
    ("replicate_over_x", hints.HINT_REPLICATE_WRONG_AXIS, (None, "x")),
    ("replicate_over_x", hints.HINT_REPLICATE_EVERYTHING, ()),
]
for _exercise, _hint, _spec in PLACEMENTS:
    mistake(_exercise, _hint, f"P{_spec}")(placer(*_spec))


@mistake("shard_2d", hints.HINT_NOT_PLACED)
def forgets_the_mesh(x, mesh):
    return jax.device_put(x, jax.devices()[0])


# --- block_map ------------------------------------------------------------------------------
@mistake("block_map", hints.HINT_BLOCK_MAP_SLICES)
def returns_the_slices(x):
    return {shard.device.id: shard.index for shard in x.addressable_shards}


@mistake("block_map", hints.HINT_BLOCK_MAP_OFFSETS)
def returns_block_sizes_from_zero(x):
    return {shard.device.id: tuple((0, size) for size in shard.data.shape)
            for shard in x.addressable_shards}


@mistake("block_map", hints.HINT_BLOCK_MAP_KEYS)
def keys_by_device(x):
    return {shard.device: tuple(part.indices(size)[:2]
                                for part, size in zip(shard.index, x.shape, strict=True))
            for shard in x.addressable_shards}


@pytest.mark.parametrize("fn, hint, also", mistake.params)
def test_a_usual_mistake_gets_its_own_hint(fn, hint, also):
    """Does this mistaken function fail check() with the hint for its mistake, and no hint
    that would point elsewhere?"""
    assert_only_hint(fn, hint, also)


def test_every_exercise_of_the_lesson_has_two_mistakes_with_hints():
    """Does each exercise of lesson 1 have at least two mistakes whose hints are tested?"""
    counts = {name: 0 for name in LESSON}
    for param in mistake.params:
        counts[param.values[0].__name__] += 1
    assert min(counts.values()) >= 2, counts


@pytest.mark.parametrize("name", LESSON)
def test_a_correct_function_gets_no_hint(name):
    """Does a correct function of each exercise pass check() with no hint at all?"""
    assert_passes_without_hint(CORRECT[name])
