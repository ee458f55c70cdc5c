"""Hidden tests of lesson 8 (pipeline parallelism): only the grader runs them. The two
predictions are compared with the schedule a real pipeline program runs on the grader's 8
devices; the pipelines are graded on 8 devices and on 2."""

from __future__ import annotations

import jax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from grader.framework.cases import case
from grader.framework.judge import Hint, compiles_to, same
from grader.framework.placement import layout
from grader.framework.probes import hlo_collectives, trailing
from grader.hints import pipeline as hints
from grader.public.pipeline import (
    DEEP_HINTS,
    FIX_HINTS,
    MICROBATCH_HINTS,
    SCHEDULE_HINTS,
    as_table,
    deep_context,
    deep_inputs,
    fix_context,
    grads_inputs,
    log_table,
    m_times,
    measured_log,
    microbatch_counts,
    microbatches,
    numpy_grads,
    pipeline_reduced_activations,
    reduces_activations,
    schedules,
    stack,
)
from grader.public.training import gathered_shapes


def place(x, spec: P):
    """x on a 1-D mesh ('stage',) over every device, laid out as spec."""
    mesh = jax.make_mesh((jax.device_count(),), ("stage",))
    return jax.device_put(x, NamedSharding(mesh, spec))


# --- microbatches_for_bubble ----------------------------------------------------------------
@case("microbatches_for_bubble", hidden=True, hints=MICROBATCH_HINTS)
def one_stage_needs_one_and_more(fn):
    return microbatch_counts(fn, [(1, 0.05), (2, 0.5), (3, 0.2), (16, 0.25), (5, 0.9)])


def bubble_measured(m: int) -> float:
    return float((measured_log(m) < 0).mean())


@case("microbatches_for_bubble", hidden=True, judge=same("agrees"))
def agrees_with_the_bubble_a_pipeline_program_runs(fn):
    """For each target, the bubble measured from the log of a GPipe program on all the
    devices with the student's m (at most the target) and with m - 1 (above it)."""
    n, agrees = jax.device_count(), []
    for target in (0.5, 0.3, 0.125):
        m = int(fn(n, target))
        agrees.append(0 < m <= 64 and bubble_measured(m) <= target + 1e-9
                      and (m == 1 or bubble_measured(m - 1) > target + 1e-9))
    return {"agrees": agrees}


# --- gpipe_schedule -----------------------------------------------------------------------
@case("gpipe_schedule", hidden=True, hints=SCHEDULE_HINTS)
def one_stage_one_microbatch_and_more(fn):
    return schedules(fn, [(1, 3), (5, 1), (6, 4), (2, 7)])


@case("gpipe_schedule", hidden=True, judge=same("agrees"))
def agrees_with_the_log_of_a_pipeline_program(fn):
    """Each schedule next to the log of a GPipe program on all the devices."""
    n = jax.device_count()
    return {"agrees": [as_table(fn(n, m)) == log_table(measured_log(m)) for m in (2, 5)]}


# --- fixed_pipeline -----------------------------------------------------------------------
@case("fixed_pipeline", hidden=True, hints=FIX_HINTS)
def inputs_already_on_the_mesh_replicated_out(fn):
    ws, xs = stack(110, jax.device_count()), microbatches(111, 3)
    result = fn(place(ws, P("stage")), place(xs, P()))
    return {"result": result, "layout": layout(result), **fix_context(ws, xs)}


@case("fixed_pipeline", hidden=True,
      judge=compiles_to("collective-permute", hints.HINT_DEEP_NO_PERMUTE))
def activations_move_with_a_collective_permute(fn):
    return hlo_collectives(fn, stack(112, jax.device_count()), microbatches(113, 2))


# --- pipeline_grads -----------------------------------------------------------------------
split_grads = Hint(lambda got, want: got["layout"] != want["layout"], hints.HINT_GRADS_SPLIT)


@case("pipeline_grads", hidden=True, hints=[m_times, split_grads])
def gradients_split_like_the_weights(fn):
    ws, xs, ys = grads_inputs(120, 4)
    grads = fn(place(ws, P("stage")), xs, ys)
    return {"result": grads, "layout": layout(grads), "_m_times": 4 * numpy_grads(ws, xs, ys)}


@case("pipeline_grads", hidden=True, hints=[reduces_activations])
def all_reduces_no_activation_on_every_device_count(fn):
    return {"all_reduced": pipeline_reduced_activations(fn, *grads_inputs(122, 3))}


@case("pipeline_grads", hidden=True,
      judge=compiles_to("collective-permute", hints.HINT_DEEP_NO_PERMUTE))
def gradients_flow_through_collective_permutes(fn):
    return hlo_collectives(fn, *grads_inputs(124, 2))


# --- deep_pipeline ------------------------------------------------------------------------
@case("deep_pipeline", hidden=True, hints=DEEP_HINTS)
def three_layers_per_stage_from_the_mesh(fn):
    ws, bs, x = deep_inputs(130, 3, 2)
    result = fn(place(ws, P("stage")), place(bs, P("stage")), x, 2)
    return {"result": result, "layout": layout(result), **deep_context(ws, bs, x)}


@case("deep_pipeline", hidden=True, hints=DEEP_HINTS)
def one_layer_per_stage_five_microbatches(fn):
    ws, bs, x = deep_inputs(132, 1, 5, rows=3)
    return {"result": fn(ws, bs, x, 5), **deep_context(ws, bs, x)}


@case("deep_pipeline", hidden=True, judge=same("gathered", hints=[
    Hint(lambda got, want: True, hints.HINT_DEEP_WEIGHTS_MOVE)]))
def weights_and_biases_never_leave_their_stage(fn):
    ws, bs, x = deep_inputs(134, 2, 2)
    return {"gathered": gathered_shapes(trailing(fn, 2),
                                        place(ws, P("stage")), place(bs, P("stage")), x)}


@case("deep_pipeline", hidden=True,
      judge=compiles_to("collective-permute", hints.HINT_DEEP_NO_PERMUTE))
def activations_move_with_collective_permutes(fn):
    ws, bs, x = deep_inputs(136, 2, 3)
    return hlo_collectives(trailing(fn, 3), ws, bs, x)
