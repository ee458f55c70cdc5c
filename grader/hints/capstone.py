"""Hints of lesson 11 (the capstone): grader/public/capstone.py and
grader/hidden/capstone.py."""

from __future__ import annotations

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
