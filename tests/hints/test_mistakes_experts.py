"""The usual mistakes of lesson 10 (experts and overlap), each written as a student would:
does check() fail it with the hint of that mistake, and no other hint? And does a correct
function, written here independently of solutions/, pass with no hint?"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P
from mistakes import Mistakes, assert_hidden_hint, lesson_tests

from grader.hints import experts as hints

mistake = Mistakes()


# --- correct functions ----------------------------------------------------------------------
def capacity_for_no_drops(expert_ids, n_groups):
    busiest = 0
    for group in np.split(np.asarray(expert_ids), n_groups):
        _, counts = np.unique(group, return_counts=True)
        busiest = max(busiest, int(counts.max()))
    return busiest


def dispatch_bytes(tokens_per_device, d_model, n_experts, capacity_factor, itemsize):
    n = jax.device_count()
    per_expert = math.ceil(capacity_factor * tokens_per_device / n_experts)
    return (n - 1) * (n_experts // n) * per_expert * d_model * itemsize


def top2_with(order="priority", shared=True, inclusive=False, per_group=True, drop=True):
    """Top-2 slots by a cumulative count of one-hot choices, in ``order`` ("priority": every
    first choice, then every second; "token": token by token), one count for both choices or
    one each, the choice itself counted or not, per group or over every group, -1 or not."""
    def top2_slots(choices, n_experts, capacity):
        groups, tokens, _ = choices.shape
        hot = (choices[..., None] == jnp.arange(n_experts)).astype(jnp.int32)  # (g, t, 2, E)
        if order == "priority":
            line = jnp.swapaxes(hot, 1, 2)  # (g, 2, t, E)
        else:
            line = hot
        if not shared:
            counts = jnp.cumsum(hot, axis=1)  # each choice along the tokens alone
        else:
            flat = line.reshape(groups, 2 * tokens, n_experts)
            if not per_group:
                flat = flat.reshape(1, -1, n_experts)
            counts = jnp.cumsum(flat, axis=1).reshape(line.shape)
            if order == "priority":
                counts = jnp.swapaxes(counts, 1, 2)
        if not inclusive:
            counts = counts - hot
        slot = jnp.sum(counts * hot, axis=-1)
        return jnp.where(slot < capacity, slot, -1) if drop else slot

    return top2_slots


SPLIT = P("expert")


def moe_with(apply_experts, gated=True, expert_weights=SPLIT):
    def moe_two_experts_per_device(x, w_router, w1, w2, capacity):
        n = jax.device_count()
        mesh = jax.make_mesh((n,), ("expert",))
        specs = (P("expert"), P(), expert_weights, expert_weights)
        n_experts = w_router.shape[1]

        def local(x, w_router, w1, w2):
            probs = jax.nn.softmax(x @ w_router, axis=-1)
            expert = jnp.argmax(probs, axis=-1)
            chosen = jax.nn.one_hot(expert, n_experts, dtype=jnp.int32)
            slot = jnp.sum((jnp.cumsum(chosen, axis=0) - 1) * chosen, axis=1)
            buffers = jnp.zeros((n_experts, capacity, x.shape[1]), x.dtype)
            buffers = buffers.at[expert, slot].set(x, mode="drop")
            back = apply_experts(buffers, w1, w2, n, capacity)
            y = back.at[expert, slot].get(mode="fill", fill_value=0)
            return jnp.max(probs, axis=-1)[:, None] * y if gated else y

        @jax.jit
        def run(*args):
            args = [jax.reshard(a, NamedSharding(mesh, s))
                    for a, s in zip(args, specs, strict=True)]
            return jax.shard_map(local, mesh=mesh, in_specs=specs,
                                 out_specs=P("expert"))(*args)

        return run(x, w_router, w1, w2)

    return moe_two_experts_per_device


def exchanged(order):
    def apply_experts(buffers, w1, w2, n, capacity):
        inbox = jax.lax.all_to_all(buffers, "expert", 0, 0, tiled=True)
        d = inbox.shape[-1]
        if order == "sender_major":
            per = inbox.reshape(n, 2, capacity, d)
            out = jnp.stack([jax.nn.relu(per[:, k] @ w1[k]) @ w2[k] for k in range(2)], axis=1)
        else:  # read as (expert, sender): the wrong order
            per = inbox.reshape(2, n, capacity, d)
            out = jnp.stack([jax.nn.relu(per[k] @ w1[k]) @ w2[k] for k in range(2)], axis=0)
        return jax.lax.all_to_all(out.reshape(2 * n, capacity, d), "expert", 0, 0, tiled=True)

    return apply_experts


def all_experts_here(buffers, w1, w2, n, capacity):
    """Every expert's weights on every device: no exchange of tokens at all."""
    return jnp.stack([jax.nn.relu(buffers[e] @ w1[e]) @ w2[e] for e in range(buffers.shape[0])])


