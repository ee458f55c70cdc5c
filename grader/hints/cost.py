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
# --- bytes_sent_2d ---------------------------------------------------------------------------
HINT_2D_GROUP = (
    "Both collectives were counted over all data * model devices. Each runs over one axis "
    "only: the psum over 'model' among the model devices that share a block of rows of x "
    "(2 (model - 1) / model times its operand), the pmean over 'data' among the data "
    "devices that hold the same rows of w (2 (data - 1) / data times its operand)."
)
HINT_2D_OPERAND = (
    "The operands were taken whole. A collective's operand is the block one device holds: "
    "the partial products of its batch / data rows of x, (batch / data) x d_out numbers, and "
    "the gradient of its d_in / model rows of w, (d_in / model) x d_out numbers."
)
HINT_2D_RING = (
    "Each operand was counted once. Under the course's traffic model an all-reduce over k "
    "devices sends 2 (k - 1) / k times its operand per device (a reduce-scatter, then an "
    "all-gather), and nothing over a group of one."
)
HINT_2D_BOTH = (
    "Only one of the two collectives was counted. The step has both: the psum over 'model' "
    "of the partial products x @ w (activations, as in tp) and the pmean over 'data' of the "
    "gradient of w's rows (weights, as in dp)."
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
# --- best_mesh_step --------------------------------------------------------------------------
MSG_MORE_BYTES = (
    "The compiled program sends {have} bytes per device; on the mesh shape that sends the "
    "fewest for these sizes, the step sends {best}."
)
HINT_MESH_ONE_AXIS = (
    "The program sends what the step sends on a 1-D shape, (n, 1) (all data parallel) or "
    "(1, n) (all tensor parallel), and another shape sends fewer bytes here. Count, for every "
    "(data, model) with data * model = n, what exercise 2 counts: the psum over 'model' of "
    "(batch / data) x d_out partial products and the pmean over 'data' of the gradient of "
    "(d_in / model) x d_out rows of w; then build the mesh with the smallest count."
)
HINT_MESH_LAYOUT = (
    "The new w does not come back laid out as on the cheapest mesh shape for these sizes "
    "(split by rows over 'model', the same rows on every device of 'data'). Count the bytes "
    "of every (data, model) with data * model = n, as exercise 2 does, build the mesh with "
    "the smallest count, and return w with out_specs=P('model', None)."
)
HINT_MESH_SHAPE = (
    "The program sends what the step sends on another 2-D shape than the cheapest. Check "
    "which axis does what: the psum runs over 'model' and its operand shrinks with 'data' "
    "(batch / data rows), the pmean runs over 'data' and its operand shrinks with 'model' "
    "(d_in / model rows of w). jax.make_mesh((data, model), ('data', 'model')) puts them in "
    "that order."
)
HINT_MESH_EXTRA = (
    "The program sends more than the step sends on any mesh shape: it has a collective the "
    "step does not need. Inside shard_map, jax.grad with respect to a w that is the same on "
    "every device of 'data' already adds the gradients up over 'data'; a pmean after it is "
    "a second all-reduce (average the loss over 'data' instead, or pcast w to varying "
    "first). And return the new w split by rows over 'model', as it is stored: gathering it "
    "is an all-gather more."
)
HINT_MESH_SUMMED = (
    "The new weights moved too far: the gradient was summed over 'data', not averaged. "
    "jax.grad of a w that arrives the same on every device of 'data' sums what the devices "
    "compute; average the loss over 'data' with jax.lax.pmean inside the function you "
    "differentiate, or pcast w to varying over 'data' and pmean the gradient."
)

#: The errors JAX raises that are this lesson's, (pattern of the exception's text, hint).
ERRORS: tuple[tuple[re.Pattern[str], str], ...] = ()
