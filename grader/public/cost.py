"""Public tests of lesson 7 (cost and memory): ``check`` runs them in the notebook, and the
grader runs them too. Sizes are derived from the number of devices there are.

Two exercises predict (bytes of training state per device, bytes sent per training step);
their hidden tests hold the prediction against what compiled programs of the reference
strategies, built here, really hold and send. Two compute, and are measured on the program
the student handed in: its temporary memory per device (:func:`cost_memory_bytes`) and its
collectives.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from grader.framework.cases import case
from grader.framework.hlo import collectives, collectives_in_hlo
from grader.framework.judge import Hint, Verdict, close, result_close_to
from grader.framework.placement import floats, layout
from grader.framework.plain import Material
from grader.framework.probes import Program, hlo_collectives, measure, trailing
from grader.hints import cost as hints

BYTES = 4  # float32
STAGES = (0, 1, 2, 3)
LR, B1, B2, EPS = 0.01, 0.9, 0.999, 1e-8


def sub_mesh(n: int):
    """An Explicit 1-D mesh ('data',) over the first ``n`` devices."""
    return jax.make_mesh((n,), ("data",), devices=jax.devices()[:n])


# --- measures of a program -------------------------------------------------------------------
@measure
def cost_memory_bytes(program: Program) -> dict[str, int]:
    """What XLA's memory_analysis says one device needs for the compiled program: its
    arguments, its outputs and its temporaries, in bytes."""
    stats = program.executable.memory_analysis()
    return {"argument": int(stats.argument_size_in_bytes),
            "output": int(stats.output_size_in_bytes),
            "temp": int(stats.temp_size_in_bytes)}


# --- training_state_bytes ----------------------------------------------------------------
def adam_update(p, g, m, v, t=3):
    """One Adam step, elementwise (the moments m and v, t the step number from 1)."""
    m = B1 * m + (1 - B1) * g
    v = B2 * v + (1 - B2) * g * g
    m_hat, v_hat = m / (1 - B1**t), v / (1 - B2**t)
    return p - LR * m_hat / (jnp.sqrt(v_hat) + EPS), m, v


def zero_specs(stage: int) -> tuple[P, P, P, P]:
    """The layouts of (params, grads, m, v) under a ZeRO stage, over 'data'."""
    split = P("data")
    return ((split if stage >= 3 else P()), (split if stage >= 2 else P()), split if stage
            else P(), split if stage else P())


def measured_state_bytes(n_params: int, n: int, stage: int) -> int:
    """argument_size_in_bytes of the compiled Adam update whose params, grads, m and v are
    laid out as the stage says on ``n`` devices: the training state one device holds."""
    mesh = sub_mesh(n)
    args = [jax.ShapeDtypeStruct((n_params,), jnp.float32, sharding=NamedSharding(mesh, spec))
            for spec in zero_specs(stage)]
    compiled = jax.jit(adam_update).lower(*args).compile()
    return int(compiled.memory_analysis().argument_size_in_bytes)


def state_bytes_cases(counts: tuple[int, ...]) -> list[tuple[int, int, int]]:
    """(n_params, n_devices, stage) for every stage and device count, n_params a multiple
    of the device count."""
    return [(24 * n, n, stage) for n in counts for stage in STAGES]


wrong_dtype_size = Hint(
    lambda got, want: all(np.isclose(float(g), 2 * float(w)) or np.isclose(float(g), w / 2)
                          for g, w in zip(got["result"], want["result"], strict=True)),
    hints.HINT_STATE_FLOAT32,
)
stages_wrong = Hint(lambda got, want: True, hints.HINT_STATE_STAGES)


@case("training_state_bytes", hidden=False, hints=[wrong_dtype_size, stages_wrong])
def every_stage_on_8_and_2_devices(fn):
    return {"result": [float(fn(*args)) for args in state_bytes_cases((8, 2))]}


# --- bytes_sent_2d ---------------------------------------------------------------------------
#: The layouts of w, x, y on the 2-D mesh ('data', 'model'), and of the new w.
SPECS_2D = ((P("model", None), P("data", "model"), P("data", None)), P("model", None))


def step_2d(mesh, lr: float = 0.1):
    """One SGD step of the linear layer on a 2-D mesh ('data', 'model'), laid out as
    SPECS_2D: the partial products x @ w added by a psum over 'model' only, the gradient of
    each device's rows of w averaged by a pmean over 'data' only."""

    def local(w, x, y):
        def loss(w):
            product = jax.lax.psum(x @ w, "model")
            return jax.lax.pmean(jnp.mean((product - y) ** 2), "data")

        return w - lr * jax.grad(loss)(w)

    return jax.jit(jax.shard_map(local, mesh=mesh, in_specs=SPECS_2D[0],
                                 out_specs=SPECS_2D[1]))


