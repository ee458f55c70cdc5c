"""Hints of lesson 1 (sharding): grader/public/sharding.py and grader/hidden/sharding.py."""

from __future__ import annotations

import re

# --- hints: what the likely mistake is ----------------------------------------------------
HINT_CONGRUENT_LENGTH = (
    "A shape and a sharding shape of different lengths are never congruent: compare their "
    "lengths first (zip stops at the shorter one and hides the difference)."
)
HINT_CONGRUENT_ZERO = (
    "A dimension of size 0 splits into any number of empty blocks (0 % k == 0), so it is "
    "congruent: test divisibility with %, without comparing the sizes."
)
HINT_CONGRUENT_REVERSED = (
    "Is the test the right way round? Each dimension of x_shape must be a multiple of its "
    "number of blocks (size % blocks == 0), and a dimension smaller than its number of blocks "
    "is not."
)
HINT_SHARD_SHAPE_RAISE = (
    "When a dimension does not divide evenly into its blocks (for a tuple entry: into the "
    "product of the sizes of its axes), raise ValueError, as jax.device_put refuses such a "
    "layout, instead of rounding the block size."
)
HINT_SHARD_SHAPE_TUPLE = (
    "An entry that is a tuple of axis names splits its dimension over all of those axes: "
    "divide by the product of their sizes."
)
HINT_SHARD_SHAPE_INTEGERS = (
    "Block sizes are integers: once you know the dimension divides evenly, use // (/ gives "
    "floats)."
)
HINT_SHARD_SHAPE_MISSING = (
    "Entries missing at the end of the spec mean 'not split': the result has one entry per "
    "dimension of global_shape, however short the spec is."
)
HINT_NOT_PLACED = (
    "The result is not laid out by a NamedSharding: return jax.device_put(x, "
    "NamedSharding(mesh, spec)), the array placed on the mesh you were given."
)
HINT_GIVEN_MESH = (
    "The array is not on the mesh passed in: build the NamedSharding from the `mesh` "
    "argument rather than from a mesh of your own (the tests pass meshes of several shapes, "
    "with Explicit or Auto axes)."
)
HINT_SPEC_ORDER = (
    "Entry i of a PartitionSpec is for dimension i of the array: the rows are dimension 0, "
    "so P('x', 'y') splits the rows over 'x' and the columns over 'y'."
)
HINT_ROWS_ONLY = (
    "Only the rows are split: the columns need their own spec entry too, P('x', 'y')."
)
HINT_TUPLE_NOT_TWO = (
    "P(('x', 'y')) and P('x', 'y') differ: the first has one entry, a tuple, and splits the "
    "rows over both mesh axes; the second has two entries and splits the rows over 'x' and "
    "the columns over 'y'."
)
HINT_TUPLE_ORDER = (
    "Inside a tuple the order of the axis names matters: ('x', 'y') makes 'x' the major axis, "
    "so row block k goes to the device at x = k // size_y, y = k % size_y. Use P(('x', 'y'))."
)
HINT_ROWS_ONE_AXIS = (
    "The rows are split over one mesh axis only: split them over both with a tuple entry, "
    "P(('x', 'y'))."
)
HINT_REPLICATE_ROWS_SPLIT = (
    "The rows must stay whole (spec entry None) so that all devices of a mesh column hold the "
    "same block: P(None, 'y')."
)
HINT_REPLICATE_WRONG_AXIS = (
    "The columns are split over 'x': split them over 'y', P(None, 'y'), and the copies then "
    "run along 'x'."
)
HINT_REPLICATE_EVERYTHING = (
    "P() copies the whole array to every device, but the columns must still be split over "
    "'y': P(None, 'y')."
)
HINT_BLOCK_MAP_SLICES = (
    "Return (start, stop) pairs of ints, not slices: slice.indices(size) gives (start, stop, "
    "step) with the None bounds filled in."
)
HINT_BLOCK_MAP_NONE = (
    "A dimension that is not split appears as slice(None, None, None) in shard.index: report "
    "it as (0, size), for example with slice.indices(size)."
)
HINT_BLOCK_MAP_KEYS = (
    "Key the dict by the device's id, shard.device.id (an int), not by the device object."
)
HINT_BLOCK_MAP_OFFSETS = (
    "Every block starts at 0 in your result: the pairs must say where the block sits in the "
    "global array (shard.index tells), not only how large it is (shard.data.shape)."
)

#: The errors JAX raises that are this lesson's own: none beyond grader.hints.common's.
ERRORS: tuple[tuple[re.Pattern[str], str], ...] = ()
