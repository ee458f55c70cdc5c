"""The usual mistakes of lesson 11 (the capstone), each written as a student would: does
check() fail it with the hint of that mistake, and no other hint? And does a correct
function, written here independently of solutions/, pass with no hint?"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P
from mistakes import Mistakes, assert_hidden_hint, lesson_tests

from grader.hints import capstone as hints

mistake = Mistakes()


# --- correct functions ----------------------------------------------------------------------
def state_with(arrays=3, step=True, divide="named"):
    """The state's bytes on one device: ``arrays`` float32 arrays per weight, a step count or
    not, each weight divided by the axes its spec names ("named"), by nothing ("none") or by
    every device ("all")."""
    def adam_state_bytes(shapes, specs, data, model):
        sizes = {"data": data, "model": model}
        total = 0.0
        for shape, spec in zip(shapes, specs, strict=True):
            named = [a for entry in spec if entry is not None
                     for a in ((entry,) if isinstance(entry, str) else entry)]
            share = {"named": np.prod([sizes[a] for a in named]), "none": 1,
                     "all": data * model}[divide]
            total += arrays * 4 * np.prod(shape) / share
        return total + (4 if step else 0)
    return adam_state_bytes


def fsdp_gather_bytes(d_model, d_hidden, layers, data, model, remat, itemsize):
    per_weight = d_model * d_hidden * itemsize / (data * model)  # one device's block
    uses = 2 if remat else 1
    return layers * uses * 2 * per_weight * (data - 1)


def written_with(rule="orbax", first="origin"):
    """Bytes per device, in the mesh's row-major order, from a NumPy picture of the mesh:
    "orbax" shares a block among its copies where a dimension divides, else the first copy
    writes it; "every" has every copy write; "first" leaves every block to its first copy;
    "split" shares every block. ``first``: the copy at the origin of the axes the spec does
    not name, or device 0 for every block."""
    def checkpoint_bytes(shapes, specs, data, model, itemsize):
        axes = ("data", "model")
        written = np.zeros((data, model))
        for shape, spec in zip(shapes, specs, strict=True):
            entries = [() if e is None else (e,) if isinstance(e, str) else tuple(e)
                       for e in spec] + [()] * (len(shape) - len(spec))
            split = {a: (data, model)[k] for k, a in enumerate(axes)}
            block = [d // int(np.prod([split[a] for a in e])) for d, e in zip(shape, entries,
                                                                              strict=True)]
            used = {a for e in entries for a in e}
            holders = np.ones((data, model), bool)  # the devices holding a given block's copies
            if "data" in used:
                holders[1:, :] = False
            if "model" in used:
                holders[:, 1:] = False
            copies = int(holders.sum())
            nbytes = int(np.prod(block)) * itemsize
            origin = np.zeros((data, model), bool)
            if first == "origin":
                origin[0 if "data" not in used else slice(None),
                       0 if "model" not in used else slice(None)] = True
            else:
                origin[0, 0] = True
            if rule == "every":
                written += nbytes
            elif rule == "split" or (rule == "orbax" and (
                    copies == 1 or any(d % copies == 0 for d in block))):
                written += nbytes / copies
            else:
                written += np.where(origin, nbytes, 0)
        return written.reshape(-1).tolist()
    return checkpoint_bytes


def manual_tp_step(params, x, y):
    """The step written by hand in a shard_map, layers unrolled: each device multiplies its
    hidden units and psums the block's output over 'model'; the gradient of a weight that is
    the same along 'data' comes summed over 'data' (the transpose of its implicit pvary), so
    each device's squared errors are divided by the whole batch's count."""
    mesh = jax.typeof(x).sharding.mesh
    lr = 0.1

    def local(w1, w2, x, y):
        def loss(w1, w2):
            h = x
            for a, b in zip(w1, w2, strict=True):
                h = h + jax.lax.psum(jnp.tanh(h @ a) @ b, "model")
            return jnp.sum((h - y) ** 2) / (y.size * jax.lax.axis_size("data"))

        g1, g2 = jax.grad(loss, argnums=(0, 1))(w1, w2)
        return w1 - lr * g1, w2 - lr * g2

    specs = (P(None, None, "model"), P(None, "model", None), P("data", None), P("data", None))
    w1, w2 = jax.shard_map(local, mesh=mesh, in_specs=specs, out_specs=specs[:2])(
        jax.reshard(params["w1"], NamedSharding(mesh, specs[0])),
        jax.reshard(params["w2"], NamedSharding(mesh, specs[1])), x, y)
    return {"w1": w1, "w2": w2}


def tp_step_with(spec1, spec2):
    """The exercise's step, each weight placed with the spec given."""
    def step(params, x, y):
        mesh = jax.typeof(x).sharding.mesh
        specs = {"w1": spec1, "w2": spec2}
        params = {k: jax.reshard(w, NamedSharding(mesh, specs[k])) for k, w in params.items()}
        rows = NamedSharding(mesh, P("data", None))

        def loss(params):
            def block(h, w):
                return h + jnp.matmul(jnp.tanh(h @ w[0]), w[1], out_sharding=rows), None
            out, _ = jax.lax.scan(block, x, (params["w1"], params["w2"]))
            return jnp.mean((out - y) ** 2)

        grads = jax.grad(loss)(params)
        return jax.tree.map(lambda w, g: w - 0.1 * g, params, grads)
    return jax.jit(step)


