"""Hints of lesson 4 (prng): grader/public/prng.py and grader/hidden/prng.py."""

from __future__ import annotations

import re

# --- hints: what the likely mistake is ----------------------------------------------------
HINT_SAME_KEY_EVERY_DEVICE = (
    "Every device drew the same numbers: they all used the same key. Give each device a key "
    "of its own inside shard_map: fold the device's jax.lax.axis_index('data') into the key "
    "with jax.random.fold_in, or, given one key per device, split the key array over 'data' "
    "(in_specs=P('data')) and draw from keys[0] of each block."
)
HINT_ONE_GLOBAL_DRAW = (
    "These are the numbers of one draw of the whole array from the key itself. Here every "
    "device must draw its own block, from jax.random.fold_in(key, jax.lax.axis_index('data')), "
    "inside jax.shard_map."
)
HINT_STACKED_LIKE_PMAP = (
    "The result has one row per device, stacked as pmap does. shard_map with "
    "out_specs=P('data') lays the blocks end to end: return a 1-D array of "
    "n_devices * n_per_device numbers."
)
HINT_NO_AXIS_INDEX = (
    "No jax.lax.axis_index('data') was traced: inside shard_map a device finds its position "
    "with axis_index, and fold_in mixes it into the key to give that device its own stream."
)
HINT_LEGACY_KEYS = (
    "The keys are raw uint32 pairs (the legacy jax.random.PRNGKey format). Return typed keys: "
    "jax.random.split of a typed key (jax.random.key) gives them; do not apply key_data."
)
HINT_KEYS_COUNT = (
    "There must be exactly one key per device: ask jax.random.split for jax.device_count() "
    "keys (called without a count, it makes two), then place them one per device."
)
HINT_KEYS_NOT_PLACED = (
    "Device i must hold key i: place the keys with jax.device_put(keys, NamedSharding(mesh, "
    "P('data'))) on a mesh of jax.devices() in order, one key per device."
)
HINT_KEY_BLOCK = (
    "Inside shard_map a device's block of a key array keeps its leading axis: it has shape "
    "(1,), not (), and samplers want a single key. pmap removed that axis; with shard_map, "
    "take the key out of the block with keys[0]."
)
HINT_MASK_PER_DEVICE = (
    "The mask depends on how x is split over devices: it was drawn per device. Draw one mask "
    "for the whole array, jax.random.bernoulli(key, 1 - rate, x.shape), under jax.jit: with "
    "jax_threefry_partitionable on, each device computes its own part of it, and the numbers "
    "are the same on any number of devices."
)
HINT_DROPOUT_UNSCALED = (
    "The kept values were not rescaled: divide them by (1 - rate), so that every entry keeps "
    "its expected value."
)
HINT_DROPOUT_KEEP_PROBABILITY = (
    "The mask keeps entries with probability rate instead of 1 - rate: the p of "
    "jax.random.bernoulli is the probability of True, here of keeping an entry."
)
HINT_DROPOUT_NOT_SPLIT = (
    "The result is not split over the devices like x: keep x as it comes (no gathering, no "
    "replicating); elementwise operations under jax.jit keep the sharding of x."
)
HINT_DROPOUT_COMMUNICATES = (
    "The compiled dropout moves data between devices, yet every device has what it needs: "
    "keep x split as it comes and draw the mask for x.shape under jax.jit, without gathering "
    "or replicating anything."
)

#: The errors JAX raises that are this lesson's, (pattern of the exception's text, hint).
ERRORS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"accepts a single key, but was given a key array of shape \(1,"), HINT_KEY_BLOCK),
)
