"""Hidden tests of lesson 7 (cost and memory): only the grader runs them. The predictions
are held against compiled programs of the reference strategies on 1, 2, 4 and 8 of the
grader's devices (measured where the reference solution runs, so a submission cannot touch
them); the two computing exercises run on 8 devices and on 2."""

from __future__ import annotations

from collections.abc import Callable

import jax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from grader.framework.cases import case
from grader.framework.judge import Hint, Verdict, close, compiles_to, difference, traces
from grader.framework.placement import layout
from grader.framework.plain import Material
from grader.framework.probes import hlo_collectives, program_summary
from grader.hints import cost as hints
from grader.public.cost import (
    SENT_2D_HINTS,
    STAGES,
    adam_inputs,
    bytes_sent_by,
    cost_memory_bytes,
    deep_mlp_inputs,
    fewest_bytes,
    linear_inputs,
    measured_bytes_sent_2d,
    measured_state_bytes,
    mlp_grads_context,
    moments_replicated,
    params_not_replicated,
    plain_dp_grads,
    reduce_scatter_not_all_reduce,
    remat_forgot_pmean,
    remat_summed,
    sent_2d_context,
    sgd_context,
    stages_wrong,
    step_at,
    step_summed,
    within_temp_bound,
    wrong_dtype_size,
)

COUNTS = (1, 2, 4, 8)


def matches_measured(hint_list: list) -> Callable[[dict, dict], Verdict]:
    """A judge: the student's predictions must match what the reference's compiled programs
    measured (``_measured``, taken where the reference solution runs), number by number."""

    def judge(got: dict, want: dict) -> Verdict:
        problem = difference(got.get("result"), want["_measured"])
        if problem is None:
            return Verdict(True)
        hint = next((h.text for h in hint_list if _safe(h, got, want)), None)
        return Verdict(False, hints.MSG_PREDICTION.format(problem=problem), hint)

    return judge


def _safe(hint, got, want) -> bool:
    try:
        return bool(hint.when(got, {**want, "result": want["_measured"]}))
    except (AttributeError, KeyError, TypeError, ValueError, IndexError):
        return False


def _on(mesh_devices: int) -> bool:
    return jax.device_count() >= mesh_devices


# --- training_state_bytes ----------------------------------------------------------------
@case("training_state_bytes", hidden=True,
      judge=matches_measured([wrong_dtype_size, stages_wrong]))
def matches_memory_analysis_of_compiled_updates(fn):
    cases = [(40 * n, n, stage) for n in COUNTS if _on(n) for stage in STAGES]
    return {"result": [float(fn(*c)) for c in cases],
            "_measured": [float(measured_state_bytes(*c)) for c in cases]}


