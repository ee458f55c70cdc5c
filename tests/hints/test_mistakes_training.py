"""The usual mistakes of lesson 5 (training in parallel), each written as a student would:
does check() fail it with the hint of that mistake, and no other hint? And does a correct
function, written here independently of solutions/, pass with no hint?"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P
from mistakes import (
    Mistakes,
    assert_hidden_hint,
    lesson_tests,
)

from grader.course import EXERCISES
from grader.hints import common
from grader.hints import training as hints

mistake = Mistakes()
LESSON = [e.name for e in EXERCISES if e.lesson == "05_training"]


# --- the lesson's model (as its notebook defines it) ----------------------------------------
def mlp(params, x):
    return jax.nn.relu(x @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]


def loss_fn(params, batch):
    return jnp.mean((mlp(params, batch["x"]) - batch["y"]) ** 2)


def sgd_step(params, batch, lr):
    grads = jax.grad(loss_fn)(params, batch)
    return jax.tree.map(lambda w, g: w - lr * g, params, grads)


def data_mesh() -> Mesh:
    return Mesh(np.array(jax.devices()), ("data",))


def tp_mesh() -> Mesh:
    n = jax.device_count()
    model = 2 if n % 2 == 0 else 1
    return Mesh(np.array(jax.devices()).reshape(n // model, model), ("data", "model"))


# --- correct functions ----------------------------------------------------------------------
def on_every_axis(rows_spec):
    """A step whose batch rows are split as ``rows_spec(mesh)`` says."""
    def dp_step_on_mesh(params, batch, lr, mesh):
        whole = NamedSharding(mesh, P())
        rows = NamedSharding(mesh, rows_spec(mesh))
        return jax.jit(sgd_step, in_shardings=(whole, rows, None),
                       out_shardings=whole)(params, batch, lr)

    return dp_step_on_mesh


def accumulating(local_grads, **options):
    def accumulated_grads(params, batch, steps):
        local = functools.partial(local_grads, steps=steps)
        return jax.jit(jax.shard_map(local, mesh=data_mesh(), in_specs=(P(), P("data")),
                                     out_specs=P(), **options))(params, batch)

    return accumulated_grads


def in_a_fori_loop(params, rows, steps, varying=True, reduce="after"):
    """The microbatches' gradients added up in a fori_loop, averaged over 'data' after it
    (reduce="after"), inside it ("each") or not at all ("never")."""
    if varying:
        params = jax.lax.pcast(params, "data", to="varying")
    size = rows["x"].shape[0] // steps

    def add(i, total):
        part = jax.tree.map(lambda a: jax.lax.dynamic_slice_in_dim(a, i * size, size), rows)
        grads = jax.grad(loss_fn)(params, part)
        if reduce == "each":
            grads = jax.lax.pmean(grads, "data")
        return jax.tree.map(lambda t, g: t + g / steps, total, grads)

    zeros = jax.tree.map(jnp.zeros_like, params)
    if reduce == "each":
        zeros = jax.tree.map(lambda z: jax.lax.pmean(z, "data"), zeros)
    total = jax.lax.fori_loop(0, steps, add, zeros)
    return jax.lax.pmean(total, "data") if reduce == "after" else total


def attention(x, wq, wk, wv, wo):
    q, k, v = (jnp.einsum("bsm,mhd->bshd", x, w) for w in (wq, wk, wv))
    weights = jax.nn.softmax(jnp.einsum("bshd,bthd->bhst", q, k) / jnp.sqrt(q.shape[-1]))
    return jnp.einsum("bhst,bthd,hdm->bsm", weights, v, wo)


def tpa_with(local, **options):
    def tp_attention(x, wq, wk, wv, wo):
        heads = P(None, "model")
        specs = (P("data"), heads, heads, heads, P("model"))
        return jax.jit(jax.shard_map(local, mesh=tp_mesh(), in_specs=specs,
                                     out_specs=P("data"), **options))(x, wq, wk, wv, wo)

    return tp_attention


def fsdp_tp_with(join, gather_model_too=False, tiled=True, **options):
    """relu(x @ w1) @ w2 on the 2-D mesh, w1 P('data', 'model') and w2 P('model', 'data'),
    each gathered over 'data' (and, with gather_model_too, over 'model': whole), the partial
    outputs joined by ``join``."""
    def fsdp_tp_forward(params, x):
        def local(params, x):
            w1 = jax.lax.all_gather(params["w1"], "data", axis=0, tiled=tiled)
            w2 = jax.lax.all_gather(params["w2"], "data", axis=1, tiled=tiled)
            if gather_model_too:
                w1 = jax.lax.all_gather(w1, "model", axis=1, tiled=True)
                w2 = jax.lax.all_gather(w2, "model", axis=0, tiled=True)
                return jax.nn.relu(x @ w1) @ w2
            return join(jax.nn.relu(x @ w1) @ w2)

        specs = ({"w1": P("data", "model"), "w2": P("model", "data")}, P("data"))
        return jax.jit(jax.shard_map(local, mesh=tp_mesh(), in_specs=specs,
                                     out_specs=P("data"), **options))(params, x)

    return fsdp_tp_forward


CORRECT = {
    "dp_step_on_mesh": on_every_axis(lambda mesh: P(mesh.axis_names)),
    "accumulated_grads": accumulating(in_a_fori_loop),
    "tp_attention": tpa_with(lambda *arrays: jax.lax.psum(attention(*arrays), "model")),
    "fsdp_tp_forward": fsdp_tp_with(lambda partial: jax.lax.psum(partial, "model")),
}
for _name, _fn in CORRECT.items():
    _fn.__name__ = _fn.__qualname__ = _name


# --- dp_step_on_mesh -----------------------------------------------------------------------
mistake("dp_step_on_mesh", hints.HINT_DP_ONE_DEVICE, "jit_without_shardings")(
    lambda params, batch, lr, mesh: jax.jit(sgd_step)(params, batch, lr))
mistake("dp_step_on_mesh", hints.HINT_DP_EVERY_AXIS, "rows_over_the_first_axis")(
    on_every_axis(lambda mesh: P(mesh.axis_names[0])))


@mistake("dp_step_on_mesh", hints.HINT_DP_NOT_REPLICATED)
def brings_the_new_parameters_back_to_the_host(params, batch, lr, mesh):
    return jax.device_get(CORRECT["dp_step_on_mesh"](params, batch, lr, mesh))


# --- accumulated_grads ------------------------------------------------------------------------
# (jax.grad of replicated parameters sums over 'data' inside the loop: once per microbatch)
mistake("accumulated_grads", hints.HINT_DP_GRADS_SUMMED, "no_pcast",
        also=(hints.HINT_ACC_REDUCE_EACH,))(
    accumulating(functools.partial(in_a_fori_loop, varying=False)))
mistake("accumulated_grads", hints.HINT_ACC_REDUCE_EACH, "pmean_per_microbatch")(
    accumulating(functools.partial(in_a_fori_loop, reduce="each")))
mistake("accumulated_grads", hints.HINT_ACC_ALL_AT_ONCE, "whole_rows_at_once")(
    accumulating(lambda params, rows, steps: jax.lax.pmean(
        jax.grad(loss_fn)(jax.lax.pcast(params, "data", to="varying"), rows), "data")))


@mistake("accumulated_grads", hints.HINT_ACC_ALL_AT_ONCE)
def python_loop_over_the_microbatches(params, batch, steps):
    def local(params, rows):
        params = jax.lax.pcast(params, "data", to="varying")
        size = rows["x"].shape[0] // steps
        total = jax.tree.map(jnp.zeros_like, params)
        for i in range(steps):
            part = jax.tree.map(lambda a, i=i: a[i * size:(i + 1) * size], rows)
            total = jax.tree.map(jnp.add, total, jax.grad(loss_fn)(params, part))
        return jax.lax.pmean(jax.tree.map(lambda t: t / steps, total), "data")

    return jax.jit(jax.shard_map(local, mesh=data_mesh(), in_specs=(P(), P("data")),
                                 out_specs=P()))(params, batch)


mistake("accumulated_grads", hints.HINT_DP_FORGOT_PMEAN, "no_pmean_unchecked")(
    accumulating(functools.partial(in_a_fori_loop, reduce="never"), check_vma=False))
mistake("accumulated_grads", common.HINT_NOT_REPLICATED, "no_pmean")(
    accumulating(functools.partial(in_a_fori_loop, reduce="never")))


@mistake("accumulated_grads", common.HINT_RESHARD)
def explicit_mesh_without_placing_the_batch(params, batch, steps):
    mesh = jax.make_mesh((jax.device_count(),), ("data",))
    local = functools.partial(in_a_fori_loop, steps=steps)
    return jax.jit(jax.shard_map(local, mesh=mesh, in_specs=(P(), P("data")),
                                 out_specs=P()))(params, batch)


# --- tp_attention ---------------------------------------------------------------------------
mistake("tp_attention", hints.HINT_TPA_FORGOT_PSUM, "no_psum_unchecked",
        also=(hints.HINT_TPA_ONE_ALL_REDUCE,))(
    tpa_with(attention, check_vma=False))
mistake("tp_attention", common.HINT_NOT_REPLICATED, "no_psum")(tpa_with(attention))


@mistake("tp_attention", hints.HINT_TPA_ONE_ALL_REDUCE)
def gathers_every_heads_output(x, wq, wk, wv, wo):
    def local(x, wq, wk, wv, wo):
        q, k, v = (jnp.einsum("bsm,mhd->bshd", x, w) for w in (wq, wk, wv))
        scores = jnp.einsum("bshd,bthd->bhst", q, k) / jnp.sqrt(q.shape[-1])
        mine = jnp.einsum("bhst,bthd->bshd", jax.nn.softmax(scores, axis=-1), v)
        every = jax.lax.all_gather(mine, "model", axis=2, tiled=True)
        return jnp.einsum("bshd,hdm->bsm", every, wo)

    heads = P(None, "model")
    return jax.jit(jax.shard_map(local, mesh=tp_mesh(), in_specs=(P("data"), heads, heads,
                                                                   heads, P()),
                                 out_specs=P("data"), check_vma=False))(x, wq, wk, wv, wo)


# --- fsdp_tp_forward ------------------------------------------------------------------------
mistake("fsdp_tp_forward", hints.HINT_FSDP_TP_PSUM, "no_psum_unchecked",
        also=(hints.HINT_FSDP_TP_GATHER,))(
    fsdp_tp_with(lambda partial: partial, check_vma=False))
mistake("fsdp_tp_forward", hints.HINT_FSDP_TP_GATHER, "weights_gathered_whole")(
    fsdp_tp_with(lambda partial: jax.lax.psum(partial, "model"), gather_model_too=True,
                 check_vma=False))
mistake("fsdp_tp_forward", hints.HINT_GATHER_NOT_TILED, "all_gather_without_tiled")(
    fsdp_tp_with(lambda partial: jax.lax.psum(partial, "model"), tiled=False))


(test_a_usual_mistake_gets_its_own_hint,
 test_every_exercise_of_the_lesson_has_two_mistakes_with_hints,
 test_a_correct_function_gets_no_hint) = lesson_tests(mistake, CORRECT, "05_training")


def fsdp_tp_unsplit_over_data(params, x):
    """The weights enter the shard_map split over 'model' only: jit gathers them over 'data'
    before it, out of the function's hands."""
    def local(params, x):
        return jax.lax.psum(jax.nn.relu(x @ params["w1"]) @ params["w2"], "model")

    specs = ({"w1": P(None, "model"), "w2": P("model", None)}, P("data"))
    return jax.jit(jax.shard_map(local, mesh=tp_mesh(), in_specs=specs,
                                 out_specs=P("data")))(params, x)


@pytest.mark.parametrize("case_id, wrong, hint", [
    ("fsdp_tp_forward:all_gathers_over_data_inside_the_shard_map",
     fsdp_tp_unsplit_over_data, hints.HINT_FSDP_GATHER_INSIDE),
    ("tp_attention:psums_over_the_model_axis",
     tpa_with(lambda *arrays: jax.lax.psum(attention(*arrays), "data"), check_vma=False),
     hints.HINT_TP_PSUM_AXIS),
    ("dp_step_on_mesh:holds_its_share_on_a_three_axis_mesh",
     on_every_axis(lambda mesh: P(mesh.axis_names[:2])), hints.HINT_DP_EVERY_AXIS),
], ids=["fsdp_weights_replicated", "tp_psum_over_data", "dp_rows_over_two_axes_of_three"])
def test_the_graders_tests_of_how_it_computes_give_their_hints(case_id, wrong, hint):
    """Weights that enter shard_map unsplit over 'data', a psum over 'data' instead of 'model', rows
    split over the first two axes of a mesh (all the axes of the public tests' meshes): does
    the grader's hidden test of how the program computes fail each with its hint, and pass
    the correct function?"""
    assert_hidden_hint(case_id, wrong, hint, CORRECT)
