"""Hints of lesson 9 (sequence and context parallelism): grader/public/sequence.py and
grader/hidden/sequence.py."""

from __future__ import annotations

import re

# --- ring_bytes_per_device ------------------------------------------------------------------
HINT_RING_BYTES_N_STEPS = (
    "Your prediction is n/(n - 1) times what the compiled program sends: it counts a send at "
    "every one of the n steps. After the last step every device has seen every block, so "
    "the ring sends K and V only n - 1 times."
)
HINT_RING_BYTES_KEYS_ONLY = (
    "Your prediction is half of what the compiled program sends: every step passes on a block "
    "of the keys AND a block of the values, two (seq_len / n_devices, d_head) arrays."
)
HINT_RING_BYTES_WHOLE_SEQUENCE = (
    "Your prediction is n_devices times too large: a device sends only the block it holds, "
    "seq_len / n_devices positions of K and of V, never the whole sequence."
)
HINT_RING_BYTES_ELEMENTS = (
    "Your prediction counts elements, not bytes: multiply by itemsize, the bytes of one "
    "element (4 for float32, 2 for bfloat16)."
)

# --- sequence_softmax -------------------------------------------------------------------------
HINT_SOFTMAX_LOCAL_SUM = (
    "Each device's block of the result sums to 1 on its own: the softmax was normalised by the "
    "device's own sum of exponentials. Add the devices' sums up with jax.lax.psum(..., 'seq') "
    "before dividing."
)
HINT_SOFTMAX_LOCAL_MAX = (
    "Each device subtracted its own maximum, so the devices' exponentials are on different "
    "scales and their sum mixes them. Take the maximum over the whole sequence first, "
    "jax.lax.pmax(local_max, 'seq'), and subtract that on every device."
)
HINT_SOFTMAX_GATHERED = (
    "The compiled program all-gathers: the whole sequence was brought onto every device. Each "
    "device only needs two numbers per row from the others, the maximum (pmax) and the sum of "
    "exponentials (psum); its own block of scores can stay where it is, split over 'seq'."
)
HINT_SOFTMAX_NO_ALL_REDUCE = (
    "The compiled program has no all-reduce: the softmax was computed on whole rows, not on "
    "the blocks of a split sequence. Keep the scores split, P(None, 'seq'), inside "
    "jax.shard_map, and combine the devices' maxima and sums with jax.lax.pmax and psum."
)
HINT_SOFTMAX_PMAX = (
    "No pmax over 'seq' is traced: the maximum subtracted before the exponential must be the "
    "maximum of the whole row, jax.lax.pmax(x.max(axis=-1, keepdims=True), 'seq')."
)

# --- causal_gathered_attention and causal_ring_attention --------------------------------------
HINT_CAUSAL_NO_MASK = (
    "The result is full attention, with no causal mask: a query at position p may only attend "
    "to keys at positions j <= p. Set the scores of later keys to -inf before the softmax."
)
HINT_CAUSAL_LOCAL_QUERY_POSITIONS = (
    "The mask compares the queries' positions within their block (0 to block - 1) with the "
    "keys' global positions: every device masks as if its queries came first. A query's "
    "global position is jax.lax.axis_index('seq') * block + its index in the block."
)
HINT_CAUSAL_GATHERED_QUERIES = (
    "The compiled program gathers more than the blocks of K and V: the queries (or the whole "
    "output) are brought onto every device. Keep q split, P('seq'), and all_gather only k and "
    "v inside the shard_map; each device computes the rows of its own queries."
)
HINT_RING_LOCAL_POSITIONS = (
    "The mask compares positions within the blocks (0 to block - 1) on both sides, as if every "
    "block a device receives were its own. At step s device i holds the K/V block of device "
    "(i - s) mod n when blocks go to i + 1: mask with the global positions of that block."
)
HINT_RING_WRONG_BLOCK = (
    "The mask is computed for the wrong block: when device i sends to device i + 1, after s "
    "steps it holds the block that started on device (i - s) mod n, not (i + s) mod n. On two "
    "devices the two are the same, which is why it only shows on more."
)
HINT_RING_GATHERED = (
    "The compiled program all-gathers: ring attention never brings the whole of K or V onto a "
    "device. Pass one block on at each step with jax.lax.ppermute(..., 'seq', perm), where "
    "perm sends device i's block to device (i + 1) % n, and accumulate with the online softmax."
)
HINT_RING_NO_PERMUTE = (
    "No collective-permute is compiled: the blocks of K and V must travel round the ring, with "
    "jax.lax.ppermute inside the shard_map, n - 1 times."
)

# --- multihead_ring_attention -----------------------------------------------------------------
HINT_HEADS_MERGED = (
    "The result is one attention over all heads' features together: the heads were merged "
    "(reshaped to (L, heads * d)) before the scores. Each head has its own scores, "
    "q[:, h] @ k[:, h].T, and its own softmax: keep the heads axis as a batch axis, for "
    "example jnp.einsum('qhd,khd->hqk', q, k)."
)
HINT_NO_RESCALE = (
    "The output and the running sum were not rescaled when the running maximum grew: what was "
    "summed under the old maximum m must be multiplied by exp(m - m_new) before the new "
    "block's terms are added, for the sum and for the output alike."
)

# --- messages of this lesson's own judges -----------------------------------------------------
MSG_NOT_COUNTED = (
    "your prediction, {got} bytes, is not what each device sends in the compiled ring "
    "attention: {counted} bytes"
)
MSG_COMPILED_FORBIDDEN = "the compiled code has an {op}, which this exercise must do without"
MSG_COMPILED_MISSING = "the compiled code has no {op}, so no data moved between devices"

#: The errors JAX raises that are this lesson's, (pattern of the exception's text, hint).
ERRORS: tuple[tuple[re.Pattern[str], str], ...] = ()