def rs_with(reduce, check_vma=True):
    def reduce_scatter_matmul(x, w):
        n = jax.device_count()
        mesh = jax.make_mesh((n,), ("x",))
        specs = (P(None, "x"), P("x", None))

        def local(x_cols, w_rows):
            return reduce(x_cols, w_rows, n)

        @jax.jit
        def run(x, w):
            x = jax.reshard(x, NamedSharding(mesh, specs[0]))
            w = jax.reshard(w, NamedSharding(mesh, specs[1]))
            return jax.shard_map(local, mesh=mesh, in_specs=specs, out_specs=P("x", None),
                                 check_vma=check_vma)(x, w)

        return run(x, w)

    return reduce_scatter_matmul


def ring(offset, first_pass=False):
    """The ring: at step s, device j adds the partial product of row block j - offset - s."""

    def reduce(x_cols, w_rows, n):
        me = jax.lax.axis_index("x")
        rows = x_cols.shape[0] // n
        right = [(i, (i + 1) % n) for i in range(n)]

        def block(b):
            return jax.lax.dynamic_slice_in_dim(x_cols, (b % n) * rows, rows) @ w_rows

        if first_pass:  # a pass of zeros before the first product: one ppermute too many
            total = jnp.zeros((rows, w_rows.shape[1]), x_cols.dtype)
            total = jax.lax.pcast(total, "x", to="varying")
            for step in range(n):
                total = jax.lax.ppermute(total, "x", right) + block(me - offset - step)
            return total
        total = block(me - offset)
        for step in range(1, n):
            total = jax.lax.ppermute(total, "x", right) + block(me - offset - step)
        return total

    return reduce


CORRECT = {
    "capacity_for_no_drops": capacity_for_no_drops,
    "dispatch_bytes": dispatch_bytes,
    "top2_slots": top2_with(),
    "moe_two_experts_per_device": moe_with(exchanged("sender_major")),
    "reduce_scatter_matmul": rs_with(ring(1)),
}
for _name, _fn in CORRECT.items():
    _fn.__name__ = _fn.__qualname__ = _name


# --- capacity_for_no_drops ----------------------------------------------------------------
@mistake("capacity_for_no_drops", hints.HINT_CAPACITY_PER_GROUP)
def busiest_expert_over_all_tokens(expert_ids, n_groups):
    return int(np.bincount(np.asarray(expert_ids)).max())


@mistake("capacity_for_no_drops", hints.HINT_CAPACITY_AVERAGE)
def even_share_of_a_group(expert_ids, n_groups):
    ids = np.asarray(expert_ids)
    return math.ceil(ids.size / n_groups / (int(ids.max()) + 1))


# --- dispatch_bytes ---------------------------------------------------------------------------
@mistake("dispatch_bytes", hints.HINT_BYTES_OWN_PIECE)
def the_whole_buffer(tokens_per_device, d_model, n_experts, capacity_factor, itemsize):
    return n_experts * math.ceil(capacity_factor * tokens_per_device / n_experts) * d_model \
        * itemsize


@mistake("dispatch_bytes", hints.HINT_BYTES_CAPACITY)
def the_tokens_not_the_slots(tokens_per_device, d_model, n_experts, capacity_factor, itemsize):
    n = jax.device_count()
    return tokens_per_device * d_model * itemsize * (n - 1) / n


# --- top2_slots ---------------------------------------------------------------------------
mistake("top2_slots", hints.HINT_TOP2_PRIORITY, "token_by_token")(top2_with(order="token"))
mistake("top2_slots", hints.HINT_TOP2_SHARED, "a_count_per_choice")(top2_with(shared=False))
mistake("top2_slots", hints.HINT_SLOTS_FROM_ONE, "inclusive_cumsum")(top2_with(inclusive=True))
mistake("top2_slots", hints.HINT_SLOTS_PER_GROUP, "cumsum_over_all_groups")(
    top2_with(per_group=False))
