"""The usual mistakes of lesson 7 (cost and memory), each written as a student would: does
check() fail it with the hint of that mistake, and no other hint? And does a correct
function, written here independently of solutions/, pass with no hint?"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P
from mistakes import Mistakes, assert_hidden_hint, lesson_tests

from grader.hints import cost as hints
from grader.public.cost import adam_update, mlp_layer, mlp_loss

mistake = Mistakes()


# --- correct functions ----------------------------------------------------------------------
def state_bytes_with(bytes_per_number=4, split_of=None):
    split_of = split_of or {0: 0, 1: 2, 2: 3, 3: 4}

    def training_state_bytes(n_params, n_devices, stage):
        split = split_of[stage]
        return bytes_per_number * n_params * ((4 - split) + split / n_devices)

    return training_state_bytes


def sent_2d_with(group=lambda data, model, axis: axis, whole_operands=False,
                 all_reduce=lambda k: 2 * (k - 1) / k, collectives=("psum", "pmean")):
    def bytes_sent_2d(batch, d_in, d_out, data, model):
        rows, w_rows = (batch, d_in) if whole_operands else (batch / data, d_in / model)
        sent = 0.0
        if "psum" in collectives:
            sent += all_reduce(group(data, model, model)) * 4 * rows * d_out
        if "pmean" in collectives:
            sent += all_reduce(group(data, model, data)) * 4 * w_rows * d_out
        return sent

    return bytes_sent_2d


def checkpointed_scan(ws, x):
    out, _ = jax.lax.scan(jax.checkpoint(mlp_layer), x, ws)
    return jnp.mean(out**2)


def unrolled_checkpoints(ws, x):
    for w in ws:
        x, _ = jax.checkpoint(mlp_layer)(x, w)
    return jnp.mean(x**2)


def remat_with(loss, vary=True, average=True, **options):
    def remat_mlp_grads(ws, x):
        mesh = jax.make_mesh((jax.device_count(),), ("data",))

        def local(ws, x):
            if vary:
                ws = jax.lax.pcast(ws, "data", to="varying")
            grads = jax.grad(loss)(ws, x)
            return jax.lax.pmean(grads, "data") if average else grads

        @jax.jit
        def run(ws, x):
            ws = jax.reshard(ws, NamedSharding(mesh, P()))
            x = jax.reshard(x, NamedSharding(mesh, P("data")))
            return jax.shard_map(local, mesh=mesh, in_specs=(P(), P("data")), out_specs=P(),
                                 **options)(ws, x)

        return run(ws, x)

    return remat_mlp_grads


SPLIT = P("data")


def zero2_with(mean_grad, moments_out=SPLIT, divide=True, gather_params=True):
    def zero2_adam_step(params, local_grads, m, v, t):
        n = jax.device_count()
        mesh = jax.make_mesh((n,), ("data",))

        def local(p, g, m, v, t):
            g = mean_grad(g[0], n) / (n if divide else 1)
            p, m, v = adam_update(p, g, m, v, t)
            if moments_out == P():
                m, v = (jax.lax.all_gather(a, "data", tiled=True) for a in (m, v))
            return p, m, v

        @jax.jit
        def run(params, local_grads, m, v, t):
            split = NamedSharding(mesh, P("data"))
            params, local_grads, m, v = (jax.reshard(a, split)
                                         for a in (params, local_grads, m, v))
            p, m, v = jax.shard_map(local, mesh=mesh, in_specs=(P("data"),) * 4 + (P(),),
                                    out_specs=(P("data"), moments_out, moments_out),
                                    check_vma=moments_out != P())(params, local_grads, m, v, t)
            return (jax.reshard(p, NamedSharding(mesh, P())) if gather_params else p), m, v

        return run(params, local_grads, m, v, t)

    return zero2_adam_step


def scattered(g, n):
    return jax.lax.psum_scatter(g, "data", scatter_dimension=0, tiled=True)


def all_reduced_then_sliced(g, n):
    whole = jax.lax.psum(g, "data")
    size = g.shape[0] // n
    return jax.lax.dynamic_slice_in_dim(whole, jax.lax.axis_index("data") * size, size)


def bytes_2d(batch, d_in, d_out, data, model):
    return (2 * (model - 1) / model * batch / data + 2 * (data - 1) / data * d_in / model) \
        * 4 * d_out


def mesh_step_with(choose=bytes_2d, shapes=None, pmean_grads=False, vary=True,
                   gather=False):
    def best_mesh_step(w, x, y):
        n = jax.device_count()
        (batch, d_in), d_out = x.shape, w.shape[1]
        options = shapes(n) if shapes else [(d, n // d) for d in range(1, n + 1) if n % d == 0]
        data, model = min(options, key=lambda s: choose(batch, d_in, d_out, *s))
        mesh = jax.make_mesh((data, model), ("data", "model"))
        specs = (P("model", None), P("data", "model"), P("data", None))

        def local(w, x, y):
            if pmean_grads:
                if vary:
                    w = jax.lax.pcast(w, "data", to="varying")
                grads = jax.grad(lambda w: jnp.mean(
                    (jax.lax.psum(x @ w, "model") - y) ** 2))(w)
                grads = jax.lax.pmean(grads, "data")
            else:
                grads = jax.grad(lambda w: jax.lax.pmean(jnp.mean(
                    (jax.lax.psum(x @ w, "model") - y) ** 2), "data"))(w)
            return w - 0.1 * grads

        @jax.jit
        def run(w, x, y):
            w, x, y = (jax.reshard(a, NamedSharding(mesh, s))
                       for a, s in zip((w, x, y), specs, strict=True))
            new = jax.shard_map(local, mesh=mesh, in_specs=specs,
                                out_specs=P("model", None))(w, x, y)
            return jax.reshard(new, NamedSharding(mesh, P())) if gather else new

        return run(w, x, y)

    return best_mesh_step


CORRECT = {
    "training_state_bytes": state_bytes_with(),
    "bytes_sent_2d": sent_2d_with(),
    "remat_mlp_grads": remat_with(checkpointed_scan),
    "zero2_adam_step": zero2_with(scattered),
    "best_mesh_step": mesh_step_with(),
}
for _name, _fn in CORRECT.items():
    _fn.__name__ = _fn.__qualname__ = _name


# --- training_state_bytes ------------------------------------------------------------------
mistake("training_state_bytes", hints.HINT_STATE_FLOAT32, "float64")(state_bytes_with(8))
mistake("training_state_bytes", hints.HINT_STATE_STAGES, "one_array_per_stage")(
    state_bytes_with(split_of={0: 0, 1: 1, 2: 2, 3: 3}))
mistake("training_state_bytes", hints.HINT_STATE_STAGES, "no_gradients")(
    lambda n_params, n_devices, stage: 4 * n_params * (
        (3 - min(stage + 1, 3)) + min(stage + 1, 3) / n_devices) if stage else 12 * n_params)

# --- bytes_sent_2d ---------------------------------------------------------------------------
mistake("bytes_sent_2d", hints.HINT_2D_GROUP, "every_device_in_each_group")(
    sent_2d_with(group=lambda data, model, axis: data * model))
mistake("bytes_sent_2d", hints.HINT_2D_OPERAND, "whole_operands")(
    sent_2d_with(whole_operands=True))
mistake("bytes_sent_2d", hints.HINT_2D_RING, "operand_once")(
    sent_2d_with(all_reduce=lambda k: 1.0 if k > 1 else 0.0))
mistake("bytes_sent_2d", hints.HINT_2D_BOTH, "only_the_psum")(
    sent_2d_with(collectives=("psum",)))
mistake("bytes_sent_2d", hints.HINT_2D_BOTH, "only_the_pmean")(
    sent_2d_with(collectives=("pmean",)))

# --- remat_mlp_grads -------------------------------------------------------------------------
mistake("remat_mlp_grads", hints.HINT_REMAT_PLAIN, "no_checkpoint")(remat_with(mlp_loss))
mistake("remat_mlp_grads", hints.HINT_REMAT_LOOP, "unrolled_loop")(
    remat_with(unrolled_checkpoints))
mistake("remat_mlp_grads", hints.HINT_REMAT_SUMMED, "no_pcast")(
    remat_with(checkpointed_scan, vary=False))
mistake("remat_mlp_grads", hints.HINT_REMAT_PMEAN, "no_pmean_unchecked")(
    remat_with(checkpointed_scan, average=False, check_vma=False))

# --- zero2_adam_step -------------------------------------------------------------------------
mistake("zero2_adam_step", hints.HINT_ZERO_SUMMED, "sum_not_mean")(
    zero2_with(scattered, divide=False))
mistake("zero2_adam_step", hints.HINT_ZERO_MOMENTS_SPLIT, "moments_gathered")(
    zero2_with(scattered, moments_out=P()))
mistake("zero2_adam_step", hints.HINT_ZERO_ALL_REDUCE, "all_reduce_then_slice")(
    zero2_with(all_reduced_then_sliced))
mistake("zero2_adam_step", hints.HINT_ZERO_PARAMS_REPLICATED, "params_left_split")(
    zero2_with(scattered, gather_params=False))

# --- best_mesh_step --------------------------------------------------------------------------
mistake("best_mesh_step", hints.HINT_MESH_ONE_AXIS, "always_data_parallel")(
    mesh_step_with(shapes=lambda n: [(n, 1)]))
mistake("best_mesh_step", hints.HINT_MESH_ONE_AXIS, "one_axis_only")(
    mesh_step_with(shapes=lambda n: [(n, 1), (1, n)]))
mistake("best_mesh_step", hints.HINT_MESH_SHAPE, "axes_swapped",
        also=(hints.HINT_MESH_ONE_AXIS,))(
    mesh_step_with(choose=lambda batch, d_in, d_out, data, model:
                   bytes_2d(batch, d_in, d_out, model, data)))
mistake("best_mesh_step", hints.HINT_MESH_EXTRA, "gathers_the_new_w")(
    mesh_step_with(gather=True))
mistake("best_mesh_step", hints.HINT_MESH_SUMMED, "grad_of_w_not_varying",
        also=(hints.HINT_MESH_EXTRA,))(mesh_step_with(pmean_grads=True, vary=False))


(test_a_usual_mistake_gets_its_own_hint,
 test_every_exercise_of_the_lesson_has_two_mistakes_with_hints,
 test_a_correct_function_gets_no_hint) = lesson_tests(mistake, CORRECT, "07_cost")


@pytest.mark.parametrize("case_id, wrong, hint", [
    ("training_state_bytes:matches_memory_analysis_of_compiled_updates", state_bytes_with(8),
     hints.HINT_STATE_FLOAT32),
    ("bytes_sent_2d:matches_the_bytes_compiled_2d_steps_send",
     sent_2d_with(group=lambda data, model, axis: data * model), hints.HINT_2D_GROUP),
    ("zero2_adam_step:bytes_one_device_holds", zero2_with(scattered, moments_out=P()),
     hints.HINT_ZERO_MOMENTS_SPLIT),
    ("best_mesh_step:a_batch_three_times_d_in_sends_the_fewest_bytes",
     mesh_step_with(shapes=lambda n: [(1, n)]), hints.HINT_MESH_ONE_AXIS),
    ("best_mesh_step:a_tiny_and_a_large_batch_from_replicated_inputs",
     mesh_step_with(shapes=lambda n: [(1, n)]), hints.HINT_MESH_LAYOUT),
], ids=["state_float64", "group_of_every_device", "moments_gathered", "always_tp",
        "always_tp_from_replicated_inputs"])
def test_the_graders_hidden_tests_give_their_hints(case_id, wrong, hint):
    """A prediction held against the compiled reference programs, the bytes one device
    holds of a ZeRO step's outputs, the bytes a step sends: does the hidden test fail each
    mistake with its hint, and pass the correct function?"""
    assert_hidden_hint(case_id, wrong, hint, CORRECT)
