"""Hints of lesson 11 (the capstone): grader/public/capstone.py and
grader/hidden/capstone.py."""

from __future__ import annotations

import re

# --- adam_state_bytes -----------------------------------------------------------------------
HINT_STATE_WHOLE = (
    "This counts every array whole on each device. A device holds one block of each: a "
    "dimension whose spec names an axis is split over that axis's devices (over both, for a "
    "pair such as ('data', 'model')), and only the dimensions the spec leaves None stay whole."
)
HINT_STATE_MOMENTS = (
    "This counts the weights alone, or without Adam's moments. The state holds three float32 "
    "arrays per weight, each laid out like the weight: the weight, its first moment m and its "
    "second moment v; and the step count, one int32 of 4 bytes on every device."
)
HINT_STATE_ALL_DEVICES = (
    "This divides every array by all the devices. A spec splits an array only over the axes it "
    "names: over the others it is replicated, every device holding the same block. A weight "
    "P('data') on a data x model mesh is split data ways, not data * model."
)
# --- fsdp_gather_bytes ----------------------------------------------------------------------
HINT_GATHER_REMAT = (
    "This is the count for the other setting of remat. Without rematerialisation the backward "
    "pass uses the gathered weights the forward pass kept: each weight is gathered once. With "
    "jax.checkpoint and a policy that saves products only (no gathered weight), the backward "
    "pass recomputes the block, its gathers included: twice."
)
HINT_GATHER_MODEL_BLOCK = (
    "This counts each device gathering the whole weight. Over 'data' a device gathers only its "
    "block along 'model': w1 stays split by its columns, w2 by its rows, so the gathered "
    "block is 1/model of the weight, and each device sends its (data - 1) pieces of that."
)
HINT_GATHER_RING = (
    "An all-gather over g devices sends, under lesson 7's model, g - 1 blocks: each device "
    "passes its block on around the ring until everyone has every block. Count (data - 1) "
    "times the block a device stores (d_model * d_hidden / (data * model) numbers per weight), "
    "not its own block once, nor the whole gathered weight."
)
# --- checkpoint_bytes -----------------------------------------------------------------------
HINT_CKPT_EVERY_COPY = (
    "This counts every copy of a replicated block writing all of it: the checkpoint would hold "
    "each block as many times as it has copies. A block held by r devices (r = the product of "
    "the sizes of the mesh axes its spec does not name) is written once in all."
)
HINT_CKPT_FIRST_COPY = (
    "This gives a replicated block to its first copy alone. Orbax shares the work: each of "
    "the r copies writes one r-th of the block, cut along the block's first dimension that r "
    "divides; only a block that no dimension splits evenly is written whole by its first copy."
)
HINT_CKPT_INDIVISIBLE = (
    "A block that no dimension splits evenly into r parts (a scalar, a block of 3 rows on 2 "
    "copies) cannot be shared: Orbax leaves it whole to its first copy, the device at position "
    "0 along every mesh axis the spec does not name. Bytes come in whole elements."
)
# --- fixed_tp_step --------------------------------------------------------------------------
MSG_TP_SENT = (
    "over {axis!r} one device sends {mine:,.0f} bytes per step ({kinds}), where the reference "
    "fix sends {theirs:,.0f}"
)
MSG_TP_NOT_MEASURED = "the bytes the compiled step sends per mesh axis could not be measured"
HINT_TP_GATHERS = (
    "The step all-gathers over 'model', which tensor parallelism never needs: each device "
    "computes its own hidden units, and only the partial sums of each block's output are "
    "all-reduced over 'model' (once in the forward pass, once in the backward pass). A weight "
    "split along the wrong dimension makes JAX gather the activations it multiplies instead: "
    "print each all-gather's operand shapes, find which array moves, and check which "
    "dimension of each weight holds the hidden units."
)
HINT_TP_WHOLE_GRADIENTS = (
    "Over 'data' the step reduces more than its share: with the hidden units split over "
    "'model', each device holds and reduces over 'data' the gradient of its own half of each "
    "weight. Weights kept whole (replicated over 'model') reduce whole gradients."
)
HINT_TP_LAYOUT = (
    "The new weights come back split another way than tensor parallelism stores them: each "
    "by its hidden units over 'model' (w1 by its last dimension, w2 by its middle one, its "
    "rows) and by nothing else: split over 'data' too, the next step would gather them (FSDP, "
    "not this step); kept whole, they are not split at all."
)
# --- mqa_specs ------------------------------------------------------------------------------
MSG_MQA_NOT_SPECS = (
    "mqa_specs returned {got}: a dict with one PartitionSpec for each of the weights {names} "
    "is wanted"
)
MSG_MQA_BAD_SPEC = "mqa_specs returned {spec} for {name!r} (shape {shape}): {why}"
MSG_MQA_TOO_LONG = "the spec has more entries than the weight has dimensions"
MSG_MQA_AXIS = "{axis!r} is not an axis of the mesh, whose axes are {axes}"
MSG_MQA_TWICE = "the axis {axis!r} is named twice"
MSG_MQA_INDIVISIBLE = (
    "it cannot split dimension {dim} (size {size}) over {axes} ({parts} devices), which does "
    "not divide it"
)
MSG_MQA_VALUES = (
    "the layer placed with these specs does not compute what it computes on one device "
    "(within rtol {rtol:g}, atol {atol:g})"
)
MSG_MQA_BYTES = (
    "with these specs each device holds {mine:,.0f} bytes of weights, where the reference's "
    "specs leave {theirs:,.0f}"
)
MSG_MQA_SENT = (
    "over {axis!r} one device sends {mine:,.0f} bytes per forward pass ({kinds}), where the "
    "reference's specs send {theirs:,.0f}"
)
HINT_MQA_MEGATRON = (
    "A weight is kept whole on every 'model' device where tensor parallelism splits it: "
    "wq by its query heads, wo by its heads too (its input), w1 by its hidden units (its "
    "output), w2 by its hidden units (its input). Then each device computes its own heads and "
    "hidden units, and only the partial sums of wo's and w2's outputs are all-reduced."
)
HINT_MQA_KV_HEADS = (
    "Here the G key/value heads divide by the size of 'model': each device's query heads "
    "then use only its own share of them (the j-th block of query heads reads the j-th block "
    "of key/value heads), so wkv can be split by its heads too, and hold less."
)
HINT_MQA_KV_INDIVISIBLE = (
    "The key/value heads cannot be split over 'model' when their number G does not divide by "
    "its size (multi-query attention has G = 1). Every device's query heads read all of "
    "them: the small k/v projection is best kept whole on every device (computed again on "
    "each), which moves nothing."
)
HINT_MQA_KV_SPLIT = (
    "wkv is split along another dimension than its heads (D, K, or k against v): every "
    "query head needs whole keys and values, so the compiler gathers k and v over the axis "
    "or reduces partial products, each forward pass. Split its heads only where G divides "
    "by the axis; otherwise keep wkv whole."
)
HINT_MQA_CONTRACTION = (
    "wo and w2 are the second matrices of Megatron's pairs: they contract the split heads or "
    "hidden units, so they are split by their input (wo by its heads, w2 by its rows) and "
    "the partial sums are all-reduced once. Split by their output (or wq and w1 by their "
    "input), the compiler gathers activations over 'model' instead."
)
HINT_MQA_DATA = (
    "A weight split over 'data' is gathered over 'data' on every forward pass (FSDP): the "
    "batch is what 'data' splits, and the weights stay whole along it (each 'data' group "
    "holds the same weights)."
)

#: The error the tests raise for the key/value heads split over 'model' where G does not
#: divide by it (their check of the returned specs), and its hint.
ERRORS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^mqa_specs returned .* for 'wkv' .*cannot split dimension 2 "),
     HINT_MQA_KV_INDIVISIBLE),
)
