"""Public tests of lesson 11 (the capstone): ``check`` runs them in the notebook, and the
grader runs them too. The predictions are plain numbers: nothing is compiled here."""

from __future__ import annotations

import numpy as np
from jax.sharding import PartitionSpec as P

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


#: A small model's state: weights over both axes, a weight over 'data' only (on 4 x 2 its
#: 3 x 3 blocks cannot be shared by their two copies), a replicated table its copies share, a
#: replicated bias of 3 and a scalar.
STATE_SHAPES = [(8, 16), (16, 8), (12, 3), (4, 8), (3,), ()]
STATE_SPECS = [P("data", "model"), P("model", "data"), P("data"), P(), P(), P()]


# --- checkpoint_bytes -----------------------------------------------------------------------
def blocks(shapes, specs, data: int, model: int):
    """For each array: its block shape and the mesh axes its spec names."""
    sizes = {"data": data, "model": model}
    for shape, spec in zip(shapes, specs, strict=True):
        named = [() if s is None else (s,) if isinstance(s, str) else tuple(s) for s in spec]
        named += [()] * (len(shape) - len(named))
        splits = [int(np.prod([sizes[a] for a in axes])) for axes in named]
        yield tuple(d // k for d, k in zip(shape, splits, strict=True)), {a for n in named
                                                                          for a in n}


def numpy_checkpoint_bytes(shapes, specs, data: int, model: int, itemsize: int, *,
                           share: bool = True, every_copy: bool = False,
                           split_anyway: bool = False) -> list[float]:
    """Bytes each device of the (data, model) mesh writes, in row-major order: Orbax's rule
    (``share``), or every copy writing its block, or the first copy only, or a block split
    among its copies even where no dimension divides evenly."""
    sizes = {"data": data, "model": model}
    written = np.zeros((data, model))
    for block, used in blocks(shapes, specs, data, model):
        nbytes = int(np.prod(block)) * itemsize
        copies = int(np.prod([sizes[a] for a in sizes if a not in used]))
        divisible = any(d % copies == 0 for d in block) or copies == 1
        for i in range(data):
            for j in range(model):
                first = all({"data": i, "model": j}[a] == 0 for a in sizes if a not in used)
                if every_copy:
                    written[i, j] += nbytes
                elif share and (divisible or split_anyway):
                    written[i, j] += nbytes / copies
                elif first:
                    written[i, j] += nbytes
    return written.reshape(-1).tolist()


def checkpoint_context(shapes, specs, data: int, model: int, itemsize: int) -> dict:
    args = (shapes, specs, data, model, itemsize)
    return {"_every_copy": np.asarray(numpy_checkpoint_bytes(*args, every_copy=True)),
            "_first_copy": np.asarray(numpy_checkpoint_bytes(*args, share=False)),
            "_split_anyway": np.asarray(numpy_checkpoint_bytes(*args, split_anyway=True))}


every_copy = result_close_to("_every_copy", hints.HINT_CKPT_EVERY_COPY)
first_copy = result_close_to("_first_copy", hints.HINT_CKPT_FIRST_COPY)
split_anyway = result_close_to("_split_anyway", hints.HINT_CKPT_INDIVISIBLE)
CKPT_HINTS = [every_copy, first_copy, split_anyway]



@case("checkpoint_bytes", hidden=False, hints=CKPT_HINTS)
def a_state_on_four_by_two(fn):
    args = (STATE_SHAPES, STATE_SPECS, 4, 2, 4)
    return {"result": np.asarray(fn(*args), float), **checkpoint_context(*args)}


@case("checkpoint_bytes", hidden=False, hints=CKPT_HINTS)
def a_state_on_two_by_two_in_bfloat16(fn):
    args = (STATE_SHAPES[1:], STATE_SPECS[1:], 2, 2, 2)
    return {"result": np.asarray(fn(*args), float), **checkpoint_context(*args)}


# --- adam_state_bytes -----------------------------------------------------------------------
def numpy_state_bytes(shapes, specs, data: int, model: int, *, split: bool = True,
                      arrays: int = 3, over_all: bool = False) -> float:
    """Bytes of the weights (float32), ``arrays`` per weight, and an int32 step count on one
    device; ``split`` False keeps every array whole, ``over_all`` divides each by every
    device."""
    total = 0
    for (block, _), shape in zip(blocks(shapes, specs, data, model), shapes, strict=True):
        numbers = (int(np.prod(shape)) / (data * model) if over_all else
                   int(np.prod(block)) if split else int(np.prod(shape)))
        total += arrays * 4 * numbers
    return float(total + 4)


def state_context(shapes, specs, data: int, model: int) -> dict:
    args = (shapes, specs, data, model)
    return {"_whole": numpy_state_bytes(*args, split=False),
            "_weights_only": numpy_state_bytes(*args, arrays=1) - 4,
            "_weights_and_step": numpy_state_bytes(*args, arrays=1),
            "_one_moment": numpy_state_bytes(*args, arrays=2),
            "_over_all": numpy_state_bytes(*args, over_all=True)}


state_whole = result_close_to("_whole", hints.HINT_STATE_WHOLE)
state_weights_only = result_close_to("_weights_only", hints.HINT_STATE_MOMENTS)
state_weights_and_step = result_close_to("_weights_and_step", hints.HINT_STATE_MOMENTS)
state_one_moment = result_close_to("_one_moment", hints.HINT_STATE_MOMENTS)
state_over_all = result_close_to("_over_all", hints.HINT_STATE_ALL_DEVICES)
STATE_HINTS = [state_whole, state_weights_only, state_weights_and_step, state_one_moment,
               state_over_all]


@case("adam_state_bytes", hidden=False, hints=STATE_HINTS)
def the_state_on_four_by_two(fn):
    args = (STATE_SHAPES[:-1], STATE_SPECS[:-1], 4, 2)
    return {"result": float(fn(*args)), **state_context(*args)}


@case("adam_state_bytes", hidden=False, hints=STATE_HINTS)
def the_state_on_two_by_four(fn):
    args = (STATE_SHAPES[:-1], STATE_SPECS[:-1], 2, 4)
    return {"result": float(fn(*args)), **state_context(*args)}
