"""Public tests of lesson 5 (training in parallel): ``check`` runs them in the notebook, and
the grader runs them too. Sizes are derived from the number of devices there are."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh

from grader.framework import hlo
from grader.framework.cases import case
from grader.framework.footprint import SLACK, footprint
from grader.framework.judge import PASS, Hint, Verdict, result_close_to, same
from grader.framework.placement import floats, layout
from grader.framework.plain import Material
from grader.framework.probes import Program, hlo_collectives, measure, trailing
from grader.hints import training as hints
from grader.public.cost import cost_memory_bytes


# --- inputs -------------------------------------------------------------------------------
def mlp_params(seed: int, d_in: int, hidden: int, d_out: int, biases: bool = True) -> dict:
    rng = np.random.default_rng(seed)
    params = {
        "w1": rng.normal(size=(d_in, hidden)) / np.sqrt(d_in),
        "b1": 0.1 * rng.normal(size=hidden),
        "w2": rng.normal(size=(hidden, d_out)) / np.sqrt(hidden),
        "b2": 0.1 * rng.normal(size=d_out),
    }
    if not biases:
        params = {k: v for k, v in params.items() if k.startswith("w")}
    return {k: floats(v) for k, v in params.items()}


def regression_batch(seed: int, rows: int, d_in: int, d_out: int) -> dict:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(rows, d_in))
    y = np.tanh(x @ rng.normal(size=(d_in, d_out)))
    return {"x": floats(x), "y": floats(y)}


def model_axis_size() -> int:
    """The size of the 'model' axis the exercises ask for: 2, or 1 on an odd device count."""
    return 2 if jax.device_count() % 2 == 0 else 1


# --- hint material, computed in numpy (no compilation) -----------------------------------
def numpy_grads(params: dict, batch: dict) -> dict:
    """jax.grad(loss_fn)(params, batch), by hand in float64."""
    p = {k: np.asarray(v, np.float64) for k, v in params.items()}
    x, y = (np.asarray(batch[k], np.float64) for k in ("x", "y"))
    before = x @ p["w1"] + p["b1"]
    hidden = np.maximum(before, 0)
    d_out = 2 * (hidden @ p["w2"] + p["b2"] - y) / y.size
    d_before = (d_out @ p["w2"].T) * (before > 0)
    return {"w1": x.T @ d_before, "b1": d_before.sum(0), "w2": hidden.T @ d_out,
            "b2": d_out.sum(0)}


def grads_context(params: dict, batch: dict) -> dict:
    """What gradients summed over the devices, or a forgotten pmean (the first device's
    gradients), would give."""
    n = jax.device_count()
    rows = batch["x"].shape[0] // n
    grads = numpy_grads(params, batch)
    first = numpy_grads(params, {k: v[:rows] for k, v in batch.items()})
    return {"_summed": {k: n * g for k, g in grads.items()}, "_first_device": first}


summed_grads = result_close_to("_summed", hints.HINT_DP_GRADS_SUMMED)
forgot_pmean = result_close_to("_first_device", hints.HINT_DP_FORGOT_PMEAN)
on_one_device = Hint(
    lambda got, want: all(v["on_devices"] == 1 for v in got["layout"].values())
    and any(v["on_devices"] > 1 for v in want["layout"].values()),
    hints.HINT_DP_ONE_DEVICE,
)
not_replicated = Hint(lambda got, want: True, hints.HINT_DP_NOT_REPLICATED)


# --- reading compiled HLO -------------------------------------------------------------------
@measure
def gathered_shapes(program: Program) -> list[list[int]]:
    """The shapes of what the compiled HLO all-gathers (its operands, per device), sorted."""
    return sorted(list(shape) for c in hlo.collectives_in_hlo(program.compiled)
                  if c.op == "all-gather" for _, shape in c.operands)


# --- dp_step_on_mesh -----------------------------------------------------------------------
def step_mesh(*names: str) -> Mesh:
    """A mesh of every device with one, two or three axes named ``names``: on 8 devices
    (8,), (4, 2) or (2, 2, 2); on 2, (2,), (1, 2) or (2, 1, 1)."""
    n = jax.device_count()
    two = 2 if n % 2 == 0 else 1
    last = 2 if (n // two) % 2 == 0 else 1
    shapes = {1: (n,), 2: (n // two, two), 3: (two, n // two // last, last)}
    return jax.make_mesh(shapes[len(names)], names)


@measure
def held_per_device(program: Program) -> dict[str, object]:
    """The bytes one device holds of each argument and each output of the compiled program,
    and how many devices it runs on."""
    held = footprint(program)["held"]
    return {"arguments": held["arguments"], "outputs": held["outputs"],
            "devices": program.exported.nr_devices}


held_on_one_device = Hint(lambda got, want: got["held"]["devices"] == 1,
                          hints.HINT_DP_ONE_DEVICE)
rows_on_some_axes = Hint(lambda got, want: True, hints.HINT_DP_EVERY_AXIS)
HOLDS_ITS_SHARE = same("held", hints=[held_on_one_device, rows_on_some_axes])


@case("dp_step_on_mesh", hidden=False, hints=[on_one_device, not_replicated])
def one_step_on_a_two_axis_mesh(fn):
    params = mlp_params(10, 4, 8, 2)
    mesh = step_mesh("data", "fsdp")
    new = fn(params, regression_batch(11, 4 * jax.device_count(), 4, 2), 0.1, mesh)
    return {"result": new, "layout": {k: layout(v) for k, v in new.items()}}


@case("dp_step_on_mesh", hidden=False, judge=HOLDS_ITS_SHARE)
def each_device_holds_its_share_of_the_rows(fn):
    batch = regression_batch(13, 2 * jax.device_count(), 4, 2)
    return {"held": held_per_device(trailing(fn, step_mesh("data", "fsdp")),
                                    mlp_params(12, 4, 8, 2), batch, 0.1)}


# --- accumulated_grads ------------------------------------------------------------------------
@measure
def received_bytes(program: Program) -> int:
    """What one device receives through collectives, each counted as often as it runs."""
    return sum(hlo.received(program.compiled)[0].values())


def accumulation_inputs(seed: int, rows_per_device: int = 64, d_in: int = 4,
                        hidden: int = 64) -> tuple[dict, dict]:
    """Parameters with a hidden layer wide enough that the activations of a device's rows
    outweigh them (five times, in temporaries, at the defaults), and a batch of
    ``rows_per_device`` rows per device."""
    params = mlp_params(seed, d_in, hidden, 2)
    return params, regression_batch(seed + 1, rows_per_device * jax.device_count(), d_in, 2)


def reduces_once(got: dict, want: dict) -> Verdict:
    """What one device receives must be the reference's one all-reduce of the gradients."""
    have, once = int(got["received"]), int(want["received"])
    if have <= once + SLACK:
        return PASS
    return Verdict(False, hints.MSG_RECEIVED.format(have=have, once=once),
                   hints.HINT_ACC_REDUCE_EACH)


