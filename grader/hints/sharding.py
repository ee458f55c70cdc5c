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
HINT_SPEC_AXIS_TWICE = (
    "A mesh axis can split only one dimension: once an axis is in the spec, it is no longer "
    "free for the dimensions after it (JAX refuses P('x', 'x')). Keep track of the axes "
    "already used, and try another choice when the ones left cannot give a dimension its "
    "blocks."
)
HINT_SPEC_NEEDS_TUPLE = (
    "A dimension may need more blocks than any one axis has: a tuple entry splits it over "
    "several axes, into the product of their sizes (P(('x', 'y')) cuts it 8 ways on a 4 x 2 "
    "mesh). Look for a set of free axes whose sizes multiply to the number of blocks."
)
HINT_SPEC_NONE_EXISTS = (
    "No spec gives these blocks here: a block size must divide its dimension, and the number "
    "of blocks must be a product of sizes of distinct mesh axes. Raise ValueError then, "
    "rather than returning the closest spec."
)
HINT_SPEC_NOT_A_SPEC = (
    "Return a jax.sharding.PartitionSpec, P(...), with one entry per dimension you split (an "
    "axis name, a tuple of names, or None), not a tuple or a list."
)
HINT_NOT_PLACED = (
    "The result is not laid out by a NamedSharding: return jax.device_put(x, "
    "NamedSharding(mesh, spec)), with the template's mesh and the spec you worked out."
)
HINT_TRANSPOSED_TWICE = (
    "x already has the transposed shape: place it as it is, without transposing it again."
)
HINT_TRANSPOSED_PAD = (
    "Entries missing at the end of the template's spec mean 'not split', and after the "
    "reversal they belong at the front: pad the spec with None up to template.ndim, then "
    "reverse it."
)
HINT_TRANSPOSED_REVERSE = (
    "Dimension i of x is dimension ndim - 1 - i of the template: its spec entries must come "
    "in reverse order, the template's last entry first."
)
HINT_GIVEN_MESH = (
    "The array is not on the template's mesh: build the NamedSharding from "
    "template.sharding.mesh rather than from a mesh of your own (the tests use meshes with "
    "Explicit or Auto axes, whose devices are not always in order)."
)
HINT_HOLDING_ONE = (
    "Several devices hold a copy of a block when the spec leaves a mesh axis out: return "
    "every device whose block contains the element, not the first one (nor only the copy "
    "with replica_id 0)."
)
HINT_HOLDING_STOP = (
    "A block covers start <= i < stop: its stop is the first index of the next block, so a "
    "device whose block stops at i does not hold element i."
)
HINT_HOLDING_SORTED = (
    "The right devices, in the wrong order: JAX lists the shards in the mesh's order, which "
    "need not be by id. Return sorted(...) ids."
)
HINT_HOLDING_IDS = (
    "Return the devices' ids, device.id (ints), not the device objects."
)
#: Why the judge of spec_for_block refuses a spec, for one call (its inputs, in ``call``).
MSG_SPEC_CALL = "spec_for_block{call}: {problem}"
MSG_SPEC_SHOULD_RAISE = "returned {got}, but no spec gives these blocks: it should raise ValueError"
MSG_SPEC_RAISED = "raised ValueError, but a spec gives these blocks, for example {want}"
MSG_SPEC_NOT_A_SPEC = "returned {got}, not a PartitionSpec"
MSG_SPEC_TOO_LONG = "{got} has more entries than the array has dimensions"
MSG_SPEC_UNKNOWN_AXIS = "{got} names {name!r}, which is not an axis of the mesh"
MSG_SPEC_AXIS_TWICE = "{got} uses axis {name!r} more than once"
MSG_SPEC_UNEVEN = "{got} does not split the array evenly"
MSG_SPEC_OTHER_BLOCKS = "{got} gives blocks of shape {blocks}, not {want}"
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
