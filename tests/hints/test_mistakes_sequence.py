"""The usual mistakes of lesson 9 (sequence and context parallelism), each written as a student
would: does check() fail it with the hint of that mistake, and no other hint? And does a
correct function, written here independently of solutions/, pass with no hint?"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P
from mistakes import Mistakes, assert_hidden_hint, lesson_tests

from grader.hints import sequence as hints

mistake = Mistakes()


def seq_mesh():
    return jax.make_mesh((jax.device_count(),), ("seq",))


ROWS = P("seq")


def on_seq(local, spec=ROWS):
    """``local`` inside shard_map over 'seq', its inputs resharded to ``spec`` under jit."""
    mesh = seq_mesh()

    @jax.jit
    def run(*arrays):
        arrays = [jax.reshard(a, NamedSharding(mesh, spec)) for a in arrays]
        return jax.shard_map(local, mesh=mesh, in_specs=spec, out_specs=spec)(*arrays)

    return run


# --- ring_bytes_per_device --------------------------------------------------------------------
def bytes_with(steps=lambda n: n - 1, arrays=2, whole=False, itemsize=True):
    def ring_bytes_per_device(seq_len, d_head, n_devices, size):
        held = seq_len if whole else seq_len // n_devices
        return steps(n_devices) * arrays * held * d_head * (size if itemsize else 1)

    return ring_bytes_per_device


mistake("ring_bytes_per_device", hints.HINT_RING_BYTES_N_STEPS, "a_send_at_every_step")(
    bytes_with(steps=lambda n: n))
mistake("ring_bytes_per_device", hints.HINT_RING_BYTES_KEYS_ONLY, "keys_only")(
    bytes_with(arrays=1))
mistake("ring_bytes_per_device", hints.HINT_RING_BYTES_WHOLE_SEQUENCE, "whole_sequence")(
    bytes_with(whole=True))
mistake("ring_bytes_per_device", hints.HINT_RING_BYTES_ELEMENTS, "elements_not_bytes")(
    bytes_with(itemsize=False))


# --- sequence_softmax -------------------------------------------------------------------------
def softmax_with(local):
    def sequence_softmax(scores):
        return on_seq(local, P(None, "seq"))(scores)

    return sequence_softmax


def split_softmax(x):
    e = jnp.exp(x - jax.lax.pmax(x.max(axis=-1, keepdims=True), "seq"))
    return e / jax.lax.psum(e.sum(axis=-1, keepdims=True), "seq")


def no_psum(x):
    e = jnp.exp(x - jax.lax.pmax(x.max(axis=-1, keepdims=True), "seq"))
    return e / e.sum(axis=-1, keepdims=True)


def no_pmax(x):
    e = jnp.exp(x - x.max(axis=-1, keepdims=True))
    return e / jax.lax.psum(e.sum(axis=-1, keepdims=True), "seq")


def gather_then_slice(x):
    whole = jax.nn.softmax(jax.lax.all_gather(x, "seq", axis=1, tiled=True), axis=1)
    start = jax.lax.axis_index("seq") * x.shape[1]
    return jax.lax.dynamic_slice_in_dim(whole, start, x.shape[1], axis=1)


mistake("sequence_softmax", hints.HINT_SOFTMAX_LOCAL_SUM, "no_psum")(softmax_with(no_psum))
mistake("sequence_softmax", hints.HINT_SOFTMAX_LOCAL_MAX, "no_pmax")(softmax_with(no_pmax))
mistake("sequence_softmax", hints.HINT_SOFTMAX_GATHERED, "gathers_the_rows")(
    softmax_with(gather_then_slice))


mistake("sequence_softmax", hints.HINT_SOFTMAX_LOCAL_SUM, "softmax_of_each_block",
        also=(hints.HINT_SOFTMAX_NO_ALL_REDUCE,))(
    softmax_with(lambda x: jax.nn.softmax(x, axis=-1)))


# --- causal attention, the shared pieces --------------------------------------------------
def causal_scores(q, k, query_at, key_at, masked=True):
    scores = q @ k.T / jnp.sqrt(q.shape[-1])
    return jnp.where(key_at[None, :] <= query_at[:, None], scores, -jnp.inf) if masked else scores


def gathered_with(query_start, gather_queries=False, masked=True):
    def local(q, k, v):
        rows = q.shape[0]
        k, v = (jax.lax.all_gather(a, "seq", tiled=True) for a in (k, v))
        query_at = query_start(rows) + jnp.arange(rows)
        if gather_queries:  # the whole causal attention on every device, then its own rows
            q = jax.lax.all_gather(q, "seq", tiled=True)
            query_at = jnp.arange(q.shape[0])
        weights = jax.nn.softmax(causal_scores(q, k, query_at, jnp.arange(k.shape[0]), masked))
        out = weights @ v
        if gather_queries:
            out = jax.lax.dynamic_slice_in_dim(out, query_start(rows), rows)
        return out

    def causal_gathered_attention(q, k, v):
        return on_seq(local)(q, k, v)

    return causal_gathered_attention


def global_start(rows):
    return jax.lax.axis_index("seq") * rows


mistake("causal_gathered_attention", hints.HINT_CAUSAL_NO_MASK, "no_mask")(
    gathered_with(global_start, masked=False))
mistake("causal_gathered_attention", hints.HINT_CAUSAL_LOCAL_QUERY_POSITIONS,
        "query_positions_within_the_block")(gathered_with(lambda rows: 0))
mistake("causal_gathered_attention", hints.HINT_CAUSAL_GATHERED_QUERIES, "gathers_queries")(
    gathered_with(global_start, gather_queries=True))


def ring_with(held_block=lambda me, step, n: (me - step) % n, local_positions=False,
              masked=True):
    """Causal ring attention, blocks sent to the next device; the mask believes the block
    held at ``step`` is ``held_block(me, step, n)``."""
    def local(q, k, v):
        n = jax.lax.axis_size("seq")
        rows = q.shape[0]
        me = jax.lax.axis_index("seq")
        query_at = (0 if local_positions else me * rows) + jnp.arange(rows)
        best = jnp.full((rows, 1), -jnp.inf)
        norm = jnp.zeros((rows, 1))
        acc = jnp.zeros((rows, v.shape[1]))
        for step in range(n):
            first = 0 if local_positions else held_block(me, step, n) * rows
            scores = causal_scores(q, k, query_at, first + jnp.arange(rows), masked)
            new_best = jnp.maximum(best, jnp.max(scores, axis=1, keepdims=True))
            p, fix = jnp.exp(scores - new_best), jnp.exp(best - new_best)
            norm, acc, best = norm * fix + p.sum(1, keepdims=True), acc * fix + p @ v, new_best
            k, v = jax.lax.ppermute((k, v), "seq", [(i, (i + 1) % n) for i in range(n)])
        return acc / norm

    def causal_ring_attention(q, k, v):
        return on_seq(local)(q, k, v)

    return causal_ring_attention


mistake("causal_ring_attention", hints.HINT_CAUSAL_NO_MASK, "no_mask")(ring_with(masked=False))
mistake("causal_ring_attention", hints.HINT_RING_WRONG_BLOCK, "block_of_the_wrong_neighbour")(
    ring_with(held_block=lambda me, step, n: (me + step) % n))
mistake("causal_ring_attention", hints.HINT_RING_LOCAL_POSITIONS, "positions_within_blocks")(
    ring_with(local_positions=True))


@mistake("causal_ring_attention", hints.HINT_RING_GATHERED)
def gathers_instead_of_passing_on(q, k, v):
    return gathered_with(global_start)(q, k, v)


# --- multihead_ring_attention -----------------------------------------------------------------
def one_head_ring(q, k, v, rescaled=True):
    """Ring attention of one head (q, k: (block, d), v: (block, dv)), no mask."""
    n = jax.lax.axis_size("seq")
    best, norm, acc = -jnp.inf, 0.0, 0.0
    for step in range(n):
        scores = q @ k.T / jnp.sqrt(q.shape[-1])
        new_best = jnp.maximum(best, jnp.max(scores, axis=1, keepdims=True))
        p = jnp.exp(scores - new_best)
        fix = jnp.exp(best - new_best) if rescaled else 1.0
        norm, acc, best = norm * fix + p.sum(1, keepdims=True), acc * fix + p @ v, new_best
        if step < n - 1:
            k, v = jax.lax.ppermute((k, v), "seq", [(i, (i + 1) % n) for i in range(n)])
    return acc / norm


def multihead_with(local):
    def multihead_ring_attention(q, k, v):
        return on_seq(local)(q, k, v)

    return multihead_ring_attention


def heads_merged(q, k, v):
    rows = q.shape[0]
    merged = one_head_ring(q.reshape(rows, -1), k.reshape(rows, -1), v.reshape(rows, -1))
    return merged.reshape(v.shape)


def every_head_gathered(q, k, v):
    k, v = (jax.lax.all_gather(a, "seq", tiled=True) for a in (k, v))
    scores = jnp.einsum("qhd,khd->hqk", q, k) / jnp.sqrt(q.shape[-1])
    return jnp.einsum("hqk,khe->qhe", jax.nn.softmax(scores, axis=-1), v)


by_head = jax.vmap(one_head_ring, in_axes=1, out_axes=1)
mistake("multihead_ring_attention", hints.HINT_HEADS_MERGED, "heads_merged")(
    multihead_with(heads_merged))
mistake("multihead_ring_attention", hints.HINT_NO_RESCALE, "never_rescaled")(
    multihead_with(jax.vmap(lambda q, k, v: one_head_ring(q, k, v, rescaled=False),
                            in_axes=1, out_axes=1)))
mistake("multihead_ring_attention", hints.HINT_RING_GATHERED, "gathers_keys_and_values")(
    multihead_with(every_head_gathered))


CORRECT = {
    "ring_bytes_per_device": bytes_with(),
    "sequence_softmax": softmax_with(split_softmax),
    "causal_gathered_attention": gathered_with(global_start),
    "multihead_ring_attention": multihead_with(by_head),
    "causal_ring_attention": ring_with(),
}
for _name, _fn in CORRECT.items():
    _fn.__name__ = _fn.__qualname__ = _name


(test_a_usual_mistake_gets_its_own_hint,
 test_every_exercise_of_the_lesson_has_two_mistakes_with_hints,
 test_a_correct_function_gets_no_hint) = lesson_tests(mistake, CORRECT, "09_sequence")


@pytest.mark.parametrize("case_id, wrong, hint", [
    ("sequence_softmax:takes_the_maximum_over_seq", softmax_with(no_pmax),
     hints.HINT_SOFTMAX_PMAX),
    ("causal_ring_attention:permutes_over_seq", gathered_with(global_start),
     hints.HINT_RING_NO_PERMUTE),
    ("ring_bytes_per_device:matches_the_compiled_ring_of_wider_heads", bytes_with(arrays=1),
     hints.HINT_RING_BYTES_KEYS_ONLY),
], ids=["softmax_without_pmax", "ring_that_gathers", "bytes_of_keys_only"])
def test_the_graders_hidden_tests_give_their_hints(case_id, wrong, hint):
    """A softmax with no pmax, a 'ring' that all-gathers, a prediction that forgets the values:
    does the grader's hidden test fail each with its hint, and pass the correct function?"""
    assert_hidden_hint(case_id, wrong, hint, CORRECT)