def specs_with(**changed):
    """Specs of the layer's weights, each written as short as it goes: Megatron's pairs over
    'model', the key/value heads split where they divide by it; ``changed`` replaces some."""
    def mqa_specs(shapes, mesh):
        divides = shapes["wkv"][2] % mesh.shape["model"] == 0
        specs = {"wq": P(None, "model"), "wkv": P(None, None, "model") if divides else P(),
                 "wo": P("model"), "w1": P(None, "model"), "w2": P("model")}
        return {**specs, **changed}
    return mqa_specs


CORRECT = {"adam_state_bytes": state_with(), "fsdp_gather_bytes": fsdp_gather_bytes,
           "checkpoint_bytes": written_with(), "mqa_specs": specs_with(),
           "fixed_tp_step": jax.jit(manual_tp_step)}
for _name, _fn in CORRECT.items():
    _fn.__name__ = _fn.__qualname__ = _name


# --- adam_state_bytes -----------------------------------------------------------------------
mistake("adam_state_bytes", hints.HINT_STATE_WHOLE, "every_array_whole")(
    state_with(divide="none"))
mistake("adam_state_bytes", hints.HINT_STATE_MOMENTS, "the_weights_alone")(
    state_with(arrays=1, step=False))
mistake("adam_state_bytes", hints.HINT_STATE_MOMENTS, "one_moment_forgotten")(
    state_with(arrays=2))
mistake("adam_state_bytes", hints.HINT_STATE_ALL_DEVICES, "divided_by_every_device")(
    state_with(divide="all"))


# --- fsdp_gather_bytes ----------------------------------------------------------------------
@mistake("fsdp_gather_bytes", hints.HINT_GATHER_REMAT)
def gathered_once_whatever_the_remat(d_model, d_hidden, layers, data, model, remat, itemsize):
    return layers * 2 * d_model * d_hidden * itemsize / (data * model) * (data - 1)


@mistake("fsdp_gather_bytes", hints.HINT_GATHER_REMAT)
def remat_read_the_wrong_way_round(d_model, d_hidden, layers, data, model, remat, itemsize):
    uses = 1 if remat else 2
    return layers * uses * 2 * d_model * d_hidden * itemsize / (data * model) * (data - 1)


@mistake("fsdp_gather_bytes", hints.HINT_GATHER_MODEL_BLOCK)
def the_model_split_forgotten(d_model, d_hidden, layers, data, model, remat, itemsize):
    uses = 2 if remat else 1
    return layers * uses * 2 * d_model * d_hidden * itemsize / data * (data - 1)


@mistake("fsdp_gather_bytes", hints.HINT_GATHER_RING)
def each_block_sent_once(d_model, d_hidden, layers, data, model, remat, itemsize):
    uses = 2 if remat else 1
    return layers * uses * 2 * d_model * d_hidden * itemsize / (data * model)


@mistake("fsdp_gather_bytes", hints.HINT_GATHER_RING)
def the_gathered_weight(d_model, d_hidden, layers, data, model, remat, itemsize):
    uses = 2 if remat else 1
    return layers * uses * 2 * d_model * d_hidden * itemsize / model


# --- checkpoint_bytes -----------------------------------------------------------------------
mistake("checkpoint_bytes", hints.HINT_CKPT_EVERY_COPY, "every_copy_writes_its_block")(
    written_with("every"))
mistake("checkpoint_bytes", hints.HINT_CKPT_FIRST_COPY, "only_replica_0_writes")(
    written_with("first"))
mistake("checkpoint_bytes", hints.HINT_CKPT_INDIVISIBLE, "every_block_shared")(
    written_with("split"))


# --- mqa_specs ------------------------------------------------------------------------------
@mistake("mqa_specs", hints.HINT_MQA_MEGATRON)
def every_weight_kept_whole(shapes, mesh):
    return dict.fromkeys(shapes, P())