def mesh_2d(data: int, model: int):
    """An Explicit 2-D mesh ('data', 'model') over the first data * model devices."""
    return jax.make_mesh((data, model), ("data", "model"),
                         devices=jax.devices()[:data * model])


def measured_bytes_sent_2d(batch: int, d_in: int, d_out: int, data: int, model: int) -> float:
    """The bytes one device sends in the compiled 2-D step (the course's traffic model,
    grader.framework.hlo), all collectives together."""
    mesh = mesh_2d(data, model)
    args = [jax.ShapeDtypeStruct(shape, jnp.float32, sharding=NamedSharding(mesh, spec))
            for shape, spec in zip(((d_in, d_out), (batch, d_in), (batch, d_out)),
                                   SPECS_2D[0], strict=True)]
    return float(sum(c.sent for c in collectives(step_2d(mesh), *args)))


def _all_reduce(k: int) -> float:
    return 2 * (k - 1) / k


def sent_2d_context(cases) -> dict:
    """What three likely mistakes predict, case by case: every collective over all
    data * model devices; the whole batch and the whole w as operands; each operand counted
    once, as if an all-reduce sent it whole."""
    whole_group, whole_operand, once = [], [], []
    for batch, d_in, d_out, data, model in cases:
        n = data * model
        acts, grads = BYTES * batch // data * d_out, BYTES * d_in // model * d_out
        whole_group.append(float(_all_reduce(n) * (acts + grads)))
        whole_operand.append(float(_all_reduce(model) * BYTES * batch * d_out
                                   + _all_reduce(data) * BYTES * d_in * d_out))
        once.append(float(acts * (model > 1) + grads * (data > 1)))
    return {"_cases": [list(c) for c in cases], "_whole_group": whole_group,
            "_whole_operand": whole_operand, "_once": once}


def sent_2d_cases(meshes) -> list[tuple[int, int, int, int, int]]:
    """(batch, d_in, d_out, data, model) for each mesh shape: a batch and a d_in that the
    mesh's axes divide, the batch larger than d_in or smaller."""
    return [(batch * data * model, d_in * data * model, 3, data, model)
            for data, model in meshes for batch, d_in in ((5, 2), (1, 3))]


def _one_collective(got: dict, want: dict) -> bool:
    """Only the psum over 'model', or only the pmean over 'data', counted."""
    for (batch, d_in, d_out, data, model), g in zip(want["_cases"], got["result"], strict=True):
        acts = _all_reduce(model) * BYTES * batch // data * d_out
        grads = _all_reduce(data) * BYTES * d_in // model * d_out
        if acts and grads and not (np.isclose(float(g), acts) or np.isclose(float(g), grads)):
            return False
    return any(a[3] > 1 and a[4] > 1 for a in want["_cases"])


sent_2d_whole_group = result_close_to("_whole_group", hints.HINT_2D_GROUP)
sent_2d_whole_operand = result_close_to("_whole_operand", hints.HINT_2D_OPERAND)
sent_2d_once = result_close_to("_once", hints.HINT_2D_RING)
sent_2d_one_collective = Hint(_one_collective, hints.HINT_2D_BOTH)
SENT_2D_HINTS = [sent_2d_whole_group, sent_2d_whole_operand, sent_2d_once,
                 sent_2d_one_collective]


