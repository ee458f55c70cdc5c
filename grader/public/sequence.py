"""Public tests of lesson 9 (sequence and context parallelism): ``check`` runs them in the
notebook, and the grader runs them too. Sequence lengths are a multiple of the number of
devices there are."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from grader.framework.cases import case
from grader.framework.hlo import collectives_in_hlo
from grader.framework.judge import (
    PASS,
    Hint,
    Verdict,
    close,
    difference,
    first_hint,
    result_close_to,
)
from grader.framework.placement import floats, layout
from grader.framework.probes import Program, hlo_collectives, measure
from grader.hints import sequence as hints
from grader.public.training import gathered_shapes


# --- inputs -------------------------------------------------------------------------------
def attention_inputs(seed: int, block: int, d: int, dv: int) -> tuple:
    """q (L, d), k (L, d), v (L, dv) with L = block * devices, float32, unplaced. v is wider
    than q and k, so that what a program gathers can be told apart."""
    rng = np.random.default_rng(seed)
    size = block * jax.device_count()
    return tuple(floats(rng.normal(size=(size, width)))
                 for width in (d, d, dv))


def split_by_position(*arrays: jax.Array) -> tuple:
    """The arrays placed on a 1-D mesh of every device, 'seq', split by rows."""
    mesh = jax.make_mesh((jax.device_count(),), ("seq",))
    return tuple(jax.device_put(a, NamedSharding(mesh, P("seq"))) for a in arrays)


# --- hint material, computed in numpy (no compilation) -----------------------------------
def masked_attention(q, k, v, allowed: np.ndarray) -> np.ndarray:
    """Attention in float64 where query row p may attend to key j only if allowed[p, j]."""
    q, k, v = (np.asarray(a, np.float64) for a in (q, k, v))
    scores = np.where(allowed, q @ k.T / np.sqrt(q.shape[1]), -np.inf)
    weights = np.exp(scores - scores.max(axis=1, keepdims=True))
    return (weights / weights.sum(axis=1, keepdims=True)) @ v


def positions(q) -> tuple[np.ndarray, np.ndarray, int, int]:
    """The query positions (a column), the key positions (a row), the block, the devices."""
    n = jax.device_count()
    size = q.shape[0]
    where = np.arange(size)
    return where[:, None], where[None, :], size // n, n


def attention_context(q, k, v) -> dict:
    """What the usual mistakes of causal attention give, under ``_`` names."""
    query, key, block, n = positions(q)
    # with blocks sent to i + 1, device i holds at step s the block of (i - s) mod n; a mask
    # for (i + s) mod n believes it holds block 2i - j when it holds block j
    believed = (2 * (query // block) - key // block) % n * block + key % block
    return {
        "_no_mask": masked_attention(q, k, v, np.ones((q.shape[0], k.shape[0]), bool)),
        "_local_queries": masked_attention(q, k, v, key <= query % block),
        "_local_positions": masked_attention(q, k, v, key % block <= query % block),
        "_wrong_block": masked_attention(q, k, v, believed <= query),
    }


no_mask = result_close_to("_no_mask", hints.HINT_CAUSAL_NO_MASK)
local_queries = result_close_to("_local_queries", hints.HINT_CAUSAL_LOCAL_QUERY_POSITIONS)
local_positions = result_close_to("_local_positions", hints.HINT_RING_LOCAL_POSITIONS)
wrong_block = result_close_to("_wrong_block", hints.HINT_RING_WRONG_BLOCK)
gathered_queries = Hint(lambda got, want: True, hints.HINT_CAUSAL_GATHERED_QUERIES)


def communicates(needs: str, hint_missing: str, forbids: str, hint_forbidden: str):
    """A judge for :func:`~.probes.hlo_collectives`: where the reference's compiled code
    has a ``needs``, the student's must have one too; where it has no ``forbids``, the
    student's must have none."""

    def judge(got: dict, want: dict) -> Verdict:
        def count(found: dict, op: str) -> int:
            return int(np.asarray(found.get(op, 0)).item()) if op in found else 0

        if count(want, forbids) == 0 and count(got, forbids) > 0:
            return Verdict(False, hints.MSG_COMPILED_FORBIDDEN.format(op=forbids),
                           hint_forbidden)
        if count(want, needs) and not count(got, needs):
            return Verdict(False, hints.MSG_COMPILED_MISSING.format(op=needs), hint_missing)
        return PASS

    return judge