@case("training_state_bytes", hidden=True, hints=[wrong_dtype_size, stages_wrong])
def a_large_model_on_many_devices(fn):
    return {"result": [float(fn(7 * 10**9 // 64 * 64, n, stage)) for n in (16, 64)
                       for stage in STAGES]}


# --- bytes_sent_2d ---------------------------------------------------------------------------
MESHES_2D = ((1, 1), (2, 1), (1, 2), (2, 2), (4, 2), (2, 4), (8, 1), (1, 8))


@case("bytes_sent_2d", hidden=True, judge=matches_measured(SENT_2D_HINTS))
def matches_the_bytes_compiled_2d_steps_send(fn):
    cases = [(batch * data * model, d_in * data * model, 5, data, model)
             for data, model in MESHES_2D if _on(data * model)
             for batch, d_in in ((3, 2), (1, 4))]
    return {"result": [float(fn(*c)) for c in cases], **sent_2d_context(cases),
            "_measured": [measured_bytes_sent_2d(*c) for c in cases]}


@case("bytes_sent_2d", hidden=True, hints=SENT_2D_HINTS)
def a_wide_layer_on_large_meshes(fn):
    cases = [(batch, 8192, 2048, data, model) for data, model in ((64, 8), (8, 64), (256, 1))
             for batch in (1024, 65536)]
    return {"result": [float(fn(*c)) for c in cases], **sent_2d_context(cases)}


# --- remat_mlp_grads -------------------------------------------------------------------------
def placed(ws, x):
    mesh = jax.make_mesh((jax.device_count(),), ("data",))
    return (jax.device_put(ws, NamedSharding(mesh, P())),
            jax.device_put(x, NamedSharding(mesh, P("data"))))


@case("remat_mlp_grads", hidden=True, hints=[remat_forgot_pmean, remat_summed])
def grads_of_another_mlp_from_placed_inputs(fn):
    ws, x = deep_mlp_inputs(100, layers=5, rows_per_device=3, width=6)
    grads = fn(*placed(ws, x))
    return {"result": grads, "layout": layout(grads), **mlp_grads_context(ws, x)}


@case("remat_mlp_grads", hidden=True, judge=within_temp_bound)
def temporaries_of_a_deeper_narrower_mlp(fn):
    ws, x = deep_mlp_inputs(101, layers=6, rows_per_device=8, width=16)
    return {"memory": cost_memory_bytes(fn, ws, x),
            "_plain": Material(lambda: cost_memory_bytes(plain_dp_grads, ws, x))}


@case("remat_mlp_grads", hidden=True,
      judge=compiles_to("all-reduce", hints.HINT_REMAT_PMEAN))
def all_reduces_the_gradients(fn):
    return hlo_collectives(fn, *deep_mlp_inputs(102, layers=3, rows_per_device=2, width=4))


@case("remat_mlp_grads", hidden=True, judge=traces("psum", "data", hints.HINT_REMAT_PMEAN))
def averages_over_data(fn):
    return program_summary(fn, *deep_mlp_inputs(103, layers=3, rows_per_device=2, width=4))


# --- zero2_adam_step -------------------------------------------------------------------------
def placed_adam(seed: int, per_device: int) -> tuple:
    mesh = jax.make_mesh((jax.device_count(),), ("data",))
    params, grads, m, v = adam_inputs(seed, per_device)
    return (jax.device_put(params, NamedSharding(mesh, P())),
            *(jax.device_put(a, NamedSharding(mesh, P("data"))) for a in (grads, m, v)))


@case("zero2_adam_step", hidden=True, hints=[moments_replicated, params_not_replicated])
def three_steps_from_placed_inputs(fn):
    params, grads, m, v = placed_adam(110, 5)
    for t in (1, 2, 3):
        params, m, v = fn(params, grads, m, v, t)
    return {"result": [params, m, v], "layout": [layout(a) for a in (params, m, v)]}


@case("zero2_adam_step", hidden=True, judge=reduce_scatter_not_all_reduce)
def reduce_scatter_and_all_gather_on_every_device_count(fn):
    return hlo_collectives(step_at(fn, 4), *adam_inputs(111, 2))


def output_and_temporaries(got: dict, want: dict) -> Verdict:
    """One device's outputs must take no more bytes than the reference's (moments split),
    and its temporaries at most twice the reference's plus a kilobyte."""
    have, ref = got["memory"], want["memory"]
    if int(have["output"]) > int(ref["output"]):
        return Verdict(False, hints.MSG_OUTPUT_BYTES.format(have=int(have["output"]),
                                                           want=int(ref["output"])),
                       hints.HINT_ZERO_MOMENTS_SPLIT)
    bound = 2 * int(ref["temp"]) + 1024
    if int(have["temp"]) > bound:
        return Verdict(False, hints.MSG_ZERO_TEMP.format(have=int(have["temp"]), bound=bound),
                       hints.HINT_ZERO_ALL_REDUCE)
    return Verdict(True)


@case("zero2_adam_step", hidden=True, judge=output_and_temporaries)
def bytes_one_device_holds(fn):
    return {"memory": cost_memory_bytes(step_at(fn, 2), *placed_adam(112, 64))}



# --- best_mesh_step --------------------------------------------------------------------------
def placed_linear(seed: int, batch_per_device: int, d_in_per_device: int) -> tuple:
    """The inputs on the mesh, laid out as no mesh shape wants them: all replicated."""
    mesh = jax.make_mesh((jax.device_count(),), ("data",))
    return jax.device_put(linear_inputs(seed, batch_per_device, d_in_per_device),
                          NamedSharding(mesh, P()))


wrong_shape = Hint(lambda got, want: not close(got["layouts"], want["layouts"]),
                   hints.HINT_MESH_LAYOUT)


@case("best_mesh_step", hidden=True, hints=[step_summed, wrong_shape])
def a_tiny_and_a_large_batch_from_replicated_inputs(fn):
    results = {}
    for regime, sizes in (("tiny", (1, 5)), ("large", (8, 1))):
        new = fn(*placed_linear(140, *sizes))
        results[regime] = {"w": new, "layout": layout(new)}
    w, x, y = linear_inputs(140, 8, 1)
    return {"result": results["large"]["w"], "layouts": [results[r]["layout"]
                                                          for r in ("tiny", "large")],
            "tiny": results["tiny"]["w"], **sgd_context(w, x, y)}


@case("best_mesh_step", hidden=True, judge=fewest_bytes)
def a_batch_a_third_of_d_in_sends_the_fewest_bytes(fn):
    return bytes_sent_by(fn, *linear_inputs(141, 1, 3))


@case("best_mesh_step", hidden=True, judge=fewest_bytes)
def a_batch_three_times_d_in_sends_the_fewest_bytes(fn):
    return bytes_sent_by(fn, *linear_inputs(142, 3, 1))


@case("best_mesh_step", hidden=True, judge=fewest_bytes)
def a_batch_eight_times_d_in_sends_the_fewest_bytes(fn):
    return bytes_sent_by(fn, *linear_inputs(143, 8, 1))