@case("bytes_sent_2d", hidden=False, hints=SENT_2D_HINTS)
def four_mesh_shapes_two_batches(fn):
    cases = sent_2d_cases(((2, 4), (4, 2), (8, 1), (1, 2)))
    return {"result": [float(fn(*c)) for c in cases], **sent_2d_context(cases)}


# --- remat_mlp_grads -------------------------------------------------------------------------
def mlp_layer(x, w):
    """One layer of the deep MLP as a scan body: (next activations, nothing stacked)."""
    return jnp.tanh(x @ w), None


def mlp_loss(ws, x):
    """Mean square of the deep MLP's output, its layers ws (L, d, d) applied by a scan."""
    out, _ = jax.lax.scan(mlp_layer, x, ws)
    return jnp.mean(out**2)


def deep_mlp_inputs(seed: int, layers: int = 8, rows_per_device: int = 16,
                    width: int = 16) -> tuple[jax.Array, jax.Array]:
    """ws (layers, width, width) and x (rows_per_device * n, width)."""
    rng = np.random.default_rng(seed)
    ws = rng.normal(size=(layers, width, width)) / np.sqrt(width)
    x = rng.normal(size=(rows_per_device * jax.device_count(), width))
    return floats(ws), floats(x)


def plain_dp_grads(ws, x):
    """The gradients data-parallel without rematerialisation: the memory to beat."""
    mesh = jax.make_mesh((jax.device_count(),), ("data",))

    def local(ws, x):
        grads = jax.grad(mlp_loss)(jax.lax.pcast(ws, "data", to="varying"), x)
        return jax.lax.pmean(grads, "data")

    ws = jax.reshard(ws, NamedSharding(mesh, P()))
    x = jax.reshard(x, NamedSharding(mesh, P("data")))
    return jax.shard_map(local, mesh=mesh, in_specs=(P(), P("data")), out_specs=P())(ws, x)


def numpy_mlp_grads(ws, x, rows: int | None = None) -> np.ndarray:
    """The gradients in float64 by hand (of the first ``rows`` rows only, if given)."""
    ws, x = np.asarray(ws, np.float64), np.asarray(x, np.float64)[:rows]
    outs = [x]
    for w in ws:
        outs.append(np.tanh(outs[-1] @ w))
    delta = 2 * outs[-1] / outs[-1].size
    grads = np.zeros_like(ws)
    for i in reversed(range(len(ws))):
        delta = delta * (1 - outs[i + 1] ** 2)
        grads[i] = outs[i].T @ delta
        delta = delta @ ws[i].T
    return grads


def mlp_grads_context(ws, x) -> dict:
    rows = x.shape[0] // jax.device_count()
    return {"_first_device": numpy_mlp_grads(ws, x, rows),
            "_summed": jax.device_count() * numpy_mlp_grads(ws, x)}


remat_forgot_pmean = result_close_to("_first_device", hints.HINT_REMAT_PMEAN)
remat_summed = result_close_to("_summed", hints.HINT_REMAT_SUMMED)


def within_temp_bound(got: dict, want: dict) -> Verdict:
    """The temporaries per device of the student's program must stay within 1.25 times the
    reference's (which keeps about half of what plain backpropagation keeps)."""
    have, bound = int(got["memory"]["temp"]), int(1.25 * int(want["memory"]["temp"]))
    if have <= bound:
        return Verdict(True)
    plain = int(want.get("_plain", {}).get("temp", 0))
    hint = hints.HINT_REMAT_PLAIN if have >= plain else hints.HINT_REMAT_LOOP
    return Verdict(False, hints.MSG_TEMP.format(have=have, bound=bound, plain=plain), hint)


@case("remat_mlp_grads", hidden=False, hints=[remat_forgot_pmean, remat_summed])
def grads_match_plain_backpropagation(fn):
    ws, x = deep_mlp_inputs(0, layers=4, rows_per_device=4, width=8)
    return {"result": fn(ws, x), **mlp_grads_context(ws, x)}


@case("remat_mlp_grads", hidden=False, judge=within_temp_bound)
def keeps_about_half_the_temporaries(fn):
    ws, x = deep_mlp_inputs(1)
    return {"memory": cost_memory_bytes(fn, ws, x),
            "_plain": Material(lambda: cost_memory_bytes(plain_dp_grads, ws, x))}


