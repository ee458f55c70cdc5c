"""Public tests of lesson 8 (pipeline parallelism): ``check`` runs them in the notebook, and
the grader runs them too. Sizes are derived from the number of devices there are."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from grader.framework import hlo
from grader.framework.cases import case
from grader.framework.judge import Hint, close, result_close_to
from grader.framework.placement import floats
from grader.framework.probes import Program, measure
from grader.hints import pipeline as hints

D, B = 4, 2  # activations (B, D) and weights (D, D) differ in shape


# --- inputs -------------------------------------------------------------------------------
def stack(seed: int, layers: int, biases: bool = False):
    """Weights (layers, D, D) scaled so tanh stays away from saturation; biases (layers, D)."""
    rng = np.random.default_rng(seed)
    ws = floats(rng.normal(size=(layers, D, D)) * 1.5 / np.sqrt(D))
    if not biases:
        return ws
    return ws, floats(0.3 * rng.normal(size=(layers, D)))


def microbatches(seed: int, m: int, rows: int = B) -> jax.Array:
    return floats(np.random.default_rng(seed).normal(size=(m, rows, D)))


# --- the schedule a real pipeline runs --------------------------------------------------------
def measured_log(m: int) -> np.ndarray:
    """The log of the lesson's GPipe program on all devices with m microbatches: at each
    tick (row), the number of the microbatch each stage (column) worked on, -1 when idle. The
    numbers are tags sent along with the activations by ppermute: what really flowed."""
    n = jax.device_count()
    mesh = jax.make_mesh((n,), ("stage",))
    to_next = [(i, i + 1) for i in range(n - 1)]

    def stage_program(w, xs):
        stage = jax.lax.axis_index("stage")

        def tick(t, carry):
            h, tag, log = carry
            h = jnp.where(stage == 0, xs[jnp.minimum(t, m - 1)], h)
            tag = jnp.where(stage == 0, jnp.where(t < m, t, -1), tag)
            log = log.at[t].set(tag)
            return (*jax.lax.ppermute((jnp.tanh(h @ w[0]), tag), "stage", to_next), log)

        start = jax.lax.pcast((jnp.zeros_like(xs[0]), -1, jnp.full(m + n - 1, -1)), "stage",
                              to="varying")
        return jax.lax.fori_loop(0, m + n - 1, tick, start)[2][:, None]

    @jax.jit
    def run(ws, xs):
        ws = jax.reshard(ws, NamedSharding(mesh, P("stage")))
        xs = jax.reshard(xs, NamedSharding(mesh, P()))
        return jax.shard_map(stage_program, mesh=mesh, in_specs=(P("stage"), P()),
                             out_specs=P(None, "stage"))(ws, xs)

    return np.asarray(run(stack(0, n), microbatches(1, m)))


# --- microbatches_for_bubble ----------------------------------------------------------------
def fewest(bubble, target: float, strict: bool = False) -> int:
    """The smallest m >= 1 with bubble(m) <= target (< target if ``strict``)."""
    m = 1
    while bubble(m) > target or (strict and bubble(m) == target):
        m += 1
    return m


def microbatch_counts(fn, pairs: list[tuple[int, float]]) -> dict:
    """The student's m for each (stages, target), and what usual mistakes give."""
    return {
        "result": np.array([int(fn(n, target)) for n, target in pairs]),
        "_over_useful": np.array([fewest(lambda m, n=n: (n - 1) / m, t) for n, t in pairs]),
        "_strict": np.array([fewest(lambda m, n=n: (n - 1) / (m + n - 1), t, strict=True)
                             for n, t in pairs]),
        "_ticks": np.array([fewest(lambda m, n=n: (n - 1) / (m + n), t) for n, t in pairs]),
    }


def _matches(key: str):
    return lambda got, want: close(got["result"], want[key])


MICROBATCH_HINTS = [Hint(_matches("_over_useful"), hints.HINT_BUBBLE_OVER_USEFUL),
                    Hint(_matches("_strict"), hints.HINT_BUBBLE_AT_MOST),
                    Hint(_matches("_ticks"), hints.HINT_BUBBLE_TICKS)]


@case("microbatches_for_bubble", hidden=False, hints=MICROBATCH_HINTS)
def four_stages_and_eight(fn):
    return microbatch_counts(fn, [(4, 0.5), (4, 0.25), (8, 0.1), (8, 0.3)])


# --- gpipe_schedule -----------------------------------------------------------------------
def as_table(schedule) -> list[list[int | None]]:
    """A schedule as plain lists of ints and None (a NumPy or JAX integer read as an int)."""
    return [[None if v is None else int(v) for v in row] for row in schedule]


def log_table(log: np.ndarray) -> list[list[int | None]]:
    """A pipeline's log (-1 for idle) as a schedule."""
    return [[None if v < 0 else int(v) for v in row] for row in log]


def schedules(fn, pairs: list[tuple[int, int]]) -> dict:
    return {f"schedule_{n}_{m}": as_table(fn(n, m)) for n, m in pairs}


def _shape(table) -> tuple[int, ...]:
    return (len(table), *{len(row) for row in table})


def _schedule_hint(test, text: str) -> Hint:
    def when(got: dict, want: dict) -> bool:
        return any(test(got[k], want[k]) for k in want if k.startswith("schedule")
                   and not close(got[k], want[k]))
    return Hint(when, text)


SCHEDULE_HINTS = [
    _schedule_hint(lambda g, w: any(v is not None and v < 0 for row in g for v in row)
                   and close([[None if v is not None and v < 0 else v for v in row]
                              for row in g], w), hints.HINT_SCHEDULE_IDLE),
    _schedule_hint(lambda g, w: _shape(g) == _shape(w)[::-1] and _shape(g) != _shape(w),
                   hints.HINT_SCHEDULE_TRANSPOSED),
    _schedule_hint(lambda g, w: _shape(g)[1:] == _shape(w)[1:] and len(g) != len(w),
                   hints.HINT_SCHEDULE_TICKS),
    _schedule_hint(lambda g, w: _shape(g) == _shape(w), hints.HINT_SCHEDULE_DIRECTION),
]