def one_microbatch_at_a_time(got: dict, want: dict) -> Verdict:
    """The temporaries per device must stay within 1.5 times the reference's."""
    have, bound = int(got["memory"]["temp"]), int(1.5 * int(want["memory"]["temp"]))
    if have <= bound:
        return PASS
    return Verdict(False, hints.MSG_ACC_TEMP.format(have=have, bound=bound),
                   hints.HINT_ACC_ALL_AT_ONCE)


@case("accumulated_grads", hidden=False, hints=[summed_grads, forgot_pmean])
def grads_match_one_pass_over_the_batch(fn):
    params = mlp_params(0, 3, 8, 2)
    batch = regression_batch(1, 4 * jax.device_count(), 3, 2)
    return {"result": fn(params, batch, 2), **grads_context(params, batch)}


@case("accumulated_grads", hidden=False, judge=reduces_once)
def averages_the_gradients_once(fn):
    params, batch = accumulation_inputs(2, rows_per_device=8, hidden=16)
    return {"received": received_bytes(trailing(fn, 4), params, batch)}


@case("accumulated_grads", hidden=False, judge=one_microbatch_at_a_time)
def holds_one_microbatch_of_activations(fn):
    return {"memory": cost_memory_bytes(trailing(fn, 8), *accumulation_inputs(4))}


