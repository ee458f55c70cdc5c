"""Hints of lesson 5 (training): grader/public/training.py and grader/hidden/training.py."""

from __future__ import annotations

import re

# --- hints: what the likely mistake is ----------------------------------------------------
HINT_DP_GRADS_SUMMED = (
    "The gradients are n times too large (n devices): they were summed over 'data' instead of "
    "averaged. Inside shard_map, jax.grad with respect to parameters that arrive replicated "
    "(in_specs P()) already sums their gradients over the devices, and a pmean of that sum "
    "changes nothing. Make the parameters device-varying first, with "
    "jax.lax.pcast(params, 'data', to='varying'), then pmean the gradients (and use pmean, "
    "not psum)."
)
HINT_DP_FORGOT_PMEAN = (
    "The gradients are those of the first device's rows alone: average the per-device "
    "gradients over 'data' with jax.lax.pmean before returning them with out_specs=P()."
)
HINT_DP_ONE_DEVICE = (
    "Everything ran on one device: the new parameters live on a single device and no "
    "all-reduce was compiled. Put the batch on the mesh you are given, its rows split over "
    "the mesh's axes, and the parameters replicated (P()), for example with the in_shardings "
    "and out_shardings of jax.jit."
)
HINT_DP_NOT_REPLICATED = (
    "Every device must hold the whole of each new parameter: return them replicated on the "
    "mesh you are given, for example with out_shardings=NamedSharding(mesh, P()) in jax.jit."
)
HINT_DP_EVERY_AXIS = (
    "Each device holds more of the batch than its share: the rows are split over some of the "
    "mesh's axes only, and the devices along the others repeat the same work on the same "
    "rows. Split the rows over all the axes together, P(mesh.axis_names), whatever their "
    "number and names."
)
MSG_RECEIVED = (
    "In the compiled program each device receives {have:,} bytes through collectives; one "
    "all-reduce of the gradients is {once:,}."
)
HINT_ACC_REDUCE_EACH = (
    "The gradients are averaged over 'data' more than once: a pmean inside the loop runs once "
    "per microbatch, and each one sends the whole gradient again. Add the microbatches' "
    "gradients up on each device first, and pmean the total once, after the loop."
)
MSG_ACC_TEMP = (
    "In the compiled program each device holds {have:,} bytes of temporaries; one "
    "microbatch's activations at a time take at most {bound:,}."
)
HINT_ACC_ALL_AT_ONCE = (
    "Each device holds the activations of all its rows at once. Differentiate one microbatch "
    "per turn of a jax.lax.scan (or jax.lax.fori_loop) whose carry is the running total of "
    "the gradients: a loop XLA sees reuses one microbatch's buffers, where a Python for loop "
    "is unrolled into one program in which XLA may keep every microbatch's activations alive "
    "at once (it does here)."
)
HINT_TPA_FORGOT_PSUM = (
    "The result is what the first 'model' block's heads contribute alone: each device's "
    "output projection gives a partial sum over its own heads; add the partial sums of all "
    "blocks with jax.lax.psum(..., 'model') after multiplying by wo."
)
HINT_TPA_ONE_ALL_REDUCE = (
    "Splitting attention by heads needs exactly one all-reduce and no other communication: "
    "with wq, wk and wv split along their heads dimension (P(None, 'model', None)) and wo "
    "along its heads dimension too (P('model')), each device computes the attention of its "
    "own heads from x whole (its batch rows), and one psum over 'model' adds the partial "
    "outputs. Nothing needs to be gathered: no weight, and no head's output."
)
HINT_TP_PSUM_AXIS = (
    "The partial outputs differ along 'model', so the psum must be over 'model'; each 'data' "
    "block keeps its own rows."
)
HINT_FSDP_TP_PSUM = (
    "The result is what the first 'model' block of hidden units computes alone: each device "
    "holds the partial output of its own hidden units; add them up with "
    "jax.lax.psum(..., 'model') after the second matmul."
)
HINT_FSDP_TP_GATHER = (
    "The program moves other blocks than it needs: FSDP gathers each weight over 'data' "
    "only, inside the shard_map (w1's rows, axis 0, P('data', 'model'); w2's columns, axis "
    "1, P('model', 'data')), so that a device holds the whole of its own hidden units' "
    "weights and never the other 'model' block; then one psum over 'model' joins the "
    "partial outputs. Nothing else moves: not x, not the hidden activations."
)
HINT_FSDP_GATHER_INSIDE = (
    "No all_gather over 'data' is traced. If the weights enter shard_map unsplit over 'data', "
    "jax.jit gathers them before the shard_map starts, out of your hands. Keep them split "
    "(w1 P('data', 'model'), w2 P('model', 'data')) and all_gather them inside, right where "
    "they are used."
)

HINT_GATHER_NOT_TILED = (
    "The two sides of a matrix product disagree on the length of the dimension they "
    "contract. If one of them comes from jax.lax.all_gather, pass tiled=True: without it, "
    "all_gather stacks the blocks on a new leading axis instead of joining them back into "
    "the whole matrix."
)

#: The errors JAX raises that are this lesson's, (pattern of the exception's text, hint).
ERRORS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"dot_general requires contracting dimensions to have the same shape"),
     HINT_GATHER_NOT_TILED),
)
