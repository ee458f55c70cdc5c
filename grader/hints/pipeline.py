"""Hints of lesson 8 (pipeline parallelism): grader/public/pipeline.py and
grader/hidden/pipeline.py."""

from __future__ import annotations

import re

# --- microbatches_for_bubble ----------------------------------------------------------------
HINT_BUBBLE_OVER_USEFUL = (
    "These counts keep (n - 1) / m under the target: idle time over useful time. The bubble "
    "is the idle share of *all* (stage, tick) slots: each stage is idle n - 1 ticks out of "
    "the m + n - 1 the schedule lasts, so it is (n - 1) / (m + n - 1), and fewer microbatches "
    "are enough."
)
HINT_BUBBLE_TICKS = (
    "Count the ticks again: microbatch m - 1 enters stage 0 at tick m - 1 and leaves the last "
    "stage n - 1 ticks later, so the schedule lasts m + n - 1 ticks, not m + n."
)
HINT_BUBBLE_AT_MOST = (
    "One microbatch too many where the bubble lands exactly on the target: the bubble must be "
    "*at most* the target (<=), so an m whose bubble equals it is enough."
)

# --- gpipe_schedule -----------------------------------------------------------------------
HINT_SCHEDULE_TRANSPOSED = (
    "The schedule has one list per stage: it should have one list per tick (m + n - 1 of "
    "them), each with one entry per stage."
)
HINT_SCHEDULE_TICKS = (
    "The number of ticks is off: the last microbatch, m - 1, enters stage 0 at tick m - 1 "
    "and the last stage, n - 1, works on it n - 1 ticks later; that is m + n - 1 ticks in all."
)
HINT_SCHEDULE_IDLE = (
    "An idle stage is marked None, not a number (such as -1): a stage with no microbatch "
    "has nothing to name."
)
HINT_SCHEDULE_DIRECTION = (
    "Stage s works on microbatch t - s at tick t (it reaches stage s, s ticks after entering "
    "stage 0), when 0 <= t - s < m."
)

# --- fixed_pipeline -----------------------------------------------------------------------
HINT_FIX_BOTH = (
    "This is what the given pipeline computes: both bugs are still there. Follow one "
    "microbatch tick by tick: to which stage does ppermute send it, and into which slot of "
    "the outputs does the last stage write it?"
)
HINT_FIX_DIRECTION = (
    "The activations still travel backward: with pairs (i, i - 1) stage i sends to stage "
    "i - 1, and the last stage receives from stage 0 (around the ring). A pipeline sends "
    "forward, from stage i to stage i + 1. (On 2 devices both directions are the same "
    "ring, which is why this bug shows only on more.)"
)
HINT_FIX_SLOT = (
    "Every output is one microbatch late: output k holds microbatch k + 1's result. The "
    "last stage finishes microbatch k at tick k + n - 1, so the slot to write at tick t is "
    "t - (n - 1); t - n is one too few (and at t = n - 1 it is -1, the last slot)."
)

# --- pipeline_grads -----------------------------------------------------------------------
HINT_GRADS_M_TIMES = (
    "The gradients are m times too large (m microbatches): the mean is over all the "
    "m * B * D squared errors, so divide the summed errors by ys.size, not by the size of "
    "one microbatch."
)
HINT_GRADS_SCALAR_ONLY = (
    "The compiled program all-reduces activations: the outputs were sent from the last "
    "stage to every device (a psum of the outputs) and the loss computed after the "
    "shard_map. Compute the squared errors on the last stage, inside the loop, as each "
    "microbatch leaves it; then only one scalar needs a psum."
)
HINT_GRADS_SPLIT = (
    "The gradients must stay where the weights live: split over 'stage', device i holding "
    "the (1, D, D) gradient of its own layer. Give ws to the shard_map with in_specs "
    "P('stage') and differentiate the whole jitted loss with respect to ws; do not make ws "
    "replicated."
)

# --- deep_pipeline ------------------------------------------------------------------------
HINT_DEEP_ONE_LAYER = (
    "Each stage applied only the first of its layers: its block of ws has shape "
    "(L / n, D, D), and every one of those layers must be applied, in order, at each tick."
)
HINT_DEEP_NO_BIAS = (
    "The result is the model without its biases: each layer is tanh(h @ w + b), and the "
    "biases bs are split over 'stage' like the weights, each stage adding its own."
)
HINT_DEEP_WEIGHTS_MOVE = (
    "The compiled program gathers weights or biases: in a pipeline they never leave their "
    "stage. Give them to shard_map split over 'stage' (in_specs P('stage')), where each "
    "device sees only its own (L / n, D, D) block, and move only activations, with ppermute."
)
HINT_DEEP_NO_PERMUTE = (
    "No collective-permute was compiled, so no activation went from one stage to the next: "
    "each stage must pass its result on with jax.lax.ppermute at every tick."
)

# --- errors -------------------------------------------------------------------------------
HINT_CARRY_VARYING = (
    "The loop's carry started the same on every device (invariant) and came back different "
    "on each (varying, {V:stage}): a value computed from the device's own weights or "
    "received with ppermute varies. Start the carry varying: "
    "jax.lax.pcast(start, 'stage', to='varying')."
)

#: The errors JAX raises that are this lesson's, (pattern of the exception's text, hint).
ERRORS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"carry input and carry output must have equal types.*manual axis types",
                re.S), HINT_CARRY_VARYING),
)