# --- tp_attention ---------------------------------------------------------------------------
def attention(x, wq, wk, wv, wo):
    """Multi-head self-attention without a mask, as the exercises notebook defines it."""
    q, k, v = (jnp.einsum("bsm,mhd->bshd", x, w) for w in (wq, wk, wv))
    scores = jnp.einsum("bshd,bthd->bhst", q, k) / jnp.sqrt(q.shape[-1])
    heads = jnp.einsum("bhst,bthd->bshd", jax.nn.softmax(scores, axis=-1), v)
    return jnp.einsum("bshd,hdm->bsm", heads, wo)


def attention_inputs(seed: int, rows_per_block: int = 2, seq: int = 5, d_model: int = 6,
                     heads_per_block: int = 2, head_dim: int = 3) -> tuple:
    """x (rows, seq, d_model), its rows split evenly over 'data'; wq, wk, wv (d_model, heads,
    head_dim) and wo (heads, head_dim, d_model), the heads split evenly over 'model'."""
    data = jax.device_count() // model_axis_size()
    heads = heads_per_block * model_axis_size()
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(rows_per_block * data, seq, d_model))
    ws = [rng.normal(size=(d_model, heads, head_dim)) / np.sqrt(d_model) for _ in range(3)]
    wo = rng.normal(size=(heads, head_dim, d_model)) / np.sqrt(heads * head_dim)
    return tuple(floats(a) for a in (x, *ws, wo))


def first_heads_only(x, wq, wk, wv, wo) -> np.ndarray:
    """The output when the psum over 'model' is left out: the first block of heads' share."""
    width = wq.shape[1] // model_axis_size()
    return np.asarray(attention(x, *(w[:, :width] for w in (wq, wk, wv)), wo[:width]))


tpa_forgot_psum = result_close_to("_first_heads", hints.HINT_TPA_FORGOT_PSUM)
tpa_extra_communication = Hint(lambda got, want: True, hints.HINT_TPA_ONE_ALL_REDUCE)


@case("tp_attention", hidden=False, hints=[tpa_forgot_psum])
def matches_attention_on_one_device(fn):
    arrays = attention_inputs(20)
    return {"result": fn(*arrays), "_first_heads": Material(lambda: first_heads_only(*arrays))}


@case("tp_attention", hidden=False, hints=[tpa_extra_communication])
def one_all_reduce_and_nothing_else(fn):
    return hlo_collectives(fn, *attention_inputs(22))


# --- fsdp_tp_forward ------------------------------------------------------------------------
def fsdp_tp_inputs(seed: int, rows_per_block: int = 4) -> tuple[dict, jax.Array]:
    """w1 (2 data, 3 model), w2 (3 model, 2 data) and x (rows_per_block * data, 2 data), with
    data and model the sizes of the mesh's axes: every split even, every block's shape its
    own."""
    model = model_axis_size()
    data = jax.device_count() // model
    params = mlp_params(seed, 2 * data, 3 * model, 2 * data, biases=False)
    x = regression_batch(seed + 1, rows_per_block * data, 2 * data, 1)["x"]
    return params, x


def first_model_block_of(params: dict, x: jax.Array) -> np.ndarray:
    """The output when the psum over 'model' is left out: the first hidden block's share."""
    width = params["w1"].shape[1] // model_axis_size()
    w1, w2, x = (np.asarray(a, np.float64) for a in (params["w1"], params["w2"], x))
    return np.maximum(x @ w1[:, :width], 0) @ w2[:width]


fsdp_tp_forgot_psum = result_close_to("_first_block", hints.HINT_FSDP_TP_PSUM)
fsdp_tp_moves = Hint(lambda got, want: True, hints.HINT_FSDP_TP_GATHER)


@case("fsdp_tp_forward", hidden=False, hints=[fsdp_tp_forgot_psum])
def matches_the_unsharded_mlp_on_a_2d_mesh(fn):
    params, x = fsdp_tp_inputs(40)
    return {"result": fn(params, x), "_first_block": first_model_block_of(params, x)}


@case("fsdp_tp_forward", hidden=False, judge=same("gathered", "collectives",
                                                  hints=[fsdp_tp_moves]))
def gathers_model_blocks_and_reduces_once(fn):
    args = fsdp_tp_inputs(42)
    return {"gathered": gathered_shapes(fn, *args), "collectives": hlo_collectives(fn, *args)}
