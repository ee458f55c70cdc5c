"""The usual mistakes of lesson 5 (training in parallel), each written as a student would:
does check() fail it with the hint of that mistake, and no other hint? And does a correct
function, written here independently of solutions/, pass with no hint?"""

from __future__ import annotations

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
def grads_with(local_grads, **options):
    def data_parallel_grads(params, batch):
        return jax.jit(jax.shard_map(local_grads, mesh=data_mesh(), in_specs=(P(), P("data")),
                                     out_specs=P(), **options))(params, batch)

    return data_parallel_grads


def averaged(params, rows):
    params = jax.lax.pcast(params, "data", to="varying")
    return jax.lax.pmean(jax.grad(loss_fn)(params, rows), "data")


def step_with(**shardings):
    def dp_train_step(params, batch, lr):
        return jax.jit(sgd_step, **shardings)(params, batch, lr)

    return dp_train_step


def placed_step(params, batch, lr):
    mesh = data_mesh()
    return step_with(in_shardings=(NamedSharding(mesh, P()), NamedSharding(mesh, P("data")),
                                   None),
                     out_shardings=NamedSharding(mesh, P()))(params, batch, lr)


def tp_with(local, **options):
    def tensor_parallel_mlp(x, w1, w2):
        specs = (P("data"), P(None, "model"), P("model"))
        return jax.jit(jax.shard_map(local, mesh=tp_mesh(), in_specs=specs,
                                     out_specs=P("data"), **options))(x, w1, w2)

    return tensor_parallel_mlp


ROWS = (P("data"), P("data"))


def fsdp_with(gather, specs=ROWS):
    def fsdp_forward(params, x):
        def local(params, x):
            w1, w2 = gather(params["w1"]), gather(params["w2"])
            return jax.nn.relu(x @ w1) @ w2

        return jax.jit(jax.shard_map(local, mesh=data_mesh(), in_specs=specs,
                                     out_specs=P("data")))(params, x)

    return fsdp_forward


CORRECT = {
    "data_parallel_grads": grads_with(averaged),
    "dp_train_step": placed_step,
    "tensor_parallel_mlp": tp_with(lambda x, w1, w2: jax.lax.psum(jax.nn.relu(x @ w1) @ w2,
                                                                   "model")),
    "fsdp_forward": fsdp_with(lambda w: jax.lax.all_gather(w, "data", axis=0, tiled=True)),
}
for _name, _fn in CORRECT.items():
    _fn.__name__ = _fn.__qualname__ = _name


# --- data_parallel_grads --------------------------------------------------------------------
mistake("data_parallel_grads", hints.HINT_DP_GRADS_SUMMED, "no_pcast")(
    grads_with(lambda params, rows: jax.lax.pmean(jax.grad(loss_fn)(params, rows), "data")))
mistake("data_parallel_grads", hints.HINT_DP_FORGOT_PMEAN, "no_pmean_unchecked")(
    grads_with(lambda params, rows: jax.grad(loss_fn)(
        jax.lax.pcast(params, "data", to="varying"), rows), check_vma=False))
mistake("data_parallel_grads", common.HINT_NOT_REPLICATED, "no_pmean")(
    grads_with(lambda params, rows: jax.grad(loss_fn)(
        jax.lax.pcast(params, "data", to="varying"), rows)))


@mistake("data_parallel_grads", common.HINT_RESHARD)
def explicit_mesh_without_placing_the_batch(params, batch):
    mesh = jax.make_mesh((jax.device_count(),), ("data",))
    return jax.jit(jax.shard_map(averaged, mesh=mesh, in_specs=(P(), P("data")),
                                 out_specs=P()))(params, batch)


# --- dp_train_step --------------------------------------------------------------------------
mistake("dp_train_step", hints.HINT_DP_ONE_DEVICE, "jit_without_shardings")(step_with())


@mistake("dp_train_step", hints.HINT_DP_NOT_REPLICATED)
def brings_the_new_parameters_back_to_the_host(params, batch, lr):
    return jax.device_get(placed_step(params, batch, lr))


@mistake("dp_train_step", common.HINT_DOES_NOT_DIVIDE)
def splits_the_parameters_like_the_batch(params, batch, lr):
    rows = NamedSharding(data_mesh(), P("data"))
    return step_with(in_shardings=(rows, rows, None))(params, batch, lr)


# --- tensor_parallel_mlp --------------------------------------------------------------------
mistake("tensor_parallel_mlp", hints.HINT_TP_FORGOT_PSUM, "no_psum_unchecked",
        also=(hints.HINT_TP_ONE_ALL_REDUCE,))(
    tp_with(lambda x, w1, w2: jax.nn.relu(x @ w1) @ w2, check_vma=False))
mistake("tensor_parallel_mlp", common.HINT_NOT_REPLICATED, "no_psum")(
    tp_with(lambda x, w1, w2: jax.nn.relu(x @ w1) @ w2))


@mistake("tensor_parallel_mlp", hints.HINT_TP_ONE_ALL_REDUCE)
def gathers_the_hidden_units(x, w1, w2):
    def local(x, w1, w2):
        hidden = jax.lax.all_gather(jax.nn.relu(x @ w1), "model", axis=1, tiled=True)
        return hidden @ w2

    specs = (P("data"), P(None, "model"), P())
    return jax.jit(jax.shard_map(local, mesh=tp_mesh(), in_specs=specs, out_specs=P("data"),
                                 check_vma=False))(x, w1, w2)


# --- fsdp_forward ---------------------------------------------------------------------------
mistake("fsdp_forward", hints.HINT_GATHER_NOT_TILED, "all_gather_without_tiled")(
    fsdp_with(lambda w: jax.lax.all_gather(w, "data", axis=0)))
mistake("fsdp_forward", hints.HINT_FSDP_GATHER_WEIGHTS, "weights_replicated")(
    fsdp_with(lambda w: w, specs=(P(), P("data"))))


(test_a_usual_mistake_gets_its_own_hint,
 test_every_exercise_of_the_lesson_has_two_mistakes_with_hints,
 test_a_correct_function_gets_no_hint) = lesson_tests(mistake, CORRECT, "05_training")


@pytest.mark.parametrize("case_id, wrong, hint", [
    ("fsdp_forward:all_gathers_inside_the_shard_map",
     fsdp_with(lambda w: w, specs=(P(), P("data"))), hints.HINT_FSDP_GATHER_INSIDE),
    ("tensor_parallel_mlp:psums_over_the_model_axis",
     tp_with(lambda x, w1, w2: jax.lax.psum(jax.nn.relu(x @ w1) @ w2, "data"), check_vma=False),
     hints.HINT_TP_PSUM_AXIS),
], ids=["fsdp_weights_replicated", "tp_psum_over_data"])
def test_the_graders_tests_of_how_it_computes_give_their_hints(case_id, wrong, hint):
    """Weights that enter shard_map replicated, a psum over 'data' instead of 'model': does
    the grader's hidden test of what the program traces fail each with its hint, and pass
    the correct function?"""
    assert_hidden_hint(case_id, wrong, hint, CORRECT)
