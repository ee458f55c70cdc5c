"""Hints of lesson 10 (experts and overlap): grader/public/experts.py and
grader/hidden/experts.py."""

from __future__ import annotations

import re

# --- capacity_for_no_drops ----------------------------------------------------------------
HINT_CAPACITY_PER_GROUP = (
    "This is the capacity for all tokens taken as one group. Each group (device) fills its "
    "own buffers, so the capacity must hold the busiest expert of the busiest group: split "
    "expert_ids into n_groups consecutive groups and take the largest count of one expert "
    "within one group."
)
HINT_CAPACITY_AVERAGE = (
    "This is the average load, the tokens of a group shared evenly by the experts: routing is "
    "never that even. An expert chosen by k tokens of a group needs k rows there, so the "
    "capacity is the largest such k over the experts and the groups."
)
# --- dispatch_bytes -------------------------------------------------------------------------
HINT_BYTES_OWN_PIECE = (
    "This is the size of the whole buffer a device holds, (n_experts, capacity, d_model). In "
    "an all-to-all each device keeps the piece meant for itself: exchanged directly, it "
    "sends the other n - 1 devices their pieces: (n - 1) / n of its buffer."
)
HINT_BYTES_CAPACITY = (
    "The buffers have a fixed shape, (n_experts, capacity, d_model) with capacity = "
    "ceil(capacity_factor * tokens_per_device / n_experts): empty slots travel too, so the "
    "bytes depend on the capacity, not on how many tokens there are or were routed."
)
# --- top2_slots -----------------------------------------------------------------------------
HINT_SLOTS_FROM_ONE = (
    "The slots start at 1: a cumulative sum counts the choice itself. A choice's slot is the "
    "number of *earlier* choices of its group for the same expert, so the first one gets "
    "slot 0 (subtract the choice's own one-hot row from the cumulative count)."
)
HINT_SLOTS_PER_GROUP = (
    "The slots are counted across the groups: each group (a device, the first axis) has "
    "buffers of its own, so the count starts again at 0 in every group. Take the cumulative "
    "sum within each group, not over the flattened array."
)
HINT_TOP2_PRIORITY = (
    "The choices took their slots token by token (token 0's two choices, then token 1's...). "
    "Top-2 routing gives every first choice of a group its slot before any second choice: "
    "order the choices as all first choices, then all second choices (swap the tokens' axis "
    "with the choices' axis before the cumulative count), and put the slots back in place."
)
HINT_TOP2_SHARED = (
    "The second choices were counted on their own, from 0: they go into the same buffers as "
    "the first choices, after them. One count per expert, over the first choices and then "
    "the second ones."
)
HINT_SLOTS_DROPPED = (
    "Tokens whose slot is capacity or more do not fit in their expert's buffer: their slot "
    "must be -1 (jnp.where(slot < capacity, slot, -1))."
)
HINT_TRACED_VALUE = (
    "A value computed from the inputs was used where Python needs a concrete number (int(), "
    "an if, a Python list index, a shape). Under jax.jit the values are not known while the "
    "function is traced. Compute on whole arrays with jnp instead of looping over tokens: for "
    "example a one-hot matrix of the choices and its cumulative sum."
)
# --- moe_two_experts_per_device --------------------------------------------------------------
HINT_MOE_GATE = (
    "The outputs are those of the right experts, but not scaled by the gate: multiply each "
    "token's result by the router's probability of its expert (the largest of its softmax)."
)
HINT_MOE_ORDER = (
    "The values differ from the dense layer. After the first all_to_all (split_axis=0, "
    "concat_axis=0, tiled=True) a device holds the pieces of the senders one after the other: "
    "(n senders x 2 experts, C, d), so reshape it to (n, 2, C, d) and apply expert k of the "
    "device (w1[k], w2[k] of its block) to [:, k]; send the results back in that same order "
    "with the second all_to_all, then read each token's row at (its expert, its slot)."
)
HINT_MOE_TWO_ALL_TO_ALL = (
    "Expert parallelism moves the tokens, never the weights, and nothing else: exactly two "
    "all-to-all (there and back) in the compiled program. Keep the tokens split over "
    "'expert' (P('expert')), the router replicated, w1 and w2 split on their first axis, and "
    "exchange (E, capacity, d) buffers with jax.lax.all_to_all inside jax.shard_map; no "
    "all_gather of x, no psum."
)
# --- reduce_scatter_matmul ------------------------------------------------------------------
HINT_RS_NO_COLLECTIVE_OP = (
    "The compiled program reduces with a reduce-scatter or an all-reduce: the exercise asks "
    "for the reduce-scatter written as a ring of jax.lax.ppermute steps instead (no "
    "psum_scatter, no psum). Each device passes its running partial sum to its neighbour "
    "and adds its own partial product for the row block that sum is bound for."
)
HINT_RS_PERMUTES = (
    "The ring needs exactly n - 1 ppermutes on n devices (none on one): the first partial "
    "product is computed before any pass, and the sum that arrives after the last pass is "
    "the device's own row block, complete."
)
HINT_RS_BLOCK = (
    "The row blocks are complete sums but on the wrong devices: each device ends with the "
    "block of a neighbour. Device j must finish with rows block j: the running sum it holds "
    "at step s (of 0 .. n - 1) is bound for the block it will reach after the n - 1 - s "
    "passes still to come, so pick its partial product's rows from that block."
)

#: The errors JAX raises that are this lesson's, (pattern of the exception's text, hint).
ERRORS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"Abstract tracer value encountered where concrete value is expected|"
                r"TracerIntegerConversionError|TracerBoolConversionError"), HINT_TRACED_VALUE),
)