@case("gpipe_schedule", hidden=False, hints=SCHEDULE_HINTS)
def two_stages_three_microbatches_and_more(fn):
    return schedules(fn, [(2, 3), (3, 2), (4, 5)])


# --- fixed_pipeline -----------------------------------------------------------------------
def simulate(ws, xs, shift: int = 1, late: int = 0) -> np.ndarray:
    """The given pipeline in NumPy: ``shift`` 1 sends forward, -1 backward (round the ring);
    ``late`` 1 writes each output one slot early (the off-by-one)."""
    ws, xs = np.asarray(ws, np.float64), np.asarray(xs, np.float64)
    n, m = len(ws), len(xs)
    h, out = np.zeros((n, *xs.shape[1:])), np.zeros(xs.shape)
    for t in range(m + n - 1):
        if t < m:
            h[0] = xs[t]
        y = np.tanh(np.einsum("sbd,sde->sbe", h, ws))
        if t >= n - 1:
            out[t - (n - 1) - late] = y[n - 1]
        h = np.roll(y, shift, axis=0)
    return out


def fix_context(ws, xs) -> dict:
    return {"_both": simulate(ws, xs, -1, 1), "_backward": simulate(ws, xs, -1),
            "_slot": simulate(ws, xs, 1, 1)}


FIX_HINTS = [Hint(_matches("_both"), hints.HINT_FIX_BOTH),
             Hint(_matches("_backward"), hints.HINT_FIX_DIRECTION),
             Hint(_matches("_slot"), hints.HINT_FIX_SLOT)]


@case("fixed_pipeline", hidden=False, hints=FIX_HINTS)
def matches_the_model_on_five_microbatches(fn):
    ws, xs = stack(10, jax.device_count()), microbatches(11, 5)
    return {"result": fn(ws, xs), **fix_context(ws, xs)}


# --- pipeline_grads -----------------------------------------------------------------------
@measure
def pipeline_reduced_activations(program: Program) -> list[list[int]]:
    """The shapes of the arrays the compiled program all-reduces, sorted; scalars (a loss)
    left out."""
    return sorted(list(shape) for c in hlo.collectives_in_hlo(program.compiled)
                  if c.op == "all-reduce" for _, shape in c.result if shape)


def numpy_grads(ws, xs, ys) -> np.ndarray:
    """d mean((model(ws, xs) - ys) ** 2) / d ws, by hand in float64."""
    ws, h, ys = (np.asarray(a, np.float64) for a in (ws, xs, ys))
    seen = []
    for w in ws:
        seen.append(h)
        h = np.tanh(h @ w)
    grads, back = np.zeros_like(ws), 2 * (h - ys) / ys.size
    for i in reversed(range(len(ws))):
        back = back * (1 - np.tanh(seen[i] @ ws[i]) ** 2)
        grads[i] = np.einsum("mbd,mbe->de", seen[i], back)
        back = back @ ws[i].T
    return grads


def grads_inputs(seed: int, m: int) -> tuple:
    return stack(seed, jax.device_count()), microbatches(seed + 1, m), microbatches(seed + 2, m)


m_times = result_close_to("_m_times", hints.HINT_GRADS_M_TIMES)
reduces_activations = Hint(lambda got, want: bool(got["all_reduced"]),
                           hints.HINT_GRADS_SCALAR_ONLY)


@case("pipeline_grads", hidden=False, hints=[m_times])
def matches_the_unpipelined_gradient(fn):
    ws, xs, ys = grads_inputs(20, 3)
    return {"result": fn(ws, xs, ys), "_m_times": 3 * numpy_grads(ws, xs, ys)}


@case("pipeline_grads", hidden=False, hints=[reduces_activations])
def all_reduces_no_activation(fn):
    return {"all_reduced": pipeline_reduced_activations(fn, *grads_inputs(22, 2))}


# --- deep_pipeline ------------------------------------------------------------------------
def deep_model(ws, bs, x, only_first_of: int | None = None, biases: bool = True) -> np.ndarray:
    """The deep model in NumPy; ``only_first_of`` K keeps layers 0, K, 2K... (one per stage)."""
    ws, bs, h = (np.asarray(a, np.float64) for a in (ws, bs, x))
    for i, (w, b) in enumerate(zip(ws, bs, strict=True)):
        if only_first_of and i % only_first_of:
            continue
        h = np.tanh(h @ w + (b if biases else 0))
    return h


def deep_inputs(seed: int, per_stage: int, m: int, rows: int = B) -> tuple:
    ws, bs = stack(seed, per_stage * jax.device_count(), biases=True)
    x = microbatches(seed + 1, 1, m * rows)[0]
    return ws, bs, x


def deep_context(ws, bs, x) -> dict:
    return {"_one_layer": deep_model(ws, bs, x, ws.shape[0] // jax.device_count()),
            "_no_bias": deep_model(ws, bs, x, biases=False)}


DEEP_HINTS = [Hint(_matches("_one_layer"), hints.HINT_DEEP_ONE_LAYER),
              Hint(_matches("_no_bias"), hints.HINT_DEEP_NO_BIAS)]


@case("deep_pipeline", hidden=False, hints=DEEP_HINTS)
def two_layers_per_stage_four_microbatches(fn):
    ws, bs, x = deep_inputs(30, 2, 4)
    return {"result": fn(ws, bs, x, 4), **deep_context(ws, bs, x)}