# --- zero2_adam_step -------------------------------------------------------------------------
def adam_inputs(seed: int, per_device: int = 3) -> tuple:
    """params (P,), local_grads (n, P), m (P,), v (P,) >= 0, with P = per_device * n."""
    n = jax.device_count()
    rng = np.random.default_rng(seed)
    size = per_device * n
    arrays = (rng.normal(size=size), rng.normal(size=(n, size)), 0.1 * rng.normal(size=size),
              0.01 * rng.random(size))
    return tuple(floats(a) for a in arrays)


def numpy_adam(params, local_grads, m, v, t, grads=None) -> list[np.ndarray]:
    """The step in float64, from the mean of the local gradients (or from ``grads``)."""
    p, m, v = (np.asarray(a, np.float64) for a in (params, m, v))
    g = np.asarray(local_grads, np.float64).mean(0) if grads is None else grads
    m = B1 * m + (1 - B1) * g
    v = B2 * v + (1 - B2) * g * g
    p = p - LR * (m / (1 - B1**t)) / (np.sqrt(v / (1 - B2**t)) + EPS)
    return [p, m, v]


def adam_context(params, local_grads, m, v, t) -> dict:
    return {"_summed": numpy_adam(params, local_grads, m, v, t,
                                  grads=np.asarray(local_grads, np.float64).sum(0))}


adam_summed = result_close_to("_summed", hints.HINT_ZERO_SUMMED)
moments_replicated = Hint(
    lambda got, want: got["layout"][1]["on_devices"] > 1
    and got["layout"][1]["shard_shapes"][0] != want["layout"][1]["shard_shapes"][0],
    hints.HINT_ZERO_MOMENTS_SPLIT)
params_not_replicated = Hint(lambda got, want: True, hints.HINT_ZERO_PARAMS_REPLICATED)


def step_at(fn, t: int):
    """fn with its step number fixed: the program measured takes arrays only."""
    return trailing(fn, t)


def reduce_scatter_not_all_reduce(got: dict, want: dict) -> Verdict:
    """A judge of hlo_collectives: where the reference's program reduce-scatters the
    gradients and all-gathers the parameters with no all-reduce, so must the student's."""
    counts = {k: int(np.asarray(got.get(k, 0)).item()) for k in ("all-reduce", "all-gather",
                                                                  "reduce-scatter")}
    wanted = {k: int(np.asarray(want.get(k, 0)).item()) for k in counts}
    if wanted["reduce-scatter"] and not counts["reduce-scatter"]:
        hint = hints.HINT_ZERO_ALL_REDUCE if counts["all-reduce"] else None
        return Verdict(False, hints.MSG_NO_REDUCE_SCATTER.format(counts=counts), hint)
    if wanted["all-gather"] and not counts["all-gather"]:
        return Verdict(False, hints.MSG_NO_ALL_GATHER.format(counts=counts),
                       hints.HINT_ZERO_PARAMS_REPLICATED)
    if counts["all-reduce"] > wanted["all-reduce"]:
        return Verdict(False, hints.MSG_EXTRA_ALL_REDUCE.format(counts=counts),
                       hints.HINT_ZERO_ALL_REDUCE)
    return Verdict(True)


@case("zero2_adam_step", hidden=False, hints=[adam_summed])
def matches_adam_on_the_mean_gradient(fn):
    args = adam_inputs(0)
    return {"result": list(fn(*args, 1)), **adam_context(*args, 1)}


@case("zero2_adam_step", hidden=False,
      hints=[adam_summed, moments_replicated, params_not_replicated])
def moments_stay_split(fn):
    args = adam_inputs(1)
    out = fn(*args, 2)
    return {"result": list(out), "layout": [layout(a) for a in out],
            **adam_context(*args, 2)}


@case("zero2_adam_step", hidden=False, judge=reduce_scatter_not_all_reduce)
def reduce_scatters_gradients_and_gathers_params(fn):
    return hlo_collectives(step_at(fn, 2), *adam_inputs(2))


