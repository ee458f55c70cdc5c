"""Hints of lesson 4 (prng): grader/public/prng.py and grader/hidden/prng.py."""

from __future__ import annotations

import re

# --- hints: what the likely mistake is ----------------------------------------------------
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

HINT_NOISE_DIFFERS_OVER_MODEL = (
    "These are the noise of the first copy of each block, drawn from a key folded with the "
    "device's overall index (its position along 'model' too), with check_vma switched off so "
    "that shard_map let it through. Fold in only jax.lax.axis_index('data'): every copy of a "
    "row block then adds the same noise, stays a copy, and out_specs=P('data', None) holds."
)
HINT_NOISE_SAME_EVERY_BLOCK = (
    "Every row block got the same noise: the blocks drew from the same key. Fold the block's "
    "position along 'data' into the key with jax.random.fold_in(key, "
    "jax.lax.axis_index('data')) inside jax.shard_map."
)
HINT_NOISE_ONE_DRAW = (
    "This is one draw of noise for the whole array from the key itself. Here each row block "
    "draws its own, from jax.random.fold_in(key, i), i its position along 'data', inside "
    "jax.shard_map over the mesh x lives on."
)
HINT_NOISE_UNSCALED = (
    "The noise was not multiplied by scale: add scale * jax.random.normal(k, block.shape)."
)
HINT_NOISY_BOTH_BUGS = (
    "This is what the step as given returns: both bugs are still there. The dropout mask must "
    "be drawn on each device from jax.random.fold_in(drop_key, jax.lax.axis_index('data')), "
    "and the noise from noise_key itself, the same on every device."
)
HINT_NOISY_MASK_SHARED = (
    "The noise is right now, but every device still drops its rows with the same mask: fold "
    "the device's jax.lax.axis_index('data') into drop_key before jax.random.bernoulli."
)
HINT_NOISY_NOISE_PER_DEVICE = (
    "The masks are right now, but each device still adds noise of its own to its copy of "
    "params, and out_specs=P() returns device 0's copy (with check_vma=False nothing says "
    "the copies differ): draw the noise from noise_key itself, without the device's index."
)
HINT_NOISY_COMMUNICATION = (
    "The compiled step communicates other than the step as given: keep its one pmean of the "
    "gradients (one all-reduce) and add no collective; the fix is in which key each draw uses."
)
HINT_NOISE_COMMUNICATES = (
    "The compiled program moves data between devices, yet every device has what it needs: "
    "its block of x and the key. Draw inside jax.shard_map over the mesh x lives on, with "
    "in_specs and out_specs P('data', None), and gather nothing."
)
HINT_NOISE_LAYOUT = (
    "The result is not laid out as x: return it with out_specs=P('data', None) from a "
    "shard_map over the mesh x lives on (jax.typeof(x).sharding.mesh), rows split over "
    "'data' and a copy along 'model'."
)

#: The errors JAX raises that are this lesson's (pattern of the exception's text, hint): none
#: of its own; the error of noise that differs along 'model' is common's HINT_NOT_REPLICATED.
ERRORS: tuple[tuple[re.Pattern[str], str], ...] = ()
