"""Hints of lesson 7 (cost and memory): grader/public/cost.py and grader/hidden/cost.py."""

from __future__ import annotations

import re

MSG_PREDICTION = (
    "The prediction does not match what the compiled reference programs measure: {problem}"
)
MSG_OUTPUT_BYTES = (
    "One device holds {have} bytes of the outputs; the reference's holds {want}."
)
MSG_ZERO_TEMP = (
    "The compiled program needs {have} bytes of temporaries per device; at most {bound} were "
    "expected."
)
# --- training_state_bytes ------------------------------------------------------------------
HINT_STATE_FLOAT32 = (
    "Some answers are off by a factor of two: every array here is float32, 4 bytes per "
    "number, and the state is four arrays of n_params numbers each (the parameters, their "
    "gradients, Adam's first moment m and its second moment v)."
)
HINT_STATE_STAGES = (
    "Count four float32 arrays of n_params numbers (parameters, gradients, m, v), each either "
    "whole on every device or split into n_devices slices. Stage 0 splits nothing (16 bytes "
    "per parameter); stage 1 splits both of Adam's moments, stage 2 the gradients as well, "
    "stage 3 the parameters too (16 / n_devices bytes per parameter)."
)
# --- predicted_bytes_sent ------------------------------------------------------------------
HINT_SENT_RING = (
    "The bytes count the whole array once per collective. In a ring of n devices an "
    "all-reduce sends 2 (n - 1) / n times its operand per device (a reduce-scatter, then an "
    "all-gather of the n pieces); an all-gather sends n - 1 blocks, a reduce-scatter "
    "(n - 1) / n of its operand."
)
HINT_SENT_FSDP = (
    "FSDP's step has two collectives on the weights: the forward all-gathers the row blocks "
    "of w ((n - 1) blocks of d_in / n rows sent per device) and the backward reduce-scatters "
    "the gradient of the whole w ((n - 1) / n of it). Together they send as much as "
    "data parallelism's one all-reduce."
)
HINT_SENT_TP = (
    "Tensor parallelism here splits w by rows (d_in) and x by columns: what it all-reduces "
    "is the partial products x @ w, batch x d_out numbers, not the weights. That is why it "
    "wins when the batch is smaller than d_in."
)
# --- remat_mlp_grads -------------------------------------------------------------------------
MSG_TEMP = (
    "The compiled program needs {have} bytes of temporaries per device; at most {bound} were "
    "expected (plain backpropagation needs {plain})."
)
HINT_REMAT_PLAIN = (
    "The program keeps as many temporaries as plain backpropagation: nothing is "
    "rematerialised. Wrap the scan's body in jax.checkpoint, jax.lax.scan(jax.checkpoint("
    "mlp_layer), x, ws), so that the forward pass keeps only each layer's input and the "
    "backward pass recomputes the rest."
)
HINT_REMAT_LOOP = (
    "Rematerialisation did not save enough. On this CPU backend XLA merges a recomputation "
    "written as an unrolled Python loop with the forward pass (the lesson counts the dots), "
    "so only a checkpointed scan body, jax.lax.scan(jax.checkpoint(mlp_layer), x, ws), keeps "
    "its saving: the backward loop must recompute each layer from its input."
)
HINT_REMAT_PMEAN = (
    "The gradients are those of the first device's rows alone: average them over 'data' "
    "with jax.lax.pmean before returning them replicated (out_specs=P())."
)
HINT_REMAT_SUMMED = (
    "The gradients are n times too large: inside shard_map, jax.grad with respect to "
    "parameters that arrive replicated already sums over the devices. Make ws device-varying "
    "first with jax.lax.pcast(ws, 'data', to='varying'), then pmean the gradients."
)
# --- zero2_adam_step -------------------------------------------------------------------------
MSG_NO_REDUCE_SCATTER = (
    "The compiled program has no reduce-scatter (collectives: {counts}): ZeRO stage 2 "
    "reduce-scatters the gradients, so that each device gets only the mean of its own slice."
)
MSG_NO_ALL_GATHER = (
    "The compiled program has no all-gather (collectives: {counts}): the updated parameter "
    "slices must be gathered back on every device."
)
MSG_EXTRA_ALL_REDUCE = (
    "The compiled program all-reduces (collectives: {counts}), which the reference does not."
)
HINT_ZERO_ALL_REDUCE = (
    "An all-reduce gives every device the mean of the whole gradient, but a device only "
    "updates its own slice of the parameters: jax.lax.psum_scatter(g, 'data', "
    "scatter_dimension=0, tiled=True) gives each device the sum of just its slice (divide "
    "by n for the mean), and sends half the bytes of an all-reduce."
)
HINT_ZERO_SUMMED = (
    "The step used the sum of the devices' gradients instead of their mean: divide what "
    "psum_scatter returns by the number of devices."
)
HINT_ZERO_MOMENTS_SPLIT = (
    "The moments came back whole on every device: ZeRO keeps m and v split over 'data' "
    "(out_specs P('data')), each device holding the slice it updates."
)
HINT_ZERO_PARAMS_REPLICATED = (
    "The new parameters must be whole on every device: all_gather the updated slices "
    "(jax.lax.all_gather(p, 'data', tiled=True)) and return them with out_specs=P()."
)
# --- cheapest_step ---------------------------------------------------------------------------
MSG_MORE_BYTES = (
    "The compiled program sends {have} bytes per device; for {regime} the cheaper strategy "
    "sends {best}."
)
HINT_CHEAPEST_CHOICE = (
    "Choose by the sizes: dp all-reduces the weights' gradient (d_in * d_out numbers), tp "
    "all-reduces the partial products x @ w (batch * d_out numbers). For a batch smaller "
    "than d_in, tp (w split by rows, x by columns, y replicated) sends fewer bytes; "
    "otherwise dp (rows split, w replicated). The shapes are known when jit traces, so an "
    "ordinary Python if on x.shape[0] < w.shape[0] picks the program."
)
HINT_CHEAPEST_EXTRA = (
    "The right strategy for these sizes, but more communication than it needs. Inside "
    "shard_map, jax.grad with respect to a w that arrives replicated already adds the "
    "gradients up over 'data' (an all-reduce of its own); a pmean after it is a second one. "
    "In dp, jax.lax.pcast(w, 'data', to='varying') first, then one pmean."
)
HINT_CHEAPEST_SUMMED = (
    "The new weights moved n times too far: the gradient was summed over the devices. In "
    "dp, make w device-varying with jax.lax.pcast(w, 'data', to='varying') before jax.grad, "
    "then pmean the gradient."
)

#: The errors JAX raises that are this lesson's, (pattern of the exception's text, hint).
ERRORS: tuple[tuple[re.Pattern[str], str], ...] = ()
