"""Public tests of lesson 11 (the capstone): ``check`` runs them in the notebook, and the
grader runs them too. The predictions are plain numbers: nothing is compiled here."""

from __future__ import annotations

from grader.framework.cases import case
from grader.framework.judge import result_close_to
from grader.hints import capstone as hints


# --- fsdp_gather_bytes ----------------------------------------------------------------------
def gather_context(d_model: int, d_hidden: int, layers: int, data: int, model: int,
                   remat: bool, itemsize: int) -> dict:
    """What the usual mistakes give: the other remat's count, the whole weight gathered, and
    the block counted once or as the whole gathered weight."""
    block = 2 * d_model * d_hidden // (data * model) * itemsize  # w1 and w2, one device
    times = layers * (2 if remat else 1)
    return {"_other_remat": float(layers * (1 if remat else 2) * (data - 1) * block),
            "_whole_weight": float(times * (data - 1) * block * model),
            "_own_block": float(times * block),
            "_gathered": float(times * data * block)}


remat_swapped = result_close_to("_other_remat", hints.HINT_GATHER_REMAT)
whole_weight = result_close_to("_whole_weight", hints.HINT_GATHER_MODEL_BLOCK)
own_block = result_close_to("_own_block", hints.HINT_GATHER_RING)
whole_gathered = result_close_to("_gathered", hints.HINT_GATHER_RING)
GATHER_HINTS = [remat_swapped, whole_weight, own_block, whole_gathered]


@case("fsdp_gather_bytes", hidden=False, hints=GATHER_HINTS)
def rematerialised_on_four_by_two(fn):
    args = (16, 64, 3, 4, 2, True, 4)
    return {"result": float(fn(*args)), **gather_context(*args)}


@case("fsdp_gather_bytes", hidden=False, hints=GATHER_HINTS)
def kept_on_eight_by_one(fn):
    args = (32, 16, 2, 8, 1, False, 4)
    return {"result": float(fn(*args)), **gather_context(*args)}