mistake("top2_slots", hints.HINT_SLOTS_DROPPED, "no_minus_one")(top2_with(drop=False))


@mistake("top2_slots", hints.HINT_TRACED_VALUE)
def python_loop_over_tokens(choices, n_experts, capacity):
    groups = []
    for group in choices:
        seen = [0] * n_experts
        slots = [[-1, -1] for _ in group]
        for k in (0, 1):
            for t, token in enumerate(group):
                expert = int(token[k])
                slots[t][k] = seen[expert] if seen[expert] < capacity else -1
                seen[expert] += 1
        groups.append(slots)
    return jnp.array(groups)


# --- moe_two_experts_per_device -----------------------------------------------------------
mistake("moe_two_experts_per_device", hints.HINT_MOE_GATE, "no_gate")(
    moe_with(exchanged("sender_major"), gated=False))
mistake("moe_two_experts_per_device", hints.HINT_MOE_ORDER, "inbox_read_expert_major")(
    moe_with(exchanged("expert_major")))
mistake("moe_two_experts_per_device", hints.HINT_MOE_TWO_ALL_TO_ALL, "weights_replicated")(
    moe_with(all_experts_here, expert_weights=P()))


# --- reduce_scatter_matmul ----------------------------------------------------------------
mistake("reduce_scatter_matmul", hints.HINT_RS_NO_COLLECTIVE_OP, "psum_scatter")(
    rs_with(lambda x_cols, w_rows, n: jax.lax.psum_scatter(x_cols @ w_rows, "x",
                                                           scatter_dimension=0, tiled=True)))
mistake("reduce_scatter_matmul", hints.HINT_RS_NO_COLLECTIVE_OP, "psum_then_slice")(
    rs_with(lambda x_cols, w_rows, n: jax.lax.dynamic_slice_in_dim(
        jax.lax.psum(x_cols @ w_rows, "x"),
        jax.lax.axis_index("x") * (x_cols.shape[0] // n), x_cols.shape[0] // n),
        check_vma=False))
mistake("reduce_scatter_matmul", hints.HINT_RS_BLOCK, "ends_with_the_next_block")(
    rs_with(ring(0)))
mistake("reduce_scatter_matmul", hints.HINT_RS_PERMUTES, "a_pass_of_zeros_first")(
    rs_with(ring(1, first_pass=True)))


(test_a_usual_mistake_gets_its_own_hint,
 test_every_exercise_of_the_lesson_has_two_mistakes_with_hints,
 test_a_correct_function_gets_no_hint) = lesson_tests(mistake, CORRECT, "10_experts")


@pytest.mark.parametrize("case_id, wrong, hint", [
    ("capacity_for_no_drops:predicts_what_the_layer_needs", busiest_expert_over_all_tokens,
     hints.HINT_CAPACITY_PER_GROUP),
    ("dispatch_bytes:four_experts_per_device_float32", the_whole_buffer,
     hints.HINT_BYTES_OWN_PIECE),
    ("moe_two_experts_per_device:exchanges_over_the_expert_axis",
     moe_with(all_experts_here, expert_weights=P()), hints.HINT_MOE_TWO_ALL_TO_ALL),
    ("reduce_scatter_matmul:passes_partial_sums_over_x",
     rs_with(lambda x_cols, w_rows, n: jax.lax.psum_scatter(x_cols @ w_rows, "x",
                                                            scatter_dimension=0, tiled=True)),
     hints.HINT_RS_NO_COLLECTIVE_OP),
], ids=["capacity_over_one_group", "bytes_of_the_whole_buffer", "moe_without_all_to_all",
        "rs_with_psum_scatter"])
def test_the_graders_hidden_tests_give_their_hints(case_id, wrong, hint):
    """A prediction compared with what a compiled program does, a program that traces no
    all_to_all or no ppermute: does the grader's hidden test fail each with its hint, and
    pass the correct function?"""
    assert_hidden_hint(case_id, wrong, hint, CORRECT)
