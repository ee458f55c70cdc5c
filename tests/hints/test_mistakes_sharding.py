"""The usual mistakes of lesson 1 (sharding), each written as a student would: does check()
fail it with the hint of that mistake, and no other hint? And does a correct function, written
here independently of solutions/, pass with no hint?"""

from __future__ import annotations

import itertools
import math

import jax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P
from mistakes import Mistakes, assert_only_hint, hidden_result, lesson_tests

from grader import messages as msg
from grader.course import EXERCISES
from grader.hints import common
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


def spec_for_block(global_shape, mesh_shape, block_shape):
    if len(global_shape) != len(block_shape):
        raise ValueError("one block size per dimension")
    wanted = []
    for size, block in zip(global_shape, block_shape, strict=True):
        if size == block:
            wanted.append(1)
        elif block < 1 or size % block:
            raise ValueError("no such blocks")
        else:
            wanted.append(size // block)
    axes = list(mesh_shape)
    # every way of giving each axis to one dimension or to none, the first that fits
    for owners in itertools.product(range(-1, len(wanted)), repeat=len(axes)):
        groups = [tuple(a for a, o in zip(axes, owners, strict=True) if o == d)
                  for d in range(len(wanted))]
        if all(math.prod(mesh_shape[a] for a in g) == w
               for g, w in zip(groups, wanted, strict=True)):
            return P(*(g if g else None for g in groups))
    raise ValueError("no spec")


def place_transposed(x, template):
    mesh, spec = template.sharding.mesh, list(template.sharding.spec)
    spec += [None] * (template.ndim - len(spec))
    return jax.device_put(x, NamedSharding(mesh, P(*spec[::-1])))


def block_map(x):
    return {shard.device.id: tuple((part.indices(size)[0], part.indices(size)[1])
                                   for part, size in zip(shard.index, x.shape, strict=True))
            for shard in x.addressable_shards}


def covers(shard, index, shape):
    return all(part.indices(size)[0] <= i < part.indices(size)[1]
               for part, i, size in zip(shard.index, index, shape, strict=True))


def devices_holding(arr, index):
    return sorted(s.device.id for s in arr.addressable_shards if covers(s, index, arr.shape))


CORRECT = {
    "is_congruent": is_congruent,
    "shard_shape": shard_shape,
    "spec_for_block": spec_for_block,
    "place_transposed": place_transposed,
    "block_map": block_map,
    "devices_holding": devices_holding,
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


# --- spec_for_block -------------------------------------------------------------------------
def single_axes(global_shape, mesh_shape, block_shape):
    """Looks for one axis per dimension and never thinks of a tuple."""
    spec, free = [], list(mesh_shape)
    for size, block in zip(global_shape, block_shape, strict=True):
        if size % block:
            raise ValueError("uneven")
        if size == block:
            spec.append(None)
            continue
        axis = next((a for a in free if mesh_shape[a] == size // block), None)
        if axis is None:
            raise ValueError("no axis of that size")
        spec.append(axis)
        free.remove(axis)
    return P(*spec)


@mistake("spec_for_block", hints.HINT_SPEC_NEEDS_TUPLE)
def never_combines_axes(global_shape, mesh_shape, block_shape):
    if len(global_shape) != len(block_shape):
        raise ValueError("one block size per dimension")
    return single_axes(global_shape, mesh_shape, block_shape)


@mistake("spec_for_block", hints.HINT_SPEC_AXIS_TWICE)
def reuses_an_axis(global_shape, mesh_shape, block_shape):
    if len(global_shape) != len(block_shape):
        raise ValueError("one block size per dimension")
    spec = []
    for size, block in zip(global_shape, block_shape, strict=True):
        if size % block:
            raise ValueError("uneven")
        groups = [g for k in range(len(mesh_shape) + 1)
                  for g in itertools.combinations(mesh_shape, k)
                  if math.prod(mesh_shape[a] for a in g) == size // block]
        if not groups:
            raise ValueError("no axes of that size")
        spec.append(groups[0] or None)
    return P(*spec)


@mistake("spec_for_block", hints.HINT_SPEC_NONE_EXISTS)
def rounds_the_number_of_blocks(global_shape, mesh_shape, block_shape):
    if len(global_shape) != len(block_shape):
        raise ValueError("one block size per dimension")
    return spec_for_block(global_shape, mesh_shape,
                          [size // max(1, size // block) for size, block
                           in zip(global_shape, block_shape, strict=True)])


@mistake("spec_for_block", hints.HINT_SPEC_NOT_A_SPEC)
def returns_a_tuple(global_shape, mesh_shape, block_shape):
    return tuple(spec_for_block(global_shape, mesh_shape, block_shape))


# --- place_transposed -----------------------------------------------------------------------
@mistake("place_transposed", hints.HINT_TRANSPOSED_PAD)
def reverses_the_spec_without_padding(x, template):
    sharding = template.sharding
    return jax.device_put(x, NamedSharding(sharding.mesh, P(*reversed(sharding.spec))))


@mistake("place_transposed", hints.HINT_TRANSPOSED_REVERSE)
def keeps_the_template_spec(x, template):
    return jax.device_put(x, template.sharding)


@mistake("place_transposed", hints.HINT_TRANSPOSED_TWICE)
def transposes_x_again(x, template):
    return place_transposed(x, template).T


@mistake("place_transposed", hints.HINT_GIVEN_MESH)
def builds_its_own_mesh(x, template):
    mesh = template.sharding.mesh
    own = jax.make_mesh(tuple(mesh.shape.values()), mesh.axis_names)
    spec = list(template.sharding.spec) + [None] * (template.ndim - len(template.sharding.spec))
    return jax.device_put(x, NamedSharding(own, P(*spec[::-1])))


@mistake("place_transposed", hints.HINT_NOT_PLACED)
def forgets_the_mesh(x, template):
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


# --- devices_holding ------------------------------------------------------------------------
@mistake("devices_holding", hints.HINT_HOLDING_ONE)
def stops_at_the_first_holder(arr, index):
    return next([s.device.id] for s in arr.addressable_shards if covers(s, index, arr.shape))


@mistake("devices_holding", hints.HINT_HOLDING_ONE, label="keeps-only-replica-0")
def keeps_only_the_first_copy(arr, index):
    return sorted(s.device.id for s in arr.addressable_shards
                  if s.replica_id == 0 and covers(s, index, arr.shape))


@mistake("devices_holding", hints.HINT_HOLDING_SORTED)
def lists_the_shards_in_their_order(arr, index):
    return [s.device.id for s in arr.addressable_shards if covers(s, index, arr.shape)]


@mistake("devices_holding", hints.HINT_HOLDING_STOP)
def counts_the_stop_as_inside(arr, index):
    return sorted(s.device.id for s in arr.addressable_shards
                  if all(part.indices(size)[0] <= i <= part.indices(size)[1]
                         for part, i, size in zip(s.index, index, arr.shape, strict=True)))


@mistake("devices_holding", hints.HINT_HOLDING_IDS)
def returns_the_devices(arr, index):
    return sorted((s.device for s in arr.addressable_shards if covers(s, index, arr.shape)),
                  key=lambda d: d.id)


(test_a_usual_mistake_gets_its_own_hint,
 test_every_exercise_of_the_lesson_has_two_mistakes_with_hints,
 test_a_correct_function_gets_no_hint) = lesson_tests(mistake, CORRECT, "01_sharding")


@mistake("shard_shape", common.HINT_DEVICES_SET_TOO_LATE)
def sets_the_device_count_itself(global_shape, mesh_shape, spec):
    jax.config.update("jax_num_cpu_devices", 4)  # JAX is running: refused
    return shard_shape(global_shape, mesh_shape, spec)


def test_a_block_map_of_slice_ends_gets_the_none_hint_in_check_and_from_the_grader():
    """(start, stop) read off each slice is right wherever every dimension is split, as in
    check()'s test on 8 devices; a dimension whole on every device has slice(None, None): on
    2 devices (where check() runs its test too) and in the grader's test of an array copied
    along x. Does each fail it with the hint about None?"""
    def block_map(x):
        return {shard.device.id: tuple((part.start, part.stop) for part in shard.index)
                for shard in x.addressable_shards}

    assert_only_hint(block_map, hints.HINT_BLOCK_MAP_NONE)
    wrong = hidden_result("block_map:columns_copied_along_x", block_map, CORRECT["block_map"])
    assert wrong.status == msg.FAILED and wrong.hint == hints.HINT_BLOCK_MAP_NONE
