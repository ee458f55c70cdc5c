"""Public tests of lesson 10 (experts and overlap): ``check`` runs them in the notebook, and
the grader runs them too. Sizes are derived from the number of devices there are."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from grader.framework.cases import case
from grader.framework.judge import Hint, close, result_close_to
from grader.framework.placement import floats, layout
from grader.framework.probes import hlo_collectives, jitted, trailing
from grader.hints import experts as hints


# --- inputs -------------------------------------------------------------------------------
def skewed_ids(seed: int, shape: tuple[int, ...], n_experts: int) -> np.ndarray:
    """Expert choices that favour the first experts, so that some buffers overflow."""
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, n_experts + 1)
    return rng.choice(n_experts, size=shape, p=weights / weights.sum()).astype(np.int32)


def moe_inputs(seed: int, tokens_per_device: int = 6, d: int = 4, h: int = 6) -> tuple:
    """x (T, d), w_router (d, E), w1 (E, d, h), w2 (E, h, d) with E = 2n experts and
    T = tokens_per_device * n tokens, float32."""
    n = jax.device_count()
    rng = np.random.default_rng(seed)
    experts = 2 * n
    arrays = (rng.normal(size=(tokens_per_device * n, d)), rng.normal(size=(d, experts)),
              rng.normal(size=(experts, d, h)) / np.sqrt(d),
              rng.normal(size=(experts, h, d)) / np.sqrt(h))
    return tuple(floats(a) for a in arrays)


def rs_inputs(seed: int, rows_per_device: int = 3, k_per_device: int = 2, cols: int = 5):
    """x (rows_per_device * n, k_per_device * n) and w (k_per_device * n, cols), float32."""
    n = jax.device_count()
    rng = np.random.default_rng(seed)
    return (floats(rng.normal(size=(rows_per_device * n, k_per_device * n))),
            floats(rng.normal(size=(k_per_device * n, cols))))


# --- hint material, computed in numpy (no compilation) -----------------------------------
def numpy_slots(ids: np.ndarray, n_experts: int, capacity: int | None,
                start: int = 0) -> np.ndarray:
    """The slots of one row of choices, counted from ``start``; -1 beyond ``capacity``
    (None: never)."""
    seen = np.zeros(n_experts, int)
    out = []
    for e in np.ravel(ids):
        slot = seen[e] + start
        seen[e] += 1
        out.append(slot if capacity is None or slot < capacity else -1)
    return np.array(out).reshape(np.shape(ids))


def top2_choices(seed: int, groups: int, tokens: int, n_experts: int) -> np.ndarray:
    """(groups, tokens, 2) choices: a skewed first expert, and another for second."""
    first = skewed_ids(seed, (groups, tokens), n_experts)
    other = np.random.default_rng(seed + 1).integers(1, n_experts, size=first.shape)
    return np.stack([first, (first + other) % n_experts], axis=-1).astype(np.int32)


def numpy_top2_slots(choices: np.ndarray, n_experts: int, capacity: int | None, *,
                     priority: bool = True, shared: bool = True, start: int = 0,
                     seen: np.ndarray | None = None) -> np.ndarray:
    """The slots of one group's (tokens, 2) choices: first choices before second ones (or,
    with ``priority`` False, token by token), one count per expert for both (or one each);
    counted from ``start``, or on from the counts ``seen`` (updated); -1 beyond ``capacity``
    (None: never)."""
    tokens = len(choices)
    order = ([(t, k) for k in (0, 1) for t in range(tokens)] if priority else
             [(t, k) for t in range(tokens) for k in (0, 1)])
    if seen is None:
        seen = np.zeros((1 if shared else 2, n_experts), int)
    out = np.zeros((tokens, 2), int)
    for t, k in order:
        counter = seen[0 if shared else k]
        slot = counter[choices[t, k]] + start
        counter[choices[t, k]] += 1
        out[t, k] = slot if capacity is None or slot < capacity else -1
    return out


def top2_context(choices: np.ndarray, n_experts: int, capacity: int) -> dict:
    """What token-by-token priority, a count of its own for each choice, one count carried on
    from group to group, slots from 1 or slots with no -1 would give."""
    def each(**options):
        return np.stack([numpy_top2_slots(g, n_experts, capacity, **options) for g in choices])

    carried = np.zeros((1, n_experts), int)  # one count on through the groups, in order
    across = np.stack([numpy_top2_slots(g, n_experts, capacity, seen=carried) for g in choices])
    return {"_token_order": each(priority=False), "_separate": each(shared=False),
            "_one_group": across, "_from_one": each(start=1),
            "_no_drop": np.stack([numpy_top2_slots(g, n_experts, None) for g in choices])}


def numpy_moe(x, w_router, w1, w2, capacity: int, gated: bool = True) -> np.ndarray:
    """The dense MoE layer in float64: every token through its expert, zero when dropped
    (slots counted per device)."""
    x, w_router, w1, w2 = (np.asarray(a, np.float64) for a in (x, w_router, w1, w2))
    logits = x @ w_router
    probs = np.exp(logits - logits.max(1, keepdims=True))
    probs /= probs.sum(1, keepdims=True)
    ids = probs.argmax(1)
    groups = ids.reshape(jax.device_count(), -1)
    slot = np.concatenate([numpy_slots(g, w_router.shape[1], capacity) for g in groups])
    out = np.stack([np.maximum(x[t] @ w1[e], 0) @ w2[e] for t, e in enumerate(ids)])
    scale = probs.max(1) if gated else np.ones(len(ids))
    return np.where((slot >= 0)[:, None], scale[:, None] * out, 0)


def rolled_blocks(x, w) -> dict:
    """x @ w with its row blocks moved one device along the ring, either way."""
    n = jax.device_count()
    full = np.asarray(x, np.float64) @ np.asarray(w, np.float64)
    rows = full.shape[0] // n
    return {"_rolled_down": np.roll(full, rows, axis=0), "_rolled_up": np.roll(full, -rows, axis=0)}


capacity_one_group = result_close_to("_one_group", hints.HINT_CAPACITY_PER_GROUP)
capacity_average = result_close_to("_average", hints.HINT_CAPACITY_AVERAGE)
bytes_whole_buffer = result_close_to("_whole_buffer", hints.HINT_BYTES_OWN_PIECE)
bytes_of_tokens = result_close_to("_tokens", hints.HINT_BYTES_CAPACITY)
slots_from_one = result_close_to("_from_one", hints.HINT_SLOTS_FROM_ONE)
slots_one_group = result_close_to("_one_group", hints.HINT_SLOTS_PER_GROUP)
slots_no_drop = result_close_to("_no_drop", hints.HINT_SLOTS_DROPPED)
top2_token_order = result_close_to("_token_order", hints.HINT_TOP2_PRIORITY)
top2_separate = result_close_to("_separate", hints.HINT_TOP2_SHARED)
TOP2_HINTS = [slots_from_one, slots_one_group, slots_no_drop, top2_token_order, top2_separate]
moe_no_gate = result_close_to("_no_gate", hints.HINT_MOE_GATE)
moe_order = Hint(lambda got, want: True, hints.HINT_MOE_ORDER)
moe_collectives = Hint(lambda got, want: True, hints.HINT_MOE_TWO_ALL_TO_ALL)
rs_block = Hint(lambda got, want: close(got["result"], want["_rolled_down"])
                or close(got["result"], want["_rolled_up"]), hints.HINT_RS_BLOCK)
rs_reduces = Hint(lambda got, want: got["reduce-scatter"] > 0 or got["all-reduce"] > 0,
                  hints.HINT_RS_NO_COLLECTIVE_OP)
rs_permutes = Hint(lambda got, want: True, hints.HINT_RS_PERMUTES)


# --- capacity_for_no_drops ----------------------------------------------------------------
def capacity_context(ids: np.ndarray, n_groups: int, n_experts: int) -> dict:
    """What the largest count over all tokens as one group, or the average load of an expert
    in a group, would give."""
    ids = np.ravel(ids)
    return {"_one_group": int(np.bincount(ids).max()),
            "_average": math.ceil(ids.size / (n_groups * n_experts))}


@case("capacity_for_no_drops", hidden=False, hints=[capacity_one_group, capacity_average])
def four_groups_of_twelve(fn):
    ids = skewed_ids(0, (48,), 4)
    return {"result": int(fn(ids, 4)), **capacity_context(ids, 4, 4)}


# --- dispatch_bytes ---------------------------------------------------------------------------
def bytes_context(tokens_per_device: int, d_model: int, n_experts: int,
                  capacity_factor: float, itemsize: int) -> dict:
    n = jax.device_count()
    capacity = math.ceil(capacity_factor * tokens_per_device / n_experts)
    return {"_whole_buffer": float(n_experts * capacity * d_model * itemsize),
            "_tokens": float(tokens_per_device * d_model * itemsize * (n - 1) / n)}


@case("dispatch_bytes", hidden=False, hints=[bytes_whole_buffer, bytes_of_tokens])
def two_experts_per_device_float32(fn):
    args = (16, 8, 2 * jax.device_count(), 1.25, 4)
    return {"result": float(fn(*args)), **bytes_context(*args)}


# --- top2_slots ---------------------------------------------------------------------------
@case("top2_slots", hidden=False, hints=TOP2_HINTS)
def three_groups_under_jit(fn):
    choices = top2_choices(1, 3, 10, 4)
    slots = jitted(trailing(fn, 4, 3))(jnp.asarray(choices))
    return {"result": slots, **top2_context(choices, 4, 3)}


# --- moe_two_experts_per_device -----------------------------------------------------------
@case("moe_two_experts_per_device", hidden=False, hints=[moe_no_gate, moe_order])
def matches_the_dense_layer(fn):
    args = moe_inputs(10)
    return {"result": fn(*args, 2), "_no_gate": numpy_moe(*args, 2, gated=False)}


@case("moe_two_experts_per_device", hidden=False, hints=[moe_collectives])
def two_all_to_all_and_nothing_else(fn):
    return hlo_collectives(trailing(fn, 2), *moe_inputs(11))


# --- reduce_scatter_matmul ----------------------------------------------------------------
@case("reduce_scatter_matmul", hidden=False, hints=[rs_block])
def matches_the_plain_matmul(fn):
    x, w = rs_inputs(20)
    result = fn(x, w)
    return {"result": result, "layout": layout(result), **rolled_blocks(x, w)}


@case("reduce_scatter_matmul", hidden=False, hints=[rs_reduces, rs_permutes])
def ppermutes_only(fn):
    return hlo_collectives(fn, *rs_inputs(21))