# --- ring_bytes_per_device ------------------------------------------------------------------
#: (seq_len, d_head, n_devices, itemsize) the predictions are asked for.
SIZES = [(16, 8, 8, 4), (16, 8, 2, 4), (1024, 64, 8, 2), (96, 16, 4, 4), (8, 4, 1, 4)]


def _formula(seq_len: int, d_head: int, n: int, itemsize: int, steps: int, arrays: int,
             length: int, size: int) -> float:
    return float(steps * arrays * length * d_head * size)


def bytes_context(sizes: list[tuple]) -> dict:
    """What the usual mistakes predict for ``sizes``, under ``_`` names."""
    def each(**mistake):
        found = []
        for seq_len, d_head, n, itemsize in sizes:
            terms = {"steps": n - 1, "arrays": 2, "length": seq_len // n, "size": itemsize}
            terms.update({k: f(seq_len, n, itemsize) for k, f in mistake.items()})
            found.append(_formula(seq_len, d_head, n, itemsize, **terms))
        return np.array(found)

    return {"_n_steps": each(steps=lambda seq_len, n, itemsize: n),
            "_keys_only": each(arrays=lambda seq_len, n, itemsize: 1),
            "_whole_sequence": each(length=lambda seq_len, n, itemsize: seq_len),
            "_elements": each(size=lambda seq_len, n, itemsize: 1)}


def predictions(fn, sizes: list[tuple]) -> np.ndarray:
    return np.array([float(fn(*size)) for size in sizes])


def _predicted(key: str):
    return lambda got, want: close(got["result"], want[key]) and not close(want["result"],
                                                                           want[key])


n_steps = Hint(_predicted("_n_steps"), hints.HINT_RING_BYTES_N_STEPS)
keys_only = Hint(_predicted("_keys_only"), hints.HINT_RING_BYTES_KEYS_ONLY)
whole_sequence = Hint(_predicted("_whole_sequence"), hints.HINT_RING_BYTES_WHOLE_SEQUENCE)
elements = Hint(_predicted("_elements"), hints.HINT_RING_BYTES_ELEMENTS)
BYTES_HINTS = [n_steps, keys_only, whole_sequence, elements]


def ring_attention(q, k, v):
    """The lesson's ring attention, jitted, on a mesh of every device: the program whose bytes
    the predictions are compared with."""
    n = jax.device_count()
    mesh = jax.make_mesh((n,), ("seq",))
    ring = [(i, (i + 1) % n) for i in range(n)]

    def local(q, k, v):
        rows = (q.shape[0], 1)
        m, total, out = jnp.full(rows, -jnp.inf, q.dtype), jnp.zeros(rows, q.dtype), 0 * q
        for step in range(n):
            scores = q @ k.T / np.sqrt(q.shape[1])
            top = jnp.maximum(m, scores.max(axis=1, keepdims=True))
            weights, rescale = jnp.exp(scores - top), jnp.exp(m - top)
            total = total * rescale + weights.sum(axis=1, keepdims=True)
            out, m = out * rescale + weights @ v, top
            if step < n - 1:
                k, v = jax.lax.ppermute((k, v), "seq", ring)
        return out / total

    return jax.jit(jax.shard_map(local, mesh=mesh, in_specs=P("seq"), out_specs=P("seq")))(
        q, k, v)


@measure
def seq_ring_bytes_sent(program: Program) -> float:
    """The bytes one device sends in the collective-permutes of a compiled program, under the
    lesson's traffic model (grader.framework.hlo)."""
    return float(sum(c.sent or 0 for c in collectives_in_hlo(program.compiled)
                     if c.op == "collective-permute"))


def counted_case(fn, block: int, d_head: int, dtype) -> dict:
    """The prediction for the compiled ring attention on this many devices, next to the bytes
    counted in it."""
    n = jax.device_count()
    arrays = split_by_position(*(jnp.ones((block * n, d_head), dtype) for _ in range(3)))
    size = jnp.dtype(dtype).itemsize
    sizes = [(block * n, d_head, n, size)]
    return {"result": predictions(fn, sizes), "counted": seq_ring_bytes_sent(ring_attention,
                                                                             *arrays),
            **bytes_context(sizes)}


def predicts_the_counted_bytes(got: dict, want: dict) -> Verdict:
    """The prediction must be the bytes counted in the reference's compiled ring attention."""
    counted = np.atleast_1d(np.asarray(want["counted"], np.float64))
    problem = difference(got.get("result"), counted)
    if problem:
        hint = first_hint(BYTES_HINTS, got, want)
        return Verdict(False, hints.MSG_NOT_COUNTED.format(
            got=describe(got.get("result")), counted=describe(counted)), hint)
    return PASS


def describe(value) -> str:
    try:
        return ", ".join(f"{v:g}" for v in np.atleast_1d(np.asarray(value, np.float64)))
    except (TypeError, ValueError):
        return repr(value)[:80]


@case("ring_bytes_per_device", hidden=False, hints=BYTES_HINTS)
def predicts_every_size(fn):
    return {"result": predictions(fn, SIZES), **bytes_context(SIZES)}


@case("ring_bytes_per_device", hidden=False, judge=predicts_the_counted_bytes)
def matches_the_compiled_ring_attention(fn):
    return counted_case(fn, 2, 4, jnp.float32)


# --- sequence_softmax -------------------------------------------------------------------------
def scores_input(seed: int, rows: int, per_device: int, scale: float = 3.0) -> jax.Array:
    rng = np.random.default_rng(seed)
    return jnp.asarray(scale * rng.normal(size=(rows, per_device * jax.device_count())),
                       jnp.float32)


def softmax_context(x) -> dict:
    """What a softmax with a forgotten psum, or a forgotten pmax, gives."""
    n = jax.device_count()
    blocks = np.split(np.asarray(x, np.float64), n, axis=1)
    top = np.asarray(x, np.float64).max(axis=1, keepdims=True)
    local_sum = [np.exp(b - top) / np.exp(b - top).sum(axis=1, keepdims=True) for b in blocks]
    shifted = [np.exp(b - b.max(axis=1, keepdims=True)) for b in blocks]
    total = sum(s.sum(axis=1, keepdims=True) for s in shifted)
    return {"_local_sum": np.concatenate(local_sum, axis=1),
            "_local_max": np.concatenate([s / total for s in shifted], axis=1)}


local_sum = result_close_to("_local_sum", hints.HINT_SOFTMAX_LOCAL_SUM)
local_max = result_close_to("_local_max", hints.HINT_SOFTMAX_LOCAL_MAX)


def softmax_case(fn, x) -> dict:
    result = fn(x)
    return {"result": result, "layout": layout(result), **softmax_context(x)}


@case("sequence_softmax", hidden=False, hints=[local_sum, local_max])
def softmax_of_each_row_output_split(fn):
    return softmax_case(fn, scores_input(0, 3, 4))


@case("sequence_softmax", hidden=False,
      judge=communicates("all-reduce", hints.HINT_SOFTMAX_NO_ALL_REDUCE, "all-gather",
                         hints.HINT_SOFTMAX_GATHERED))
def all_reduces_and_gathers_nothing(fn):
    return hlo_collectives(fn, scores_input(1, 2, 3))


# --- causal_gathered_attention ----------------------------------------------------------------
def attention_case(fn, q, k, v, placed: bool = False) -> dict:
    result = fn(*(split_by_position(q, k, v) if placed else (q, k, v)))
    return {"result": result, "layout": layout(result), **attention_context(q, k, v)}


@case("causal_gathered_attention", hidden=False, hints=[no_mask, local_queries])
def equals_causal_attention_output_split(fn):
    return attention_case(fn, *attention_inputs(10, 2, 4, 3))


@case("causal_gathered_attention", hidden=False, hints=[gathered_queries])
def gathers_only_keys_and_values(fn):
    return {"gathered": gathered_shapes(fn, *attention_inputs(11, 3, 4, 2))}


# --- multihead_ring_attention -----------------------------------------------------------------
def multihead_inputs(seed: int, block: int, heads: int, d: int, dv: int) -> tuple:
    """q (L, heads, d), k (L, heads, d), v (L, heads, dv) with L = block * devices."""
    rng = np.random.default_rng(seed)
    size = block * jax.device_count()
    return tuple(floats(rng.normal(size=(size, heads, width)))
                 for width in (d, d, dv))


def _softmax_rows(scores: np.ndarray) -> np.ndarray:
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return weights / weights.sum(axis=-1, keepdims=True)


def multihead_context(q, k, v) -> dict:
    """What merged heads, or an online softmax that never rescales, give (float64)."""
    q, k, v = (np.asarray(a, np.float64) for a in (q, k, v))
    size, heads, d = q.shape
    merged = _softmax_rows(q.reshape(size, -1) @ k.reshape(size, -1).T / np.sqrt(heads * d))
    n = jax.device_count()
    block = size // n
    unscaled = np.zeros(v.shape)
    for i in range(n):  # device i meets the blocks i, i - 1, ... as the ring brings them
        rows = slice(i * block, (i + 1) * block)
        top = np.full((heads, block, 1), -np.inf)
        total, out = np.zeros((heads, block, 1)), np.zeros((heads, block, v.shape[2]))
        for step in range(n):
            keys = slice((i - step) % n * block, ((i - step) % n + 1) * block)
            scores = np.einsum("qhd,khd->hqk", q[rows], k[keys]) / np.sqrt(d)
            top = np.maximum(top, scores.max(axis=-1, keepdims=True))
            weights = np.exp(scores - top)
            total = total + weights.sum(axis=-1, keepdims=True)
            out = out + np.einsum("hqk,khe->hqe", weights, v[keys])
        unscaled[rows] = np.transpose(out / total, (1, 0, 2))
    return {"_heads_merged": (merged @ v.reshape(size, -1)).reshape(v.shape),
            "_no_rescale": unscaled}


heads_merged = result_close_to("_heads_merged", hints.HINT_HEADS_MERGED)
no_rescale = result_close_to("_no_rescale", hints.HINT_NO_RESCALE)


def multihead_case(fn, q, k, v, placed: bool = False) -> dict:
    result = fn(*(split_by_position(q, k, v) if placed else (q, k, v)))
    return {"result": result, "layout": layout(result), **multihead_context(q, k, v)}


@case("multihead_ring_attention", hidden=False, hints=[heads_merged, no_rescale])
def equals_attention_of_every_head(fn):
    return multihead_case(fn, *multihead_inputs(30, 2, 3, 4, 2))


@case("multihead_ring_attention", hidden=False,
      judge=communicates("collective-permute", hints.HINT_RING_NO_PERMUTE, "all-gather",
                         hints.HINT_RING_GATHERED))
def passes_every_head_on_and_gathers_nothing(fn):
    return hlo_collectives(fn, *multihead_inputs(31, 2, 2, 3, 3))


# --- causal_ring_attention --------------------------------------------------------------------
@case("causal_ring_attention", hidden=False, hints=[no_mask, wrong_block, local_positions])
def equals_causal_attention_on_a_ring(fn):
    return attention_case(fn, *attention_inputs(20, 2, 4, 3))


@case("causal_ring_attention", hidden=False,
      judge=communicates("collective-permute", hints.HINT_RING_NO_PERMUTE, "all-gather",
                         hints.HINT_RING_GATHERED))
def passes_blocks_on_and_gathers_nothing(fn):
    return hlo_collectives(fn, *attention_inputs(21, 2, 4, 3))