# --- best_mesh_step ------------------------------------------------------------------------
@measure
def cost_bytes_sent(program: Program) -> float | None:
    """The bytes one device sends in the compiled program, all collectives together, under
    the course's traffic model (grader.framework.hlo); None when a collective's group is unknown."""
    sent = [c.sent for c in collectives_in_hlo(program.compiled)]
    return None if any(s is None for s in sent) else float(sum(sent))


def linear_inputs(seed: int, batch_per_device: int, d_in_per_device: int) -> tuple:
    """w (d_in, d_out), x (batch, d_in), y (batch, d_out), sizes multiples of n."""
    n = jax.device_count()
    rng = np.random.default_rng(seed)
    batch, d_in, d_out = batch_per_device * n, d_in_per_device * n, 3
    arrays = (rng.normal(size=(d_in, d_out)) / np.sqrt(d_in), rng.normal(size=(batch, d_in)),
              rng.normal(size=(batch, d_out)))
    return tuple(floats(a) for a in arrays)


def sgd_context(w, x, y) -> dict:
    """What gradients summed over 'data' instead of averaged would give, for every size of
    'data' above 1."""
    w64, x64, y64 = (np.asarray(a, np.float64) for a in (w, x, y))
    grads = 2 * x64.T @ (x64 @ w64 - y64) / y64.size
    return {"_summed": [w64 - 0.1 * data * grads
                        for data, _ in mesh_shapes(jax.device_count()) if data > 1]}


def mesh_shapes(n: int) -> list[tuple[int, int]]:
    """Every (data, model) with data * model = n."""
    return [(data, n // data) for data in range(1, n + 1) if n % data == 0]


def bytes_by_shape(w, x) -> list[list[float]]:
    """[data, model, bytes one device sends] of the 2-D step on every mesh shape of the
    devices there are, counted as bytes_sent_2d counts them."""
    (batch, d_in), d_out = x.shape, w.shape[1]
    return [[data, model, _all_reduce(model) * BYTES * (batch // data) * d_out
             + _all_reduce(data) * BYTES * (d_in // model) * d_out]
            for data, model in mesh_shapes(jax.device_count())]


step_summed = Hint(lambda got, want: any(close(got["result"], summed)
                                         for summed in want["_summed"]),
                   hints.HINT_MESH_SUMMED)


def fewest_bytes(got: dict, want: dict) -> Verdict:
    """A judge of cost_bytes_sent: the program must send no more than the reference's, which
    runs the step on the mesh shape that sends the fewest bytes for these sizes; the hint
    says which shape the bytes sent are those of."""
    have, best = got.get("sent"), float(want["sent"])
    if have is not None and float(have) <= best + 1e-6:
        return Verdict(True)
    message = hints.MSG_MORE_BYTES.format(have=have, best=best)
    shape = next(((int(d), int(m)) for d, m, sent in want["_by_shape"]
                  if have is not None and np.isclose(float(have), float(sent))), None)
    if shape is None:
        return Verdict(False, message, hints.HINT_MESH_EXTRA)
    if 1 in shape:
        return Verdict(False, message, hints.HINT_MESH_ONE_AXIS)
    return Verdict(False, message, hints.HINT_MESH_SHAPE)


def bytes_sent_by(fn, w, x, y) -> dict:
    """The bytes the program sends, and (for the hint) those of every mesh shape."""
    return {"sent": cost_bytes_sent(fn, w, x, y), "_by_shape": bytes_by_shape(w, x)}


@case("best_mesh_step", hidden=False, hints=[step_summed])
def matches_one_device(fn):
    w, x, y = linear_inputs(40, 3, 2)
    return {"result": fn(w, x, y), **sgd_context(w, x, y)}


@case("best_mesh_step", hidden=False, judge=fewest_bytes)
def a_batch_one_and_a_half_d_in_sends_the_fewest_bytes(fn):
    return bytes_sent_by(fn, *linear_inputs(41, 3, 2))


@case("best_mesh_step", hidden=False, judge=fewest_bytes)
def a_tiny_batch_sends_the_fewest_bytes(fn):
    return bytes_sent_by(fn, *linear_inputs(42, 1, 8))