mistake("mqa_specs", hints.HINT_MQA_KV_INDIVISIBLE, "kv_heads_split_as_the_lesson_did")(
    specs_with(wkv=P(None, None, "model")))
mistake("mqa_specs", hints.HINT_MQA_KV_SPLIT, "kv_split_by_head_size")(
    specs_with(wkv=P(None, None, None, "model")))
mistake("mqa_specs", hints.HINT_MQA_KV_HEADS, "kv_kept_whole_where_its_heads_divide")(
    specs_with(wkv=P()))
mistake("mqa_specs", hints.HINT_MQA_CONTRACTION, "wo_split_by_its_output")(
    specs_with(wo=P(None, None, "model")))
mistake("mqa_specs", hints.HINT_MQA_DATA, "w1_stored_over_data_too")(
    specs_with(w1=P("data", "model")))


# --- fixed_tp_step --------------------------------------------------------------------------
mistake("fixed_tp_step", hints.HINT_TP_GATHERS, "the_bug_left_in")(
    tp_step_with(P(None, None, "model"), P(None, None, "model")))
mistake("fixed_tp_step", hints.HINT_TP_WHOLE_GRADIENTS, "every_weight_kept_whole")(
    tp_step_with(P(), P()))
mistake("fixed_tp_step", hints.HINT_TP_GATHERS, "both_weights_split_by_rows")(
    tp_step_with(P(None, "model", None), P(None, "model", None)))


@mistake("fixed_tp_step", hints.HINT_TP_LAYOUT)
def returned_split_over_data_too(params, x, y):
    new = tp_step_with(P(None, None, "model"), P(None, "model", None))(params, x, y)
    mesh = jax.typeof(x).sharding.mesh
    fsdp = {"w1": P(None, "data", "model"), "w2": P(None, "model", "data")}
    return {k: jax.reshard(w, NamedSharding(mesh, fsdp[k])) for k, w in new.items()}


(test_a_usual_mistake_gets_its_own_hint,
 test_every_exercise_of_the_lesson_has_two_mistakes_with_hints,
 test_a_correct_function_gets_no_hint) = lesson_tests(mistake, CORRECT, "11_capstone")


@pytest.mark.parametrize("case_id, wrong, hint", [
    ("adam_state_bytes:a_model_on_eight_by_one", state_with(divide="none"),
     hints.HINT_STATE_WHOLE),
    ("fsdp_gather_bytes:kept_on_four_by_two", remat_read_the_wrong_way_round,
     hints.HINT_GATHER_REMAT),
    ("fsdp_gather_bytes:rematerialised_on_two_by_two", the_model_split_forgotten,
     hints.HINT_GATHER_MODEL_BLOCK),
    ("checkpoint_bytes:both_axes_on_one_dimension", written_with("first"),
     hints.HINT_CKPT_FIRST_COPY),
    ("checkpoint_bytes:all_data_parallel_with_replicated_leftovers", written_with("split"),
     hints.HINT_CKPT_INDIVISIBLE),
    ("mqa_specs:one_kv_head_with_every_device_on_model",
     specs_with(wkv=P(None, None, None, "model")), hints.HINT_MQA_KV_SPLIT),
    ("mqa_specs:one_kv_head_with_every_device_on_model", specs_with(wo=P(None, None, "model")),
     hints.HINT_MQA_CONTRACTION),
    ("mqa_specs:four_kv_heads_in_a_wider_layer", specs_with(wkv=P()), hints.HINT_MQA_KV_HEADS),
    ("fixed_tp_step:sends_no_more_with_a_wide_hidden_layer",
     tp_step_with(P(None, None, "model"), P(None, None, "model")), hints.HINT_TP_GATHERS),
    ("fixed_tp_step:sends_no_more_from_stored_weights", tp_step_with(P(), P()),
     hints.HINT_TP_WHOLE_GRADIENTS),
], ids=["state_of_whole_arrays", "remat_the_wrong_way_round", "model_split_forgotten",
        "ckpt_first_copy_only", "ckpt_indivisible_split", "mqa_kv_by_head_size",
        "mqa_wo_by_output", "mqa_kv_kept_whole", "tp_bug_left_in",
        "tp_weights_kept_whole"])
def test_the_graders_hidden_tests_give_their_hints(case_id, wrong, hint):
    """A prediction compared with a compiled update's arguments, what a compiled gradient
    gathers over 'data', or what Orbax plans to write on each device, specs measured on the
    tests' own layer compiled with them, and a step measured on its own compiled program:
    does the grader's hidden test fail each mistake with its
    hint, and pass the correct function?"""
    assert_hidden_hint(case_id, wrong, hint, CORRECT)
