"""The usual mistakes of lesson 8 (pipeline parallelism), each written as a student would:
does check() fail it with the hint of that mistake, and no other hint? And does a correct
function, written here independently of solutions/, pass with no hint?"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P
from mistakes import Mistakes, assert_hidden_hint, lesson_tests

from grader.hints import common
from grader.hints import pipeline as hints

mistake = Mistakes()


def stage_mesh():
    return jax.make_mesh((jax.device_count(),), ("stage",))


def on(mesh, spec):
    return NamedSharding(mesh, spec)


# --- the two predictions ------------------------------------------------------------------
def count_for(stages, target, bubble=lambda n, m: (n - 1) / (m + n - 1), strict=False):
    """Microbatches for a target bubble, counted up from 1 (optionally with a mistake)."""
    for m in range(1, 10_000):
        if bubble(stages, m) < target or (not strict and bubble(stages, m) == target):
            return m
    raise AssertionError("no count found")


def schedule(stages, microbatches, idle=None, ticks_extra=0, direction=-1):
    rows = []
    for t in range(microbatches + stages - 1 + ticks_extra):
        row = []
        for s in range(stages):
            k = t + direction * s
            row.append(k if 0 <= k < microbatches else idle)
        rows.append(row)
    return rows


def by_stage(stages, microbatches):
    rows = schedule(stages, microbatches)
    return [[row[s] for row in rows] for s in range(stages)]


# --- pipelines, with a switch for each mistake -----------------------------------------------
def pipeline(ws, xs, backward=False, late=False, permute=True):
    """The given pipeline of exercise 3, with its bugs as options (Python loop over ticks)."""
    n, m = jax.device_count(), xs.shape[0]
    mesh = stage_mesh()
    step = -1 if backward else 1

    def program(w, xs):
        stage = jax.lax.axis_index("stage")
        h = jax.lax.pcast(jnp.zeros_like(xs[0]), "stage", to="varying")
        outputs = jnp.zeros_like(xs)
        for t in range(m + n - 1):
            if t < m:
                h = jnp.where(stage == 0, xs[t], h)
            y = jnp.tanh(h @ w[0])
            if t >= n - 1:
                slot = t - n if late else t - n + 1
                outputs = outputs.at[slot].set(jnp.where(stage == n - 1, y, 0.0))
            if permute:
                h = jax.lax.ppermute(y, "stage", [(i, (i + step) % n) for i in range(n)])
            else:  # every stage "receives" its own result
                h = y
        return jax.lax.psum(outputs, "stage")

    ws, xs = jax.reshard(ws, on(mesh, P("stage"))), jax.reshard(xs, on(mesh, P()))
    return jax.shard_map(program, mesh=mesh, in_specs=(P("stage"), P()), out_specs=P())(ws, xs)


def jitted_pipeline(**options):
    def fixed_pipeline(ws, xs):
        return jax.jit(lambda ws, xs: pipeline(ws, xs, **options))(ws, xs)
    return fixed_pipeline


def grads_with(divide_by_one_microbatch=False, loss_outside=False, pcast=True,
               replicate=False):
    def pipeline_grads(ws, xs, ys):
        n, m = jax.device_count(), xs.shape[0]
        mesh = stage_mesh()

        def program(w, xs, ys):
            stage = jax.lax.axis_index("stage")
            if replicate:  # every device holds all layers and picks its own
                w = jax.lax.dynamic_slice_in_dim(w, stage, 1)

            def tick(t, carry):
                h, total, outs = carry
                h = jnp.where(stage == 0, xs[jnp.clip(t, 0, m - 1)], h)
                y = jnp.tanh(h @ w[0])
                k = t - n + 1
                last = (stage == n - 1) & (k >= 0)
                total = total + jnp.where(last, jnp.sum((y - ys[jnp.maximum(k, 0)]) ** 2), 0)
                outs = jnp.where(last, outs.at[jnp.maximum(k, 0)].set(y), outs)
                h = jax.lax.ppermute(y, "stage", [(i, i + 1) for i in range(n - 1)])
                return h, total, outs

            start = (jnp.zeros_like(xs[0]), jnp.zeros(()), jnp.zeros_like(xs))
            if pcast:
                start = jax.lax.pcast(start, "stage", to="varying")
            _, total, outs = jax.lax.fori_loop(0, m + n - 1, tick, start)
            if loss_outside:
                return jax.lax.psum(outs, "stage")
            size = ys[0].size if divide_by_one_microbatch else ys.size
            return jax.lax.psum(total, "stage") / size

        def loss(ws, xs, ys):
            ws = jax.reshard(ws, on(mesh, P() if replicate else P("stage")))
            xs, ys = jax.reshard(xs, on(mesh, P())), jax.reshard(ys, on(mesh, P()))
            out = jax.shard_map(program, mesh=mesh,
                                in_specs=(P() if replicate else P("stage"), P(), P()),
                                out_specs=P())(ws, xs, ys)
            return jnp.mean((out - ys) ** 2) if loss_outside else out

        def grads(ws, xs, ys):
            if replicate:  # placed replicated before differentiating: so are the gradients
                ws = jax.reshard(ws, on(mesh, P()))
            return jax.grad(loss)(ws, xs, ys)

        return jax.jit(grads)(ws, xs, ys)

    return pipeline_grads


def deep_with(first_only=False, biases=True, pcast=True, replicate=False):
    def deep_pipeline(ws, bs, x, microbatches):
        n, m = jax.device_count(), microbatches
        mesh = stage_mesh()
        per_stage = ws.shape[0] // n

        def program(w, b, xs):
            stage = jax.lax.axis_index("stage")
            if replicate:
                w = jax.lax.dynamic_slice_in_dim(w, stage * per_stage, per_stage)
                b = jax.lax.dynamic_slice_in_dim(b, stage * per_stage, per_stage)

            def tick(t, carry):
                h, outs = carry
                h = jnp.where(stage == 0, xs[jnp.clip(t, 0, m - 1)], h)
                for i in range(1 if first_only else per_stage):
                    h = jnp.tanh(h @ w[i] + (b[i] if biases else 0.0))
                k = t - n + 1
                outs = jnp.where((stage == n - 1) & (k >= 0), outs.at[jnp.maximum(k, 0)].set(h),
                                 outs)
                return jax.lax.ppermute(h, "stage", [(i, i + 1) for i in range(n - 1)]), outs

            start = (jnp.zeros_like(xs[0]), jnp.zeros_like(xs))
            if pcast:
                start = jax.lax.pcast(start, "stage", to="varying")
            return jax.lax.psum(jax.lax.fori_loop(0, m + n - 1, tick, start)[1], "stage")

        @jax.jit
        def run(ws, bs, x):
            spec = P() if replicate else P("stage")
            ws, bs = jax.reshard(ws, on(mesh, spec)), jax.reshard(bs, on(mesh, spec))
            xs = jax.reshard(x.reshape(m, -1, x.shape[1]), on(mesh, P()))
            out = jax.shard_map(program, mesh=mesh, in_specs=(spec, spec, P()),
                                out_specs=P())(ws, bs, xs)
            return out.reshape(x.shape)

        return run(ws, bs, x)

    return deep_pipeline


CORRECT = {
    "microbatches_for_bubble": count_for,
    "gpipe_schedule": schedule,
    "fixed_pipeline": jitted_pipeline(),
    "pipeline_grads": grads_with(),
    "deep_pipeline": deep_with(),
}
for _name, _fn in CORRECT.items():
    _fn.__name__ = _fn.__qualname__ = _name


# --- microbatches_for_bubble ----------------------------------------------------------------
mistake("microbatches_for_bubble", hints.HINT_BUBBLE_OVER_USEFUL, "idle_over_useful")(
    lambda stages, target: count_for(stages, target, lambda n, m: (n - 1) / m))
mistake("microbatches_for_bubble", hints.HINT_BUBBLE_TICKS, "m_plus_n_ticks")(
    lambda stages, target: count_for(stages, target, lambda n, m: (n - 1) / (m + n)))
mistake("microbatches_for_bubble", hints.HINT_BUBBLE_AT_MOST, "strictly_below")(
    lambda stages, target: count_for(stages, target, strict=True))

# --- gpipe_schedule -----------------------------------------------------------------------
mistake("gpipe_schedule", hints.HINT_SCHEDULE_IDLE, "minus_one_for_idle")(
    lambda stages, microbatches: schedule(stages, microbatches, idle=-1))
mistake("gpipe_schedule", hints.HINT_SCHEDULE_TRANSPOSED, "one_list_per_stage")(by_stage)
mistake("gpipe_schedule", hints.HINT_SCHEDULE_TICKS, "m_plus_n_ticks")(
    lambda stages, microbatches: schedule(stages, microbatches, ticks_extra=1))
mistake("gpipe_schedule", hints.HINT_SCHEDULE_DIRECTION, "t_plus_s")(
    lambda stages, microbatches: schedule(stages, microbatches, direction=1))

# --- fixed_pipeline -----------------------------------------------------------------------
mistake("fixed_pipeline", hints.HINT_FIX_BOTH, "unchanged")(
    jitted_pipeline(backward=True, late=True))
mistake("fixed_pipeline", hints.HINT_FIX_SLOT, "direction_fixed_only")(
    jitted_pipeline(late=True))
mistake("fixed_pipeline", hints.HINT_FIX_DIRECTION, "slot_fixed_only")(
    jitted_pipeline(backward=True))

# --- pipeline_grads -----------------------------------------------------------------------
mistake("pipeline_grads", hints.HINT_GRADS_M_TIMES, "mean_of_one_microbatch")(
    grads_with(divide_by_one_microbatch=True))
mistake("pipeline_grads", hints.HINT_GRADS_SCALAR_ONLY, "loss_after_the_shard_map")(
    grads_with(loss_outside=True))
mistake("pipeline_grads", hints.HINT_CARRY_VARYING, "carry_not_pcast")(grads_with(pcast=False))


@mistake("pipeline_grads", common.HINT_RESHARD)
def shard_map_on_unplaced_weights(ws, xs, ys):
    mesh = stage_mesh()

    def loss(ws, xs, ys):
        out = jax.shard_map(lambda w, x: jnp.tanh(x @ w[0]), mesh=mesh,
                            in_specs=(P("stage"), P()), out_specs=P("stage"))(ws, xs)
        return jnp.mean(out)

    return jax.jit(jax.grad(loss))(ws, xs, ys)


# --- deep_pipeline ------------------------------------------------------------------------
mistake("deep_pipeline", hints.HINT_DEEP_ONE_LAYER, "first_layer_of_each_stage")(
    deep_with(first_only=True))
mistake("deep_pipeline", hints.HINT_DEEP_NO_BIAS, "no_biases")(deep_with(biases=False))
mistake("deep_pipeline", hints.HINT_CARRY_VARYING, "carry_not_pcast")(deep_with(pcast=False))


(test_a_usual_mistake_gets_its_own_hint,
 test_every_exercise_of_the_lesson_has_two_mistakes_with_hints,
 test_a_correct_function_gets_no_hint) = lesson_tests(mistake, CORRECT, "08_pipeline")


@pytest.mark.parametrize("case_id, wrong, hint", [
    ("deep_pipeline:weights_and_biases_never_leave_their_stage", deep_with(replicate=True),
     hints.HINT_DEEP_WEIGHTS_MOVE),
    ("pipeline_grads:gradients_split_like_the_weights", grads_with(replicate=True),
     hints.HINT_GRADS_SPLIT),
    ("fixed_pipeline:activations_move_with_a_collective_permute",
     jitted_pipeline(permute=False), hints.HINT_DEEP_NO_PERMUTE),
], ids=["deep_weights_replicated", "grads_weights_replicated", "fixed_no_ppermute"])
def test_the_graders_tests_of_how_it_computes_give_their_hints(case_id, wrong, hint):
    """Weights replicated so that each stage picks its own, a pipeline with no ppermute:
    does the grader's hidden test of where things live and what moves fail each with its
    hint, and pass the correct function?"""
    assert_hidden_hint(case_id, wrong, hint, CORRECT)
